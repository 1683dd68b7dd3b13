// Prefill tiling, per Highway target: lanes run along query rows. The K/V tile is widened to f32
// into scratch once per task (it then serves every row); f32 K/V already in that layout (the KV
// cache's, head_dim a multiple of 16) is read in place. Qᵀ [D][rows], scores Sᵀ [keys][rows] and
// Oᵀ [D][rows] live in scratch; the register blocks that run over them are in
// attention_prefill_blocks-inl.h.

#if defined(HEADWAY_SIMD_ATTENTION_ATTENTION_PREFILL_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef HEADWAY_SIMD_ATTENTION_ATTENTION_PREFILL_INL_H_
#undef HEADWAY_SIMD_ATTENTION_ATTENTION_PREFILL_INL_H_
#else
#define HEADWAY_SIMD_ATTENTION_ATTENTION_PREFILL_INL_H_
#endif

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "hwy/highway.h"
#include "simd/attention/attention.h"
#include "simd/attention/attention_math-inl.h"
#include "simd/attention/attention_prefill_blocks-inl.h"
#include "simd/attention/attention_task-inl.h"
#include "simd/attention/attention_tiling.h"
#include "simd/attention/kv_load-inl.h"
#include "simd/vector_ops.h"

HWY_BEFORE_NAMESPACE();
namespace headway {
namespace simd {
namespace HWY_NAMESPACE {
namespace hn = HEADWAY_SIMD_OPS;

namespace attn {

template <size_t kDim>
inline void RowsLoadQ(const Task& t) {
  const size_t d = HeadDim<kDim>(t);
  for (size_t r = 0; r < t.rpad; ++r) {
    if (r < t.rows) {
      const float* q = QueryRow(t, r);
      for (size_t i = 0; i < d; ++i) t.q[i * t.rpad + r] = q[i] * t.q_scale;
    } else {
      for (size_t i = 0; i < d; ++i) t.q[i * t.rpad + r] = 0.0f;
    }
  }
}

// Each row's keys of the loaded keys [k0, k1] of the tile at tb, tile-relative and inclusive;
// [kTile + 1, -1] when none. With ALiBi, each row's position relative to tb.
inline void RowsTileRanges(Task& t, int64_t tb, int64_t k0, int64_t k1) {
  t.tile_base = tb;
  if (t.a->alibi_slopes != nullptr) {
    for (size_t r = 0; r < t.rpad; ++r) t.prel[r] = static_cast<int32_t>(RowTilePosition(t, r));
  }
  for (size_t r = 0; r < t.rpad; ++r) {
    const int64_t lo = t.klo[r] > k0 ? t.klo[r] : k0;
    const int64_t hi = t.khi[r] < k1 ? t.khi[r] : k1;
    t.lo[r] = lo <= hi ? static_cast<int32_t>(lo - tb) : static_cast<int32_t>(kTile) + 1;
    t.hi[r] = lo <= hi ? static_cast<int32_t>(hi - tb) : -1;
  }
}

// Whether keys [tb, tb + n) lie in K/V as a widened tile holds them: f32 rows d_pad apart, not
// wrapping in a ring. Prefill then reads the tile in place: no copy, and half the bytes through
// L1 (measured: docs/PERFORMANCE.md, "Decode prefetches into L2").
inline bool TileInPlace(const AttentionArgs& a, int64_t tb, size_t n, size_t d_pad) {
  return a.kv_type == KvType::kF32 && a.kv_row_stride == d_pad && KvRowsConsecutive(a, static_cast<uint64_t>(tb), n);
}

template <size_t kDim>
inline void RowsRun(Task& t) {
  const DF df;
  const size_t n = hn::Lanes(df);
  const size_t d = HeadDim<kDim>(t);
  const size_t d_pad = PaddedHeadDim<kDim>(t);
  RowsLoadQ<kDim>(t);
  if (t.union_lo > t.union_hi) return;
  // Tiles sit on multiples of kTile in absolute key index and a key keeps its place in the tile
  // (key − tb) whatever part of the tile is loaded, so a row's arithmetic (which keys share a
  // block, a partial sum) does not depend on which other rows share the task.
  for (int64_t tb = t.union_lo / int64_t{kTile} * int64_t{kTile}; tb <= t.union_hi; tb += kTile) {
    const int64_t k0 = tb > t.union_lo ? tb : t.union_lo;
    const int64_t k1 = tb + int64_t{kTile} - 1 < t.union_hi ? tb + int64_t{kTile} - 1 : t.union_hi;
    const size_t i0 = static_cast<size_t>(k0 - tb), i1 = static_cast<size_t>(k1 - tb) + 1;
    const size_t b0 = i0 / kKeyBlock * kKeyBlock, b1 = (i1 + kKeyBlock - 1) / kKeyBlock * kKeyBlock;
    // In place when the loaded keys are whole key blocks (the loops read keys [b0, b1) only).
    if (b0 == i0 && b1 == i1 && TileInPlace(*t.a, tb, i1, d_pad)) {
      t.kt = reinterpret_cast<const float*>(KvRowAt(*t.a, t.a->k, t.g, static_cast<uint64_t>(tb)));
      t.vt = reinterpret_cast<const float*>(KvRowAt(*t.a, t.a->v, t.g, static_cast<uint64_t>(tb)));
    } else {
      LoadKvTile(df, *t.a, t.a->k, t.g, static_cast<uint64_t>(k0), i1 - i0, d, d_pad, t.k + i0 * d_pad);
      LoadKvTile(df, *t.a, t.a->v, t.g, static_cast<uint64_t>(k0), i1 - i0, d, d_pad, t.v + i0 * d_pad);
      for (float* tile : {t.k, t.v}) {
        std::memset(tile + b0 * d_pad, 0, (i0 - b0) * d_pad * sizeof(float));
        std::memset(tile + i1 * d_pad, 0, (b1 - i1) * d_pad * sizeof(float));
      }
      t.kt = t.k;
      t.vt = t.v;
    }
    const bool masked = b0 != i0 || b1 != i1 || k0 < t.common_lo || k1 > t.common_hi;
    RowsTileRanges(t, tb, k0, k1);
    size_t col = 0;
    for (; col + kRowVecs * n <= t.rpad; col += kRowVecs * n) {
      RowsTileStep<kDim, kRowVecs>(t, col, i0, i1, b0, b1, masked);
    }
    for (; col < t.rpad; col += n) RowsTileStep<kDim, 1>(t, col, i0, i1, b0, b1, masked);
  }
}

// The prefill tiling over one range (attention_range.h), at each head_dim specialization: what
// attention_prefill.cc exports.
inline void PrefillRange(const detail::AttentionRange& r) {
  switch (detail::SpecializedDim(*r.args)) {
    case 64: return RunTasks<false>(r, [](Task& t) { RowsRun<64>(t); });
    case 128: return RunTasks<false>(r, [](Task& t) { RowsRun<128>(t); });
    default: return RunTasks<false>(r, [](Task& t) { RowsRun<0>(t); });
  }
}

}  // namespace attn

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace simd
}  // namespace headway
HWY_AFTER_NAMESPACE();

#endif  // HEADWAY_SIMD_ATTENTION_ATTENTION_PREFILL_INL_H_
