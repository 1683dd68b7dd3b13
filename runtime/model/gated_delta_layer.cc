// Gated DeltaNet (a linear layer, LayerKinds::linear): the AttentionLayer's forward for
// Qwen3.5's and Qwen3-Next's linear_attention layers, as transformers' Qwen3_5GatedDeltaNet
// computes it. One token's projected row (Plan::linear_row), in the arena's qkv region:
//   [q: key_heads × dk | k: key_heads × dk | v: value_heads × dv | z: value_width | b | a]
// The convolution runs in place over [q | k | v] (SiLU after), q and k are L2-normed (q then
// scaled by dk^-1/2), b becomes β = sigmoid(b) and a the log decay g = A · softplus(a + dt_bias)
// in place. Each value head's state [dk, dv] then runs the gated delta rule over the tokens
// (simd/gated_delta/gated_delta.h) into the attention output region [t, value_width], which the gated RMS
// norm (· silu(z)) and out_proj turn into y.
//
// The layer's slot in the weights region (Plan::layer_weights_offset), f32 vectors first:
//   [conv taps: conv_width × conv_kernel] [A = −exp(A_log): value_heads] [dt_bias: value_heads]
//   [norm weight: dv], aligned; then, unless borrowed, Win [linear_row, d_model] (in_proj_qkv,
//   in_proj_z, in_proj_b, in_proj_a stacked) and Wout [d_model, value_width] in weight_dtype.
// Its state region (Plan::layer(i).state_offset): the heads' states [value_heads, dk, dv] f32,
// then the convolution window [conv_kernel − 1, conv_width] f32, its last inputs, oldest first.
#include <cmath>
#include <cstring>

#include "headway/layer.hpp"
#include "runtime/linear/dense.hpp"
#include "runtime/model/layer_checks.hpp"
#include "runtime/model/layer_slot.hpp"
#include "runtime/model/model_ops.hpp"
#include "simd/gated_delta/gated_delta.h"

namespace headway {

namespace {

// Channels the convolution carries through the tokens at once (one 512-bit vector of f32).
constexpr uint32_t kConvLanes = 16;
// Calls of this many tokens or more run the chunked form of the delta rule (its matrix products
// pay from a few tokens on); a decode step's one token runs the recurrent form.
constexpr uint32_t kGatedDeltaChunkedFrom = 2;

// torch's softplus (beta 1, threshold 20): x itself above the threshold.
float softplus(float x) { return x > 20.0f ? x : std::log1p(std::exp(x)); }

// The causal depthwise convolution of t rows (row stride `stride`) over their first `width`
// channels, in place, then SiLU; `window` [taps − 1, width] holds the inputs before the first row
// and afterwards the last taps − 1 inputs. Each block of channels keeps its previous inputs in a
// small ring, so a row is read and written once.
void causal_conv(float* rows, size_t stride, uint32_t t, uint32_t width, const float* taps, uint32_t k, float* window) {
  const uint32_t keep = k - 1;
  for (uint32_t c0 = 0; c0 < width; c0 += kConvLanes) {
    const uint32_t n = width - c0 < kConvLanes ? width - c0 : kConvLanes;
    float ring[kMaxGatedDeltaConvKernel][kConvLanes] = {};  // the last inputs, oldest first
    for (uint32_t j = 0; j < keep; ++j) std::memcpy(ring[j], window + size_t{j} * width + c0, n * sizeof(float));
    for (uint32_t r = 0; r < t; ++r) {
      float* x = rows + size_t{r} * stride + c0;
      float out[kConvLanes];
      for (uint32_t c = 0; c < n; ++c) {
        const float* w = taps + size_t{c0 + c} * k;
        float acc = w[keep] * x[c];
        for (uint32_t j = 0; j < keep; ++j) acc += w[j] * ring[j][c];
        out[c] = acc;
      }
      for (uint32_t j = 0; j + 1 < keep; ++j) std::memcpy(ring[j], ring[j + 1], n * sizeof(float));
      if (keep) std::memcpy(ring[keep - 1], x, n * sizeof(float));
      for (uint32_t c = 0; c < n; ++c) x[c] = silu(out[c]);
    }
    for (uint32_t j = 0; j < keep; ++j) std::memcpy(window + size_t{j} * width + c0, ring[j], n * sizeof(float));
  }
}

// x · rsqrt(Σx² + 1e-6) · scale over n values, in place (transformers' l2norm, as FLA's).
void l2_normalize(float* x, uint32_t n, float scale) {
  float sum = 0.0f;
  for (uint32_t i = 0; i < n; ++i) sum += x[i] * x[i];
  const float s = scale / std::sqrt(sum + 1e-6f);
  for (uint32_t i = 0; i < n; ++i) x[i] *= s;
}

// One value head's delta rule over the call's tokens: a task of the pool.
struct DeltaHeads {
  const Plan* plan;
  float* rows;    // the projected rows [t, linear_row]
  float* out;     // [t, value_width]
  float* states;  // [value_heads, dk, dv]
  uint8_t* scratch;
  uint32_t t;
};

void run_head(void* ctx, uint32_t slot, size_t head) {
  const DeltaHeads& d = *static_cast<const DeltaHeads*>(ctx);
  const Plan& p = *d.plan;
  const GatedDeltaShape& g = p.config.gated_delta;
  const uint32_t h = static_cast<uint32_t>(head);
  const uint32_t kh = g.tiled_value_heads ? h % g.key_heads : h / (g.value_heads / g.key_heads);
  simd::GatedDeltaArgs a;
  a.state = d.states + size_t{h} * g.key_head_dim * g.value_head_dim;
  a.dk = g.key_head_dim;
  a.dv = g.value_head_dim;
  a.q = d.rows + size_t{kh} * g.key_head_dim;
  a.k = d.rows + g.key_width() + size_t{kh} * g.key_head_dim;
  a.qk_stride = p.linear_row;
  a.v = d.rows + 2 * size_t{g.key_width()} + size_t{h} * g.value_head_dim;
  a.v_stride = p.linear_row;
  const size_t gates = size_t{g.conv_width()} + g.value_width();
  a.beta = d.rows + gates + h;
  a.g = d.rows + gates + g.value_heads + h;
  a.gb_stride = p.linear_row;
  a.out = d.out + size_t{h} * g.value_head_dim;
  a.out_stride = g.value_width();
  a.t = d.t;
  if (d.t >= kGatedDeltaChunkedFrom) {
    simd::gated_delta_chunked(a, reinterpret_cast<float*>(d.scratch + uint64_t{slot} * p.scratch_bytes_per_thread));
  } else {
    simd::gated_delta_recurrent(a);
  }
}

}  // namespace

Status check_gated_delta_weights(const Plan& plan, const LayerWeights& w, uint32_t layer) {
  const Config& c = plan.config;
  const GatedDeltaShape& g = c.gated_delta;
  HEADWAY_RETURN_IF_ERROR(check_layer_tensor(w.w_qkv, "in_proj_qkv", layer, true, g.conv_width(), c.d_model));
  HEADWAY_RETURN_IF_ERROR(check_layer_tensor(w.w_z, "in_proj_z", layer, true, g.value_width(), c.d_model));
  HEADWAY_RETURN_IF_ERROR(check_layer_tensor(w.w_b, "in_proj_b", layer, true, g.value_heads, c.d_model));
  HEADWAY_RETURN_IF_ERROR(check_layer_tensor(w.w_a, "in_proj_a", layer, true, g.value_heads, c.d_model));
  HEADWAY_RETURN_IF_ERROR(check_layer_tensor(w.conv, "conv1d", layer, true, g.conv_width(), g.conv_kernel));
  // A_log, or A itself (llama.cpp's ssm_a, which must be negative: the state decays).
  const bool a_itself = !w.a_log.present() && w.a_neg.present();
  HEADWAY_RETURN_IF_ERROR(
      check_layer_tensor(a_itself ? w.a_neg : w.a_log, a_itself ? "ssm_a" : "A_log", layer, true, 1, g.value_heads));
  HEADWAY_RETURN_IF_ERROR(check_layer_tensor(w.dt_bias, "dt_bias", layer, true, 1, g.value_heads));
  HEADWAY_RETURN_IF_ERROR(check_layer_tensor(w.out_norm, "norm", layer, true, 1, g.value_head_dim));
  HEADWAY_RETURN_IF_ERROR(check_layer_tensor(w.wo, "out_proj", layer, true, c.d_model, g.value_width()));
  HEADWAY_RETURN_IF_ERROR(check_layer_tensor_finite(w.conv, "conv1d", layer));
  HEADWAY_RETURN_IF_ERROR(check_layer_tensor_finite(a_itself ? w.a_neg : w.a_log, a_itself ? "ssm_a" : "A_log", layer));
  HEADWAY_RETURN_IF_ERROR(check_layer_tensor_finite(w.dt_bias, "dt_bias", layer));
  HEADWAY_RETURN_IF_ERROR(check_layer_tensor_finite(w.out_norm, "norm", layer));
  for (uint32_t h = 0; a_itself && h < g.value_heads; ++h) {
    const float a = tensor_at(w.a_neg, h);
    if (!(a < 0.0f)) {
      return Status::error(Code::kInvalidArgument,
                           "layer %u: tensor ssm_a: ssm_a[%u] = %g is not negative (A = "
                           "-exp(A_log))",
                           layer, h, static_cast<double>(a));
    }
  }
  return Status();
}

void AttentionLayer::init_gated_delta(const LayerWeights& weights) {
  const Plan& p = *s_.plan;
  const GatedDeltaShape& g = p.config.gated_delta;
  float* vectors = reinterpret_cast<float*>(s_.arena->layer_weights(s_.layer));
  convert_tensor(weights.conv, vectors, DType::kF32);
  float* a = vectors + size_t{g.conv_width()} * g.conv_kernel;
  for (uint32_t h = 0; h < g.value_heads; ++h) {
    a[h] = weights.a_log.present() ? -std::exp(tensor_at(weights.a_log, h)) : tensor_at(weights.a_neg, h);
  }
  convert_tensor(weights.dt_bias, a + g.value_heads, DType::kF32);
  convert_tensor(weights.out_norm, a + 2 * g.value_heads, DType::kF32);
  s_.delta_vectors = vectors;
  s_.w = LayerWeights{};
  s_.fused_qkv = p.options.weights_in_arena;
  if (!s_.fused_qkv) {
    s_.w.w_qkv = weights.w_qkv;
    s_.w.w_z = weights.w_z;
    s_.w.w_b = weights.w_b;
    s_.w.w_a = weights.w_a;
    s_.w.wo = weights.wo;
  } else {
    LayerSlotWriter slot{reinterpret_cast<uint8_t*>(vectors) + align_up(g.vector_floats() * sizeof(float)),
                         p.options.weight_dtype};
    s_.w.w_qkv = slot.put(weights.w_qkv);  // Win: in_proj_qkv, then z, b and a, one [linear_row, d_model] matrix
    slot.put(weights.w_z);
    slot.put(weights.w_b);
    slot.put(weights.w_a);
    s_.w.w_qkv.rows = p.linear_row;
    s_.w.wo = slot.put(weights.wo);
  }
  s_.delta_state = s_.arena->linear_state(s_.layer);
  reset_gated_delta(0);
}

void AttentionLayer::reset_gated_delta(uint32_t start_position) {
  std::memset(s_.delta_state, 0, s_.plan->linear_state_bytes_per_layer);
  s_.linear_position = start_position;
}

Status AttentionLayer::forward_gated_delta(const float* x, float* y, uint32_t t) {
  const Plan& p = *s_.plan;
  const Config& c = p.config;
  const GatedDeltaShape& g = c.gated_delta;
  float* rows = s_.arena->qkv();
  float* out = s_.arena->attention_out();
  const size_t stride = p.linear_row;
  const uint32_t d = c.d_model;
  if (s_.fused_qkv) {
    dense_highway({s_.w.w_qkv, {}}, x, d, rows, stride, t, s_.pool);
  } else {
    uint32_t at = 0;
    for (const TensorRef* m : {&s_.w.w_qkv, &s_.w.w_z, &s_.w.w_b, &s_.w.w_a}) {
      dense_highway({*m, {}}, x, d, rows + at, stride, t, s_.pool);
      at += m->rows;
    }
  }
  const float* taps = s_.delta_vectors;
  const float* a_neg = taps + size_t{g.conv_width()} * g.conv_kernel;  // A = −exp(A_log)
  const float* dt_bias = a_neg + g.value_heads;
  const float* norm = dt_bias + g.value_heads;
  float* window = s_.delta_state + align_up(g.state_floats() * sizeof(float)) / sizeof(float);
  // The gates first: a token whose decay or β is not finite (NaN or infinite x) is refused
  // before the window or the state change.
  const size_t gates = size_t{g.conv_width()} + g.value_width();
  for (uint32_t i = 0; i < t; ++i) {
    float* b = rows + i * stride + gates;
    float* a = b + g.value_heads;
    for (uint32_t h = 0; h < g.value_heads; ++h) {
      b[h] = sigmoid(b[h]);
      a[h] = a_neg[h] * softplus(a[h] + dt_bias[h]);
      if (!std::isfinite(a[h]) || !std::isfinite(b[h])) {
        return Status::error(Code::kInvalidArgument,
                             "layer %u: token %u's gates for value head %u are not finite (decay %g, beta %g): x "
                             "holds NaN or infinite values; nothing changed",
                             s_.layer, i, h, static_cast<double>(a[h]), static_cast<double>(b[h]));
      }
    }
  }
  causal_conv(rows, stride, t, g.conv_width(), taps, g.conv_kernel, window);
  const float q_scale = 1.0f / std::sqrt(static_cast<float>(g.key_head_dim));
  for (uint32_t i = 0; i < t; ++i) {
    float* row = rows + i * stride;
    for (uint32_t h = 0; h < g.key_heads; ++h) {
      l2_normalize(row + size_t{h} * g.key_head_dim, g.key_head_dim, q_scale);
      l2_normalize(row + g.key_width() + size_t{h} * g.key_head_dim, g.key_head_dim, 1.0f);
    }
  }
  DeltaHeads heads{&p, rows, out, s_.delta_state, s_.arena->scratch(), t};
  ThreadPool::run_on(s_.pool, g.value_heads, run_head, &heads);
  // The gated RMS norm per head: o · rsqrt(mean(o²) + eps) · w, then · silu(z).
  const TensorRef norm_weight{norm, DType::kF32, 1, g.value_head_dim};
  for (uint32_t i = 0; i < t; ++i) {
    float* o = out + size_t{i} * g.value_width();
    const float* z = rows + i * stride + g.conv_width();
    rms_norm_heads(o, g.value_heads, g.value_head_dim, &norm_weight, c.rms_norm_eps, 0.0f);
    for (uint32_t j = 0; j < g.value_width(); ++j) o[j] *= silu(z[j]);
  }
  dense_highway({s_.w.wo, {}}, out, g.value_width(), y, d, t, s_.pool);
  s_.linear_position += t;
  return Status();
}

}  // namespace headway
