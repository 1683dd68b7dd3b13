// Where decode quantizes the query for integer Q·Kᵀ (q8_0 and q4_0 K at a head_dim of whole
// blocks, rows that see at least 64 keys, no ALiBi, on a CPU with AVX-512 VNNI, AVX-VNNI or SDOT:
// simd/attention/attention_decode_int8-inl.h), the scores carry the query's int8 rounding. The suites and
// the fuzzer hold such a case to kQuantizedQueryTolerance, the README's bound on unit-normal
// inputs, prefill's runs too, in place of widening's 1e-4.
#pragma once

#include <cstdint>

#include "simd/attention/attention.h"
#include "tests/reference/reference_attention.hpp"

namespace headway {
namespace test {

inline constexpr double kQuantizedQueryTolerance = 1e-2;

// Whether a decode step of r's shape and mask over K of type kv quantizes the query here.
inline bool decode_quantizes_query(const RefAttention& r, simd::KvType kv) {
  simd::AttentionArgs a;
  a.kv_type = kv;
  a.t_q = r.t_q;
  a.t_kv = r.t_kv;
  a.n_heads = r.n_heads;
  a.n_kv_heads = r.n_kv_heads;
  a.head_dim = r.head_dim;
  a.causal = r.causal;
  a.window = r.window;
  a.sink_tokens = r.sink_tokens;
  a.prefix = r.prefix;
  a.window_symmetric = r.window_symmetric;
  // Any non-null pointer: the decision reads only whether ALiBi is on.
  static const float kSlope = 0.0f;
  a.alibi_slopes = r.alibi_slopes.empty() ? nullptr : &kSlope;
  static const uint8_t kVisible = 1;  // likewise whether a general mask is set
  a.mask_bool = r.mask_bool.empty() && r.mask_additive.empty() ? nullptr : &kVisible;
  a.mask_row_stride = r.t_kv;
  a.tiling = simd::AttentionTiling::kDecode;
  if (r.cu_q.empty()) return simd::attention_decode_quantizes_query(a);
  // A packed batch: the band applies when any sequence, run as its own call, quantizes its query.
  const std::vector<uint32_t>& ck = r.cu_k.empty() ? r.cu_q : r.cu_k;
  for (size_t b = 0; b + 1 < r.cu_q.size(); ++b) {
    a.t_q = r.cu_q[b + 1] - r.cu_q[b];
    a.t_kv = ck[b + 1] - ck[b];
    if (simd::attention_decode_quantizes_query(a)) return true;
  }
  return false;
}

}  // namespace test
}  // namespace headway
