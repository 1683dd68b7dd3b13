// ggml's blocks (q8_0, q4_0, q4_1, q5_0, q5_1 of 32 values; q4_K and q6_K super-blocks of 256)
// with a matrix's rows interleaved in groups of 16: the layout the AVX-512 VNNI kernels read
// (simd/matmul/matmul_row_groups-inl.h), where one vector holds four weight bytes of each of 16
// rows and its 32-bit lanes are the rows' sums, so that a block's scales convert, and its x codes
// load, once for 16 rows. The bytes are the file's, moved: a tensor in row groups has exactly the
// bytes it had, and each block's bytes come back in ggml's own order (block()).
//
// A block of B bytes is C bytes of codes (q8_0's qs; q4's and q4_K's nibbles; q5's nibbles; q6_K's
// ql then qh), at code_begin in the block, and a head of H = B − C bytes: its f16 fields first
// (d, then m or dmin; S = scale_bytes of them), then runs of 4 bytes (q5's qh, q4_K's 12 bytes of
// 6-bit scales and mins, q6_K's 16 int8 scales). The head's bytes in that order are the block's
// own, but for q6_K, whose d comes last in the block (head byte o < 2 is block byte 208 + o, head
// byte o ≥ 2 block byte 190 + o). A [rows, cols] tensor of nb = cols / (block values) blocks per
// row:
//   group g (rows 16g .. 16g + 15, for g < rows / 16) at g · 16 · nb · B:
//     codes: nb × [C / 4 chunks × 16 rows × 4 bytes]: code byte c of row j's block b at
//            b · 16C + (c / 4) · 64 + j · 4 + c % 4
//     heads: nb × 16H bytes after all the codes: block b's at 16 · nb · C + b · 16H, in it head
//            byte o of row j at (o / 2) · 32 + j · 2 + o % 2 for o < S (16 rows of an f16 field
//            side by side), else at 16S + ((o − S) / 4) · 64 + j · 4 + (o − S) % 4 (a 4-byte run
//            of 16 rows in one vector, a row to a 32-bit lane)
//   the rows past the last whole group (rows % 16 of them): as the file holds them, row r at
//   r · nb · B (the groups before fill exactly the bytes of their rows).
#pragma once

#include <cstdint>
#include <cstring>

#include "headway/dtype.hpp"

namespace headway {
namespace row_groups {

inline constexpr uint32_t kRows = 16;
inline constexpr uint32_t kMaxBlockBytes = 210;      // q6_K's, the largest block row groups hold
inline constexpr uint32_t kMaxSmallBlockBytes = 34;  // q8_0's, the largest of their 32-value blocks

// The bytes of f16 fields at the start of each block's head (d, and m or dmin), 0 for a type row
// groups do not hold; every type they hold has f16 fields.
constexpr uint32_t scale_bytes(DType t) {
  return t == DType::kQ4_1 || t == DType::kQ5_1 || t == DType::kQ4_K                        ? 4
         : t == DType::kQ4_0 || t == DType::kQ8_0 || t == DType::kQ5_0 || t == DType::kQ6_K ? 2
                                                                                            : 0;
}
// The head's bytes after its f16 fields, in runs of 4.
constexpr uint32_t run_bytes(DType t) {
  return t == DType::kQ5_0 || t == DType::kQ5_1 ? 4 : t == DType::kQ4_K ? 12 : t == DType::kQ6_K ? 16 : 0;
}
constexpr uint32_t head_bytes(DType t) { return scale_bytes(t) + run_bytes(t); }
constexpr bool holds(DType t) { return scale_bytes(t) != 0; }
constexpr uint32_t code_bytes(DType t) { return holds(t) ? dtype_traits(t).block_bytes - head_bytes(t) : 0; }
// Where a block's codes begin in it: after the head, but in q6_K (ql and qh first).
constexpr uint32_t code_begin(DType t) { return t == DType::kQ6_K ? 0 : head_bytes(t); }
inline constexpr const char* kTypeNames = "q8_0, q4_0, q4_1, q5_0, q5_1, q4_K and q6_K";

// Block byte of head byte o, and back (they differ in q6_K alone, whose d comes last).
constexpr uint32_t head_to_block(DType t, uint32_t o) { return t == DType::kQ6_K ? (o < 2 ? 208 + o : 190 + o) : o; }
constexpr uint32_t block_to_head(DType t, uint32_t i) { return t == DType::kQ6_K ? (i >= 208 ? i - 208 : i - 190) : i; }
constexpr bool is_code(DType t, uint32_t i) { return i >= code_begin(t) && i < code_begin(t) + code_bytes(t); }

// Where byte i (in ggml's order) of row j's block b of group `group` lies, from the tensor's start.
inline uint64_t byte_at(DType t, uint64_t nb, uint64_t group, uint32_t j, uint64_t b, uint32_t i) {
  const uint32_t s = scale_bytes(t), h = head_bytes(t), c = code_bytes(t);
  const uint64_t base = group * kRows * nb * (h + c);
  if (is_code(t, i)) {
    const uint32_t code = i - code_begin(t);
    return base + b * kRows * c + (code / 4) * 64 + j * 4 + code % 4;
  }
  const uint64_t head = base + kRows * nb * c + b * kRows * h;
  const uint32_t o = block_to_head(t, i);
  if (o < s) return head + (o / 2) * 32 + j * 2 + o % 2;
  return head + s * kRows + ((o - s) / 4) * 64 + j * 4 + (o - s) % 4;
}

// The bytes from byte i of a block on that stay together in row groups: a 2-byte f16 field, a
// 4-byte run of the head or chunk of codes.
constexpr uint32_t run(DType t, uint32_t i) { return !is_code(t, i) && block_to_head(t, i) < scale_bytes(t) ? 2 : 4; }
static_assert(run(DType::kQ5_1, 8) == 4 && run(DType::kQ6_K, 208) == 2 && run(DType::kQ6_K, 192) == 4,
              "qh, q6_K's d and its scales");

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
  const uint32_t c0 = code_begin(t);
  const uint8_t* base = data + g * kRows * nb * bytes;
  const uint8_t* codes = base + b * kRows * c;
  const uint8_t* head = base + kRows * nb * c + b * kRows * h;
  for (uint32_t j = 0; j < kRows; ++j) {
    uint8_t* o = out + j * bytes;
    for (uint32_t f = 0; f < s / 2; ++f) std::memcpy(o + head_to_block(t, 2 * f), head + f * 32 + j * 2, 2);
    for (uint32_t r = 0; r < (h - s) / 4; ++r) {
      std::memcpy(o + head_to_block(t, s + 4 * r), head + s * kRows + r * 64 + j * 4, 4);
    }
    for (uint32_t k = 0; k < c / 4; ++k) std::memcpy(o + c0 + 4 * k, codes + k * 64 + j * 4, 4);
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
