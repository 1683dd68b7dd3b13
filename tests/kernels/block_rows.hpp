// What the block-format matmul tests share (matmul_blocks_test.cc, matmul_row_groups_test.cc):
// random rows of each format, x quantized as a decode step in integers quantizes it, and the
// decode step's bound against x · Wᵀ in double.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "headway/dtype_convert.hpp"
#include "simd/matmul/matmul.h"
#include "tests/support/test_rng.hpp"

namespace headway::test {

// The byte offsets of each block format's f16 fields (scales, mins): set to finite values, the
// rest of a block's bytes drawn at random (every pattern of them is a valid block).
struct BlockFields {
  DType type;
  int f16_at[2];  // -1: none
};

inline std::vector<uint8_t> random_rows(const BlockFields& f, size_t rows, size_t in, Rng& rng) {
  const DTypeTraits& type = dtype_traits(f.type);
  const size_t blocks = rows * in / type.block_values;
  std::vector<uint8_t> w(blocks * type.block_bytes);
  for (uint8_t& b : w) b = static_cast<uint8_t>(rng.next());
  for (size_t b = 0; b < blocks; ++b) {
    for (int at : f.f16_at) {
      if (at < 0) continue;
      const uint16_t h = f32_to_f16_bits(0.05f * rng.normal());
      std::memcpy(&w[b * type.block_bytes + static_cast<size_t>(at)], &h, 2);
    }
  }
  return w;
}

// A decode step's arguments: x [in], W [out, in] of type t (dense rows, w_stride in), y [out].
inline simd::MatmulArgs gemv_args(const float* x, const void* w, DType t, size_t in, size_t out, float* y) {
  simd::MatmulArgs a;
  a.x = x;
  a.x_stride = in;
  a.w = w;
  a.w_type = t;
  a.w_stride = in;
  a.y = y;
  a.y_stride = out;
  a.t = 1;
  a.in = in;
  a.out = out;
  return a;
}

// x as a decode step in integers meets W: per block of 32, d = max|x| / code_max and the codes
// x · (code_max / max|x|) in f32, rounded to nearest even; d · code each (x itself for 0).
inline std::vector<double> quantized_x(const std::vector<float>& x, int code_max) {
  std::vector<double> out(x.begin(), x.end());
  if (code_max == 0) return out;
  for (size_t b = 0; b + 32 <= x.size(); b += 32) {
    float amax = 0.0f;
    for (size_t k = b; k < b + 32; ++k) amax = std::max(amax, std::fabs(x[k]));
    const float d = amax / static_cast<float>(code_max);
    const float id = amax != 0.0f ? static_cast<float>(code_max) / amax : 0.0f;
    for (size_t k = b; k < b + 32; ++k) out[k] = static_cast<double>(d) * std::nearbyint(x[k] * id);
  }
  return out;
}

// A decode step's y [out] against x [in] · wd ᵀ (W dequantized, [out, in]) in double: within x's
// rounding (half of each block's code step — max|x| / code_max where the kernel quantized x
// (matmul_x_code_max), else of 8-bit codes or 16-bit with precise — times Σ|w| over the block);
// where the kernel quantized x, x · Wᵀ with x quantized so within 1e-5 of its magnitude.
inline void check_decode(const std::vector<float>& x, const std::vector<float>& wd, size_t in, size_t out,
                         const float* y, int code_max, bool precise) {
  const std::vector<double> xq = quantized_x(x, code_max);
  for (size_t o = 0; o < out; ++o) {
    double s = 0.0, mag = 0.0, rounding = 0.0, sq = 0.0, magq = 0.0;
    for (size_t k = 0; k < in; ++k) {
      sq += xq[k] * wd[o * in + k];
      magq += std::fabs(xq[k] * wd[o * in + k]);
    }
    for (size_t b = 0; b < in / 32; ++b) {
      double amax = 0.0, wsum = 0.0;
      for (size_t k = b * 32; k < b * 32 + 32; ++k) {
        s += static_cast<double>(x[k]) * wd[o * in + k];
        mag += std::fabs(static_cast<double>(x[k]) * wd[o * in + k]);
        amax = std::max(amax, std::fabs(static_cast<double>(x[k])));
        wsum += std::fabs(static_cast<double>(wd[o * in + k]));
      }
      rounding += 0.5 * amax / (code_max != 0 ? code_max : precise ? 32767.0 : 127.0) * wsum;
    }
    INFO("decode in " << in << " out " << out << " row " << o << " precise " << precise);
    CHECK(std::fabs(y[o] - s) <= rounding * 1.001 + 1e-5 * mag);
    INFO("x codes up to " << code_max);
    if (code_max != 0) CHECK(std::fabs(y[o] - sq) <= 1e-5 * magq);
  }
}

}  // namespace headway::test
