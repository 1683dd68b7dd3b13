#include <cmath>

#include "runtime/model/model_ops.hpp"

namespace headway {

void swiglu(float* h, uint32_t t, uint32_t ffn) {
  for (uint32_t i = 0; i < t; ++i) {
    float* gate = h + size_t{i} * 2 * ffn;
    const float* up = gate + ffn;
    for (uint32_t j = 0; j < ffn; ++j) {
      const float g = gate[j];
      gate[j] = g / (1.0f + std::exp(-g)) * up[j];
    }
  }
}

}  // namespace headway
