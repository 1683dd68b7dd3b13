// A plan as one JSON object (hosted tools layer, headway::tools): what `headway plan --json`
// prints, the C API's headway_plan_json and the Python package's headway.plan() return.
//
//   model, d_model, n_heads, n_kv_heads, head_dim, group_size, attention ("MHA"|"GQA"|"MQA"),
//   q_width, q_rows, kv_width, qkv_width, kernel, max_seq, n_layers, causal, window,
//   window_symmetric, softcap, scale, rope {style, theta, rotary_dim, scaling; factor and
//   original_max_seq or rotated_pairs where the scaling has them}, qk_norm ("none"|"per head"|"across
//   heads"), qk_norm_offset, output_gate, mla {kv_lora_rank, q_lora_rank, qk_nope_head_dim, qk_rope_head_dim,
//   v_head_dim, latent_values_per_token, expanded_values_per_token} (MLA only), v_norm, k_eq_v,
//   kv_dtype, weight_dtype, threads,
//   max_tokens, cache_rows, kv_bytes_per_token, kv_bytes_per_layer, kv_cache_bytes, weight_bytes,
//   projection, packed_bytes, activation_bytes, scratch_bytes_per_thread, scratch_bytes,
//   vocab_size, intermediate_size, mlp ("none"|"swiglu"), norm ("none"|"rms"), tie_word_embeddings,
//   model_weight_bytes, model_activation_bytes (0 without a model), arena_bytes, regions {name:
//   {offset, bytes}} (arena_regions' table, in its order), heads [{q_head, kv_head, qkv_q_offset, qkv_k_offset,
//   qkv_v_offset, cache_k_offset, cache_v_offset}], layer_kinds {sliding_pattern, nope_interval, rope_local_theta,
//   layer_types ("s"/"f" per layer), rope_layers ("1"/"0" per layer)}, sinks, sink_tokens, alibi, alibi_max_bias,
//   alibi_times_scale, sliding_layers, ring_rows, layers
//   [{index, attention ("full"|"sliding"), window, rope, rope_theta, kv_rows, kv_bytes, kv_offset,
//   sinks, sink_tokens, alibi}] and, for a plan deeper than kMaxListedLayers, layers_listed.
#pragma once

#include <cstdint>
#include <string>

#include "headway/plan.hpp"

namespace headway {

// The most layers the JSON lists one by one; a deeper (synthetic) plan lists its first ones and
// says so in "layers_listed".
inline constexpr uint32_t kMaxListedLayers = 65536;
// The layers plan_json() and `headway plan` list: all of them, at most kMaxListedLayers.
constexpr uint32_t listed_layers(const Plan& p) {
  return p.config.n_layers < kMaxListedLayers ? p.config.n_layers : kMaxListedLayers;
}

// The object above, compact (no spaces or newlines), floats in their shortest round-trip form,
// bytes of the model name that are not UTF-8 replaced by U+FFFD.
std::string plan_json(const Plan& plan);

}  // namespace headway
