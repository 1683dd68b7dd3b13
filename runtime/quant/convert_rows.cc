// convert_rows(): K/V rows from f32 or f16 into any KV dtype (headway/quantize.hpp).
#include <cstring>

#include "headway/dtype_convert.hpp"
#include "headway/quantize.hpp"

namespace headway {

Status convert_rows(const void* src, DType from, size_t rows, size_t row_values, DType to, void* out,
                    size_t out_bytes) {
  if (from != DType::kF32 && from != DType::kF16) {
    return Status::error(Code::kInvalidArgument, "convert_rows: rows in %s: the source is f32 or f16",
                         dtype_name(from));
  }
  if (!dtype_stores_kv(to)) {
    return Status::error(Code::kInvalidArgument,
                         "convert_rows: rows into %s: headway writes %s (%s is read from files)", dtype_name(to),
                         kKvDTypeNames, dtype_name(to));
  }
  const size_t n = rows * row_values;
  const size_t row_bytes = static_cast<size_t>(dtype_row_bytes(to, row_values));
  const size_t need = rows * row_bytes;
  if (n != 0 && (src == nullptr || out == nullptr)) {
    return Status::error(Code::kInvalidArgument, "convert_rows: %s is null with %zu values", src ? "out" : "src", n);
  }
  if (out_bytes < need) {
    return Status::error(Code::kInvalidArgument,
                         "convert_rows: out_bytes %zu is below the %zu bytes of %zu rows of %zu %s values", out_bytes,
                         need, rows, row_values, dtype_name(to));
  }
  if (n == 0) return Status();
  auto* dst = static_cast<uint8_t*>(out);
  if (from == to) {
    std::memcpy(dst, src, need);
  } else if (dtype_is_block(to)) {
    const QuantType q = quant_type_of(to);
    const size_t block_bytes = quant_block_bytes(q);
    float widened[kQuantBlockValues];
    for (size_t r = 0; r < rows; ++r) {
      for (size_t start = 0; start < row_values; start += kQuantBlockValues) {
        const size_t count = row_values - start < kQuantBlockValues ? row_values - start : kQuantBlockValues;
        const size_t at = r * row_values + start;
        const float* x = static_cast<const float*>(src) + at;
        if (from == DType::kF16) {
          f16_to_f32(static_cast<const uint16_t*>(src) + at, widened, count);
          x = widened;
        }
        // A row's blocks are independent: its block b is quantize_row's of those (up to) 32 values.
        (void)quantize_row(q, x, count, dst + r * row_bytes + start / kQuantBlockValues * block_bytes, block_bytes);
      }
    }
  } else if (from == DType::kF32) {
    const float* x = static_cast<const float*>(src);
    if (to == DType::kF16) f32_to_f16(x, reinterpret_cast<uint16_t*>(dst), n);
    else f32_to_bf16(x, reinterpret_cast<uint16_t*>(dst), n);
  } else if (to == DType::kF32) {
    f16_to_f32(static_cast<const uint16_t*>(src), reinterpret_cast<float*>(dst), n);
  } else {
    f16_to_bf16(static_cast<const uint16_t*>(src), reinterpret_cast<uint16_t*>(dst), n);
  }
  return Status();
}

}  // namespace headway
