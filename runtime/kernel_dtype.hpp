// What the CPU kernels take for each storage DType: the one mapping from the public enum to
// simd::KvType (attention K/V) and simd::WeightType (projection weights). The kernels' enums keep
// their own names because simd/ does not include the public headers; their values are the
// DType's, which the asserts below hold.
#pragma once

#include "headway/config.hpp"
#include "simd/attention.h"
#include "simd/matmul.h"

namespace headway {

static_assert(static_cast<int>(simd::KvType::kF32) == static_cast<int>(DType::kF32) &&
              static_cast<int>(simd::KvType::kF16) == static_cast<int>(DType::kF16) &&
              static_cast<int>(simd::KvType::kBF16) == static_cast<int>(DType::kBF16) &&
              static_cast<int>(simd::KvType::kQ8_0) == static_cast<int>(DType::kQ8_0) &&
              static_cast<int>(simd::KvType::kQ4_0) == static_cast<int>(DType::kQ4_0));
static_assert(simd::KvRowBytes(simd::KvType::kQ8_0, 80) == dtype_row_bytes(DType::kQ8_0, 80) &&
              simd::KvRowBytes(simd::KvType::kQ4_0, 80) == dtype_row_bytes(DType::kQ4_0, 80));
static_assert(static_cast<int>(simd::WeightType::kF32) == static_cast<int>(DType::kF32) &&
              static_cast<int>(simd::WeightType::kF16) == static_cast<int>(DType::kF16) &&
              static_cast<int>(simd::WeightType::kBF16) == static_cast<int>(DType::kBF16));

// Whether the attention kernels store and read K/V as t (every DType; a new DType must be added
// here), and whether the projections read weights as t (the element types).
constexpr bool kernel_dtype_supported(DType t) {
  return t == DType::kF32 || t == DType::kF16 || t == DType::kBF16 || dtype_is_block(t);
}
constexpr bool weight_dtype_supported(DType t) { return t == DType::kF32 || t == DType::kF16 || t == DType::kBF16; }

// For a supported t (kernel_dtype_supported, weight_dtype_supported).
constexpr simd::KvType kernel_kv_type(DType t) { return static_cast<simd::KvType>(t); }
constexpr simd::WeightType kernel_weight_type(DType t) { return static_cast<simd::WeightType>(t); }

}  // namespace headway
