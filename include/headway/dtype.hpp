// DType: the storage types headway reads and writes, and the one table of what each is. Every
// size, name and "which part takes which type" question is answered from kDTypeTable: the config
// and plan checks, the KV caches, the kernels' argument checks (simd/ reads this header), the C
// API, the command line and the Python package. A new type is one row here (and the code that
// computes with it).
//
// f32, f16 and bf16 hold one value each; the others are ggml's block formats (layouts:
// headway/ggml_types.hpp): q8_0 and q4_0 (blocks of 32 values with an f16 scale, 34 and 18 bytes)
// store K/V caches and weights, the others (blocks of 32, or super-blocks of 256 for the K-quants)
// weights only, as GGUF files hold them: every type of ggml's that headway reads.
// Plain constexpr data: no heap, no I/O, builds bare metal.
#pragma once

#include <cstdint>

namespace headway {

// The values are the C API's (headway_dtype): new rows go at the end.
enum class DType : uint8_t {
  kF32 = 0,
  kF16,
  kBF16,
  kQ8_0,
  kQ4_0,
  kQ4_1,
  kQ5_0,
  kQ5_1,
  kQ4_K,
  kQ5_K,
  kQ6_K,
  kQ2_K,
  kQ3_K
};

struct DTypeTraits {
  DType type;
  const char* name;       // as the command line, spec strings, the C API and Python spell it
  uint32_t block_values;  // values per block: 1 for a value type
  uint32_t block_bytes;   // bytes per block (of one value for a value type)
  bool kv;                // a KV cache stores it and the attention kernels read it
  bool weights;           // the projections read weights in it (TensorRef, LayerWeights, simd/matmul/matmul.h)
  bool planned_weights;   // the arena keeps weights converted to it (PlanOptions::weight_dtype)
  uint32_t ggml;          // ggml's type id (enum ggml_type), as GGUF tensors name it
};

inline constexpr DTypeTraits kDTypeTable[] = {
    {DType::kF32, "f32", 1, 4, true, true, true, 0},          {DType::kF16, "f16", 1, 2, true, true, true, 1},
    {DType::kBF16, "bf16", 1, 2, true, true, true, 30},       {DType::kQ8_0, "q8_0", 32, 34, true, true, false, 8},
    {DType::kQ4_0, "q4_0", 32, 18, true, true, false, 2},     {DType::kQ4_1, "q4_1", 32, 20, false, true, false, 3},
    {DType::kQ5_0, "q5_0", 32, 22, false, true, false, 6},    {DType::kQ5_1, "q5_1", 32, 24, false, true, false, 7},
    {DType::kQ4_K, "q4_K", 256, 144, false, true, false, 12}, {DType::kQ5_K, "q5_K", 256, 176, false, true, false, 13},
    {DType::kQ6_K, "q6_K", 256, 210, false, true, false, 14}, {DType::kQ2_K, "q2_K", 256, 84, false, true, false, 10},
    {DType::kQ3_K, "q3_K", 256, 110, false, true, false, 11},
};
inline constexpr uint32_t kDTypeCount = sizeof(kDTypeTable) / sizeof(kDTypeTable[0]);

namespace detail {
constexpr bool dtype_table_in_order() {
  for (uint32_t i = 0; i < kDTypeCount; ++i) {
    if (static_cast<uint32_t>(kDTypeTable[i].type) != i) return false;
  }
  return true;
}
}  // namespace detail
static_assert(detail::dtype_table_in_order(), "kDTypeTable lists the DTypes in enum order");

// Whether t is a DType at all (a value read from a file or through the C API may not be).
constexpr bool dtype_known(DType t) { return static_cast<uint32_t>(t) < kDTypeCount; }
// What any other value reads as: no name, no bytes, stored and read by nothing. Sizes of it are 0,
// so a check that computes a size before it names the bad type divides by no zero.
inline constexpr DTypeTraits kUnknownDType = {DType::kF32, "unknown", 1, 0, false, false, false, ~0u};
// The row of t (kUnknownDType outside the enum).
constexpr const DTypeTraits& dtype_traits(DType t) {
  return dtype_known(t) ? kDTypeTable[static_cast<uint32_t>(t)] : kUnknownDType;
}

constexpr bool dtype_is_block(DType t) { return dtype_known(t) && dtype_traits(t).block_values > 1; }
constexpr bool dtype_stores_kv(DType t) { return dtype_known(t) && dtype_traits(t).kv; }
// A KV cache's quantized rows (blocks of 32 with a scale): what kv_rotation hadamard rotates and
// what quantize_row writes.
constexpr bool dtype_quantizes_kv(DType t) { return dtype_stores_kv(t) && dtype_is_block(t); }
constexpr bool dtype_holds_weights(DType t) { return dtype_known(t) && dtype_traits(t).weights; }
constexpr bool dtype_plans_weights(DType t) { return dtype_known(t) && dtype_traits(t).planned_weights; }
// Values per block of the K/V caches' block formats (q8_0, q4_0: 32).
inline constexpr uint32_t kDTypeBlockValues = 32;
// The DType of ggml type id `id` (a GGUF tensor's); false (and *out unchanged) for a type no row has.
constexpr bool dtype_from_ggml(uint32_t id, DType* out) {
  for (const DTypeTraits& row : kDTypeTable) {
    if (row.ggml == id) {
      *out = row.type;
      return true;
    }
  }
  return false;
}
// Bytes of one value of a value type; 0 for a block format, whose rows take dtype_row_bytes.
constexpr uint32_t dtype_bytes(DType t) { return dtype_is_block(t) ? 0u : dtype_traits(t).block_bytes; }
// Bytes of the first `values` values of a row (a whole number of blocks for a block format).
constexpr uint64_t dtype_offset_bytes(DType t, uint64_t values) {
  return values / dtype_traits(t).block_values * dtype_traits(t).block_bytes;
}
// Bytes of a row of n values: n values, or ceil(n / 32) blocks (a short last block takes a whole
// block's bytes).
constexpr uint64_t dtype_row_bytes(DType t, uint64_t n) {
  const uint64_t b = dtype_traits(t).block_values;
  return (n + b - 1) / b * dtype_traits(t).block_bytes;
}
// The values a row of n takes in a strided layout: n, or n rounded up to whole blocks.
constexpr uint64_t dtype_row_values(DType t, uint64_t n) {
  const uint64_t b = dtype_traits(t).block_values;
  return (n + b - 1) / b * b;
}

// "f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", ..., "q6_K"; "unknown" outside the enum.
constexpr const char* dtype_name(DType t) { return dtype_known(t) ? dtype_traits(t).name : "unknown"; }
// The dtype dtype_name() calls `name`; false (and *out unchanged) for any other text or null.
constexpr bool dtype_from_name(const char* name, DType* out) {
  if (name == nullptr) return false;
  for (const DTypeTraits& row : kDTypeTable) {
    uint32_t i = 0;
    while (name[i] != '\0' && name[i] == row.name[i]) ++i;
    if (name[i] == '\0' && row.name[i] == '\0') {
      *out = row.type;
      return true;
    }
  }
  return false;
}

namespace detail {
// The names of the rows `keep` admits, `separator`-separated, as one constant string for messages.
struct DTypeList {
  char text[8 * kDTypeCount + 1] = {};
};
template <bool (*kKeep)(DType)>
constexpr DTypeList dtype_list(const char* separator = ", ") {
  DTypeList l;
  uint32_t n = 0;
  for (const DTypeTraits& row : kDTypeTable) {
    if (!kKeep(row.type)) continue;
    if (n != 0) {
      for (const char* c = separator; *c != '\0'; ++c) l.text[n++] = *c;
    }
    for (const char* c = row.name; *c != '\0'; ++c) l.text[n++] = *c;
  }
  return l;
}
constexpr bool dtype_any(DType) { return true; }
inline constexpr DTypeList kAllDTypes = dtype_list<dtype_any>();
inline constexpr DTypeList kKvDTypes = dtype_list<dtype_stores_kv>();
inline constexpr DTypeList kQuantizedKvDTypes = dtype_list<dtype_quantizes_kv>(" or ");
inline constexpr DTypeList kWeightDTypes = dtype_list<dtype_holds_weights>();
inline constexpr DTypeList kPlannedWeightDTypes = dtype_list<dtype_plans_weights>();
}  // namespace detail

// For messages: every type's names, the KV cache's (and its quantized ones', "q8_0 or q4_0"), the
// weights' and PlanOptions::weight_dtype's.
inline constexpr const char* kDTypeNames = detail::kAllDTypes.text;
inline constexpr const char* kKvDTypeNames = detail::kKvDTypes.text;
inline constexpr const char* kQuantizedKvDTypeNames = detail::kQuantizedKvDTypes.text;
inline constexpr const char* kWeightDTypeNames = detail::kWeightDTypes.text;
inline constexpr const char* kPlannedWeightDTypeNames = detail::kPlannedWeightDTypes.text;

}  // namespace headway
