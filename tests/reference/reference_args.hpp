// The double reference's arguments for an attend() call: the public shape and parameters mapped
// onto RefAttention (kept here, apart from the reference, which includes nothing of the library).
#pragma once

#include <cmath>

#include "headway/attention.hpp"
#include "tests/reference/reference_attention.hpp"

namespace headway::test {

inline RefAttention ref_args(const AttentionShape& s, const AttentionParams& p) {
  RefAttention r;
  r.t_q = s.t_q;
  r.t_kv = s.t_kv;
  r.n_heads = s.n_heads;
  r.n_kv_heads = s.n_kv_heads;
  r.head_dim = s.head_dim;
  r.scale = p.scale != 0.0f ? p.scale : 1.0 / std::sqrt(static_cast<double>(s.head_dim));
  r.softcap = p.softcap;
  r.causal = p.causal;
  r.window = p.window;
  if (p.sinks != nullptr) r.sinks.assign(p.sinks, p.sinks + s.n_heads);
  r.sink_tokens = p.sink_tokens;
  if (p.alibi_slopes != nullptr) r.alibi_slopes.assign(p.alibi_slopes, p.alibi_slopes + s.n_heads);
  r.prefix = p.prefix;
  r.window_symmetric = p.window_symmetric;
  if (p.cu_seqlens_q != nullptr) r.cu_q.assign(p.cu_seqlens_q, p.cu_seqlens_q + p.n_seqs + 1);
  if (p.cu_seqlens_k != nullptr) r.cu_k.assign(p.cu_seqlens_k, p.cu_seqlens_k + p.n_seqs + 1);
  const size_t stride = p.mask_row_stride != 0 ? p.mask_row_stride : s.t_kv;
  for (uint32_t i = 0; (p.mask_bool != nullptr || p.mask_additive != nullptr) && i < s.t_q; ++i) {
    const size_t row = i * stride;
    if (p.mask_bool != nullptr) r.mask_bool.insert(r.mask_bool.end(), p.mask_bool + row, p.mask_bool + row + s.t_kv);
    if (p.mask_additive != nullptr) {
      r.mask_additive.insert(r.mask_additive.end(), p.mask_additive + row, p.mask_additive + row + s.t_kv);
    }
  }
  return r;
}

}  // namespace headway::test
