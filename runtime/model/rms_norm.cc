#include "runtime/model/model_ops.hpp"

#include <cmath>

#include "runtime/linear/dense.hpp"
#include "simd/norm/norm.h"

namespace headway {

void rms_norm(const float* x, const float* w, float* y, uint32_t t, uint32_t n, float eps) {
  simd::rms_norm(x, w, y, t, n, eps);
}

void rms_norm_heads(float* x, uint32_t n_heads, uint32_t head_dim, const TensorRef* w, float eps, float offset) {
  for (uint32_t h = 0; h < n_heads; ++h) {
    float* v = x + uint64_t{h} * head_dim;
    float ss = 0.0f;
    for (uint32_t i = 0; i < head_dim; ++i) ss += v[i] * v[i];
    const float r = 1.0f / std::sqrt(ss / static_cast<float>(head_dim) + eps);
    for (uint32_t i = 0; i < head_dim; ++i) v[i] = v[i] * r * (w ? tensor_at(*w, i) + offset : 1.0f);
  }
}

}  // namespace headway
