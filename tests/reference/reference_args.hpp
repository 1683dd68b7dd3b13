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
  return r;
}

}  // namespace headway::test
