// The double-precision reference of one Gated DeltaNet layer (Config::gated_delta), as
// transformers' Qwen3_5GatedDeltaNet computes it, written out token by token: the input
// projections, the causal depthwise convolution (its window carried from call to call) and SiLU,
// q and k L2-normed (q scaled by dk^-1/2), β = sigmoid(b), g = −exp(A_log)·softplus(a + dt_bias),
// the delta rule on each value head's state, the gated RMS norm with silu(z), out_proj. Also the
// seeded random weights the layer tests run it on.
#pragma once

#include <cstdint>
#include <vector>

#include "headway/config.hpp"
#include "headway/weights.hpp"

namespace headway {
namespace test {

// Row-major, as the layer reads them: in_proj_qkv [conv_width, d_model], in_proj_z [value_width,
// d_model], in_proj_b and in_proj_a [value_heads, d_model], conv [conv_width, conv_kernel],
// a_log and dt_bias [value_heads], norm [value_head_dim], out [d_model, value_width].
struct GatedDeltaTensors {
  std::vector<float> qkv, z, b, a, conv, a_log, dt_bias, norm, out;
  // The runtime's view of these (f32), valid while this object lives and is not moved from.
  LayerWeights view() const;
};
// W ~ N(0, 1/in), conv ~ N(0, 1/kernel), A_log = log U(0.01, 16), dt_bias ~ 1 + 0.3·N, norm ~
// 1 + 0.1·N.
GatedDeltaTensors random_gated_delta(const Config& config, uint64_t seed);

class RefGatedDelta {
 public:
  RefGatedDelta(const Config& config, const GatedDeltaTensors& w);
  // Zero state and window.
  void reset();
  // x [t, d_model] → y [t, d_model].
  std::vector<double> forward(const std::vector<double>& x, uint32_t t);

 private:
  Config c_;
  const GatedDeltaTensors* w_;
  std::vector<double> state_;   // [value_heads, dk, dv]
  std::vector<double> window_;  // [conv_kernel − 1, conv_width], oldest first
};

}  // namespace test
}  // namespace headway
