// ggml's weight types as GGUF files store tensors: the table of the types headway reads (ggml's
// type id, name, values and bytes per block) and the dequantization of a row of any of them to
// f32, bit-exact with ggml's reference dequantize_row_* (ggml-quants.c) and with gguf-py's numpy
// ports of them. Pure functions over pointers: no heap, no I/O, no libm; builds on bare metal.
//
// Every block is little-endian and packed; blocks lie back to back along a row, and a row is a
// whole number of blocks (ggml refuses any other row length, and so does headway). "f16" below is
// an IEEE binary16 scale, widened exactly (headway/dtype_convert.hpp). Per block:
//
//   f32, f16, bf16   1 value of 4, 2, 2 bytes
//   q4_0   18 bytes, 32 values: f16 d | u8 qs[16]            x[j] = (q_j − 8) · d
//   q4_1   20 bytes, 32 values: f16 d | f16 m | u8 qs[16]    x[j] = q_j · d + m
//          (q4_*: byte j of qs holds q_j in its low nibble and q_(j+16) in its high nibble)
//   q5_0   22 bytes, 32 values: f16 d | u32 qh | u8 qs[16]   x[j] = (q_j − 16) · d
//   q5_1   24 bytes, 32 values: f16 d | f16 m | u32 qh | u8 qs[16]   x[j] = q_j · d + m
//          (q5_*: the low 4 bits of q_j as in q4_*, its fifth bit is bit j of qh)
//   q8_0   34 bytes, 32 values: f16 d | i8 qs[32]            x[j] = qs[j] · d
//
// The K-quants have super-blocks of 256 values made of 16 or 8 sub-blocks, each with its own
// small integer scale (and min) under the super-block's f16 d (and dmin):
//   q2_K   84 bytes: u8 scales[16] | u8 qs[64] | f16 d | f16 dmin
//          16 sub-blocks of 16; scales[s] = sc | mn << 4 (4 bits each);
//          x = (d · sc) · q − (dmin · mn), q 2 bits
//   q3_K  110 bytes: u8 hmask[32] | u8 qs[64] | u8 scales[12] | f16 d
//          16 sub-blocks of 16; 6-bit scales packed in 12 bytes (low 4 bits: bytes 0..7, low
//          nibbles for sub-blocks 0..7, high nibbles for 8..15; top 2 bits: byte 8 + s % 4 at bit
//          2 · (s / 4)); x = (d · (sc − 32)) · (q − (hbit ? 0 : 4)), q 2 bits plus a high bit
//   q4_K  144 bytes: f16 d | f16 dmin | u8 scales[12] | u8 qs[128]
//          8 sub-blocks of 32; 6-bit scale and min each, packed in 12 bytes (sub-blocks 0..3:
//          bytes s and s + 4, low 6 bits; 4..7: the nibbles of byte s + 4 and the top 2 bits of
//          bytes s − 4 and s); x = (d · sc) · q − (dmin · mn), q 4 bits
//   q5_K  176 bytes: f16 d | f16 dmin | u8 scales[12] | u8 qh[32] | u8 qs[128]
//          as q4_K with a fifth bit per value from qh
//   q6_K  210 bytes: u8 ql[128] | u8 qh[64] | i8 scales[16] | f16 d
//          16 sub-blocks of 16; x = (d · sc) · (q − 32), q 6 bits (4 in ql, 2 in qh)
// The bit positions follow ggml-common.h; runtime/quant/ggml_dequant.cc spells out each walk. The
// products are taken in f32 in ggml's order ((d · sc) · q − (dmin · mn), never fused into an
// FMA), which is what makes the results bit-exact.
#pragma once

#include <cstddef>
#include <cstdint>

#include "headway/status.hpp"

namespace headway {

// ggml's enum ggml_type values for the types headway reads.
enum class GgmlType : uint32_t {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ5_0 = 6,
  kQ5_1 = 7,
  kQ8_0 = 8,
  kQ2_K = 10,
  kQ3_K = 11,
  kQ4_K = 12,
  kQ5_K = 13,
  kQ6_K = 14,
  kBF16 = 30,
};

struct GgmlTypeInfo {
  GgmlType type;
  const char* name;       // ggml's name: "q4_K"
  uint32_t block_values;  // values per block (1 for f32, f16, bf16)
  uint32_t block_bytes;   // bytes per block
};

inline constexpr GgmlTypeInfo kGgmlTypes[] = {
    {GgmlType::kF32, "f32", 1, 4},       {GgmlType::kF16, "f16", 1, 2},       {GgmlType::kBF16, "bf16", 1, 2},
    {GgmlType::kQ4_0, "q4_0", 32, 18},   {GgmlType::kQ4_1, "q4_1", 32, 20},   {GgmlType::kQ5_0, "q5_0", 32, 22},
    {GgmlType::kQ5_1, "q5_1", 32, 24},   {GgmlType::kQ8_0, "q8_0", 32, 34},   {GgmlType::kQ2_K, "q2_K", 256, 84},
    {GgmlType::kQ3_K, "q3_K", 256, 110}, {GgmlType::kQ4_K, "q4_K", 256, 144}, {GgmlType::kQ5_K, "q5_K", 256, 176},
    {GgmlType::kQ6_K, "q6_K", 256, 210},
};
inline constexpr size_t kGgmlTypeCount = sizeof(kGgmlTypes) / sizeof(kGgmlTypes[0]);
// For messages.
inline constexpr const char* kGgmlTypeNames =
    "f32, f16, bf16, q4_0, q4_1, q5_0, q5_1, q8_0, q2_K, q3_K, q4_K, q5_K, q6_K";

// The index in kGgmlTypes of ggml type id `id`; kGgmlTypeCount for a type headway does not read.
// (An index rather than a pointer: GCC's sanitizers make a pointer test non-constant.)
constexpr size_t ggml_type_index(uint32_t id) {
  size_t i = 0;
  while (i < kGgmlTypeCount && static_cast<uint32_t>(kGgmlTypes[i].type) != id) ++i;
  return i;
}
// The table's row for ggml type id `id`; nullptr for a type headway does not read.
constexpr const GgmlTypeInfo* ggml_type_info(uint32_t id) {
  const size_t i = ggml_type_index(id);
  return i < kGgmlTypeCount ? &kGgmlTypes[i] : nullptr;
}
constexpr const GgmlTypeInfo* ggml_type_info(GgmlType type) { return ggml_type_info(static_cast<uint32_t>(type)); }

// Bytes of a row of n values: n / block_values blocks. 0 when n is not a whole number of blocks
// or the type is not in the table.
constexpr uint64_t ggml_row_bytes(GgmlType type, uint64_t n) {
  const size_t i = ggml_type_index(static_cast<uint32_t>(type));
  if (i == kGgmlTypeCount || n % kGgmlTypes[i].block_values != 0) return 0;
  return n / kGgmlTypes[i].block_values * kGgmlTypes[i].block_bytes;
}

// Dequantizes one row of n values of `type` from src (src_bytes readable there, at least
// ggml_row_bytes(type, n); any alignment) into dst[0..n). n must be a whole number of the type's
// blocks. On error (a type not in the table, a row length that is not whole blocks, src too
// short, null pointers with n > 0) nothing is written and the Status names the type and the
// numbers. src and dst must not overlap.
Status dequantize_ggml_row(GgmlType type, const void* src, size_t src_bytes, size_t n, float* dst);

}  // namespace headway
