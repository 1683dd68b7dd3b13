// Dequantization of ggml's weight types (layouts in headway/ggml_types.hpp) through the block
// walks of headway/detail/ggml_blocks.hpp, which follow ggml-quants.c's reference dequantize_row_* value
// for value and product for product, in f32; this file is built with -ffp-contract=off
// (runtime/CMakeLists.txt) so that q · d + m is never fused into one FMA, which would round
// differently from ggml's C and gguf-py's numpy.
#include "headway/ggml_types.hpp"

#include <bit>
#include <cstdint>

#include "headway/dtype_convert.hpp"
#include "headway/detail/ggml_blocks.hpp"

namespace headway {
namespace {

using namespace ggml_blocks;  // NOLINT: the block walks of this file's own types

using BlockFn = void (*)(const uint8_t*, float*);

BlockFn block_fn(GgmlType type) {
  switch (type) {
    case GgmlType::kQ4_0: return block_q4_0;
    case GgmlType::kQ4_1: return block_q4_1;
    case GgmlType::kQ5_0: return block_q5_0;
    case GgmlType::kQ5_1: return block_q5_1;
    case GgmlType::kQ8_0: return block_q8_0;
    case GgmlType::kQ2_K: return block_q2_k;
    case GgmlType::kQ3_K: return block_q3_k;
    case GgmlType::kQ4_K: return block_q4_k;
    case GgmlType::kQ5_K: return block_q5_k;
    case GgmlType::kQ6_K: return block_q6_k;
    default: return nullptr;
  }
}

}  // namespace

Status dequantize_ggml_row(GgmlType type, const void* src, size_t src_bytes, size_t n, float* dst) {
  const GgmlTypeInfo* info = ggml_type_info(type);
  if (info == nullptr) {
    return Status::error(Code::kUnsupported, "ggml type %u is not one headway dequantizes (%s)",
                         static_cast<unsigned>(type), kGgmlTypeNames);
  }
  if (n % info->block_values != 0) {
    return Status::error(Code::kInvalidArgument, "a %s row of %zu values is not a whole number of %u-value blocks",
                         info->name, n, info->block_values);
  }
  const size_t blocks = n / info->block_values;
  if (src_bytes / info->block_bytes < blocks) {
    return Status::error(Code::kOutOfRange, "a %s row of %zu values needs %zu bytes (%zu blocks of %u), got %zu",
                         info->name, n, blocks * info->block_bytes, blocks, info->block_bytes, src_bytes);
  }
  if (n == 0) return Status();
  if (src == nullptr || dst == nullptr) {
    return Status::error(Code::kInvalidArgument, "dequantize a %s row of %zu values: %s is null", info->name, n,
                         src == nullptr ? "the source" : "the destination");
  }
  const auto* p = static_cast<const uint8_t*>(src);
  switch (type) {
    case GgmlType::kF32:
      for (size_t i = 0; i < n; ++i) dst[i] = std::bit_cast<float>(load_u32(p + 4 * i));
      return Status();
    case GgmlType::kF16:
      for (size_t i = 0; i < n; ++i) dst[i] = f16_bits_to_f32(load_u16(p + 2 * i));
      return Status();
    case GgmlType::kBF16:
      for (size_t i = 0; i < n; ++i) dst[i] = bf16_bits_to_f32(load_u16(p + 2 * i));
      return Status();
    default: break;
  }
  const BlockFn fn = block_fn(type);
  for (size_t i = 0; i < blocks; ++i) fn(p + i * info->block_bytes, dst + i * info->block_values);
  return Status();
}

}  // namespace headway
