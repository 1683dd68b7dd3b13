// ggml's 32-value blocks (q8_0, q4_0, q4_1, q5_0, q5_1) with a matrix's rows interleaved in
// groups of 16: the layout the AVX-512 VNNI decode GEMV reads (simd/matmul/
// matmul_row_groups-inl.h), where one vector holds four weight bytes of each of 16 rows and its
// 32-bit lanes are the rows' sums, so that a block's scales convert, and its x codes load, once
// for 16 rows. The bytes are the file's, moved: a tensor in row groups has exactly the bytes it
// had, and each block's bytes come back in ggml's own order (block()).
//
// A block of B bytes is a head of H bytes (its f16 fields — d, then m for q4_1 and q5_1 — and
// q5's 4 bytes of fifth bits qh) and C = B − H bytes of codes. A [rows, cols] tensor of
// nb = cols / 32 blocks per row:
//   group g (rows 16g .. 16g + 15, for g < rows / 16) at g · 16 · nb · B:
//     codes: nb × [C / 4 chunks × 16 rows × 4 bytes]: byte c of row j's block b at
//            b · 16C + (c / 4) · 64 + j · 4 + c % 4
//     heads: nb × 16H bytes after all the codes: block b's at 16 · nb · C + b · 16H, in it f16
//            field f of row j at f · 32 + j · 2, then qh of row j at 32 · (f16 fields) + j · 4
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

// The bytes of f16 fields at the start of each block of t (d, and m), and of fifth bits after
// them (q5's qh); every type row groups hold has f16 fields.
constexpr uint32_t scale_bytes(DType t) {
  return t == DType::kQ4_1 || t == DType::kQ5_1                        ? 4
         : t == DType::kQ4_0 || t == DType::kQ8_0 || t == DType::kQ5_0 ? 2
                                                                       : 0;
}
constexpr uint32_t high_bytes(DType t) { return t == DType::kQ5_0 || t == DType::kQ5_1 ? 4 : 0; }
constexpr uint32_t head_bytes(DType t) { return scale_bytes(t) + high_bytes(t); }
constexpr bool holds(DType t) { return scale_bytes(t) != 0; }
inline constexpr const char* kTypeNames = "q8_0, q4_0, q4_1, q5_0 and q5_1";

// Where byte i (in ggml's order) of row j's block b of group `group` lies, from the tensor's start.
inline uint64_t byte_at(DType t, uint64_t nb, uint64_t group, uint32_t j, uint64_t b, uint32_t i) {
  const uint32_t s = scale_bytes(t), h = head_bytes(t), c = dtype_traits(t).block_bytes - h;
  const uint64_t base = group * kRows * nb * (h + c);
  const uint64_t head = base + kRows * nb * c + b * kRows * h;
  if (i < s) return head + (i / 2) * 32 + j * 2 + i % 2;
  if (i < h) return head + s * kRows + j * 4 + (i - s);
  const uint32_t code = i - h;
  return base + b * kRows * c + (code / 4) * 64 + j * 4 + code % 4;
}

// The bytes from byte i of a block on that stay together in row groups: a 2-byte f16 field, qh,
// a 4-byte chunk of codes.
constexpr uint32_t run(DType t, uint32_t i) { return i < scale_bytes(t) ? 2 : 4; }
static_assert(run(DType::kQ5_1, 4) == 4, "a qh field is one run");

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
// bytes), in ggml's order, from a tensor in row groups of nb blocks per row: byte_at's layout run
// by run, its offsets worked out once for the 16 rows (a prefill's tiles decode whole groups so).
inline void group_blocks(DType t, const uint8_t* data, uint64_t nb, uint64_t g, uint64_t b, uint8_t* out) {
  const uint32_t s = scale_bytes(t), h = head_bytes(t), bytes = dtype_traits(t).block_bytes, c = bytes - h;
  const uint8_t* base = data + g * kRows * nb * bytes;
  const uint8_t* codes = base + b * kRows * c;
  const uint8_t* head = base + kRows * nb * c + b * kRows * h;
  for (uint32_t j = 0; j < kRows; ++j) {
    uint8_t* o = out + j * bytes;
    for (uint32_t f = 0; f < s / 2; ++f) std::memcpy(o + 2 * f, head + f * 32 + j * 2, 2);
    if (h > s) std::memcpy(o + s, head + s * kRows + j * 4, 4);
    for (uint32_t k = 0; k < c / 4; ++k) std::memcpy(o + h + 4 * k, codes + k * 64 + j * 4, 4);
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
