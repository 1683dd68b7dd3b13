#include "tests/reference/reference_gated_delta.hpp"

#include <cmath>

#include "tests/support/test_rng.hpp"

namespace headway {
namespace test {

namespace {

TensorRef ref_of(const std::vector<float>& v, uint32_t rows, uint32_t cols) {
  return TensorRef{v.data(), DType::kF32, rows, cols};
}

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

}  // namespace

LayerWeights GatedDeltaTensors::view() const {
  LayerWeights w;
  const uint32_t vh = static_cast<uint32_t>(a_log.size());
  const uint32_t d = static_cast<uint32_t>(b.size() / vh);
  w.w_qkv = ref_of(qkv, static_cast<uint32_t>(qkv.size() / d), d);
  w.w_z = ref_of(z, static_cast<uint32_t>(z.size() / d), d);
  w.w_b = ref_of(b, vh, d);
  w.w_a = ref_of(a, vh, d);
  const uint32_t taps = static_cast<uint32_t>(conv.size() / w.w_qkv.rows);
  w.conv = ref_of(conv, w.w_qkv.rows, taps);
  w.a_log = ref_of(a_log, 1, vh);
  w.dt_bias = ref_of(dt_bias, 1, vh);
  w.out_norm = ref_of(norm, 1, static_cast<uint32_t>(norm.size()));
  w.wo = ref_of(out, d, static_cast<uint32_t>(out.size() / d));
  return w;
}

GatedDeltaTensors random_gated_delta(const Config& c, uint64_t seed) {
  const GatedDeltaShape& g = c.gated_delta;
  Rng rng(seed);
  auto matrix = [&](uint32_t rows, uint32_t cols) {
    std::vector<float> m(size_t{rows} * cols);
    for (float& v : m) v = static_cast<float>(rng.normal() / std::sqrt(static_cast<double>(cols)));
    return m;
  };
  GatedDeltaTensors w;
  w.qkv = matrix(g.conv_width(), c.d_model);
  w.z = matrix(g.value_width(), c.d_model);
  w.b = matrix(g.value_heads, c.d_model);
  w.a = matrix(g.value_heads, c.d_model);
  w.conv = matrix(g.conv_width(), g.conv_kernel);
  for (uint32_t h = 0; h < g.value_heads; ++h) {
    w.a_log.push_back(static_cast<float>(std::log(0.01 + 15.99 * rng.uniform())));
    w.dt_bias.push_back(static_cast<float>(1.0 + 0.3 * rng.normal()));
  }
  for (uint32_t j = 0; j < g.value_head_dim; ++j) w.norm.push_back(static_cast<float>(1.0 + 0.1 * rng.normal()));
  w.out = matrix(c.d_model, g.value_width());
  return w;
}

RefGatedDelta::RefGatedDelta(const Config& config, const GatedDeltaTensors& w) : c_(config), w_(&w) { reset(); }

void RefGatedDelta::reset() {
  const GatedDeltaShape& g = c_.gated_delta;
  state_.assign(size_t{g.value_heads} * g.key_head_dim * g.value_head_dim, 0.0);
  window_.assign(size_t{g.conv_kernel - 1} * g.conv_width(), 0.0);
}

std::vector<double> RefGatedDelta::forward(const std::vector<double>& x, uint32_t t) {
  const GatedDeltaShape& g = c_.gated_delta;
  const uint32_t d = c_.d_model, dk = g.key_head_dim, dv = g.value_head_dim, cw = g.conv_width();
  const uint32_t k = g.conv_kernel;
  const GatedDeltaTensors& w = *w_;
  auto project = [&](const std::vector<float>& m, uint32_t rows, const double* xi, std::vector<double>* out) {
    out->assign(rows, 0.0);
    for (uint32_t r = 0; r < rows; ++r) {
      double s = 0.0;
      for (uint32_t i = 0; i < d; ++i) s += double{m[size_t{r} * d + i]} * xi[i];
      (*out)[r] = s;
    }
  };
  std::vector<double> y(size_t{t} * d, 0.0);
  std::vector<double> qkv, z, b, a, conv(cw), o(g.value_width());
  for (uint32_t r = 0; r < t; ++r) {
    const double* xi = x.data() + size_t{r} * d;
    project(w.qkv, cw, xi, &qkv);
    project(w.z, g.value_width(), xi, &z);
    project(w.b, g.value_heads, xi, &b);
    project(w.a, g.value_heads, xi, &a);
    // The convolution over [window | this input], then SiLU; the window moves on by one.
    for (uint32_t ch = 0; ch < cw; ++ch) {
      double s = double{w.conv[size_t{ch} * k + (k - 1)]} * qkv[ch];
      for (uint32_t j = 0; j + 1 < k; ++j) s += double{w.conv[size_t{ch} * k + j]} * window_[size_t{j} * cw + ch];
      for (uint32_t j = 0; j + 2 < k; ++j) window_[size_t{j} * cw + ch] = window_[size_t{j + 1} * cw + ch];
      if (k > 1) window_[size_t{k - 2} * cw + ch] = qkv[ch];
      conv[ch] = s * sigmoid(s);
    }
    for (uint32_t h = 0; h < g.key_heads * 2; ++h) {  // q heads, then k heads, L2-normed
      double* v = conv.data() + size_t{h} * dk;
      double ss = 0.0;
      for (uint32_t i = 0; i < dk; ++i) ss += v[i] * v[i];
      const double s = (h < g.key_heads ? 1.0 / std::sqrt(static_cast<double>(dk)) : 1.0) / std::sqrt(ss + 1e-6);
      for (uint32_t i = 0; i < dk; ++i) v[i] *= s;
    }
    for (uint32_t h = 0; h < g.value_heads; ++h) {
      const uint32_t kh = g.tiled_value_heads ? h % g.key_heads : h / (g.value_heads / g.key_heads);
      const double* q = conv.data() + size_t{kh} * dk;
      const double* kk = conv.data() + g.key_width() + size_t{kh} * dk;
      const double* v = conv.data() + 2 * size_t{g.key_width()} + size_t{h} * dv;
      const double beta = sigmoid(b[h]);
      const double sp = a[h] + w.dt_bias[h] > 20.0 ? a[h] + w.dt_bias[h] : std::log1p(std::exp(a[h] + w.dt_bias[h]));
      const double decay = std::exp(-std::exp(double{w.a_log[h]}) * sp);
      double* s = state_.data() + size_t{h} * dk * dv;
      for (size_t i = 0; i < size_t{dk} * dv; ++i) s[i] *= decay;
      for (uint32_t j = 0; j < dv; ++j) {
        double u = 0.0;
        for (uint32_t i = 0; i < dk; ++i) u += s[size_t{i} * dv + j] * kk[i];
        const double delta = beta * (v[j] - u);
        for (uint32_t i = 0; i < dk; ++i) s[size_t{i} * dv + j] += kk[i] * delta;
      }
      double* oh = o.data() + size_t{h} * dv;
      double ms = 0.0;
      for (uint32_t j = 0; j < dv; ++j) {
        double acc = 0.0;
        for (uint32_t i = 0; i < dk; ++i) acc += s[size_t{i} * dv + j] * q[i];
        oh[j] = acc;
        ms += acc * acc;
      }
      const double rs = 1.0 / std::sqrt(ms / dv + static_cast<double>(c_.rms_norm_eps));
      for (uint32_t j = 0; j < dv; ++j) {
        const double zj = z[size_t{h} * dv + j];
        oh[j] = oh[j] * rs * w.norm[j] * zj * sigmoid(zj);
      }
    }
    for (uint32_t i = 0; i < d; ++i) {
      double s = 0.0;
      for (uint32_t j = 0; j < g.value_width(); ++j) s += double{w.out[size_t{i} * g.value_width() + j]} * o[j];
      y[size_t{r} * d + i] = s;
    }
  }
  return y;
}

}  // namespace test
}  // namespace headway
