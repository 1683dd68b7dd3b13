// Multi-head latent attention (Config::mla) in its absorbed form: the AttentionLayer's forward
// for a DeepSeek-V2/V3, MiniCPM3, Youtu-LLM or PLM layer. One token's fused row (Plan::mla_rows):
//   [absorbed queries: n_heads × (rope | kv_lora)] [cache row: rope | kv_lora]
//   [query projection: n_heads × (nope | rope)] [query latent: q_lora] [values: n_heads × v_head_dim]
// The cache row is K and V at once (KvCache reads V from it), so the attention's output per head
// is [Σ p·r | Σ p·c]; its latent part goes through the head's W_UV.
#include <cstring>

#include "headway/layer.hpp"
#include "runtime/linear/dense.hpp"
#include "runtime/model/layer_checks.hpp"
#include "runtime/model/layer_slot.hpp"
#include "runtime/model/model_ops.hpp"

namespace headway {

namespace {

// Rows [first, first + n) of a matrix, as a matrix of its own.
TensorRef rows_of(const TensorRef& t, uint32_t first, uint32_t n) {
  TensorRef r = t;
  r.data = static_cast<const uint8_t*>(t.data) + uint64_t{first} * dtype_row_bytes(t.dtype, t.cols);
  r.rows = n;
  return r;
}

}  // namespace

Status check_mla_weights(const Plan& plan, const LayerWeights& w, uint32_t layer) {
  const Config& c = plan.config;
  const MlaShape& m = c.mla;
  const uint32_t q_out = c.n_heads * (m.qk_nope_head_dim + m.qk_rope_head_dim);
  if (m.q_lora_rank) {
    HEADWAY_RETURN_IF_ERROR(check_layer_tensor(w.wq_a, "wq_a", layer, true, m.q_lora_rank, c.d_model));
    HEADWAY_RETURN_IF_ERROR(check_layer_tensor(w.q_a_norm, "q_a_norm", layer, true, 1, m.q_lora_rank));
    HEADWAY_RETURN_IF_ERROR(check_layer_tensor(w.wq, "wq (q_b)", layer, true, q_out, m.q_lora_rank));
  } else {
    HEADWAY_RETURN_IF_ERROR(check_layer_tensor(w.wq, "wq", layer, true, q_out, c.d_model));
  }
  HEADWAY_RETURN_IF_ERROR(
      check_layer_tensor(w.wkv_a, "wkv_a", layer, true, m.kv_lora_rank + m.qk_rope_head_dim, c.d_model));
  HEADWAY_RETURN_IF_ERROR(check_layer_tensor(w.kv_a_norm, "kv_a_norm", layer, true, 1, m.kv_lora_rank));
  HEADWAY_RETURN_IF_ERROR(check_layer_tensor(w.wkv_b, "wkv_b", layer, true,
                                             c.n_heads * (m.qk_nope_head_dim + m.v_head_dim), m.kv_lora_rank));
  if (w.wkv_b.row_groups) {  // read a head's rows at a time (rows_of)
    return Status::error(Code::kInvalidArgument,
                         "layer %u: tensor wkv_b is marked row_groups; an MLA layer reads it as its file holds it",
                         layer);
  }
  return check_layer_tensor(w.wo, "wo", layer, true, c.d_model, c.n_heads * m.v_head_dim);
}

// The layer's tensors in the arena's slice of the layer (weight_dtype, back to back, in the
// order of Plan's count), or borrowed as they are.
void AttentionLayer::init_mla_weights(const LayerWeights& weights) {
  const Plan& p = *s_.plan;
  s_.w = weights;
  if (!p.options.weights_in_arena) return;
  LayerSlotWriter slot{s_.arena->layer_weights(s_.layer), p.options.weight_dtype};
  s_.w = LayerWeights{};
  s_.w.wq_a = slot.put(weights.wq_a);
  s_.w.q_a_norm = slot.put(weights.q_a_norm);
  s_.w.wq = slot.put(weights.wq);
  s_.w.wkv_a = slot.put(weights.wkv_a);
  s_.w.kv_a_norm = slot.put(weights.kv_a_norm);
  s_.w.wkv_b = slot.put(weights.wkv_b);
  s_.w.wo = slot.put(weights.wo);
}

Status AttentionLayer::forward_mla(const float* x, float* y, uint32_t t) {
  const Plan& p = *s_.plan;
  const Config& c = p.config;
  const MlaShape& m = c.mla;
  const uint32_t d = c.d_model, heads = c.n_heads, hd = p.head_dim;
  const uint32_t rope = m.qk_rope_head_dim, nope = m.qk_nope_head_dim, latent = m.kv_lora_rank;
  const uint32_t q_head = nope + rope, kv_b_head = nope + m.v_head_dim;
  const size_t w = p.qkv_width;
  float* qkv = s_.arena->qkv();
  float* attn = s_.arena->attention_out();
  float* q_proj = qkv + p.mla_rows.q_proj;
  float* kv = qkv + p.q_width;

  // The model's queries: x·Wqᵀ, or through the query latent and its norm.
  if (m.q_lora_rank) {
    float* q_a = qkv + p.mla_rows.q_a;
    dense_highway({s_.w.wq_a, {}}, x, d, q_a, w, t, s_.pool);
    for (uint32_t i = 0; i < t; ++i)
      rms_norm_heads(q_a + i * w, 1, m.q_lora_rank, &s_.w.q_a_norm, m.q_a_norm_eps, 0.0f);
    dense_highway({s_.w.wq, {}}, q_a, w, q_proj, w, t, s_.pool);
  } else {
    dense_highway({s_.w.wq, {}}, x, d, q_proj, w, t, s_.pool);
  }
  // The cache row: x·Wkv_aᵀ gives [c | r]; laid out [r | c], c RMS-normed.
  dense_highway({s_.w.wkv_a, {}}, x, d, kv, w, t, s_.pool);
  float r[kMaxHeadDim];
  for (uint32_t i = 0; i < t; ++i) {
    float* row = kv + i * w;
    std::memcpy(r, row + latent, size_t{rope} * sizeof(float));
    std::memmove(row + rope, row, size_t{latent} * sizeof(float));
    std::memcpy(row, r, size_t{rope} * sizeof(float));
    rms_norm_heads(row + rope, 1, latent, &s_.w.kv_a_norm, m.kv_a_norm_eps, 0.0f);
  }
  // Absorbed queries: head h's [q_rope | W_UK[h]ᵀ·q_nope], W_UK[h] the head's first nope rows of
  // Wkv_b, each row widened once for every token.
  float wrow[kMaxHeadDim];
  for (uint32_t i = 0; i < t; ++i) {
    for (uint32_t h = 0; h < heads; ++h) {
      float* q = qkv + i * w + size_t{h} * hd;
      std::memcpy(q, q_proj + i * w + size_t{h} * q_head + nope, size_t{rope} * sizeof(float));
      std::memset(q + rope, 0, size_t{latent} * sizeof(float));
    }
  }
  for (uint32_t h = 0; h < heads; ++h) {
    for (uint32_t j = 0; j < nope; ++j) {
      tensor_row(s_.w.wkv_b, uint64_t{h} * kv_b_head + j, wrow);
      for (uint32_t i = 0; i < t; ++i) {
        const float a = q_proj[i * w + size_t{h} * q_head + j];
        float* q = qkv + i * w + size_t{h} * hd + rope;
        for (uint32_t e = 0; e < latent; ++e) q[e] += a * wrow[e];
      }
    }
  }
  // The cache rotates the rows' first rope values as they enter it, then the queries' as the last
  // t tokens' (and both by its Hadamard rotation, where it has one).
  Backend b = backend();
  HEADWAY_RETURN_IF_ERROR(b.append_unchecked(kv, w, kv, w, t));
  b.rotate_queries_unchecked(qkv, w, t);
  HEADWAY_RETURN_IF_ERROR(b.attend_unchecked(qkv, w, attn, p.q_width, t, nullptr));
  // Each head's value: W_UV[h]·(its output's latent part), W_UV[h] the head's last v_head_dim
  // rows of Wkv_b; then Wo.
  float* values = qkv + p.mla_rows.o_v;
  for (uint32_t h = 0; h < heads; ++h) {
    const TensorRef uv = rows_of(s_.w.wkv_b, h * kv_b_head + nope, m.v_head_dim);
    dense_highway({uv, {}}, attn + size_t{h} * hd + rope, p.q_width, values + size_t{h} * m.v_head_dim, w, t, s_.pool);
  }
  dense_highway({s_.w.wo, {}}, values, w, y, d, t, s_.pool);
  return Status();
}

}  // namespace headway
