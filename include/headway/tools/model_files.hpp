// Configs from the files people have: Hugging Face config.json and GGUF metadata. Part of the
// hosted tools layer (headway::tools); the core library stays free of file I/O.
#pragma once

#include <cstddef>
#include <cstdint>

#include "headway/config.hpp"
#include "headway/status.hpp"

namespace headway {

// Hugging Face config.json text. Understands the key names real families use (hidden_size /
// n_embd / d_model, num_attention_heads / n_head, num_key_value_heads, Falcon's multi_query,
// head_dim, max_position_embeddings / n_positions, num_hidden_layers / n_layer, rope_theta,
// partial_rotary_factor, sliding_window with use_sliding_window, attn_logit_softcapping,
// query_pre_attn_scalar) and rejects MLA configs. `source` names the input in messages.
// The result is parsed, not validated: call validate() or make_plan().
Result<Config> parse_hf_config(const char* text, size_t size, const char* source = "config.json");
Result<Config> load_hf_config(const char* path);

// GGUF metadata (versions 2 and 3): the key-value section only, tensors are not read. Every
// length and offset is checked against the bytes present.
Result<Config> parse_gguf_metadata(const uint8_t* data, size_t size, const char* source = "model.gguf");
Result<Config> load_gguf_config(const char* path);

}  // namespace headway
