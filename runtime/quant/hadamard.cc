// The normalized fast Walsh-Hadamard transform by blocks (headway/hadamard.hpp).
#include "headway/hadamard.hpp"

namespace headway {
namespace {

// One block of b values (b a power of two): log2(b) stages of in-place butterflies, then the
// 1/sqrt(b) that makes it orthonormal. Sylvester's order: after the stages x = H_b(unnormalized) x.
// Cost: b·log2(b) adds and b multiplies (128: 896 adds, 128 multiplies).
void fwht_block(float* x, uint32_t b, float norm) {
  for (uint32_t h = 1; h < b; h <<= 1) {
    for (uint32_t i = 0; i < b; i += h << 1) {
      for (uint32_t j = i; j < i + h; ++j) {
        const float a = x[j];
        const float c = x[j + h];
        x[j] = a + c;
        x[j + h] = a - c;
      }
    }
  }
  for (uint32_t i = 0; i < b; ++i) x[i] *= norm;
}

// 1/sqrt(b) for b = 2^k without libm (bare metal): 2^(−k/2), times 1/sqrt(2) where k is odd.
float inverse_sqrt_pow2(uint32_t b) {
  float r = 1.0f;
  uint32_t k = 0;
  while ((1u << (k + 1)) <= b) ++k;
  for (uint32_t i = 0; i < k / 2; ++i) r *= 0.5f;
  return (k & 1) ? r * 0.70710678118654752440f : r;
}

}  // namespace

void hadamard_rotate(float* x, uint32_t n) {
  const uint32_t b = hadamard_block(n);
  if (b == 0 || x == nullptr) return;
  const float norm = inverse_sqrt_pow2(b);
  for (uint32_t i = 0; i < n; i += b) fwht_block(x + i, b, norm);
}

void hadamard_rotate_heads(float* x, uint32_t n_tokens, size_t token_stride, uint32_t n_heads, uint32_t head_dim) {
  for (uint32_t t = 0; t < n_tokens; ++t) {
    for (uint32_t h = 0; h < n_heads; ++h) hadamard_rotate(x + t * token_stride + size_t{h} * head_dim, head_dim);
  }
}

}  // namespace headway
