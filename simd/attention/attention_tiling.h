// Attention tiling inside the kernels: each row's visible keys and which tiling and
// specialization a call runs. The task sizes and the scratch layout are the policy's
// (include/headway/detail/attention_policy.hpp, also read by the plan and the CPU driver).
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>

#include "headway/detail/attention_policy.hpp"
#include "simd/attention/attention.h"

namespace headway {
namespace simd {
namespace detail {

// Keys [lo, hi] (inclusive, absolute; empty when lo > hi) that query token t sees. Token t sits
// at position p = t + t_kv - t_q (bottom-right alignment): causal keeps j <= p (j <= max(p, P − 1)
// with a prefix P), a window W keeps j > p - W; without causal, a window only bounds from below,
// unless it is symmetric (j < p + W too).
// With sink tokens S the keys split in two spans, each a range per row: the sink span
// [0, SinkKeys) (causal only) and the window span from SinkKeys on (VisibleKeys); without them the
// window span is every key.
struct KeyRange {
  int64_t lo = 0;
  int64_t hi = -1;
  constexpr bool empty() const { return lo > hi; }
};
constexpr int64_t SinkKeys(const AttentionArgs& a) {
  if (a.window == 0) return 0;
  return a.sink_tokens < a.t_kv ? int64_t{a.sink_tokens} : int64_t{a.t_kv};
}
constexpr int64_t QueryPosition(const AttentionArgs& a, uint32_t t) {
  return int64_t{t} + int64_t{a.t_kv} - int64_t{a.t_q};
}
// The highest key causal lets the row at position p see: p, or the prefix's last key past it.
constexpr int64_t CausalBound(const AttentionArgs& a, int64_t p) {
  return int64_t{a.prefix} - 1 > p ? int64_t{a.prefix} - 1 : p;
}
constexpr KeyRange VisibleKeys(const AttentionArgs& a, uint32_t t) {
  const int64_t p = QueryPosition(a, t);
  KeyRange r;
  r.lo = SinkKeys(a);
  r.hi = int64_t{a.t_kv} - 1;
  if (a.causal && CausalBound(a, p) < r.hi) r.hi = CausalBound(a, p);
  if (a.window != 0 && p - int64_t{a.window} + 1 > r.lo) r.lo = p - int64_t{a.window} + 1;
  if (a.window_symmetric && p + int64_t{a.window} - 1 < r.hi) r.hi = p + int64_t{a.window} - 1;
  return r;
}
constexpr KeyRange VisibleSinkKeys(const AttentionArgs& a, uint32_t t) {
  const int64_t p = QueryPosition(a, t);
  KeyRange r;
  r.hi = SinkKeys(a) - 1;
  if (a.causal && CausalBound(a, p) < r.hi) r.hi = CausalBound(a, p);
  return r;
}
constexpr bool SeesNoKey(const AttentionArgs& a, uint32_t t) {
  return VisibleKeys(a, t).empty() && VisibleSinkKeys(a, t).empty();
}

// The fewest keys a query row of the call sees, both spans counted (0 when t_q is 0). With causal a
// row's count never falls as its position rises (its upper bound moves as fast as the window's
// lower bound, and its sink span grows); without, it never rises (only the window's lower bound
// moves): the first and the last row hold the fewest. A prefix P holds the causal bound at P − 1
// up to position P − 1, where the count may fall: that row counts too.
constexpr int64_t FewestVisibleKeys(const AttentionArgs& a) {
  if (a.t_q == 0) return 0;
  const auto count = [&a](uint32_t t) {
    const KeyRange w = VisibleKeys(a, t), s = VisibleSinkKeys(a, t);
    return (w.empty() ? 0 : w.hi - w.lo + 1) + (s.empty() ? 0 : s.hi - s.lo + 1);
  };
  int64_t fewest = count(0);
  if (count(a.t_q - 1) < fewest) fewest = count(a.t_q - 1);
  const int64_t turn = int64_t{a.prefix} - 1 - (int64_t{a.t_kv} - int64_t{a.t_q});  // the row at P − 1
  if (a.prefix != 0 && turn > 0 && turn < int64_t{a.t_q} && count(static_cast<uint32_t>(turn)) < fewest) {
    fewest = count(static_cast<uint32_t>(turn));
  }
  return fewest;
}

// The general mask (AttentionArgs::mask_bool, mask_additive) for query token t and key j: what
// it adds to the logit, −inf where it hides the key. A hiding entry beats any logit, NaN
// included, as the structured masks do.
constexpr bool HasGeneralMask(const AttentionArgs& a) { return a.mask_bool != nullptr || a.mask_additive != nullptr; }
inline float GeneralMaskEntry(const AttentionArgs& a, size_t t, int64_t j) {
  const size_t at = t * a.mask_row_stride + static_cast<size_t>(j);
  if (a.mask_bool != nullptr) return a.mask_bool[at] != 0 ? 0.0f : -std::numeric_limits<float>::infinity();
  return a.mask_additive[at];
}
inline float GeneralMaskLogit(float entry, float logit) {
  return entry == -std::numeric_limits<float>::infinity() ? entry : logit + entry;
}

// Decode tiling (lanes along head_dim, dot products) when a task has few rows; prefill tiling
// (lanes along query rows) otherwise. A function of the shapes only, so every task of a call and
// every sub-range call runs the same code.
constexpr bool UseDecodeTiling(const AttentionArgs& a) {
  if (a.tiling == AttentionTiling::kDecode) return true;
  if (a.tiling == AttentionTiling::kPrefill) return false;
  const uint32_t group = a.n_heads / a.n_kv_heads;
  const uint32_t tokens = attention_q_tile(group);
  const uint64_t rows = uint64_t{a.t_q < tokens ? a.t_q : tokens} * group;
  return rows <= kAttentionDecodeMaxRows;
}

// Head dims with compile-time-specialized code (0 = the generic runtime-head_dim code).
constexpr uint32_t SpecializedDim(const AttentionArgs& a) {
  if (a.generic_only) return 0;
  return head_dim_specialized(a.head_dim) ? a.head_dim : 0;
}

}  // namespace detail
}  // namespace simd
}  // namespace headway
