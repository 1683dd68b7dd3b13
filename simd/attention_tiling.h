// Attention tiling policy and scratch layout: one definition shared by the plain functions
// (attention.cc) and the per-target kernels (attention-inl.h). include/headway/plan.hpp repeats the size
// formula in a constexpr the planner can use (simd/ may not include the public headers);
// tests/attention_kernel_test.cc checks that both agree.
//
// A task owns up to kQueryRows query rows (tokens × query heads of one GQA group; never fewer
// than a whole group) and streams the keys in tiles of kKvTile. Regions, each a multiple of
// 64 bytes from the (64-byte aligned) scratch base:
//   q   [rows_cap · d_pad] f32   Q of the task, pre-scaled: Qᵀ [D][rows] (prefill) or [rows][d_pad]
//   o   [rows_cap · d_pad] f32   unnormalized output accumulators, same two layouts
//   m,l [rows_cap] f32 each      running max and running sum of each row
//   lo,hi [rows_cap] i32 each    this tile's visible key range of each row, tile-relative
//   klo,khi [rows_cap] i64 each  each row's visible key range, absolute
//   s   [rows_cap · kKvTile] f32 scores, then probabilities, of one tile
//   k,v [kKvTile · d_pad] f32    one K and one V tile widened to f32 (prefill; decode reads the
//                                cache directly)
// rows_cap and d_pad round up to 16 floats (64 bytes, the widest vector the kernels use).
#pragma once

#include <cstddef>
#include <cstdint>

#include "simd/attention.h"

namespace headway {
namespace simd {
namespace detail {

inline constexpr uint32_t kQueryRows = 32;  // = headway::kAttnQueryRows
inline constexpr uint32_t kKvTile = 64;     // = headway::kAttnKvTile
inline constexpr uint32_t kMaxLanes = 16;   // f32 lanes of the widest vector the kernels use

constexpr uint64_t RoundUp(uint64_t n, uint64_t m) { return (n + m - 1) / m * m; }

struct ScratchLayout {
  uint64_t rows_cap = 0;  // most query rows of one task, rounded up to kMaxLanes
  uint64_t d_pad = 0;     // head_dim rounded up to kMaxLanes
  // Offsets in bytes from the scratch base.
  uint64_t q = 0, o = 0, m = 0, l = 0, lo = 0, hi = 0, klo = 0, khi = 0, s = 0, k = 0, v = 0;
  uint64_t total = 0;
};

constexpr ScratchLayout MakeScratchLayout(uint32_t head_dim, uint32_t group) {
  ScratchLayout s;
  s.rows_cap = RoundUp(group > kQueryRows ? group : kQueryRows, kMaxLanes);
  s.d_pad = RoundUp(head_dim, kMaxLanes);
  uint64_t at = 0;
  s.q = at;
  at += s.rows_cap * s.d_pad * 4;
  s.o = at;
  at += s.rows_cap * s.d_pad * 4;
  s.m = at;
  at += s.rows_cap * 4;
  s.l = at;
  at += s.rows_cap * 4;
  s.lo = at;
  at += s.rows_cap * 4;
  s.hi = at;
  at += s.rows_cap * 4;
  s.klo = at;
  at += s.rows_cap * 8;
  s.khi = at;
  at += s.rows_cap * 8;
  s.s = at;
  at += s.rows_cap * kKvTile * 4;
  s.k = at;
  at += uint64_t{kKvTile} * s.d_pad * 4;
  s.v = at;
  at += uint64_t{kKvTile} * s.d_pad * 4;
  s.total = at;
  return s;
}

// Keys [lo, hi] (inclusive, absolute; empty when lo > hi) that query token t sees. Token t sits
// at position p = t + t_kv - t_q (bottom-right alignment): causal keeps j <= p, a window W keeps
// j > p - W; without causal, a window only bounds from below.
struct KeyRange {
  int64_t lo = 0;
  int64_t hi = -1;
  constexpr bool empty() const { return lo > hi; }
};
constexpr KeyRange VisibleKeys(const AttentionArgs& a, uint32_t t) {
  const int64_t p = int64_t{t} + int64_t{a.t_kv} - int64_t{a.t_q};
  KeyRange r;
  r.lo = 0;
  r.hi = int64_t{a.t_kv} - 1;
  if (a.causal && p < r.hi) r.hi = p;
  if (a.window != 0 && p - int64_t{a.window} + 1 > r.lo) r.lo = p - int64_t{a.window} + 1;
  return r;
}

// Tokens per task: whole groups, about kQueryRows rows.
constexpr uint32_t TokensPerTask(uint32_t group) { return group >= kQueryRows ? 1 : kQueryRows / group; }

// Decode tiling (lanes along head_dim, dot products) when a task has few rows; prefill tiling
// (lanes along query rows) otherwise. A function of the shapes only, so every task of a call and
// every sub-range call runs the same code.
constexpr bool UseDecodeTiling(const AttentionArgs& a) {
  if (a.tiling == AttentionTiling::kDecode) return true;
  if (a.tiling == AttentionTiling::kPrefill) return false;
  const uint32_t group = a.n_heads / a.n_kv_heads;
  const uint32_t tokens = TokensPerTask(group);
  const uint64_t rows = uint64_t{a.t_q < tokens ? a.t_q : tokens} * group;
  return rows <= kAttentionDecodeMaxRows;
}

// Head dims with compile-time-specialized code (0 = the generic runtime-head_dim code).
constexpr uint32_t SpecializedDim(const AttentionArgs& a) {
  if (a.generic_only) return 0;
  return a.head_dim == 64 || a.head_dim == 128 ? a.head_dim : 0;
}

}  // namespace detail
}  // namespace simd
}  // namespace headway
