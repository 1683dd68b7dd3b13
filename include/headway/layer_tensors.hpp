// The tensors one layer's LayerWeights holds for a plan, with their shapes and kinds: the list the
// random-weight makers (headway run, the Python Session) fill, so that a layer kind (gated
// queries, V from K, MLA's latents, Gated DeltaNet) adds its tensors in one place.
#pragma once

#include <cstdint>

#include "headway/plan.hpp"
#include "headway/weights.hpp"

namespace headway {

enum class LayerTensorKind : uint8_t {
  kMatrix,  // [out, in]: values ~ N(0, 1/in)
  kBias,    // [out]: small values around 0
  kNorm,    // a norm's weight: values around 1 (less the config's offset)
  kSinks,   // sink logits: about the size of a score
  kScale,   // a weight around 1 that no norm offset applies to (Gated DeltaNet's A_log and output norm)
};

struct LayerTensorShape {
  TensorRef LayerWeights::*member = nullptr;
  uint32_t rows = 0, cols = 0;
  LayerTensorKind kind = LayerTensorKind::kMatrix;
};

struct LayerTensorShapes {
  LayerTensorShape tensor[12];
  uint32_t count = 0;
};

// Layer `layer`'s (its kind: attention, or a Gated DeltaNet layer of LayerKinds::linear).
constexpr LayerTensorShapes layer_tensor_shapes(const Plan& p, uint32_t layer) {
  const Config& c = p.config;
  LayerTensorShapes s;
  auto add = [&s](TensorRef LayerWeights::*m, uint32_t rows, uint32_t cols, LayerTensorKind kind) {
    s.tensor[s.count++] = LayerTensorShape{m, rows, cols, kind};
  };
  using K = LayerTensorKind;
  if (c.layer_is_linear(layer)) {
    const GatedDeltaShape& g = c.gated_delta;
    add(&LayerWeights::w_qkv, g.conv_width(), c.d_model, K::kMatrix);
    add(&LayerWeights::w_z, g.value_width(), c.d_model, K::kMatrix);
    add(&LayerWeights::w_b, g.value_heads, c.d_model, K::kMatrix);
    add(&LayerWeights::w_a, g.value_heads, c.d_model, K::kMatrix);
    add(&LayerWeights::conv, g.conv_width(), g.conv_kernel, K::kMatrix);
    add(&LayerWeights::a_log, 1, g.value_heads, K::kScale);
    add(&LayerWeights::dt_bias, 1, g.value_heads, K::kBias);
    add(&LayerWeights::out_norm, 1, g.value_head_dim, K::kScale);
    add(&LayerWeights::wo, c.d_model, g.value_width(), K::kMatrix);
    return s;
  }
  if (c.is_mla()) {
    const MlaShape& m = c.mla;
    const uint32_t q_out = c.n_heads * (m.qk_nope_head_dim + m.qk_rope_head_dim);
    if (m.q_lora_rank) {
      add(&LayerWeights::wq_a, m.q_lora_rank, c.d_model, K::kMatrix);
      add(&LayerWeights::q_a_norm, 1, m.q_lora_rank, K::kNorm);
      add(&LayerWeights::wq, q_out, m.q_lora_rank, K::kMatrix);
    } else {
      add(&LayerWeights::wq, q_out, c.d_model, K::kMatrix);
    }
    add(&LayerWeights::wkv_a, m.kv_lora_rank + m.qk_rope_head_dim, c.d_model, K::kMatrix);
    add(&LayerWeights::kv_a_norm, 1, m.kv_lora_rank, K::kNorm);
    add(&LayerWeights::wkv_b, c.n_heads * (m.qk_nope_head_dim + m.v_head_dim), m.kv_lora_rank, K::kMatrix);
    add(&LayerWeights::wo, c.d_model, c.n_heads * m.v_head_dim, K::kMatrix);
    return s;
  }
  // The layer's own head shape (Gemma 4's full layers); a layer that shares KV has no K/V tensors.
  const Plan own = layer < c.n_layers ? layer_plan(p, layer) : p;
  const Config& a = own.config;
  const bool kv = !(layer < c.n_layers && p.layer(layer).shares_kv);
  const bool v = kv && !a.k_eq_v;
  add(&LayerWeights::wq, own.q_rows, a.d_model, K::kMatrix);
  if (kv) add(&LayerWeights::wk, own.kv_width, a.d_model, K::kMatrix);
  if (v) add(&LayerWeights::wv, own.kv_width, a.d_model, K::kMatrix);
  add(&LayerWeights::wo, a.d_model, own.q_width, K::kMatrix);
  if (a.qkv_bias) {
    add(&LayerWeights::bq, 1, own.q_rows, K::kBias);
    if (kv) add(&LayerWeights::bk, 1, own.kv_width, K::kBias);
    if (v) add(&LayerWeights::bv, 1, own.kv_width, K::kBias);
  }
  if (a.o_bias) add(&LayerWeights::bo, 1, a.d_model, K::kBias);
  if (a.qk_norm) {
    add(&LayerWeights::q_norm, 1, a.q_norm_width(), K::kNorm);
    if (kv) add(&LayerWeights::k_norm, 1, a.k_norm_width(), K::kNorm);
  }
  if (a.sinks) add(&LayerWeights::sinks, 1, a.n_heads, K::kSinks);
  return s;
}

}  // namespace headway
