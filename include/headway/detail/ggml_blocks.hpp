// ggml's block walks: one block of each weight type of headway/ggml_types.hpp decoded to f32,
// value for value and product for product as ggml-quants.c's reference dequantize_row_*. Shared by
// the file loaders' exact dequantization (runtime/quant/ggml_dequant.cc, built with
// -ffp-contract=off so that q · d + m is never fused into one FMA) and the kernels' scalar path
// over weights kept in their blocks (simd/matmul/matmul_blocks-inl.h). Internal linkage (static): each
// translation unit compiles its own copy under its own floating-point flags, so the loaders' stay
// bit-exact whatever the kernels are compiled with. Blocks are read byte by byte: rows of 18- or
// 110-byte blocks are not aligned to anything. No heap, no libm; builds on bare metal.
#pragma once

#include <cstddef>
#include <cstdint>

#include "headway/dtype.hpp"
#include "headway/dtype_convert.hpp"

namespace headway {
namespace ggml_blocks {

inline constexpr size_t kQK = 32;                // values per block of the 32-value types
inline constexpr size_t kQKK = 256;              // values per K-quant super-block
inline constexpr size_t kMaxBlockValues = kQKK;  // the most values decode_block writes

static inline uint16_t load_u16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
static inline uint32_t load_u32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 | static_cast<uint32_t>(p[2]) << 16 |
         static_cast<uint32_t>(p[3]) << 24;
}
static inline float load_f16(const uint8_t* p) { return f16_bits_to_f32(load_u16(p)); }

// q4_0: f16 d | qs[16]; x = (q − 8) · d.
static inline void block_q4_0(const uint8_t* b, float* y) {
  const float d = load_f16(b);
  const uint8_t* qs = b + 2;
  for (size_t j = 0; j < kQK / 2; ++j) {
    y[j] = static_cast<float>((qs[j] & 0x0f) - 8) * d;
    y[j + kQK / 2] = static_cast<float>((qs[j] >> 4) - 8) * d;
  }
}

// q4_1: f16 d | f16 m | qs[16]; x = q · d + m.
static inline void block_q4_1(const uint8_t* b, float* y) {
  const float d = load_f16(b);
  const float m = load_f16(b + 2);
  const uint8_t* qs = b + 4;
  for (size_t j = 0; j < kQK / 2; ++j) {
    y[j] = static_cast<float>(qs[j] & 0x0f) * d + m;
    y[j + kQK / 2] = static_cast<float>(qs[j] >> 4) * d + m;
  }
}

// q5_0: f16 d | u32 qh | qs[16]; the fifth bit of value j is bit j of qh; x = (q − 16) · d.
static inline void block_q5_0(const uint8_t* b, float* y) {
  const float d = load_f16(b);
  const uint32_t qh = load_u32(b + 2);
  const uint8_t* qs = b + 6;
  for (size_t j = 0; j < kQK / 2; ++j) {
    const int lo = static_cast<int>((qs[j] & 0x0f) | (((qh >> j) & 1u) << 4));
    const int hi = static_cast<int>((qs[j] >> 4) | (((qh >> (j + 16)) & 1u) << 4));
    y[j] = static_cast<float>(lo - 16) * d;
    y[j + kQK / 2] = static_cast<float>(hi - 16) * d;
  }
}

// q5_1: f16 d | f16 m | u32 qh | qs[16]; x = q · d + m.
static inline void block_q5_1(const uint8_t* b, float* y) {
  const float d = load_f16(b);
  const float m = load_f16(b + 2);
  const uint32_t qh = load_u32(b + 4);
  const uint8_t* qs = b + 8;
  for (size_t j = 0; j < kQK / 2; ++j) {
    const uint32_t lo = (qs[j] & 0x0fu) | (((qh >> j) & 1u) << 4);
    const uint32_t hi = (qs[j] >> 4) | (((qh >> (j + 16)) & 1u) << 4);
    y[j] = static_cast<float>(lo) * d + m;
    y[j + kQK / 2] = static_cast<float>(hi) * d + m;
  }
}

// q8_0: f16 d | i8 qs[32]; x = q · d.
static inline void block_q8_0(const uint8_t* b, float* y) {
  const float d = load_f16(b);
  for (size_t j = 0; j < kQK; ++j) y[j] = static_cast<float>(static_cast<int8_t>(b[2 + j])) * d;
}

// q2_K: scales[16] | qs[64] | f16 d | f16 dmin. Two halves of 128 values, each 32 bytes of qs
// read four times (shifts 0, 2, 4, 6); each pass gives two sub-blocks of 16 (bytes 0..15 and
// 16..31) with scales[s] = sc | mn << 4.
static inline void block_q2_k(const uint8_t* b, float* y) {
  const uint8_t* scales = b;
  const uint8_t* q = b + 16;
  const float d = load_f16(b + 80);
  const float dmin = load_f16(b + 82);
  size_t s = 0;
  for (size_t half = 0; half < 2; ++half, q += 32) {
    for (unsigned shift = 0; shift < 8; shift += 2) {
      for (size_t part = 0; part < 2; ++part, ++s) {
        const float dl = d * static_cast<float>(scales[s] & 0x0f);
        const float ml = dmin * static_cast<float>(scales[s] >> 4);
        for (size_t l = 0; l < 16; ++l) *y++ = dl * static_cast<float>((q[part * 16 + l] >> shift) & 3) - ml;
      }
    }
  }
}

// q3_K's 6-bit scale of sub-block s (0..15), minus 32: the low 4 bits from the nibbles of bytes
// 0..7, the top 2 bits from bytes 8..11.
static inline int q3_k_scale(const uint8_t* sc, size_t s) {
  const unsigned lo = s < 8 ? sc[s] & 0x0fu : sc[s - 8] >> 4;
  const unsigned hi = (sc[8 + s % 4] >> (2 * (s / 4))) & 3u;
  return static_cast<int>(lo | hi << 4) - 32;
}

// q3_K: hmask[32] | qs[64] | scales[12] | f16 d. As q2_K's walk; the high bit of each value is
// one bit of hmask (bit 0 for the first 32 values... bit 7 for the last), and a clear bit
// subtracts 4.
static inline void block_q3_k(const uint8_t* b, float* y) {
  const uint8_t* hm = b;
  const uint8_t* q = b + 32;
  const uint8_t* scales = b + 96;
  const float d = load_f16(b + 108);
  size_t s = 0;
  unsigned bit = 0;
  for (size_t half = 0; half < 2; ++half, q += 32) {
    for (unsigned shift = 0; shift < 8; shift += 2, ++bit) {
      for (size_t part = 0; part < 2; ++part, ++s) {
        const float dl = d * static_cast<float>(q3_k_scale(scales, s));
        for (size_t l = 0; l < 16; ++l) {
          const size_t i = part * 16 + l;
          const int v = static_cast<int>((q[i] >> shift) & 3) - (((hm[i] >> bit) & 1) ? 0 : 4);
          *y++ = dl * static_cast<float>(v);
        }
      }
    }
  }
}

// q4_K and q5_K's 6-bit scale and min of sub-block s (0..7) from their 12 packed bytes.
static inline void k4_scale_min(const uint8_t* q, size_t s, unsigned* sc, unsigned* mn) {
  if (s < 4) {
    *sc = q[s] & 63u;
    *mn = q[s + 4] & 63u;
  } else {
    *sc = (q[s + 4] & 0x0fu) | (q[s - 4] >> 6) << 4;
    *mn = (q[s + 4] >> 4) | (q[s] >> 6) << 4;
  }
}

// All eight of k4_scale_min's pairs at once, a byte each, four to a word (little-endian: byte s of
// sc[0] is sub-block s's scale, byte s of sc[1] sub-block 4 + s's; mn likewise), for kernels that
// widen them as vectors.
static inline void k4_scales_mins(const uint8_t* q, uint32_t sc[2], uint32_t mn[2]) {
  const auto word = [q](size_t at) {
    return uint32_t{q[at]} | uint32_t{q[at + 1]} << 8 | uint32_t{q[at + 2]} << 16 | uint32_t{q[at + 3]} << 24;
  };
  const uint32_t low = word(0), mins = word(4), high = word(8);
  sc[0] = low & 0x3f3f3f3fu;
  mn[0] = mins & 0x3f3f3f3fu;
  sc[1] = (high & 0x0f0f0f0fu) | (low >> 6 & 0x03030303u) << 4;
  mn[1] = (high >> 4 & 0x0f0f0f0fu) | (mins >> 6 & 0x03030303u) << 4;
}

// q4_K: f16 d | f16 dmin | scales[12] | qs[128]. Four chunks of 64 values from 32 bytes: the low
// nibbles are sub-block 2c, the high nibbles sub-block 2c + 1.
static inline void block_q4_k(const uint8_t* b, float* y) {
  const float d = load_f16(b);
  const float dmin = load_f16(b + 2);
  const uint8_t* scales = b + 4;
  const uint8_t* q = b + 16;
  for (size_t c = 0; c < 4; ++c, q += 32) {
    unsigned sc, mn;
    k4_scale_min(scales, 2 * c, &sc, &mn);
    const float d1 = d * static_cast<float>(sc), m1 = dmin * static_cast<float>(mn);
    k4_scale_min(scales, 2 * c + 1, &sc, &mn);
    const float d2 = d * static_cast<float>(sc), m2 = dmin * static_cast<float>(mn);
    for (size_t l = 0; l < 32; ++l) *y++ = d1 * static_cast<float>(q[l] & 0x0f) - m1;
    for (size_t l = 0; l < 32; ++l) *y++ = d2 * static_cast<float>(q[l] >> 4) - m2;
  }
}

// q5_K: f16 d | f16 dmin | scales[12] | qh[32] | qs[128]. As q4_K; chunk c's fifth bits are bits
// 2c (low nibbles) and 2c + 1 (high nibbles) of qh[l].
static inline void block_q5_k(const uint8_t* b, float* y) {
  const float d = load_f16(b);
  const float dmin = load_f16(b + 2);
  const uint8_t* scales = b + 4;
  const uint8_t* qh = b + 16;
  const uint8_t* q = b + 48;
  for (size_t c = 0; c < 4; ++c, q += 32) {
    unsigned sc, mn;
    k4_scale_min(scales, 2 * c, &sc, &mn);
    const float d1 = d * static_cast<float>(sc), m1 = dmin * static_cast<float>(mn);
    k4_scale_min(scales, 2 * c + 1, &sc, &mn);
    const float d2 = d * static_cast<float>(sc), m2 = dmin * static_cast<float>(mn);
    for (size_t l = 0; l < 32; ++l) {
      *y++ = d1 * static_cast<float>((q[l] & 0x0fu) + (((qh[l] >> (2 * c)) & 1u) << 4)) - m1;
    }
    for (size_t l = 0; l < 32; ++l) {
      *y++ = d2 * static_cast<float>((q[l] >> 4) + (((qh[l] >> (2 * c + 1)) & 1u) << 4)) - m2;
    }
  }
}

// q6_K: ql[128] | qh[64] | i8 scales[16] | f16 d. Two halves of 128 values, each from 64 bytes
// of ql and 32 of qh: value l + 32k (k = 0..3) takes a nibble of ql[l] (k = 0, 2) or ql[l + 32]
// (k = 1, 3), low for k < 2, and bits 2k..2k+1 of qh[l]; its scale is scales[8h + 2k + l / 16].
static inline void block_q6_k(const uint8_t* b, float* y) {
  const uint8_t* ql = b;
  const uint8_t* qh = b + 128;
  const uint8_t* scales = b + 192;
  const float d = load_f16(b + 208);
  for (size_t half = 0; half < 2; ++half, ql += 64, qh += 32, scales += 8, y += 128) {
    for (size_t l = 0; l < 32; ++l) {
      for (size_t k = 0; k < 4; ++k) {
        const uint8_t low = ql[l + (k & 1) * 32];
        const unsigned nibble = k < 2 ? low & 0x0fu : low >> 4;
        const int q = static_cast<int>(nibble | ((qh[l] >> (2 * k)) & 3u) << 4) - 32;
        const float sc = static_cast<float>(static_cast<int8_t>(scales[l / 16 + 2 * k]));
        y[l + 32 * k] = d * sc * static_cast<float>(q);
      }
    }
  }
}

// Decodes one block of weight type t (a block format of headway/dtype.hpp) into y [block_values];
// false, nothing written, for a value type.
static inline bool decode_block(DType t, const uint8_t* b, float* y) {
  switch (t) {
    case DType::kQ8_0: block_q8_0(b, y); return true;
    case DType::kQ4_0: block_q4_0(b, y); return true;
    case DType::kQ4_1: block_q4_1(b, y); return true;
    case DType::kQ5_0: block_q5_0(b, y); return true;
    case DType::kQ5_1: block_q5_1(b, y); return true;
    case DType::kQ4_K: block_q4_k(b, y); return true;
    case DType::kQ5_K: block_q5_k(b, y); return true;
    case DType::kQ6_K: block_q6_k(b, y); return true;
    case DType::kQ2_K: block_q2_k(b, y); return true;
    case DType::kQ3_K: block_q3_k(b, y); return true;
    default: return false;
  }
}

}  // namespace ggml_blocks
}  // namespace headway
