// Decode tiling, per Highway target: at most kAttentionDecodeMaxRows rows; lanes run along
// head_dim. K and V are widened in registers straight from the cache (each element serves at
// most a few rows here, so a scratch copy would cost more store traffic than it saves),
// prefetched half a tile ahead (attention_prefetch-inl.h); a register block of rows shares every
// K and V load (attention_decode_blocks-inl.h). Q and O are [rows][d_pad] in scratch. Stack:
// ~1.6 KiB, the K and V row pointers of one tile and the K row pointers of the next, where rows
// are found by KvRows.

#if defined(HEADWAY_SIMD_ATTENTION_ATTENTION_DECODE_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef HEADWAY_SIMD_ATTENTION_ATTENTION_DECODE_INL_H_
#undef HEADWAY_SIMD_ATTENTION_ATTENTION_DECODE_INL_H_
#else
#define HEADWAY_SIMD_ATTENTION_ATTENTION_DECODE_INL_H_
#endif

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "hwy/highway.h"
#include "simd/attention/attention.h"
#include "simd/attention/attention_decode_blocks-inl.h"
#include "simd/attention/attention_math-inl.h"
#include "simd/attention/attention_prefetch-inl.h"
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

// Q of the task's rows, pre-scaled, [rows][d_pad] with zeros past head_dim.
template <size_t kDim>
inline void DotLoadQ(const Task& t) {
  const size_t d = HeadDim<kDim>(t);
  const size_t d_pad = PaddedHeadDim<kDim>(t);
  for (size_t r = 0; r < t.rows; ++r) {
    const float* q = QueryRow(t, r);
    float* dst = t.q + r * d_pad;
    for (size_t i = 0; i < d; ++i) dst[i] = q[i] * t.q_scale;
    for (size_t i = d; i < d_pad; ++i) dst[i] = 0.0f;
  }
}

// Whether the rows of keys [from, t_kv) lie back to back, kDim elements apart: the KV cache
// layout (or a strided call with rows of head_dim), without a ring or with one that does not
// wrap among those keys.
template <size_t kDim>
inline bool KeysBackToBack(const AttentionArgs& a, int64_t from) {
  if (kDim == 0 || a.kv_row_stride != kDim) return false;
  return KvRowsConsecutive(a, static_cast<uint64_t>(from), uint64_t{a.t_kv} - static_cast<uint64_t>(from));
}

// A tile whose kTile keys every row sees, no softcap, rows back to back: nearly every tile of a
// long decode. The blocks of DotTile's general path (the same operations, so the same bits)
// without its per-row key ranges, and its V rows (during Q·Kᵀ) and the next tile's K rows
// (during P·V) prefetched in address order at an even pace rather than a few rows at a time.
template <size_t kDim, KvType kType, size_t kRowBytes>
HWY_INLINE void DotFullTile(const Task& t, StridedRows<kRowBytes> krow, StridedRows<kRowBytes> vrow,
                            TilePrefetch<kRowBytes> v_pf, TilePrefetch<kRowBytes> k_pf) {
  // The first row block of each key block (Q·Kᵀ) or of P·V prefetches; the others do not.
  if (t.rows == 1) {
    for (size_t kb = 0; kb < kTile; kb += kDotKeys1) DotQk<kDim, kType, 1, kDotKeys1>(t, krow, 0, kb, v_pf);
  } else {
    for (size_t kb = 0; kb < kTile; kb += kDotKeys) {
      if (t.rows < kDotRows) {
        DotQkRest<kDim, kType, kDotKeys>(t, krow, 0, kb, v_pf);
        continue;
      }
      DotQk<kDim, kType, kDotRows, kDotKeys>(t, krow, 0, kb, v_pf);
      size_t r = kDotRows;
      for (; r + kDotRows <= t.rows; r += kDotRows) DotQk<kDim, kType, kDotRows, kDotKeys>(t, krow, r, kb);
      DotQkRest<kDim, kType, kDotKeys>(t, krow, r, kb);
    }
  }
  for (size_t r = 0; r < t.rows; ++r) DotRowSoftmax(t, r, 0, kTile);
  if (t.rows < kDotRows) return DotPvRest<kDim, kType>(t, vrow, 0, 0, kTile, k_pf);
  DotPvKeys<kDim, kType, kDotRows>(t, vrow, 0, 0, kTile, k_pf);
  size_t r = kDotRows;
  for (; r + kDotRows <= t.rows; r += kDotRows) DotPvKeys<kDim, kType, kDotRows>(t, vrow, r, 0, kTile);
  DotPvRest<kDim, kType>(t, vrow, r, 0, kTile);
}

// No earlier tile prefetched the first tile's K: ask for all of it at once, so its misses overlap
// one another instead of coming one demand load at a time.
template <size_t kStride>
HWY_INLINE void DotPrefetchFirstK(const Task& t, int64_t first_tile, size_t row_bytes, const char** pf_k_a) {
  const AttentionArgs& a = *t.a;
  const int64_t k1 = first_tile + int64_t{kTile} - 1 < t.union_hi ? first_tile + int64_t{kTile} - 1 : t.union_hi;
  const size_t n0 = static_cast<size_t>(k1 - t.union_lo) + 1;
  const auto pf_k = TileRows<kStride>(a, a.k, t.g, static_cast<uint64_t>(t.union_lo), 0, n0, pf_k_a);
  PrefetchRows(pf_k, 0, n0, row_bytes);
}

// The keys of the tile after the one at tb that are prefetched: up to kTile, none past the last
// key. They may lie past this task's keys: with the keys split into chunks
// (attention_partial_f32), those start the next chunk, which the same thread most likely runs
// next. It then starts with its first tile on the way instead of waiting for it.
HWY_INLINE size_t NextTileKeys(const AttentionArgs& a, int64_t tb) {
  const int64_t pf0 = tb + int64_t{kTile};
  const int64_t pf_last = int64_t{a.t_kv} - 1;
  return pf0 > pf_last ? 0 : pf_last - pf0 < int64_t{kTile} ? static_cast<size_t>(pf_last - pf0) + 1 : kTile;
}

// Each row's keys of the loaded keys [i0, i1) of the tile at tb, [lo, hi) tile-relative, and the
// keys all rows share, [ca, cb).
HWY_INLINE void DotTileRanges(const Task& t, int64_t tb, size_t i0, size_t i1, size_t& ca, size_t& cb) {
  ca = i0;
  cb = i1;
  for (size_t r = 0; r < t.rows; ++r) {
    int64_t lo = t.klo[r] - tb, hi = t.khi[r] - tb + 1;
    if (t.klo[r] > t.khi[r]) lo = hi = static_cast<int64_t>(i0);
    if (lo < static_cast<int64_t>(i0)) lo = static_cast<int64_t>(i0);
    if (hi > static_cast<int64_t>(i1)) hi = static_cast<int64_t>(i1);
    if (hi < lo) hi = lo;
    t.lo[r] = static_cast<int32_t>(lo);
    t.hi[r] = static_cast<int32_t>(hi);
    if (static_cast<size_t>(lo) > ca) ca = static_cast<size_t>(lo);
    if (static_cast<size_t>(hi) < cb) cb = static_cast<size_t>(hi);
  }
  if (cb < ca) cb = ca;
}

// Q·Kᵀ and the softmax of a tile: the shared keys [ca, cb) in register blocks of rows, then each
// row's own keys. Key blocks outer, row blocks inner (a score does not depend on the order), with
// as many prefetched V rows as keys in between.
template <size_t kDim, KvType kType, class Rows, class VRows>
HWY_INLINE void DotTileQk(const Task& t, Rows krow, size_t ca, size_t cb, PacedRowPrefetch<VRows>& v_pf) {
  size_t r = 0;
  size_t kb = ca;
  if (t.rows == 1) {
    for (; kb + kDotKeys1 <= cb; kb += kDotKeys1) {
      DotQk<kDim, kType, 1, kDotKeys1>(t, krow, 0, kb);
      v_pf.Next(kDotKeys1);
    }
  }
  for (; kb + kDotKeys <= cb; kb += kDotKeys) {
    for (r = 0; r + kDotRows <= t.rows; r += kDotRows) DotQk<kDim, kType, kDotRows, kDotKeys>(t, krow, r, kb);
    DotQkRest<kDim, kType, kDotKeys>(t, krow, r, kb);
    v_pf.Next(kDotKeys);
  }
  for (r = 0; r + kDotRows <= t.rows; r += kDotRows) DotQkKeys<kDim, kType, kDotRows>(t, krow, r, kb, cb);
  for (; r < t.rows; ++r) DotQkKeys<kDim, kType, 1>(t, krow, r, kb, cb);
  v_pf.Next(kTile);
  for (r = 0; r < t.rows; ++r) {
    const size_t lo = static_cast<size_t>(t.lo[r]), hi = static_cast<size_t>(t.hi[r]);
    if (lo >= hi) continue;
    DotQkKeys<kDim, kType, 1>(t, krow, r, lo, ca > lo ? (ca < hi ? ca : hi) : lo);
    DotQkKeys<kDim, kType, 1>(t, krow, r, cb > lo ? cb : lo, hi);
    DotRowSoftmax(t, r, lo, hi);
  }
}

// P·V of a tile, every row's keys in ascending order: its own keys below the shared ones [ca, cb),
// the shared ones in register blocks of rows, its own keys above. The first row block prefetches
// the next tile's K rows [ca, cb) of pf_k (n_pf rows); the rest follow after.
template <size_t kDim, KvType kType, class Rows, class KRows>
HWY_INLINE void DotTilePv(const Task& t, Rows vrow, size_t ca, size_t cb, KRows pf_k, size_t n_pf) {
  size_t r = 0;
  for (r = 0; r < t.rows; ++r) {
    const size_t lo = static_cast<size_t>(t.lo[r]), hi = static_cast<size_t>(t.hi[r]);
    if (lo < hi) DotPvKeys<kDim, kType, 1>(t, vrow, r, lo, ca > lo ? (ca < hi ? ca : hi) : lo);
  }
  RowPrefetch<KRows> pfv{pf_k, n_pf};
  for (r = 0; r + kDotRows <= t.rows; r += kDotRows) {
    DotPvKeys<kDim, kType, kDotRows>(t, vrow, r, ca, cb, pfv);
    pfv.n = 0;
  }
  DotPvRest<kDim, kType>(t, vrow, r, ca, cb, pfv);
  for (r = 0; r < t.rows; ++r) {
    const size_t lo = static_cast<size_t>(t.lo[r]), hi = static_cast<size_t>(t.hi[r]);
    if (lo < hi) DotPvKeys<kDim, kType, 1>(t, vrow, r, cb > lo ? cb : lo, hi);
  }
}

// The rest of the next tile's K: the rows of pf_k (n_pf of them) outside [ca, cb), which the P·V
// loops skip.
template <class KRows>
HWY_INLINE void DotPrefetchRestK(KRows pf_k, size_t ca, size_t cb, size_t n_pf, size_t row_bytes) {
  const size_t skip0 = ca < cb && ca < n_pf ? ca : n_pf;
  const size_t skip1 = ca < cb && cb < n_pf ? cb : n_pf;
  PrefetchRows(pf_k, 0, skip0, row_bytes);
  PrefetchRows(pf_k, skip1, n_pf, row_bytes);
}

// The tile at tb. krow_a, vrow_a, pf_k_a: room for the row pointers where kStride is 0.
template <size_t kDim, KvType kType, size_t kStride>
HWY_INLINE void DotTile(Task& t, int64_t tb, size_t row_bytes, const char** krow_a, const char** vrow_a,
                        const char** pf_k_a) {
  const AttentionArgs& a = *t.a;
  t.tile_base = tb;
  const int64_t k0 = tb > t.union_lo ? tb : t.union_lo;
  const int64_t k1 = tb + int64_t{kTile} - 1 < t.union_hi ? tb + int64_t{kTile} - 1 : t.union_hi;
  // A key keeps its place in the tile (key − tb) whatever part of the tile is loaded, so a row's
  // vectors of scores do not depend on the other rows of the task.
  const size_t i0 = static_cast<size_t>(k0 - tb), i1 = static_cast<size_t>(k1 - tb) + 1;
  // krow[i], vrow[i]: the rows of key tb + i, i in [i0, i1).
  const auto krow = TileRows<kStride>(a, a.k, t.g, static_cast<uint64_t>(tb), i0, i1 - i0, krow_a);
  const auto vrow = TileRows<kStride>(a, a.v, t.g, static_cast<uint64_t>(tb), i0, i1 - i0, vrow_a);
  // This tile's V rows a few rows at a time between the Q·Kᵀ blocks, the next tile's K rows a
  // part at a time inside the P·V loops (attention_prefetch-inl.h).
  const size_t n_pf = NextTileKeys(a, tb);
  const auto pf_k =
      TileRows<kStride>(a, a.k, t.g, static_cast<uint64_t>(n_pf != 0 ? tb + int64_t{kTile} : tb), 0, n_pf, pf_k_a);
  PacedRowPrefetch<std::remove_const_t<decltype(vrow)>> v_pf{vrow, i0, i1, row_bytes};
  size_t ca = 0, cb = 0;
  DotTileRanges(t, tb, i0, i1, ca, cb);
  if constexpr (kStride != 0) {
    if (i0 == 0 && i1 == kTile && ca == 0 && cb == kTile && !(a.softcap > 0.0f) && a.alibi_slopes == nullptr &&
        !detail::HasGeneralMask(a)) {
      return DotFullTile<kDim, kType>(t, krow, vrow, TilePrefetch<kStride>{vrow[0], kTile * kStride},
                                      TilePrefetch<kStride>{pf_k[0], n_pf * kStride});
    }
  }
  DotTileQk<kDim, kType>(t, krow, ca, cb, v_pf);
  DotTilePv<kDim, kType>(t, vrow, ca, cb, pf_k, n_pf);
  DotPrefetchRestK(pf_k, ca, cb, n_pf, row_bytes);
}

// kStride: the bytes of one K/V row, which lie back to back (KeysBackToBack), or 0: rows found by
// KvRows (any layout, any ring).
template <size_t kDim, KvType kType, size_t kStride>
inline void DotRunTyped(Task& t) {
  const char* krow_a[kStride != 0 ? 1 : kTile];
  const char* vrow_a[kStride != 0 ? 1 : kTile];
  const char* pf_k_a[kStride != 0 ? 1 : kTile];
  // Bytes of one K/V row: a constant for the specialized head_dims, so the prefetch loop unrolls.
  const size_t row_bytes = static_cast<size_t>(KvRowBytes(kType, HeadDim<kDim>(t)));
  const int64_t first_tile = t.union_lo / int64_t{kTile} * int64_t{kTile};
  DotPrefetchFirstK<kStride>(t, first_tile, row_bytes, pf_k_a);
  for (int64_t tb = first_tile; tb <= t.union_hi; tb += kTile) {
    DotTile<kDim, kType, kStride>(t, tb, row_bytes, krow_a, vrow_a, pf_k_a);
  }
}

// Rows back to back take StridedRows (and full tiles DotFullTile), except on the scalar targets:
// there (bare-metal builds) a second copy of the decode loops would cost flash, and the gain was
// measured on x86 only.
template <size_t kDim, KvType kType>
inline void DotRunLayout(Task& t) {
#if HWY_TARGET != HWY_SCALAR && HWY_TARGET != HWY_EMU128
  constexpr size_t kStride = static_cast<size_t>(KvRowBytes(kType, kDim));
  if constexpr (kStride != 0) {
    if (KeysBackToBack<kDim>(*t.a, t.union_lo / int64_t{kTile} * int64_t{kTile})) {
      return DotRunTyped<kDim, kType, kStride>(t);
    }
  }
#endif
  DotRunTyped<kDim, kType, 0>(t);
}

template <size_t kDim, KvType kType>
inline void DotRun(Task& t) {
  t.q_int8 = DecodeQuantizesQuery(*t.a);
  if constexpr (kDecodeIntegerDot && KvTypeIsBlock(kType)) {
    if (t.q_int8) DotLoadQInt8<kDim, kType>(t);
  }
  if (!t.q_int8) DotLoadQ<kDim>(t);
  if (t.union_lo > t.union_hi) return;
  DotRunLayout<kDim, kType>(t);
}

// The decode tiling over one range (attention_range.h) of K/V of type kType, at each head_dim
// specialization: what attention_decode_f32.cc, _f16.cc, _bf16.cc, _q8_0.cc and _q4_0.cc export, one
// translation unit per K/V type.
template <KvType kType>
inline void DecodeRange(const detail::AttentionRange& r) {
  switch (detail::SpecializedDim(*r.args)) {
    case 64: return RunTasks<true>(r, [](Task& t) { DotRun<64, kType>(t); });
    case 128: return RunTasks<true>(r, [](Task& t) { DotRun<128, kType>(t); });
    default: return RunTasks<true>(r, [](Task& t) { DotRun<0, kType>(t); });
  }
}

}  // namespace attn

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace simd
}  // namespace headway
HWY_AFTER_NAMESPACE();

#endif  // HEADWAY_SIMD_ATTENTION_ATTENTION_DECODE_INL_H_
