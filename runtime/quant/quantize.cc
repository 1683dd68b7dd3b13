// ggml's q8_0 and q4_0 row quantizers (see headway/quantize.hpp for the formats). The arithmetic
// follows ggml-quants.c's reference functions operation for operation, in f32; this file is
// built with -ffp-contract=off (runtime/CMakeLists.txt) so that x · id + 8.5 is never fused into
// one FMA, which would round differently from ggml's and numpy's two steps.
#include "headway/quantize.hpp"

#include <bit>
#include <cstdint>
#include <limits>

#include "headway/dtype_convert.hpp"

namespace headway {
namespace {

constexpr size_t kBlock = kQuantBlockValues;
constexpr size_t kQ8Bytes = 2 + kBlock;
constexpr size_t kQ4Bytes = 2 + kBlock / 2;
constexpr uint16_t kF16Nan = 0x7e00;

bool is_finite(float v) { return (std::bit_cast<uint32_t>(v) & 0x7f800000u) != 0x7f800000u; }
float abs_f32(float v) { return std::bit_cast<float>(std::bit_cast<uint32_t>(v) & 0x7fffffffu); }

// The block's values, zero-padded to 32 (a short last block); false when one is not finite.
bool load_block(const float* x, size_t count, float (&v)[kBlock]) {
  bool finite = true;
  for (size_t i = 0; i < kBlock; ++i) {
    v[i] = i < count ? x[i] : 0.0f;
    finite = finite && is_finite(v[i]);
  }
  return finite;
}

void store_f16(uint8_t* p, uint16_t h) {
  p[0] = static_cast<uint8_t>(h & 0xffu);
  p[1] = static_cast<uint8_t>(h >> 8);
}
uint16_t load_f16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }

// roundf for |s| <= 127 after the clamp: the integer part by truncation (exact), plus one when the
// fraction (exact: s − trunc(s) loses no bits below 2^23) is at least one half.
int8_t round_half_away(float s) {
  if (!(s == s)) return 0;  // NaN: only when 1/d overflowed (d tiny, stored as f16 zero)
  const float a = abs_f32(s) > 127.0f ? 127.0f : abs_f32(s);
  int whole = static_cast<int>(a);
  if (a - static_cast<float>(whole) >= 0.5f) ++whole;
  return static_cast<int8_t>(s < 0.0f ? -whole : whole);
}

// (int8)(s) then min(15, ·) as ggml, defined for every s: s lies in [0, 16.5] whenever ggml's
// conversion is defined; NaN (1/d overflowed) becomes the zero code 8.
uint8_t q4_code(float s) {
  if (!(s == s)) return 8;
  if (s < 1.0f) return 0;  // (-1, 1) truncates to 0; below that ggml is undefined
  if (s >= 15.0f) return 15;
  return static_cast<uint8_t>(static_cast<int>(s));
}

void quantize_block_q8_0(const float* x, size_t count, uint8_t* out) {
  float v[kBlock];
  if (!load_block(x, count, v)) {
    store_f16(out, kF16Nan);
    for (size_t i = 0; i < kBlock; ++i) out[2 + i] = 0;
    return;
  }
  float amax = 0.0f;
  for (size_t i = 0; i < kBlock; ++i) amax = abs_f32(v[i]) > amax ? abs_f32(v[i]) : amax;
  const float d = amax / 127.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  store_f16(out, f32_to_f16_bits(d));
  for (size_t i = 0; i < kBlock; ++i) out[2 + i] = static_cast<uint8_t>(round_half_away(v[i] * id));
}

void quantize_block_q4_0(const float* x, size_t count, uint8_t* out) {
  float v[kBlock];
  if (!load_block(x, count, v)) {
    store_f16(out, kF16Nan);
    for (size_t j = 0; j < kBlock / 2; ++j) out[2 + j] = 0x88u;
    return;
  }
  float amax = 0.0f;
  float max = 0.0f;  // the first value of largest magnitude, with its sign
  for (size_t i = 0; i < kBlock; ++i) {
    if (amax < abs_f32(v[i])) {
      amax = abs_f32(v[i]);
      max = v[i];
    }
  }
  const float d = max / -8.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  store_f16(out, f32_to_f16_bits(d));
  for (size_t j = 0; j < kBlock / 2; ++j) {
    const uint8_t lo = q4_code(v[j] * id + 8.5f);
    const uint8_t hi = q4_code(v[j + kBlock / 2] * id + 8.5f);
    out[2 + j] = static_cast<uint8_t>(lo | (hi << 4));
  }
}

void dequantize_block_q8_0(const uint8_t* in, size_t count, float* y) {
  const float d = f16_bits_to_f32(load_f16(in));
  for (size_t i = 0; i < count; ++i) y[i] = static_cast<float>(static_cast<int8_t>(in[2 + i])) * d;
}

void dequantize_block_q4_0(const uint8_t* in, size_t count, float* y) {
  const float d = f16_bits_to_f32(load_f16(in));
  for (size_t i = 0; i < count; ++i) {
    const uint8_t byte = in[2 + i % (kBlock / 2)];
    const int code = i < kBlock / 2 ? (byte & 0x0f) : (byte >> 4);
    y[i] = static_cast<float>(code - 8) * d;
  }
}

bool known(QuantType type) { return type == QuantType::kQ8_0 || type == QuantType::kQ4_0; }

Status unknown_type(const char* who, QuantType type) {
  return Status::error(Code::kUnsupported, "%s: quant type %u is not one of q8_0, q4_0", who,
                       static_cast<unsigned>(type));
}

}  // namespace

const char* quant_type_name(QuantType type) {
  switch (type) {
    case QuantType::kQ8_0: return "q8_0";
    case QuantType::kQ4_0: return "q4_0";
  }
  return "unknown";
}

size_t quant_block_bytes(QuantType type) {
  switch (type) {
    case QuantType::kQ8_0: return kQ8Bytes;
    case QuantType::kQ4_0: return kQ4Bytes;
  }
  return 0;
}

size_t quantized_row_bytes(QuantType type, size_t n) {
  const size_t block_bytes = quant_block_bytes(type);
  const size_t blocks = n / kBlock + (n % kBlock != 0 ? 1 : 0);
  if (block_bytes != 0 && blocks > std::numeric_limits<size_t>::max() / block_bytes) {
    return std::numeric_limits<size_t>::max();  // no buffer is that large: every size check fails
  }
  return blocks * block_bytes;
}

Status quantize_row(QuantType type, const float* x, size_t n, void* out, size_t out_bytes) {
  if (!known(type)) return unknown_type("quantize_row", type);
  if (n == 0) return Status();
  if (x == nullptr) return Status::error(Code::kInvalidArgument, "quantize_row: x is null with n = %zu", n);
  if (out == nullptr) return Status::error(Code::kInvalidArgument, "quantize_row: out is null with n = %zu", n);
  const size_t need = quantized_row_bytes(type, n);
  if (out_bytes < need) {
    return Status::error(Code::kInvalidArgument, "quantize_row: out_bytes %zu is below the %zu bytes of %zu %s values",
                         out_bytes, need, n, quant_type_name(type));
  }
  auto* dst = static_cast<uint8_t*>(out);
  const size_t block_bytes = quant_block_bytes(type);
  for (size_t start = 0; start < n; start += kBlock, dst += block_bytes) {
    const size_t count = n - start < kBlock ? n - start : kBlock;
    if (type == QuantType::kQ8_0) {
      quantize_block_q8_0(x + start, count, dst);
    } else {
      quantize_block_q4_0(x + start, count, dst);
    }
  }
  return Status();
}

Status dequantize_row(QuantType type, const void* in, size_t in_bytes, size_t n, float* y) {
  if (!known(type)) return unknown_type("dequantize_row", type);
  if (n == 0) return Status();
  if (in == nullptr) return Status::error(Code::kInvalidArgument, "dequantize_row: in is null with n = %zu", n);
  if (y == nullptr) return Status::error(Code::kInvalidArgument, "dequantize_row: y is null with n = %zu", n);
  const size_t need = quantized_row_bytes(type, n);
  if (in_bytes < need) {
    return Status::error(Code::kInvalidArgument, "dequantize_row: in_bytes %zu is below the %zu bytes of %zu %s values",
                         in_bytes, need, n, quant_type_name(type));
  }
  const auto* src = static_cast<const uint8_t*>(in);
  const size_t block_bytes = quant_block_bytes(type);
  for (size_t start = 0; start < n; start += kBlock, src += block_bytes) {
    const size_t count = n - start < kBlock ? n - start : kBlock;
    if (type == QuantType::kQ8_0) {
      dequantize_block_q8_0(src, count, y + start);
    } else {
      dequantize_block_q4_0(src, count, y + start);
    }
  }
  return Status();
}

}  // namespace headway
