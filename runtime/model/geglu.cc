#include <cmath>

#include "runtime/model/model_ops.hpp"

namespace headway {

void geglu(float* h, uint32_t t, uint32_t ffn) {
  constexpr float kSqrt2OverPi = 0.79788456080286535588f;
  for (uint32_t i = 0; i < t; ++i) {
    float* gate = h + size_t{i} * 2 * ffn;
    const float* up = gate + ffn;
    for (uint32_t j = 0; j < ffn; ++j) {
      const float g = gate[j];
      gate[j] = 0.5f * g * (1.0f + std::tanh(kSqrt2OverPi * (g + 0.044715f * g * g * g))) * up[j];
    }
  }
}

void softcap_rows(float* y, size_t n, float c) {
  for (size_t i = 0; i < n; ++i) y[i] = c * std::tanh(y[i] / c);
}

}  // namespace headway
