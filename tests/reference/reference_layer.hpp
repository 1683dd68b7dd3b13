// The double-precision reference of one attention block and of the Session's residual stack:
// plain loops over the definitions (projections, biases, per-head RMS q/k norm with its weight
// offset, V from K's projection or normed without a weight (Gemma 3n / 4), RoPE, attention
// through reference_attention with the layer's sink logits when config.sinks, the output gate's
// sigmoid, output projection). Weights come as the values the runtime sees (already
// rounded to their storage dtype); K and V are rounded to the cache's kv_dtype before attention, exactly as the cache
// stores them.
#pragma once

#include <cstdint>
#include <vector>

#include "headway/config.hpp"
#include "headway/weights.hpp"

namespace headway {
namespace test {

// W [out, in] row-major, biases, norms and sink logits 1-D; empty = absent.
struct RefWeights {
  std::vector<double> wq, wk, wv, wo, bq, bk, bv, bo, q_norm, k_norm, sinks;
};

class RefLayer {
 public:
  RefLayer(const Config& config, RefWeights weights) : c_(config), w_(static_cast<RefWeights&&>(weights)) {}

  // Empties the history; the next token sits at start_position.
  void reset(uint32_t start_position = 0) {
    k_.clear();
    v_.clear();
    pos_ = start_position;
    n_ = 0;
  }
  // x [t, d_model] → y [t, d_model].
  std::vector<double> forward(const std::vector<double>& x, uint32_t t);
  // Shared KV (Gemma 3n / 4): attend over `owner`'s K/V history instead of projecting its own; its t
  // queries are the last t tokens owner ran (owner runs each call first).
  void read_kv_of(const RefLayer* owner) { owner_ = owner; }

 private:
  void append_kv(const std::vector<double>& x, uint32_t t);

  Config c_;
  RefWeights w_;
  const RefLayer* owner_ = nullptr;
  std::vector<float> k_, v_;  // [n, kv_heads, head_dim], rotated, rounded to kv_dtype
  uint32_t pos_ = 0;
  uint32_t n_ = 0;
};

// The residual stack: h = x; h += layer_l(h) for every layer; returns h.
std::vector<double> reference_stack(std::vector<RefLayer>& layers, const std::vector<double>& x, uint32_t t);

// Seeded random weights of one layer of `config` (W ~ N(0, 1/in), biases ~ 0.1·N, norms ~ 1 +
// 0.1·N, sink logits ~ 0.5 + N when config.sinks), stored in `dtype`: the runtime's view (pointing into `storage`) and
// the same values, rounded to dtype, in double for the reference. Move it, never copy it (view points into storage).
struct TestLayerWeights {
  std::vector<std::vector<uint16_t>> storage;  // one buffer per tensor (f32 as pairs of halves)
  LayerWeights view;
  RefWeights ref;
  TestLayerWeights() = default;
  TestLayerWeights(TestLayerWeights&&) = default;
  TestLayerWeights& operator=(TestLayerWeights&&) = default;
  TestLayerWeights(const TestLayerWeights&) = delete;
};
TestLayerWeights make_test_weights(const Config& config, DType dtype, uint64_t seed);

}  // namespace test
}  // namespace headway
