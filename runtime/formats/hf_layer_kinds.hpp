// How the layers of a config.json differ: which slide, which rotate and at what base, and
// whether they carry sink logits (Config::layers, Config::sinks).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "headway/config.hpp"
#include "runtime/formats/json_values.hpp"

namespace headway::formats {

// Reads, after the window and the RoPE are known (cfg->window, cfg->rope, cfg->n_layers):
//   layer_types            sliding_attention / full_attention per layer (chunked_attention refused)
//   sliding_window_pattern or _sliding_window_pattern: every Nth layer full (Gemma 3, Cohere2)
//   Gemma 2 without either: even layers slide, odd ones are full
//   use_sliding_window + max_window_layers (Qwen2, Qwen3): layers at or past that index slide
//     (default 28); Qwen2-MoE: the even layers below it; Qwen3-MoE: every layer
//   rope_local_base_freq   the RoPE base of sliding layers (Gemma 3)
//   no_rope_layers (0 = NoPE) / no_rope_layer_interval (SmolLM3)
//   Cohere2: its full layers have no RoPE;  gpt-oss: sink logits on every layer
Status read_layer_kinds(const Where& w, const nlohmann::json& obj, const std::string& model_type, Config* cfg);

// Gemma 3n's and Gemma 4's attention (Gemma3nTextAttention, Gemma4TextAttention), read before
// the RoPE (whose proportional rotation counts the full layers' head_dim): q/k norms scaling by
// their weight as it is, v normed without one, a logit scale of 1, the last num_kv_shared_layers
// layers reading earlier layers' caches; Gemma 4's full layers with their own head shape
// (global_head_dim, 512 where absent; num_global_key_value_heads where attention_k_eq_v) and V
// from K there (attention_k_eq_v). Other model types: nothing.
Status read_gemma_per_layer(const Where& w, const nlohmann::json& obj, const std::string& model_type, Config* cfg);

// transformers 5 writes a model's RoPE as `rope_parameters` (rope_type, rope_theta, the scaling
// keys, partial_rotary_factor), either one object or one per layer type ("full_attention",
// "sliding_attention"). The object for `layer_type` (or the single one), null when absent.
const nlohmann::json* rope_parameters(const nlohmann::json& obj, const char* layer_type);

}  // namespace headway::formats
