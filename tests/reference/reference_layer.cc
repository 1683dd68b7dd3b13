#include "tests/reference/reference_layer.hpp"

#include <cmath>

#include <cstring>

#include "tests/reference/reference_attention.hpp"
#include "tests/support/test_rng.hpp"

namespace headway {
namespace test {

namespace {

// y [t, out] = x [t, in] · Wᵀ + b
std::vector<double> linear(const std::vector<double>& x, uint32_t t, uint32_t in, const std::vector<double>& w,
                           const std::vector<double>& b, uint32_t out) {
  std::vector<double> y(size_t{t} * out);
  for (uint32_t i = 0; i < t; ++i) {
    for (uint32_t o = 0; o < out; ++o) {
      double s = b.empty() ? 0.0 : b[o];
      for (uint32_t k = 0; k < in; ++k) s += x[size_t{i} * in + k] * w[size_t{o} * in + k];
      y[size_t{i} * out + o] = s;
    }
  }
  return y;
}

// w empty: no weight.
void rms_norm(double* v, uint32_t n, const std::vector<double>& w, double eps, double offset) {
  double ss = 0.0;
  for (uint32_t i = 0; i < n; ++i) ss += v[i] * v[i];
  const double r = 1.0 / std::sqrt(ss / n + eps);
  for (uint32_t i = 0; i < n; ++i) v[i] = v[i] * r * (w.empty() ? 1.0 : w[i] + offset);
}

void rope(double* x, uint32_t head_dim, uint32_t pos, const RopeConfig& r) {
  if (r.style == RopeStyle::kNone) return;
  const uint32_t rot = r.rotary_dim ? r.rotary_dim : head_dim;
  std::vector<double> in(x, x + head_dim);
  for (uint32_t i = 0; i < rot / 2; ++i) {
    double freq = std::pow(static_cast<double>(r.theta), -2.0 * i / rot);
    if (r.scaling == RopeScaling::kLinear) freq /= r.factor;
    const double c = std::cos(pos * freq), s = std::sin(pos * freq);
    const uint32_t a = r.style == RopeStyle::kNeox ? i : 2 * i;
    const uint32_t b = r.style == RopeStyle::kNeox ? i + rot / 2 : 2 * i + 1;
    x[a] = in[a] * c - in[b] * s;
    x[b] = in[b] * c + in[a] * s;
  }
}

float round_kv(double v, DType t) {
  const float f = static_cast<float>(v);
  if (t == DType::kF16) return f16_bits_to_f32(f32_to_f16_bits(f));
  if (t == DType::kBF16) return bf16_bits_to_f32(f32_to_bf16_bits(f));
  return f;
}

}  // namespace

std::vector<double> RefLayer::forward(const std::vector<double>& x, uint32_t t) {
  const uint32_t d = c_.d_model, hd = c_.head_size(), nh = c_.n_heads, kvh = c_.kv_heads();
  const uint32_t qw = nh * hd;
  // With an output gate Wq gives each head's query, then its gate: [q_0 g_0 q_1 g_1 ...].
  const uint32_t q_rows = c_.output_gate ? 2 * qw : qw;
  const std::vector<double> q_out = linear(x, t, d, w_.wq, w_.bq, q_rows);
  std::vector<double> q(size_t{t} * qw), gate(c_.output_gate ? size_t{t} * qw : 0);
  for (uint32_t i = 0; i < t; ++i) {
    for (uint32_t h = 0; h < nh; ++h) {
      const uint32_t from = c_.output_gate ? 2 * h * hd : h * hd;
      for (uint32_t e = 0; e < hd; ++e) {
        q[size_t{i} * qw + h * hd + e] = q_out[size_t{i} * q_rows + from + e];
        if (c_.output_gate) gate[size_t{i} * qw + h * hd + e] = q_out[size_t{i} * q_rows + from + hd + e];
      }
    }
  }
  // The queries' positions: after this layer's history, or the last t of its owner's.
  const uint32_t first = owner_ != nullptr ? owner_->pos_ + owner_->n_ - t : pos_ + n_;
  for (uint32_t i = 0; i < t; ++i) {
    for (uint32_t h = 0; h < nh; ++h) {
      double* qh = &q[size_t{i} * qw + size_t{h} * hd];
      if (c_.qk_norm) rms_norm(qh, hd, w_.q_norm, c_.rms_norm_eps, c_.qk_norm_offset);
      rope(qh, hd, first + i, c_.rope);
    }
  }
  if (owner_ == nullptr) append_kv(x, t);
  const RefLayer& kv = owner_ != nullptr ? *owner_ : *this;
  std::vector<float> qf(q.begin(), q.end());
  RefAttention a;
  a.t_q = t;
  a.t_kv = kv.n_;
  a.n_heads = nh;
  a.n_kv_heads = kvh;
  a.head_dim = hd;
  a.scale = c_.logit_scale();
  a.softcap = c_.softcap;
  a.causal = c_.causal;
  a.window = c_.window;
  a.window_symmetric = c_.window != 0 && c_.window_symmetric;
  if (c_.sinks) a.sinks = w_.sinks;
  a.sink_tokens = c_.window != 0 ? c_.sink_tokens : 0;
  if (c_.alibi) {
    a.alibi_slopes = reference_alibi_slopes(nh, c_.alibi_max_bias);
    if (c_.alibi_times_scale) {
      for (double& m : a.alibi_slopes) m *= a.scale;
    }
  }
  std::vector<double> o = reference_attention(a, qf.data(), kv.k_.data(), kv.v_.data());
  for (size_t i = 0; i < gate.size(); ++i) o[i] /= 1.0 + std::exp(-gate[i]);
  return linear(o, t, qw, w_.wo, w_.bo, d);
}

// K and V of x's t tokens at the history's next positions, normed, rotated and rounded as the
// cache stores them, appended to it.
void RefLayer::append_kv(const std::vector<double>& x, uint32_t t) {
  const uint32_t d = c_.d_model, hd = c_.head_size(), kvh = c_.kv_heads(), kvw = kvh * hd;
  std::vector<double> k = linear(x, t, d, w_.wk, w_.bk, kvw);
  std::vector<double> v = c_.k_eq_v ? k : linear(x, t, d, w_.wv, w_.bv, kvw);  // V from K before its norm
  for (uint32_t i = 0; i < t; ++i) {
    for (uint32_t g = 0; g < kvh; ++g) {
      double* kh = &k[size_t{i} * kvw + size_t{g} * hd];
      if (c_.qk_norm) rms_norm(kh, hd, w_.k_norm, c_.rms_norm_eps, c_.qk_norm_offset);
      rope(kh, hd, pos_ + n_ + i, c_.rope);
      if (c_.v_norm) rms_norm(&v[size_t{i} * kvw + size_t{g} * hd], hd, {}, c_.rms_norm_eps, 0.0);
    }
  }
  for (size_t i = 0; i < k.size(); ++i) {
    k_.push_back(round_kv(k[i], c_.kv_dtype));
    v_.push_back(round_kv(v[i], c_.kv_dtype));
  }
  n_ += t;
}

std::vector<double> reference_stack(std::vector<RefLayer>& layers, const std::vector<double>& x, uint32_t t) {
  std::vector<double> h = x;
  for (RefLayer& l : layers) {
    const std::vector<double> y = l.forward(h, t);
    for (size_t i = 0; i < h.size(); ++i) h[i] += y[i];
  }
  return h;
}

TestLayerWeights make_test_weights(const Config& c, DType dtype, uint64_t seed) {
  TestLayerWeights out;
  Rng rng(seed);
  const uint32_t d = c.d_model, hd = c.head_size();
  const uint32_t qw = c.n_heads * hd, kvw = c.kv_heads() * hd;
  out.storage.reserve(11);
  auto make = [&](uint32_t rows, uint32_t cols, double scale, double offset, std::vector<double>* ref) {
    const size_t n = size_t{rows} * cols;
    out.storage.emplace_back(n * (dtype == DType::kF32 ? 2 : 1));
    std::vector<uint16_t>& buf = out.storage.back();
    ref->resize(n);
    for (size_t i = 0; i < n; ++i) {
      const float f = static_cast<float>(offset + scale * rng.normal());
      float r = f;
      if (dtype == DType::kF16) {
        buf[i] = f32_to_f16_bits(f);
        r = f16_bits_to_f32(buf[i]);
      } else if (dtype == DType::kBF16) {
        buf[i] = f32_to_bf16_bits(f);
        r = bf16_bits_to_f32(buf[i]);
      } else {
        std::memcpy(&buf[2 * i], &f, 4);
      }
      (*ref)[i] = r;
    }
    return TensorRef{buf.data(), dtype, rows, cols};
  };
  LayerWeights& v = out.view;
  RefWeights& r = out.ref;
  const uint32_t q_rows = c.output_gate ? 2 * qw : qw;
  v.wq = make(q_rows, d, 1.0 / std::sqrt(d), 0.0, &r.wq);
  v.wk = make(kvw, d, 1.0 / std::sqrt(d), 0.0, &r.wk);
  if (!c.k_eq_v) v.wv = make(kvw, d, 1.0 / std::sqrt(d), 0.0, &r.wv);
  v.wo = make(d, qw, 1.0 / std::sqrt(qw), 0.0, &r.wo);
  if (c.qkv_bias) {
    v.bq = make(1, q_rows, 0.1, 0.0, &r.bq);
    v.bk = make(1, kvw, 0.1, 0.0, &r.bk);
    if (!c.k_eq_v) v.bv = make(1, kvw, 0.1, 0.0, &r.bv);
  }
  if (c.o_bias) v.bo = make(1, d, 0.1, 0.0, &r.bo);
  if (c.qk_norm) {
    v.q_norm = make(1, hd, 0.1, 1.0, &r.q_norm);
    v.k_norm = make(1, hd, 0.1, 1.0, &r.k_norm);
  }
  if (c.sinks) v.sinks = make(1, c.n_heads, 1.0, 0.5, &r.sinks);
  return out;
}

}  // namespace test
}  // namespace headway
