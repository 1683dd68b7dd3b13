// Scalar conversions between f32 and the 16-bit storage types of the KV cache (IEEE binary16
// "f16" and bfloat16 "bf16"). Header-only, integer arithmetic only, constexpr: the result does
// not depend on the FPU rounding mode or flush-to-zero state, and it builds on bare metal.
//
// Narrowing rounds to nearest, ties to even. NaN stays NaN (quieted, sign and top payload bits
// kept); a finite value past the largest finite value after rounding becomes ±inf; f16
// subnormals are produced and read exactly. 16-bit values travel as their bit patterns
// (uint16_t), the way the cache stores them.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>

namespace headway {

constexpr uint16_t f32_to_f16_bits(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) {  // NaN: keep the top 10 payload bits, set the quiet bit
    return static_cast<uint16_t>(sign | 0x7e00u | ((ax >> 13) & 0x3ffu));
  }
  // 65520 = 65504 (largest f16, odd mantissa) + half an ulp: the tie rounds up to inf.
  if (ax >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);
  if (ax >= 0x38800000u) {  // 2^-14 and up: a normal f16
    const uint32_t odd = (ax >> 13) & 1u;
    const uint32_t rebased = ax - 0x38000000u;  // exponent bias 127 → 15 (112 << 23)
    return static_cast<uint16_t>(sign | ((rebased + 0xfffu + odd) >> 13));
  }
  // Below 2^-14: an f16 subnormal m · 2^-24 (or zero). The f32 value is (1.mant) · 2^(e-127),
  // so m = mant24 / 2^(126 - e), rounded to nearest even. f32 subnormals (e = 0) are far below
  // 2^-25 and round to zero.
  const uint32_t e = ax >> 23;
  if (e < 102) return sign;  // below 2^-25: rounds to ±0 (2^-25 itself ties to 0)
  const uint32_t mant = (ax & 0x7fffffu) | 0x800000u;
  const uint32_t shift = 126u - e;  // 14..24
  uint32_t q = mant >> shift;
  const uint32_t rem = mant & ((1u << shift) - 1u);
  const uint32_t half = 1u << (shift - 1u);
  if (rem > half || (rem == half && (q & 1u))) ++q;  // may reach 0x400: the smallest normal
  return static_cast<uint16_t>(sign | q);
}

constexpr float f16_bits_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0x1fu) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));  // inf, NaN
  if (exp != 0) return std::bit_cast<float>(sign | ((exp + 112u) << 23) | (mant << 13));
  if (mant == 0) return std::bit_cast<float>(sign);
  // Subnormal m · 2^-24: normalize so the leading one becomes the implicit bit.
  uint32_t e = 113;  // biased f32 exponent of 2^-14
  while ((mant & 0x400u) == 0) {
    mant <<= 1;
    --e;
  }
  return std::bit_cast<float>(sign | (e << 23) | ((mant & 0x3ffu) << 13));
}

constexpr uint16_t f32_to_bf16_bits(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) {  // NaN: truncating could clear the payload; keep it quiet
    return static_cast<uint16_t>((x >> 16) | 0x0040u);
  }
  // Adding 0x7fff plus the lowest kept bit rounds to nearest even; a carry out of the mantissa
  // bumps the exponent, which turns the largest values into inf exactly when they should.
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

constexpr float bf16_bits_to_f32(uint16_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b) << 16); }

// Bulk forms over n elements; src and dst must not overlap.
constexpr void f32_to_f16(const float* src, uint16_t* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] = f32_to_f16_bits(src[i]);
}
constexpr void f32_to_bf16(const float* src, uint16_t* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] = f32_to_bf16_bits(src[i]);
}
constexpr void f16_to_f32(const uint16_t* src, float* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] = f16_bits_to_f32(src[i]);
}
constexpr void bf16_to_f32(const uint16_t* src, float* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] = bf16_bits_to_f32(src[i]);
}
// f16 → bf16 goes through f32 (exact) and rounds once to nearest even.
constexpr void f16_to_bf16(const uint16_t* src, uint16_t* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] = f32_to_bf16_bits(f16_bits_to_f32(src[i]));
}

}  // namespace headway
