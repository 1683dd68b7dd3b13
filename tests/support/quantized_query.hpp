// Where decode quantizes the query for integer Q·Kᵀ (q8_0 and q4_0 K at a head_dim of whole
// blocks, on a CPU with AVX-512 VNNI: simd/attention_decode_int8-inl.h), the scores carry the
// query's int8 rounding: up to 1.5e-2 on the shared case table's inputs, where a causal row that
// sees a few keys weighs each score's error most. The suites and the fuzzer hold such a case to
// kQuantizedQueryTolerance, prefill's runs too, in place of widening's 1e-4.
#pragma once

#include <cstddef>
#include <cstdint>

#include "simd/attention.h"

namespace headway {
namespace test {

inline constexpr double kQuantizedQueryTolerance = 2e-2;

// Whether a decode step over K of type kv with this head_dim quantizes the query here.
inline bool decode_quantizes_query(simd::KvType kv, size_t head_dim) {
  simd::AttentionArgs a;
  a.kv_type = kv;
  a.head_dim = static_cast<uint32_t>(head_dim);
  a.tiling = simd::AttentionTiling::kDecode;
  return simd::attention_decode_quantizes_query(a);
}

}  // namespace test
}  // namespace headway
