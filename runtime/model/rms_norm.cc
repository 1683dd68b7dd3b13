#include "runtime/model/model_ops.hpp"

#include <cmath>

namespace headway {

void rms_norm(const float* x, const float* w, float* y, uint32_t t, uint32_t n, float eps) {
  for (uint32_t i = 0; i < t; ++i) {
    const float* xi = x + size_t{i} * n;
    float* yi = y + size_t{i} * n;
    float sum = 0.0f;
    for (uint32_t j = 0; j < n; ++j) sum += xi[j] * xi[j];
    const float inv = 1.0f / std::sqrt(sum / static_cast<float>(n) + eps);
    for (uint32_t j = 0; j < n; ++j) yi[j] = w[j] * (xi[j] * inv);
  }
}

}  // namespace headway
