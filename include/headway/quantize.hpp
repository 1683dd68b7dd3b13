// Block quantization of one row of f32 values into ggml's q8_0 and q4_0 formats, and back.
// Bit-exact with ggml's reference quantizers (quantize_row_q8_0_ref / quantize_row_q4_0_ref) and
// dequantizers on every row whose length is a multiple of 32, so that files and oracles that
// quantize as llama.cpp does reproduce every byte. No heap, no exceptions, no libm: builds on
// bare metal.
//
// A row of n values is split into blocks of 32 along the row; the blocks lie back to back, each
// in ggml's block struct (little-endian, no padding between blocks):
//   q8_0, 34 bytes: uint16 d (f16 bits), int8 q[32]               value i = q[i] · d
//   q4_0, 18 bytes: uint16 d (f16 bits), uint8 qs[16]             value i = (q_i − 8) · d
//     where byte j of qs holds q_j in its low nibble and q_(j+16) in its high nibble.
// The scale is computed in f32 and stored rounded to f16 (nearest even); quantization multiplies
// by the f32 id = d != 0 ? 1/d : 0, dequantization by the stored f16 d, as ggml does:
//   q8_0: d = max|x| / 127,  q = round-half-away-from-zero(x · id)
//   q4_0: d = m / −8 where m is the first value of largest magnitude (signed),
//         q = min(15, trunc(x · id + 8.5))
// This is the interchange layout of these row functions; the KV cache kernels may keep their own
// in-memory layout (scales apart, interleaved for SIMD loads) and document it where they do.
//
// A row length that is not a multiple of 32 ends in a short block of n % 32 values with its own
// scale. It is laid out as a full block (34 or 18 bytes) whose missing slots hold the value 0:
// exactly the bytes ggml gives the row padded with zeros to the next multiple of 32 (zeros never
// change either scale), so q8_0 stores q = 0 there and q4_0 the code 8. Dequantization writes
// only the n values of the row and ignores the padding slots.
//
// Non-finite input: a block that holds a NaN or an infinity is stored with d = NaN (f16 0x7e00)
// and every code set to zero (q8_0 q = 0, q4_0 code 8), so all 32 of its values dequantize to NaN;
// other blocks of the row are unaffected. Finite input whose scale overflows f16 (max|x| past
// about 65504 · 127 for q8_0, 65504 · 8 for q4_0) stores d = ±inf, as ggml does, and its values
// dequantize to ±inf (NaN where the code is zero). No float that is NaN or out of range is ever
// converted to an integer: where ggml's C would be undefined (a scale so small that 1/d
// overflows, making x · id infinite or NaN) the codes are clamped into their range, NaN taken as
// the zero code; such a block's d rounds to f16 zero, so its values are zero all the same.
#pragma once

#include <cstddef>
#include <cstdint>

#include "headway/config.hpp"
#include "headway/status.hpp"

namespace headway {

enum class QuantType : uint8_t {
  kQ8_0 = 0,  // 32 int8 codes + f16 scale per block: 34 bytes per 32 values
  kQ4_0 = 1,  // 32 4-bit codes + f16 scale per block: 18 bytes per 32 values
};

inline constexpr size_t kQuantBlockValues = 32;  // values per block, both formats

// The format of a block DType (DType::kQ8_0, kQ4_0: dtype_is_block).
constexpr QuantType quant_type_of(DType t) { return t == DType::kQ8_0 ? QuantType::kQ8_0 : QuantType::kQ4_0; }

// "q8_0", "q4_0", or "unknown" for a value outside the enum.
const char* quant_type_name(QuantType type);

// Bytes of one block (34 or 18); 0 for an unknown type.
size_t quant_block_bytes(QuantType type);

// Bytes of a quantized row of n values: ceil(n / 32) blocks (a short last block takes a full
// block's bytes). 0 for n == 0 or an unknown type.
size_t quantized_row_bytes(QuantType type, size_t n);

// Quantizes x[0..n) into out, which must hold quantized_row_bytes(type, n) bytes (out_bytes is its
// size; more is fine, only the row's bytes are written). On error nothing is written.
Status quantize_row(QuantType type, const float* x, size_t n, void* out, size_t out_bytes);

// Dequantizes a row of n values from in (in_bytes available, at least quantized_row_bytes) into
// y[0..n). On error nothing is written.
Status dequantize_row(QuantType type, const void* in, size_t in_bytes, size_t n, float* y);

// Rows of values (K or V rows of head_dim values, token by token) from f32 or f16 (bit patterns)
// into any KV dtype, as `headway attend --kv-dtype`, the C API and the Python package store the
// K/V they are given: f32 → f16 / bf16 rounds to nearest even; f16 → f32 widens exactly, f16 →
// bf16 widens and rounds once; q8_0 / q4_0 quantize each row as quantize_row does (f16 values
// widened first, 32 at a time); the same dtype copies. out holds rows · dtype_row_bytes(to,
// row_values) bytes (out_bytes at least that). src and out must not overlap. On error (a source
// dtype other than f32 / f16, null pointers, out too small) nothing is written.
Status convert_rows(const void* src, DType from, size_t rows, size_t row_values, DType to, void* out, size_t out_bytes);

}  // namespace headway
