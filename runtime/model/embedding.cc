#include <cstring>

#include "headway/dtype_convert.hpp"
#include "headway/detail/ggml_blocks.hpp"
#include "runtime/model/model_ops.hpp"

namespace headway {

void widen_row(const void* table, DType dtype, uint64_t row, uint32_t n, float* y) {
  const uint8_t* r = static_cast<const uint8_t*>(table) + dtype_row_bytes(dtype, n) * row;
  if (dtype == DType::kF32) {
    std::memcpy(y, r, size_t{n} * sizeof(float));
    return;
  }
  if (dtype_is_block(dtype)) {  // n is whole blocks (the loaders and matmul_args_error hold rows to it)
    const DTypeTraits& type = dtype_traits(dtype);
    for (uint32_t j = 0; j < n; j += type.block_values) {
      ggml_blocks::decode_block(dtype, r + j / type.block_values * type.block_bytes, y + j);
    }
    return;
  }
  const uint16_t* b = reinterpret_cast<const uint16_t*>(r);
  for (uint32_t j = 0; j < n; ++j) y[j] = dtype == DType::kF16 ? f16_bits_to_f32(b[j]) : bf16_bits_to_f32(b[j]);
}

}  // namespace headway
