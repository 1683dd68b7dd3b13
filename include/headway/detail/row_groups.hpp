// ggml's 32-value blocks (q8_0, q4_0, q4_1) with a matrix's rows interleaved in groups of 16: the
// layout the AVX-512 VNNI decode GEMV reads (simd/matmul/matmul_row_groups-inl.h), where one
// vector holds four weight bytes of each of 16 rows and its 32-bit lanes are the rows' sums, so
// that a block's scales convert, and its x codes load, once for 16 rows. The bytes are the
// file's, moved: a tensor in row groups has exactly the bytes it had, and each block's bytes come
// back in ggml's own order (block()).
//
// A [rows, cols] tensor of nb = cols / 32 blocks per row, B bytes per block (S of scales: d, then
// m for q4_1; C = B − S of codes):
//   group g (rows 16g .. 16g + 15, for g < rows / 16) at g · 16 · nb · B:
//     codes:  nb × [C / 4 chunks × 16 rows × 4 bytes]: byte c of row j's block b at
//             b · 16C + (c / 4) · 64 + j · 4 + c % 4
//     scales: nb × [S / 2 fields × 16 rows × 2 bytes], after all the codes: field f (d, m) of
//             row j's block b at 16 · nb · C + b · 16S + f · 32 + j · 2
//   the rows past the last whole group (rows % 16 of them): as the file holds them, row r at
//   r · nb · B (the groups before fill exactly the bytes of their rows).
#pragma once

#include <cstdint>
#include <cstring>

#include "headway/dtype.hpp"

namespace headway {
namespace row_groups {

inline constexpr uint32_t kRows = 16;
inline constexpr uint32_t kMaxBlockBytes = 34;  // q8_0's, the largest block row groups hold

// The bytes of scales at the start of each block of t: nonzero for the types row groups hold.
constexpr uint32_t scale_bytes(DType t) {
  return t == DType::kQ4_1 ? 4 : t == DType::kQ4_0 || t == DType::kQ8_0 ? 2 : 0;
}
constexpr bool holds(DType t) { return scale_bytes(t) != 0; }

// Where byte i (in ggml's order) of row j's block b of group `group` lies, from the tensor's start.
inline uint64_t byte_at(DType t, uint64_t nb, uint64_t group, uint32_t j, uint64_t b, uint32_t i) {
  const uint32_t s = scale_bytes(t), c = dtype_traits(t).block_bytes - s;
  const uint64_t base = group * kRows * nb * (s + c);
  if (i < s) return base + kRows * nb * c + b * kRows * s + (i / 2) * 32 + j * 2 + i % 2;
  const uint32_t code = i - s;
  return base + b * kRows * c + (code / 4) * 64 + j * 4 + code % 4;
}

// The bytes from byte i of a block on that stay together in row groups: a 2-byte scale field, a
// 4-byte chunk of codes.
constexpr uint32_t run(DType t, uint32_t i) { return i < scale_bytes(t) ? 2 : 4; }

// Copies block b of row r of a [rows, cols] tensor in row groups to out, in ggml's order.
inline void block(DType t, const uint8_t* data, uint64_t rows, uint64_t cols, uint64_t r, uint64_t b, uint8_t* out) {
  const uint32_t bytes = dtype_traits(t).block_bytes;
  const uint64_t nb = cols / dtype_traits(t).block_values;
  if (r >= rows / kRows * kRows) {
    std::memcpy(out, data + (r * nb + b) * bytes, bytes);
    return;
  }
  for (uint32_t i = 0; i < bytes; i += run(t, i))
    std::memcpy(out + i, data + byte_at(t, nb, r / kRows, r % kRows, b, i), run(t, i));
}

// Copies block b of each of group g's 16 rows to out [16 · block bytes] (row j's at j · block
// bytes), in ggml's order, from a tensor in row groups of nb blocks per row.
inline void group_blocks(DType t, const uint8_t* data, uint64_t nb, uint64_t g, uint64_t b, uint8_t* out) {
  const uint32_t s = scale_bytes(t), bytes = dtype_traits(t).block_bytes, c = bytes - s;
  const uint8_t* base = data + g * kRows * nb * bytes;
  const uint8_t* codes = base + b * kRows * c;
  const uint8_t* scales = base + kRows * nb * c + b * kRows * s;
  for (uint32_t j = 0; j < kRows; ++j) {
    uint8_t* o = out + j * bytes;
    for (uint32_t f = 0; f < s / 2; ++f) std::memcpy(o + 2 * f, scales + f * 32 + j * 2, 2);
    for (uint32_t k = 0; k < c / 4; ++k) std::memcpy(o + s + 4 * k, codes + k * 64 + j * 4, 4);
  }
}

// Writes a [rows, cols] tensor of t as the file holds it (src) into dst in row groups (as many
// bytes; dst distinct from src).
inline void group(DType t, const uint8_t* src, uint8_t* dst, uint64_t rows, uint64_t cols) {
  const uint32_t bytes = dtype_traits(t).block_bytes;
  const uint64_t nb = cols / dtype_traits(t).block_values, grouped = rows / kRows * kRows;
  for (uint64_t r = 0; r < grouped; ++r) {
    for (uint64_t b = 0; b < nb; ++b) {
      const uint8_t* in = src + (r * nb + b) * bytes;
      for (uint32_t i = 0; i < bytes; i += run(t, i)) {
        std::memcpy(dst + byte_at(t, nb, r / kRows, r % kRows, b, i), in + i, run(t, i));
      }
    }
  }
  std::memcpy(dst + grouped * nb * bytes, src + grouped * nb * bytes, (rows - grouped) * nb * bytes);
}

}  // namespace row_groups
}  // namespace headway
