#include "runtime/model/model_ops.hpp"
#include "simd/activation/activation.h"

namespace headway {

void swiglu(float* h, uint32_t t, uint32_t ffn) {
  for (uint32_t i = 0; i < t; ++i) {
    float* gate = h + size_t{i} * 2 * ffn;
    simd::silu_mul(gate, gate + ffn, ffn);
  }
}

}  // namespace headway
