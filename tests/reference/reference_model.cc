#include "tests/reference/reference_model.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace headway {
namespace test {

namespace {

// x [t, n] → each row / sqrt(mean(row²) + eps) · w.
std::vector<double> rms(const std::vector<double>& x, const std::vector<double>& w, uint32_t t, uint32_t n,
                        double eps) {
  std::vector<double> y(x.size());
  for (uint32_t i = 0; i < t; ++i) {
    const double* r = &x[size_t{i} * n];
    double s = 0.0;
    for (uint32_t j = 0; j < n; ++j) s += r[j] * r[j];
    const double inv = 1.0 / std::sqrt(s / n + eps);
    for (uint32_t j = 0; j < n; ++j) y[size_t{i} * n + j] = r[j] * inv * w[j];
  }
  return y;
}

// y [t, out] = x [t, in] · Wᵀ
std::vector<double> matmul(const std::vector<double>& x, const std::vector<double>& w, uint32_t t, uint32_t in,
                           uint32_t out) {
  std::vector<double> y(size_t{t} * out);
  for (uint32_t i = 0; i < t; ++i) {
    for (uint32_t o = 0; o < out; ++o) {
      double s = 0.0;
      for (uint32_t k = 0; k < in; ++k) s += x[size_t{i} * in + k] * w[size_t{o} * in + k];
      y[size_t{i} * out + o] = s;
    }
  }
  return y;
}

}  // namespace

RefModel::RefModel(const Config& config, RefModelWeights weights)
    : c_(config), w_(static_cast<RefModelWeights&&>(weights)) {
  if (!reference_model_supports(c_)) {
    std::fprintf(stderr, "RefModel: config '%s' is not a pre-norm RMSNorm + SwiGLU decoder\n", c_.name);
    std::abort();
  }
  for (uint32_t l = 0; l < c_.n_layers; ++l) layers_.emplace_back(c_.layer_alone(l), w_.attention[l]);
}

std::vector<double> RefModel::forward(const std::vector<int32_t>& ids) {
  const uint32_t d = c_.d_model, ffn = c_.model.intermediate_size, vocab = c_.model.vocab_size;
  const uint32_t t = static_cast<uint32_t>(ids.size());
  const double eps = c_.model.norm_eps;
  const std::vector<double>& embedding = w_.of(ModelTensor::kEmbedding, 0);
  std::vector<double> h(size_t{t} * d);
  for (uint32_t i = 0; i < t; ++i) {
    for (uint32_t j = 0; j < d; ++j) h[size_t{i} * d + j] = embedding[size_t(ids[i]) * d + j];
  }
  for (uint32_t l = 0; l < c_.n_layers; ++l) {
    const std::vector<double> a = layers_[l].forward(rms(h, w_.of(ModelTensor::kAttnNorm, l), t, d, eps), t);
    for (size_t i = 0; i < h.size(); ++i) h[i] += a[i];
    const std::vector<double> x = rms(h, w_.of(ModelTensor::kFfnNorm, l), t, d, eps);
    const std::vector<double> g = matmul(x, w_.of(ModelTensor::kGate, l), t, d, ffn);
    const std::vector<double> u = matmul(x, w_.of(ModelTensor::kUp, l), t, d, ffn);
    std::vector<double> act(g.size());
    for (size_t i = 0; i < g.size(); ++i) act[i] = g[i] / (1.0 + std::exp(-g[i])) * u[i];
    const std::vector<double> m = matmul(act, w_.of(ModelTensor::kDown, l), t, ffn, d);
    for (size_t i = 0; i < h.size(); ++i) h[i] += m[i];
  }
  const ModelTensor head = c_.model.tie_word_embeddings ? ModelTensor::kEmbedding : ModelTensor::kLmHead;
  return matmul(rms(h, w_.of(ModelTensor::kFinalNorm, 0), t, d, eps), w_.of(head, 0), t, d, vocab);
}

}  // namespace test
}  // namespace headway
