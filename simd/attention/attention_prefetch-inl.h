// Prefetch policies of the decode loops, per Highway target. Decode streams the cache once, in rows
// 128-256 bytes wide and kilobytes apart, which the hardware prefetchers do not follow. Each phase
// prefetches what the other phase reads next, half a tile ahead: a tile's V rows during its Q·Kᵀ,
// the next tile's K rows during P·V. Spread out, the misses overlap the arithmetic (a burst fills
// the miss queue and stalls); a whole tile ahead puts twice the lines in flight, more than L1
// holds. The measurements behind each choice: docs/PERFORMANCE.md ("Decode prefetches").

#if defined(HEADWAY_SIMD_ATTENTION_ATTENTION_PREFETCH_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef HEADWAY_SIMD_ATTENTION_ATTENTION_PREFETCH_INL_H_
#undef HEADWAY_SIMD_ATTENTION_ATTENTION_PREFETCH_INL_H_
#else
#define HEADWAY_SIMD_ATTENTION_ATTENTION_PREFETCH_INL_H_
#endif

#include <cstddef>

#include "hwy/highway.h"
#include "simd/attention/attention_math-inl.h"
#include "simd/attention/kv_load-inl.h"
#include "simd/vector_ops.h"

HWY_BEFORE_NAMESPACE();
namespace headway {
namespace simd {
namespace HWY_NAMESPACE {
namespace hn = HEADWAY_SIMD_OPS;

namespace attn {

// Helium cores (Cortex-M55, M85) read the arena from tightly coupled or on-chip SRAM at a fixed
// latency: a prefetch there costs its instructions and the loop around it and hides nothing, so the
// policies below do nothing.
inline constexpr bool kDecodePrefetch = !HEADWAY_SIMD_HELIUM;

// Prefetch policies of the decode loops, which say at each step which part of a tile they have
// reached: Q·Kᵀ at element x of the rows of keys [k0, k0 + kKB), about to read count elements
// of each (Qk), P·V at elements [x, x + count) of the row of key k (Pv), in K/V of type kType
// (whose bytes KvPaceBytes counts).
struct NoPrefetch {
  template <KvType kType>
  HWY_INLINE void Qk(size_t, size_t, size_t, size_t) const {}
  template <KvType kType>
  HWY_INLINE void Pv(size_t, size_t, size_t) const {}
};

// The P·V loops prefetch the next tile's K rows as they go: the same part of rows[k] as they read
// of key k's V row (none past n).
template <class Rows>
struct RowPrefetch {
  Rows rows{};
  size_t n = 0;
  template <KvType kType>
  HWY_INLINE void Pv(size_t k, size_t x, size_t count) const {
    if (!kDecodePrefetch || k >= n) return;
    const size_t xb = KvPaceBytes<kType>(x), nb = KvPaceBytes<kType>(x + count) - xb;
    for (size_t off = 0; off < nb; off += 64) KvPrefetch(rows[k] + xb + off);
  }
};

// A whole tile of rows of kRowBytes back to back, bytes [0, n) from p (this tile's V rows, or the
// next tile's K rows), prefetched in address order at an even pace through a loop over the tile:
// each step asks for the lines that start in its share of the bytes. Q·Kᵀ steps over kKB-key
// blocks: the block at k0 has bytes [k0, k0 + kKB) · kRowBytes, x elements into each of its rows
// (xb bytes) is xb · kKB into that. P·V passes over every key for elements [x, x + count), row
// bytes [xb, xb + nb): the pass has bytes [xb, xb + nb) · kTile, key k the k-th nb of them. Counted
// in the rows' own bytes (KvPaceBytes), the steps' shares add up to the tile's bytes, so the
// prefetches neither fall behind the loads nor run ahead of them.
template <size_t kRowBytes>
struct TilePrefetch {
  const char* p = nullptr;
  size_t n = 0;
  HWY_INLINE void Lines(size_t b0, size_t b1) const {
    if (!kDecodePrefetch) return;
    for (size_t off = (b0 + 63) / 64 * 64; off < b1 && off < n; off += 64) KvPrefetch(p + off);
  }
  template <KvType kType>
  HWY_INLINE void Qk(size_t k0, size_t kKB, size_t x, size_t count) const {
    const size_t xb = KvPaceBytes<kType>(x), nb = KvPaceBytes<kType>(x + count) - xb;
    const size_t b = k0 * kRowBytes + xb * kKB;
    Lines(b, b + nb * kKB);
  }
  template <KvType kType>
  HWY_INLINE void Pv(size_t k, size_t x, size_t count) const {
    const size_t xb = KvPaceBytes<kType>(x), nb = KvPaceBytes<kType>(x + count) - xb;
    const size_t b = xb * kTile + k * nb;
    Lines(b, b + nb);
  }
};

// Every line of rows [i0, i1), row_bytes bytes each.
template <class Rows>
HWY_INLINE void PrefetchRows(Rows rows, size_t i0, size_t i1, size_t row_bytes) {
  if (!kDecodePrefetch) return;
  for (size_t i = i0; i < i1; ++i) {
    for (size_t off = 0; off < row_bytes; off += 64) KvPrefetch(rows[i] + off);
  }
}

// A tile's V rows [done, end), a few rows at a time between the Q·Kᵀ blocks of the general decode
// loop: Next(count) prefetches the next count rows (none past end).
template <class Rows>
struct PacedRowPrefetch {
  Rows rows{};
  size_t done = 0;
  size_t end = 0;
  size_t row_bytes = 0;
  HWY_INLINE void Next(size_t count) {
    if (!kDecodePrefetch) return;
    const size_t stop = done + count < end ? done + count : end;
    for (; done < stop; ++done) {
      for (size_t off = 0; off < row_bytes; off += 64) KvPrefetch(rows[done] + off);
    }
  }
};

}  // namespace attn

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace simd
}  // namespace headway
HWY_AFTER_NAMESPACE();

#endif  // HEADWAY_SIMD_ATTENTION_ATTENTION_PREFETCH_INL_H_
