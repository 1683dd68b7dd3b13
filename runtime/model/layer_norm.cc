#include <cmath>

#include "runtime/model/model_ops.hpp"

namespace headway {

void layer_norm(const float* x, const float* w, const float* b, float* y, uint32_t t, uint32_t n, float eps) {
  for (uint32_t i = 0; i < t; ++i) {
    const float* xi = x + size_t{i} * n;
    float* yi = y + size_t{i} * n;
    float mean = 0.0f;
    for (uint32_t j = 0; j < n; ++j) mean += xi[j];
    mean /= static_cast<float>(n);
    float var = 0.0f;
    for (uint32_t j = 0; j < n; ++j) var += (xi[j] - mean) * (xi[j] - mean);
    const float inv = 1.0f / std::sqrt(var / static_cast<float>(n) + eps);
    for (uint32_t j = 0; j < n; ++j) yi[j] = (xi[j] - mean) * inv * w[j] + b[j];
  }
}

}  // namespace headway
