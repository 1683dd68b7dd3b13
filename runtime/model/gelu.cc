#include <cmath>

#include "runtime/model/model_ops.hpp"

namespace headway {

void gelu(const float* x, float* y, uint32_t t, uint32_t ffn) {
  for (uint32_t i = 0; i < t; ++i) {
    const float* xi = x + size_t{i} * 2 * ffn;
    float* yi = y + size_t{i} * 2 * ffn;
    for (uint32_t j = 0; j < ffn; ++j) yi[j] = 0.5f * xi[j] * (1.0f + std::erf(xi[j] * 0.70710678118654752f));
  }
}

}  // namespace headway
