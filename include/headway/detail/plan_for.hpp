// plan_for(): a Config's Plan (headway/plan.hpp), every size and offset, in constant
// expressions. Included by plan.hpp; include that.
#pragma once

#include <cstdint>

#include "headway/plan.hpp"

namespace headway {

namespace detail {
// Checked arithmetic that stays usable in constant expressions: an overflow sets the flag and
// yields 0 instead of wrapping.
struct Checked {
  bool overflow = false;
  constexpr uint64_t mul(uint64_t a, uint64_t b) {
    uint64_t r = 0;
    if (__builtin_mul_overflow(a, b, &r)) overflow = true;
    return overflow ? 0 : r;
  }
  constexpr uint64_t add(uint64_t a, uint64_t b) {
    uint64_t r = 0;
    if (__builtin_add_overflow(a, b, &r)) overflow = true;
    return overflow ? 0 : r;
  }
  constexpr uint64_t align(uint64_t n) {
    if (n > ~uint64_t{0} - kAlignment) overflow = true;
    return overflow ? 0 : align_up(n);
  }
};

// An attention layer's weight bytes in config c's head shape: Wq [q_rows, d_model], Wk and Wv
// [kv_width, d_model] (no Wv with k_eq_v), Wo [d_model, q_width], their biases and the q/k norms
// as configured; MLA's: Wq_a [q_lora, d_model] and Wq_b [n_heads·(nope + rope), q_lora] or Wq
// [.., d_model], Wkv_a [kv_lora + rope, d_model], Wkv_b [n_heads·(nope + v), kv_lora], Wo
// [d_model, n_heads·v] and the two latent norms. Block weights: the matrices' rows as the file
// holds them, the vectors f32. own_kv false: a layer that reads another's cache (no Wk, Wv, their
// biases or k norm).
constexpr uint64_t attention_weight_bytes(const Config& c, const PlanOptions& o, bool own_kv, Checked& ck) {
  const uint64_t wb = dtype_bytes(o.weight_dtype);
  const bool blocks = dtype_is_block(o.weight_dtype);
  const auto matrix = [&](uint64_t rows, uint64_t in) {
    return blocks ? ck.mul(rows, dtype_row_bytes(o.weight_dtype, in)) : ck.mul(ck.mul(rows, in), wb);
  };
  const uint64_t vector_bytes = blocks ? 4 : wb;
  if (c.is_mla()) {
    const MlaShape& m = c.mla;
    const uint64_t mla_q = ck.mul(c.n_heads, uint64_t{m.qk_nope_head_dim} + m.qk_rope_head_dim);
    uint64_t bytes = m.q_lora_rank ? ck.add(matrix(m.q_lora_rank, c.d_model), matrix(mla_q, m.q_lora_rank))
                                   : matrix(mla_q, c.d_model);
    bytes = ck.add(bytes, matrix(uint64_t{m.kv_lora_rank} + m.qk_rope_head_dim, c.d_model));
    bytes = ck.add(bytes, matrix(ck.mul(c.n_heads, uint64_t{m.qk_nope_head_dim} + m.v_head_dim), m.kv_lora_rank));
    bytes = ck.add(bytes, matrix(c.d_model, ck.mul(c.n_heads, m.v_head_dim)));
    bytes = ck.add(bytes, ck.mul(uint64_t{m.q_lora_rank} + m.kv_lora_rank, vector_bytes));
    return ck.align(bytes);
  }
  const uint64_t qw = ck.mul(c.n_heads, c.head_size());
  const uint64_t kvw = ck.mul(c.kv_heads(), c.head_size());
  const uint64_t q_rows = c.output_gate ? ck.mul(2, qw) : qw;
  const uint64_t projected = own_kv ? ck.add(q_rows, ck.mul(c.k_eq_v ? 1 : 2, kvw)) : q_rows;
  uint64_t vectors = 0;
  if (c.qkv_bias) vectors = ck.add(vectors, projected);
  if (c.o_bias) vectors = ck.add(vectors, c.d_model);
  if (c.qk_norm) vectors = ck.add(vectors, own_kv ? ck.add(c.q_norm_width(), c.k_norm_width()) : c.q_norm_width());
  const uint64_t matrices = ck.add(matrix(projected, c.d_model), matrix(c.d_model, qw));
  return ck.align(ck.add(matrices, ck.mul(vectors, vector_bytes)));
}

// A head shape's widths, in floats: head_dim, the kv heads and the query heads per kv head; Wq's
// rows (each head's query, and its gate with an output gate), the queries', K's, and the fused
// row's [q_rows | K | V] (MLA's row is wider: Plan::mla_rows).
struct HeadWidths {
  uint64_t head_dim, kv_heads, group, q_width, q_rows, kv_width, qkv_width;
};
constexpr HeadWidths head_widths(const Config& c, Checked& ck) {
  HeadWidths h;
  h.head_dim = c.head_size();
  h.kv_heads = c.kv_heads();
  h.group = h.kv_heads ? c.n_heads / h.kv_heads : 0;
  h.q_width = ck.mul(c.n_heads, h.head_dim);
  h.q_rows = c.output_gate ? ck.mul(2, h.q_width) : h.q_width;
  h.kv_width = ck.mul(h.kv_heads, h.head_dim);
  h.qkv_width = ck.add(h.q_rows, ck.mul(2, h.kv_width));
  if (h.qkv_width > 0xffffffffull) ck.overflow = true;
  return h;
}
}  // namespace detail

// The plan of a config. Does not validate: byte counts of a config that validate() rejects are
// meaningless (but never UB: overflow is flagged). Use make_plan() for checked input.
constexpr Plan plan_for(const Config& c, const PlanOptions& o) {
  // Every attention layer full and shaped as full layers are (Gemma 4 without sliding layers):
  // one head shape, the full layers'.
  if (c.full_layers_shaped() && c.sliding_layers_before(c.n_layers) == 0) {
    Plan whole = plan_for(c.full_shape(), o);
    whole.config = c;
    return whole;
  }
  Plan p;
  detail::Checked ck;
  p.config = c;
  p.options = o;
  if (p.options.threads == 0) p.options.threads = 1;
  const detail::HeadWidths base = detail::head_widths(c, ck);
  const uint64_t qw = base.q_width, kvw = base.kv_width;
  p.head_dim = static_cast<uint32_t>(base.head_dim);
  p.group_size = static_cast<uint32_t>(base.group);
  p.q_width = static_cast<uint32_t>(qw);
  p.q_rows = static_cast<uint32_t>(base.q_rows);
  p.kv_width = static_cast<uint32_t>(kvw);
  p.qkv_width = static_cast<uint32_t>(base.qkv_width);
  const MlaShape& m = c.mla;
  const uint64_t mla_q = ck.mul(c.n_heads, uint64_t{m.qk_nope_head_dim} + m.qk_rope_head_dim);
  const uint64_t mla_v = ck.mul(c.n_heads, m.v_head_dim);
  if (c.is_mla()) {
    p.mla_rows.q_proj = static_cast<uint32_t>(ck.add(qw, kvw));
    p.mla_rows.q_a = static_cast<uint32_t>(ck.add(p.mla_rows.q_proj, mla_q));
    p.mla_rows.o_v = p.mla_rows.q_a + m.q_lora_rank;
    const uint64_t width = ck.add(p.mla_rows.o_v, mla_v);
    if (width > 0xffffffffull) ck.overflow = true;
    p.qkv_width = static_cast<uint32_t>(width);
  }
  p.max_tokens = o.max_tokens ? o.max_tokens : 512;
  // A causal call's tokens are positions of one sequence; a bidirectional model's may be an
  // encoder's batch of sequences (Session::encode), each within max_seq.
  if (p.max_tokens > c.max_seq && (c.causal || o.max_tokens == 0)) p.max_tokens = c.max_seq;
  p.sliding_layers = c.sliding_layers_before(c.n_layers);
  p.linear_layers = c.linear_layers_before(c.n_layers);
  const uint32_t attention_layers = c.n_layers - p.linear_layers;
  p.ring_rows = c.max_seq;
  if (c.window) {
    const uint64_t ring = uint64_t{c.sink_tokens} + c.window + p.max_tokens - 1;
    if (ring < c.max_seq) p.ring_rows = static_cast<uint32_t>(ring);
  }
  p.cache_rows = p.sliding_layers == c.n_layers ? p.ring_rows : c.max_seq;
  if (p.sliding_layers == 0) p.ring_rows = 0;
  p.kernel = kernel_for_head_dim(p.head_dim);

  const uint64_t wb = dtype_bytes(o.weight_dtype);
  // Attention layers' weights by kind; the layers' slots in order fill the weights region.
  const Config full_shape = c.full_shape();
  for (uint32_t full = 0; full < 2; ++full) {
    const Config& shape = full ? full_shape : c;
    p.owning_weight_bytes[full] = detail::attention_weight_bytes(shape, o, true, ck);
    p.sharing_weight_bytes[full] = detail::attention_weight_bytes(shape, o, false, ck);
  }
  // Attention layers by kind, [sliding, full], owning their cache or sharing another's (the
  // sharing layers are the last ones).
  const uint32_t first_shared = c.first_kv_shared_layer();
  const uint32_t owning_sliding = c.sliding_layers_before(first_shared);
  const uint32_t owning[2] = {owning_sliding, first_shared - owning_sliding - c.linear_layers_before(first_shared)};
  const uint32_t sharing[2] = {p.sliding_layers - owning[0], attention_layers - p.sliding_layers - owning[1]};
  p.kv_shared_layers = sharing[0] + sharing[1];
  for (uint32_t full = 0; full < 2; ++full) {
    p.weight_bytes = ck.add(p.weight_bytes, ck.mul(p.owning_weight_bytes[full], owning[full]));
    p.weight_bytes = ck.add(p.weight_bytes, ck.mul(p.sharing_weight_bytes[full], sharing[full]));
    if (owning[full] && p.owning_weight_bytes[full] > p.weight_bytes_per_layer) {
      p.weight_bytes_per_layer = p.owning_weight_bytes[full];
    }
    if (sharing[full] && p.sharing_weight_bytes[full] > p.weight_bytes_per_layer) {
      p.weight_bytes_per_layer = p.sharing_weight_bytes[full];
    }
  }
  const bool xnn = o.projection == Projection::kXnnpack;
  p.weights_region_bytes = o.weights_in_arena && !xnn ? p.weight_bytes : 0;
  if (p.linear_layers != 0) {
    const GatedDeltaShape& g = c.gated_delta;
    const bool blocks = dtype_is_block(o.weight_dtype);
    const auto matrix = [&](uint64_t rows, uint64_t in) {
      return blocks ? ck.mul(rows, dtype_row_bytes(o.weight_dtype, in)) : ck.mul(ck.mul(rows, in), wb);
    };
    // Win [linear_row, d_model] and Wout [d_model, value_width].
    p.linear_row = static_cast<uint32_t>(ck.add(ck.add(g.conv_width(), g.value_width()), ck.mul(2, g.value_heads)));
    const uint64_t matrices = ck.align(ck.add(matrix(p.linear_row, c.d_model), matrix(c.d_model, g.value_width())));
    const uint64_t vectors = ck.align(ck.mul(g.vector_floats(), 4));
    p.linear_weight_bytes_per_layer = o.weights_in_arena ? ck.add(vectors, matrices) : vectors;
    p.weight_bytes = ck.add(p.weight_bytes, ck.mul(ck.add(vectors, matrices), p.linear_layers));
    p.weights_region_bytes = ck.add(p.weights_region_bytes, ck.mul(p.linear_weight_bytes_per_layer, p.linear_layers));
    const uint64_t state = ck.mul(g.state_floats(), 4);
    const uint64_t window = ck.mul(g.window_floats(), 4);
    p.linear_state_bytes_per_layer = ck.add(ck.align(state), ck.align(window));
    p.linear_state_bytes = ck.mul(p.linear_state_bytes_per_layer, p.linear_layers);
  }
  // Each kind's head shape, [sliding, full]: the config's, and on full layers their own where they
  // have one (Gemma 4). The regions every layer uses in turn are sized for the larger.
  const bool present[2] = {p.sliding_layers != 0, attention_layers != p.sliding_layers};
  detail::HeadWidths shape[2] = {base, base};
  shape[0].qkv_width = shape[1].qkv_width = p.qkv_width;  // MLA's row: MLA has one shape
  if (c.full_layers_shaped()) shape[1] = detail::head_widths(full_shape, ck);
  const auto larger = [&present](uint64_t sliding, uint64_t full) {
    const uint64_t a = present[0] || !present[1] ? sliding : 0;
    const uint64_t b = present[1] ? full : 0;
    return a > b ? a : b;
  };

  if (xnn && !c.is_mla()) {  // MLA's projections are Highway's (the layer refuses XNNPACK)
    p.projection_blocks = p.options.threads < kXnnMaxBlocks ? p.options.threads : kXnnMaxBlocks;
    const uint32_t b = p.projection_blocks;
    // Borrowed weights: Q, K, V are three operators; copied: one fused QKV operator (bounded by
    // the three, since every term is additive in the output rows).
    uint64_t packed[2] = {};
    for (uint32_t full = 0; full < 2; ++full) {
      const Config& k = full ? full_shape : c;
      const detail::HeadWidths& h = shape[full];
      packed[full] = ck.align(ck.mul(ck.add(k.q_norm_width(), k.k_norm_width()), 4));
      packed[full] = ck.add(packed[full], xnn_packed_bytes_bound(h.q_rows, c.d_model, b));
      packed[full] = ck.add(packed[full], ck.mul(k.k_eq_v ? 1 : 2, xnn_packed_bytes_bound(h.kv_width, c.d_model, b)));
      packed[full] = ck.add(packed[full], xnn_packed_bytes_bound(c.d_model, h.q_width, b));
    }
    p.packed_bytes_per_layer = ck.align(larger(packed[0], packed[1]));
    p.packed_bytes = ck.mul(p.packed_bytes_per_layer, c.n_layers);
  }

  // K and V of one token in one layer: a row of head_dim values per kv head (block formats: whole
  // blocks, scales included). MLA: one row, K and V at once. Only the layers that own a cache
  // hold one.
  uint64_t kv_token[2] = {};
  for (uint32_t full = 0; full < 2; ++full) {
    kv_token[full] = ck.mul(ck.mul(c.is_mla() ? 1 : 2, shape[full].kv_heads),
                            dtype_row_bytes(c.kv_dtype, static_cast<uint32_t>(shape[full].head_dim)));
  }
  p.kv_bytes_full_layer = ck.align(ck.mul(kv_token[1], c.max_seq));
  p.kv_bytes_sliding_layer = ck.align(ck.mul(kv_token[0], p.ring_rows));
  p.kv_bytes_per_layer = larger(p.kv_bytes_sliding_layer, p.kv_bytes_full_layer);
  if (attention_layers == 0) p.kv_bytes_per_layer = p.kv_bytes_full_layer;
  p.kv_bytes_per_token = ck.add(ck.mul(kv_token[0], owning[0]), ck.mul(kv_token[1], owning[1]));
  p.kv_cache_bytes = ck.add(ck.mul(p.kv_bytes_sliding_layer, owning[0]), ck.mul(p.kv_bytes_full_layer, owning[1]));
  p.kv_shared_saved_bytes =
      ck.add(ck.mul(p.kv_bytes_sliding_layer, sharing[0]), ck.mul(p.kv_bytes_full_layer, sharing[1]));
  p.rope_bytes_per_layer =
      ck.align(ck.mul(larger(rope_frequency_count(c.rope, p.head_dim),
                             rope_frequency_count(c.rope, static_cast<uint32_t>(shape[1].head_dim))),
                      sizeof(double)));
  p.rope_bytes = ck.mul(p.rope_bytes_per_layer, c.n_layers);
  p.sinks_bytes_per_layer = c.sinks ? ck.align(ck.mul(c.n_heads, 4)) : 0;
  p.sinks_bytes = ck.mul(p.sinks_bytes_per_layer, c.n_layers);
  p.alibi_bytes = c.alibi ? ck.align(ck.mul(c.n_heads, 4)) : 0;

  uint64_t act_row = larger(shape[0].qkv_width, shape[1].qkv_width);
  if (p.linear_row > act_row) act_row = p.linear_row;
  uint64_t out_row = larger(shape[0].q_width, shape[1].q_width);
  if (p.linear_layers && c.gated_delta.value_width() > out_row) out_row = c.gated_delta.value_width();
  const uint64_t qkv_act = ck.align(ck.mul(ck.mul(p.max_tokens, act_row), 4));
  const uint64_t attn_act = ck.align(ck.mul(ck.mul(p.max_tokens, out_row), 4));
  const uint64_t model_act = ck.align(ck.mul(ck.mul(p.max_tokens, c.d_model), 4));
  p.activation_bytes = ck.add(ck.add(qkv_act, attn_act), ck.mul(2, model_act));
  uint64_t scratch[2] = {}, partials[2] = {};
  for (uint32_t full = 0; full < 2; ++full) {
    const detail::HeadWidths& h = shape[full];
    const uint32_t hd = static_cast<uint32_t>(h.head_dim), group = static_cast<uint32_t>(h.group);
    scratch[full] = ck.align(attention_scratch_bytes(hd, group));
    partials[full] =
        attention_partials_bytes_bound(hd, group, static_cast<uint32_t>(h.kv_heads), p.cache_rows, p.max_tokens);
  }
  p.scratch_bytes_per_thread = larger(scratch[0], scratch[1]);
  if (p.linear_layers != 0) {
    const uint64_t chunked =
        ck.align(ck.mul(gated_delta_chunk_scratch_floats(c.gated_delta.key_head_dim, c.gated_delta.value_head_dim), 4));
    if (chunked > p.scratch_bytes_per_thread) p.scratch_bytes_per_thread = chunked;
  }
  p.attention_partials_bytes = larger(partials[0], partials[1]);
  p.scratch_bytes = ck.add(ck.mul(p.scratch_bytes_per_thread, p.options.threads), p.attention_partials_bytes);

  p.weights_offset = 0;
  p.packed_offset = p.weights_region_bytes;
  p.kv_offset = ck.add(p.packed_offset, p.packed_bytes);
  p.linear_state_offset = ck.add(p.kv_offset, p.kv_cache_bytes);
  p.rope_offset = ck.add(p.linear_state_offset, p.linear_state_bytes);
  p.sinks_offset = ck.add(p.rope_offset, p.rope_bytes);
  p.alibi_offset = ck.add(p.sinks_offset, p.sinks_bytes);
  p.activations_offset = ck.add(p.alibi_offset, p.alibi_bytes);
  p.attention_out_offset = ck.add(p.activations_offset, qkv_act);
  p.block_out_offset = ck.add(p.attention_out_offset, attn_act);
  p.stream_offset = ck.add(p.block_out_offset, model_act);
  p.scratch_offset = ck.add(p.activations_offset, p.activation_bytes);
  const uint64_t before_model = ck.add(p.scratch_offset, p.scratch_bytes);
  p.model_weights_offset = before_model;
  p.model_activations_offset = before_model;
  p.mlp_hidden_offset = before_model;
  p.logits_offset = before_model;
  p.sampler_offset = before_model;
  if (c.model.vocab_size > 0) {
    const uint64_t ffn = c.model.intermediate_size;
    for (const ModelTensorInfo& info : kModelTensors) {
      if (!model_has_tensor(c, info.tensor) || !model_tensor_in_arena(o, info.tensor)) continue;
      const TensorShape s = model_tensor_shape(c, info.tensor);
      const uint64_t bytes = ck.align(ck.mul(ck.mul(s.rows, s.cols), info.f32 ? 4 : wb));
      if (info.per_layer) p.model_layer_bytes = ck.add(p.model_layer_bytes, bytes);
      else p.model_global_bytes = ck.add(p.model_global_bytes, bytes);
    }
    p.logits_rows = !c.causal ? 0 : o.all_logits ? p.max_tokens : 1;
    p.model_weights_bytes = ck.add(p.model_global_bytes, ck.mul(p.model_layer_bytes, c.n_layers));
    p.model_activations_offset = ck.add(p.model_weights_offset, p.model_weights_bytes);
    p.mlp_hidden_offset = ck.add(p.model_activations_offset, model_act);
    const uint64_t hidden = ck.align(ck.mul(ck.mul(p.max_tokens, 2), ck.mul(ffn, 4)));
    p.logits_offset = ck.add(p.mlp_hidden_offset, hidden);
    const uint64_t logits = ck.align(ck.mul(ck.mul(p.logits_rows, c.model.vocab_size), 4));
    p.sampler_offset = ck.add(p.logits_offset, logits);
    const uint64_t sampler = c.causal ? ck.align(ck.mul(c.model.vocab_size, 8)) : 0;
    p.model_activation_bytes = ck.add(ck.add(model_act, hidden), ck.add(logits, sampler));
  }
  p.arena_bytes = ck.add(ck.add(before_model, p.model_weights_bytes), p.model_activation_bytes);
  p.overflow = ck.overflow;
  return p;
}

}  // namespace headway
