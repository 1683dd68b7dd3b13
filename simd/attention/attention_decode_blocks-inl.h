// Decode register blocks, per Highway target (lanes along head_dim; attention_decode-inl.h runs
// them over the tiles): Q·Kᵀ and P·V of a block of rows, with K and V widened in registers
// straight from the cache, and the online softmax of a row over a tile. Scores are dot products:
// kDotRows rows × 4 keys of accumulators share their K and Q loads, and a transposing add tree
// reduces 4 at a time (SumOfLanes on SVE and the scalar targets, the same for every block); P·V
// runs kDotRows rows × 4 vectors of head_dim per V load. kDotRows is 4 where there are 32 vector
// registers (16 accumulators), 2 where there are 16, 1 on SVE and SVE2; the rows left over (a
// group of 3) form one block of 2 or 3. A single row (MHA) takes 8 keys or 8 vectors per block
// where there are 32 registers, so it still has 8 independent FMA chains. The blocks are named
// accumulators on every target (as in matmul-inl.h: SVE's sizeless vectors cannot form arrays).

#if defined(HEADWAY_SIMD_ATTENTION_ATTENTION_DECODE_BLOCKS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef HEADWAY_SIMD_ATTENTION_ATTENTION_DECODE_BLOCKS_INL_H_
#undef HEADWAY_SIMD_ATTENTION_ATTENTION_DECODE_BLOCKS_INL_H_
#else
#define HEADWAY_SIMD_ATTENTION_ATTENTION_DECODE_BLOCKS_INL_H_
#endif

#include <cstddef>
#include <cstdint>

#include "hwy/highway.h"
#include "simd/attention/attention.h"
#include "simd/attention/attention_decode_int8-inl.h"
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

#if HEADWAY_SIMD_HELIUM
HWY_INLINE float SumLanes(DF df, VF v) { return hn::GetLane(hn::SumOfLanes(df, v)); }
HWY_INLINE void StoreSums4(DF, VF a, VF b, VF c, VF e, float* HWY_RESTRICT dst) { hn::StoreSums4(a, b, c, e, dst); }
#elif HWY_TARGET != HWY_SCALAR && !HWY_HAVE_SCALABLE
// dst[0..3] = the sums of all lanes of a, b, c, e: one transposing add tree (9 ops per 128-bit
// block, then halving) instead of four horizontal sums. Lane i depends only on the i-th input,
// always through the same operations, so SumLanes(v) (= lane 0 of Sum4(v, v, v, v)) gives the
// same bits: a score does not depend on how its keys were blocked.
template <class D>
HWY_INLINE auto FoldTo4(D d, hn::Vec<D> v) {
  if constexpr (hn::MaxLanes(D()) <= 4) {
    (void)d;
    return v;
  } else {
    const hn::Half<D> dh;
    return FoldTo4(dh, hn::Add(hn::LowerHalf(dh, v), hn::UpperHalf(dh, v)));
  }
}
template <class D>
HWY_INLINE auto Sum4(D d, hn::Vec<D> a, hn::Vec<D> b, hn::Vec<D> c, hn::Vec<D> e) {
  const hn::Repartition<uint64_t, D> dd;  // not double: 32-bit ARM has no f64 vectors
  // Per 128-bit block: ab = [a0+a2, b0+b2, a1+a3, b1+b3], ce likewise; then 64-bit halves.
  const auto ab = hn::Add(hn::InterleaveLower(d, a, b), hn::InterleaveUpper(d, a, b));
  const auto ce = hn::Add(hn::InterleaveLower(d, c, e), hn::InterleaveUpper(d, c, e));
  const auto lo = hn::InterleaveLower(dd, hn::BitCast(dd, ab), hn::BitCast(dd, ce));
  const auto hi = hn::InterleaveUpper(dd, hn::BitCast(dd, ab), hn::BitCast(dd, ce));
  return FoldTo4(d, hn::Add(hn::BitCast(d, lo), hn::BitCast(d, hi)));
}
HWY_INLINE void StoreSums4(DF df, VF a, VF b, VF c, VF e, float* HWY_RESTRICT dst) {
  hn::StoreU(Sum4(df, a, b, c, e), hn::Simd<float, 4, 0>(), dst);
}
HWY_INLINE float SumLanes(DF df, VF v) { return hn::GetLane(Sum4(df, v, v, v, v)); }
#else
HWY_INLINE float SumLanes(DF df, VF v) { return hn::GetLane(hn::SumOfLanes(df, v)); }
HWY_INLINE void StoreSums4(DF df, VF a, VF b, VF c, VF e, float* HWY_RESTRICT dst) {
  dst[0] = SumLanes(df, a);
  dst[1] = SumLanes(df, b);
  dst[2] = SumLanes(df, c);
  dst[3] = SumLanes(df, e);
}
#endif

// Blocks are 4 sets of 4 named accumulators (aR0..aR3 for set R): set r takes row r0 + r, or,
// in a block of 1 row × 8 keys or vectors, set 1 takes keys or vectors 4..7. Sets and members a
// block does not use are dead code.

// a_i = s · v_i + a_i for the kN (1 or 4) members of one set (s a vector, or Helium's broadcast
// scalar: hn::Set's result).
template <size_t kN, class S>
HWY_INLINE void FmaSet(S s, VF v0, VF v1, VF v2, VF v3, VF& a0, VF& a1, VF& a2, VF& a3) {
  a0 = hn::MulAdd(s, v0, a0);
  if constexpr (kN == 4) {
    a1 = hn::MulAdd(s, v1, a1);
    a2 = hn::MulAdd(s, v2, a2);
    a3 = hn::MulAdd(s, v3, a3);
  }
}

// One step of DotQk over elements [x, x + N) (kTail: [x, d)): each K vector is loaded once for
// the kRB rows.
template <KvType kType, size_t kRB, size_t kKB, bool kTail, class Rows>
HWY_INLINE void DotQkStep(DF df, const float* HWY_RESTRICT q, size_t d_pad, Rows kr, size_t x, size_t d, VF& a00,
                          VF& a01, VF& a02, VF& a03, VF& a10, VF& a11, VF& a12, VF& a13, VF& a20, VF& a21, VF& a22,
                          VF& a23, VF& a30, VF& a31, VF& a32, VF& a33) {
  constexpr size_t kN = kKB == 1 ? 1 : 4;
  const VF k0 = KvLoad<kType, kTail>(df, kr[0], x, d);
  const VF k1 = kKB > 1 ? KvLoad<kType, kTail>(df, kr[1], x, d) : k0;
  const VF k2 = kKB > 1 ? KvLoad<kType, kTail>(df, kr[2], x, d) : k0;
  const VF k3 = kKB > 1 ? KvLoad<kType, kTail>(df, kr[3], x, d) : k0;
  if constexpr (kKB == 8) {
    const VF k4 = KvLoad<kType, kTail>(df, kr[4], x, d);
    const VF k5 = KvLoad<kType, kTail>(df, kr[5], x, d);
    const VF k6 = KvLoad<kType, kTail>(df, kr[6], x, d);
    const VF k7 = KvLoad<kType, kTail>(df, kr[7], x, d);
    const VF qv = hn::LoadU(df, q + x);
    FmaSet<4>(qv, k0, k1, k2, k3, a00, a01, a02, a03);
    FmaSet<4>(qv, k4, k5, k6, k7, a10, a11, a12, a13);
  } else {
    FmaSet<kN>(hn::LoadU(df, q + x), k0, k1, k2, k3, a00, a01, a02, a03);
    if constexpr (kRB > 1) FmaSet<kN>(hn::LoadU(df, q + 1 * d_pad + x), k0, k1, k2, k3, a10, a11, a12, a13);
    if constexpr (kRB > 2) FmaSet<kN>(hn::LoadU(df, q + 2 * d_pad + x), k0, k1, k2, k3, a20, a21, a22, a23);
    if constexpr (kRB > 3) FmaSet<kN>(hn::LoadU(df, q + 3 * d_pad + x), k0, k1, k2, k3, a30, a31, a32, a33);
  }
}

// The kN (1 or 4) scores of one set into s.
template <size_t kN>
HWY_INLINE void StoreScores(DF df, VF a0, VF a1, VF a2, VF a3, float* HWY_RESTRICT s) {
  if constexpr (kN == 4) {
    StoreSums4(df, a0, a1, a2, a3, s);
  } else {
    s[0] = SumLanes(df, a0);
  }
}

// The scores of a DotQk block from its accumulators into s (row r0, key k0).
template <size_t kRB, size_t kKB>
HWY_INLINE void StoreQkScores(DF df, float* HWY_RESTRICT s, VF a00, VF a01, VF a02, VF a03, VF a10, VF a11, VF a12,
                              VF a13, VF a20, VF a21, VF a22, VF a23, VF a30, VF a31, VF a32, VF a33) {
  constexpr size_t kN = kKB == 1 ? 1 : 4;
  StoreScores<kN>(df, a00, a01, a02, a03, s);
  if constexpr (kKB == 8) StoreScores<4>(df, a10, a11, a12, a13, s + 4);
  if constexpr (kKB != 8 && kRB > 1) StoreScores<kN>(df, a10, a11, a12, a13, s + 1 * kTile);
  if constexpr (kRB > 2) StoreScores<kN>(df, a20, a21, a22, a23, s + 2 * kTile);
  if constexpr (kRB > 3) StoreScores<kN>(df, a30, a31, a32, a33, s + 3 * kTile);
}

// S[r][k] = Q[r] · K[k] for rows [r0, r0 + kRB) and tile keys [k0, k0 + kKB): kRB <= 4 rows × 1
// or 4 keys, or 1 row × 8 keys. Each score is the same sequence of operations whatever the
// block, so a row's scores do not depend on its neighbours.
template <size_t kDim, KvType kType, size_t kRB, size_t kKB, class Rows, class Pf = NoPrefetch>
HWY_INLINE void DotQk(const Task& t, Rows krow, size_t r0, size_t k0, const Pf& pf = Pf()) {
  static_assert((kRB <= 4 && (kKB == 1 || kKB == 4)) || (kRB == 1 && kKB == 8), "blocks: 4 sets of 4 accumulators");
  const DF df;
  const size_t n = hn::Lanes(df);
  const size_t d = HeadDim<kDim>(t);
  const size_t d_pad = PaddedHeadDim<kDim>(t);
  const float* HWY_RESTRICT q = t.q + r0 * d_pad;
#if HEADWAY_SIMD_HELIUM
  // GCC 12 hoists the query's loads out of the loop over key blocks and then spills them, 8 vector
  // registers being too few: hiding where q points keeps each load next to its FMAs.
  __asm__("" : "+r"(q));
#endif
  const Rows kr = krow + k0;
  VF a00 = hn::Zero(df), a01 = a00, a02 = a00, a03 = a00, a10 = a00, a11 = a00, a12 = a00, a13 = a00;
  VF a20 = a00, a21 = a00, a22 = a00, a23 = a00, a30 = a00, a31 = a00, a32 = a00, a33 = a00;
  if constexpr (kDecodeIntegerDot && KvTypeIsBlock(kType)) {
    if (t.q_int8) {
      DotQkInt8<kDim, kType, kRB, kKB>(t, krow, r0, k0, pf, a00, a01, a02, a03, a10, a11, a12, a13, a20, a21, a22, a23,
                                       a30, a31, a32, a33);
      return StoreQkScores<kRB, kKB>(df, t.s + r0 * kTile + k0, a00, a01, a02, a03, a10, a11, a12, a13, a20, a21, a22,
                                     a23, a30, a31, a32, a33);
    }
  }
  size_t x = 0;
  if constexpr (HEADWAY_SIMD_HELIUM && !KvTypeIsBlock(kType)) {
    // Helium has no register offset for vector loads: a pointer per key row and one for the query,
    // each moved a vector per step, replace the add per load of a shared index.
    const char* kp[kKB];
    for (size_t i = 0; i < kKB; ++i) kp[i] = kr[i];
    const float* HWY_RESTRICT qx = q;
    HEADWAY_SIMD_HEAD_DIM_LOOP
    for (; x + n <= d; x += n) {
      DotQkStep<kType, kRB, kKB, false>(df, qx, d_pad, kp, 0, n, a00, a01, a02, a03, a10, a11, a12, a13, a20, a21, a22,
                                        a23, a30, a31, a32, a33);
      for (size_t i = 0; i < kKB; ++i) kp[i] += static_cast<size_t>(KvOffsetBytes(kType, n));
      qx += n;
    }
    if (x < d) {
      DotQkStep<kType, kRB, kKB, true>(df, qx, d_pad, kp, 0, d - x, a00, a01, a02, a03, a10, a11, a12, a13, a20, a21,
                                       a22, a23, a30, a31, a32, a33);
    }
    return StoreQkScores<kRB, kKB>(df, t.s + r0 * kTile + k0, a00, a01, a02, a03, a10, a11, a12, a13, a20, a21, a22,
                                   a23, a30, a31, a32, a33);
  }
  HEADWAY_SIMD_HEAD_DIM_LOOP
  for (; x + n <= d; x += n) {
    pf.template Qk<kType>(k0, kKB, x, n);
    DotQkStep<kType, kRB, kKB, false>(df, q, d_pad, kr, x, d, a00, a01, a02, a03, a10, a11, a12, a13, a20, a21, a22,
                                      a23, a30, a31, a32, a33);
  }
  if (x < d) {
    pf.template Qk<kType>(k0, kKB, x, d - x);
    DotQkStep<kType, kRB, kKB, true>(df, q, d_pad, kr, x, d, a00, a01, a02, a03, a10, a11, a12, a13, a20, a21, a22, a23,
                                     a30, a31, a32, a33);
  }
  StoreQkScores<kRB, kKB>(df, t.s + r0 * kTile + k0, a00, a01, a02, a03, a10, a11, a12, a13, a20, a21, a22, a23, a30,
                          a31, a32, a33);
}

// The kN (1 or 4) vectors of one set from o, or into it.
template <size_t kN>
HWY_INLINE void LoadSet(DF df, const float* HWY_RESTRICT o, VF& a0, VF& a1, VF& a2, VF& a3) {
  const size_t n = hn::Lanes(df);
  a0 = hn::LoadU(df, o);
  a1 = a2 = a3 = a0;
  if constexpr (kN == 4) {
    a1 = hn::LoadU(df, o + 1 * n);
    a2 = hn::LoadU(df, o + 2 * n);
    a3 = hn::LoadU(df, o + 3 * n);
  }
}
template <size_t kN>
HWY_INLINE void StoreSet(DF df, VF a0, VF a1, VF a2, VF a3, float* HWY_RESTRICT o) {
  const size_t n = hn::Lanes(df);
  hn::StoreU(a0, df, o);
  if constexpr (kN == 4) {
    hn::StoreU(a1, df, o + 1 * n);
    hn::StoreU(a2, df, o + 2 * n);
    hn::StoreU(a3, df, o + 3 * n);
  }
}

// O[r][x, x + kC · N) += Σ_{k in [a, b)} P[r][k] · V[k] for rows [r0, r0 + kRB), keys in
// ascending order: kRB <= 4 rows × 1 or 4 vectors, or 1 row × 8 vectors (kTail: the last,
// partial vector of the row, kC = 1). Each V vector is loaded once for the kRB rows.
template <KvType kType, size_t kRB, size_t kC, bool kTail, class Rows, class Pf>
HWY_INLINE void DotPvStep(const Task& t, Rows vrow, size_t r0, size_t x, size_t d, size_t a, size_t b, const Pf& pf) {
  static_assert((kRB <= 4 && (kC == 1 || kC == 4)) || (kRB == 1 && kC == 8), "blocks: 4 sets of 4 accumulators");
  static_assert(!kTail || kC == 1, "the tail is one vector");
  constexpr size_t kN = kC == 1 ? 1 : 4;
  // Members loaded per set (the loads of an unused set are dead code).
  constexpr size_t kN1 = kC == 8 || kRB > 1 ? kN : 1, kN2 = kRB > 2 ? kN : 1, kN3 = kRB > 3 ? kN : 1;
  const DF df;
  const size_t n = hn::Lanes(df);
  const size_t dp = t.d_pad;
  float* HWY_RESTRICT o = t.o + r0 * dp + x;
  const float* HWY_RESTRICT p = t.s + r0 * kTile;
  // Set 1 is row r0 + 1, or vectors 4..7 of row r0.
  float* HWY_RESTRICT o1 = kC == 8 ? o + 4 * n : o + (kRB > 1 ? dp : 0);
  VF a00, a01, a02, a03, a10, a11, a12, a13, a20, a21, a22, a23, a30, a31, a32, a33;
  LoadSet<kN>(df, o, a00, a01, a02, a03);
  LoadSet<kN1>(df, o1, a10, a11, a12, a13);
  LoadSet<kN2>(df, o + (kRB > 2 ? 2 * dp : 0), a20, a21, a22, a23);
  LoadSet<kN3>(df, o + (kRB > 3 ? 3 * dp : 0), a30, a31, a32, a33);
  // Element x of a row of V as a pointer (vk) where the storage has one per element, else x0 = x:
  // the loads of the block are then constant offsets from one address (Helium, like AArch32, has
  // no register offset for vector loads).
  constexpr bool kBlock = KvTypeIsBlock(kType);
  const size_t x0 = kBlock ? x : 0;
  for (size_t k = a; k < b; ++k) {
    pf.template Pv<kType>(k, x, kTail ? d - x : kC * n);
    const char* vk = kBlock ? vrow[k] : vrow[k] + static_cast<size_t>(KvOffsetBytes(kType, x));
    const VF v0 = KvLoad<kType, kTail>(df, vk, x0, d - x + x0);
    const VF v1 = kC > 1 ? KvVec<kType>(df, vk, x0 + 1 * n) : v0;
    const VF v2 = kC > 1 ? KvVec<kType>(df, vk, x0 + 2 * n) : v0;
    const VF v3 = kC > 1 ? KvVec<kType>(df, vk, x0 + 3 * n) : v0;
    if constexpr (kC == 8) {
      const VF pk = hn::Set(df, p[k]);
      FmaSet<4>(pk, v0, v1, v2, v3, a00, a01, a02, a03);
      FmaSet<4>(pk, KvVec<kType>(df, vk, x0 + 4 * n), KvVec<kType>(df, vk, x0 + 5 * n),
                KvVec<kType>(df, vk, x0 + 6 * n), KvVec<kType>(df, vk, x0 + 7 * n), a10, a11, a12, a13);
    } else {
      FmaSet<kN>(hn::Set(df, p[k]), v0, v1, v2, v3, a00, a01, a02, a03);
      if constexpr (kRB > 1) FmaSet<kN>(hn::Set(df, p[1 * kTile + k]), v0, v1, v2, v3, a10, a11, a12, a13);
      if constexpr (kRB > 2) FmaSet<kN>(hn::Set(df, p[2 * kTile + k]), v0, v1, v2, v3, a20, a21, a22, a23);
      if constexpr (kRB > 3) FmaSet<kN>(hn::Set(df, p[3 * kTile + k]), v0, v1, v2, v3, a30, a31, a32, a33);
    }
  }
  StoreSet<kN>(df, a00, a01, a02, a03, o);
  if constexpr (kC == 8 || kRB > 1) StoreSet<kN>(df, a10, a11, a12, a13, o1);
  if constexpr (kRB > 2) StoreSet<kN>(df, a20, a21, a22, a23, o + 2 * dp);
  if constexpr (kRB > 3) StoreSet<kN>(df, a30, a31, a32, a33, o + 3 * dp);
}

// Scores of rows [r0, r0 + kRB) for tile keys [a, b).
template <size_t kDim, KvType kType, size_t kRB, class Rows>
inline void DotQkKeys(const Task& t, Rows krow, size_t r0, size_t a, size_t b) {
  size_t k = a;
  if constexpr (kRB == 1 && kDotKeys1 != kDotKeys) {
    for (; k + kDotKeys1 <= b; k += kDotKeys1) DotQk<kDim, kType, 1, kDotKeys1>(t, krow, r0, k);
  }
  for (; k + kDotKeys <= b; k += kDotKeys) DotQk<kDim, kType, kRB, kDotKeys>(t, krow, r0, k);
  for (; k < b; ++k) DotQk<kDim, kType, kRB, 1>(t, krow, r0, k);
}

template <size_t kDim, KvType kType, size_t kRB, class Rows, class Pf = NoPrefetch>
inline void DotPvKeys(const Task& t, Rows vrow, size_t r0, size_t a, size_t b, const Pf& pf = Pf()) {
  if (a >= b) return;
  const DF df;
  const size_t n = hn::Lanes(df);
  const size_t d = HeadDim<kDim>(t);
  size_t x = 0;
  if constexpr (kRB == 1 && kPvVecs1 != 4) {
    for (; x + kPvVecs1 * n <= d; x += kPvVecs1 * n) DotPvStep<kType, 1, kPvVecs1, false>(t, vrow, r0, x, d, a, b, pf);
  }
  for (; x + 4 * n <= d; x += 4 * n) DotPvStep<kType, kRB, 4, false>(t, vrow, r0, x, d, a, b, pf);
  for (; x + n <= d; x += n) DotPvStep<kType, kRB, 1, false>(t, vrow, r0, x, d, a, b, pf);
  if (x < d) DotPvStep<kType, kRB, 1, true>(t, vrow, r0, x, d, a, b, pf);
}

// The rows from r on that no block of kDotRows took (fewer than kDotRows) as one block, so each K
// or V vector is loaded once for all of them: a GQA group of 3 (SmolLM2) is one block of 3 rows,
// not 3 rows alone. Q·Kᵀ for tile keys [k0, k0 + kKB); P·V for tile keys [a, b).
template <size_t kDim, KvType kType, size_t kKB, class Rows, class Pf = NoPrefetch>
HWY_INLINE void DotQkRest(const Task& t, Rows krow, size_t r, size_t k0, const Pf& pf = Pf()) {
  const size_t n = t.rows - r;
  if constexpr (kDotRows == 4) {
    if (n == 3) return DotQk<kDim, kType, 3, kKB>(t, krow, r, k0, pf);
    if (n == 2) return DotQk<kDim, kType, 2, kKB>(t, krow, r, k0, pf);
  }
  if (n == 1) DotQk<kDim, kType, 1, kKB>(t, krow, r, k0, pf);
}

template <size_t kDim, KvType kType, class Rows, class Pf = NoPrefetch>
HWY_INLINE void DotPvRest(const Task& t, Rows vrow, size_t r, size_t a, size_t b, const Pf& pf = Pf()) {
  const size_t n = t.rows - r;
  if constexpr (kDotRows == 4) {
    if (n == 3) return DotPvKeys<kDim, kType, 3>(t, vrow, r, a, b, pf);
    if (n == 2) return DotPvKeys<kDim, kType, 2>(t, vrow, r, a, b, pf);
  }
  if (n == 1) DotPvKeys<kDim, kType, 1>(t, vrow, r, a, b, pf);
}

// Online softmax of row r over tile keys [a, b) (b > a): scores become P in place, m and l are
// updated, O[r] is rescaled by exp(old max − new max).
inline void DotRowSoftmax(const Task& t, size_t r, size_t a, size_t b) {
  const DF df;
  const DI di;
  const size_t n = hn::Lanes(df);
  const VF neg_inf = hn::Set(df, kNegInf);
  const VF cap = hn::Set(df, t.a->softcap);
  const bool softcap = t.a->softcap > 0.0f;
  const float* slopes = t.a->alibi_slopes;
  float* HWY_RESTRICT s = t.s + r * kTile;
  const VI lo = hn::Set(di, static_cast<int32_t>(a));
  const VI hi = hn::Set(di, static_cast<int32_t>(b) - 1);
  // Whole vectors around [a, b), at fixed places in the tile (kTile is a multiple of 16).
  const size_t v0 = a / n * n, v1 = (b + n - 1) / n * n;
  VF mt = neg_inf;
  const AttentionArgs& args = *t.a;
  const bool general_mask = detail::HasGeneralMask(args);
  if (!softcap && slopes == nullptr && !general_mask && v0 == a && v1 == b) {
    // Whole vectors, all visible (every tile of a long decode): the masked pass below would
    // store back the same values; two running maxima halve the dependency chain.
    VF mt1 = neg_inf;
    size_t k = v0;
    for (; k + 2 * n <= v1; k += 2 * n) {
      mt = hn::Max(mt, hn::LoadU(df, s + k));
      mt1 = hn::Max(mt1, hn::LoadU(df, s + k + n));
    }
    if (k < v1) mt = hn::Max(mt, hn::LoadU(df, s + k));
    mt = hn::Max(mt, mt1);
  } else {
    // ALiBi: −slope · |p − key|, the distance exact in f32, one rounding (as RowsAlibi).
    const VF slope = hn::Set(df, slopes != nullptr ? slopes[size_t{t.g} * t.group + r % t.group] : 0.0f);
    const VI prel = hn::Set(di, static_cast<int32_t>(RowTilePosition(t, r)));
    for (size_t k = v0; k < v1; k += n) {
      // Keys outside [a, b) were never computed: replace them, never read them into the result.
      const VI kk = hn::Iota(di, static_cast<int32_t>(k));
      const auto vis = hn::RebindMask(df, hn::Not(hn::Or(hn::Gt(lo, kk), hn::Gt(kk, hi))));
      VF sv = hn::IfThenElse(vis, hn::LoadU(df, s + k), neg_inf);
      if (softcap) sv = hn::IfThenElse(vis, Softcap(df, sv, cap), neg_inf);
      if (slopes != nullptr) {
        const VF dist = hn::Abs(hn::ConvertTo(df, hn::Sub(prel, kk)));
        sv = hn::IfThenElse(vis, hn::NegMulAdd(slope, dist, sv), neg_inf);
      }
      if (general_mask) {
        // Entries past [a, b) are never read (they may lie past the mask's row).
        HWY_ALIGN float entry[kAttnMaxLanes];
        const size_t token = t.t0 + r / t.group;
        for (size_t i = 0; i < n; ++i) {
          const size_t key = k + i;
          entry[i] = key >= a && key < b
                         ? detail::GeneralMaskEntry(args, token, t.tile_base + static_cast<int64_t>(key))
                         : 0.0f;
        }
        const VF ev = hn::Load(df, entry);
        sv = hn::IfThenElse(hn::Eq(ev, neg_inf), neg_inf, hn::Add(sv, ev));
      }
      hn::StoreU(sv, df, s + k);
      mt = hn::Max(mt, sv);
    }
  }
  const float m_old = t.m[r];
  const float m_tile = hn::GetLane(hn::MaxOfLanes(df, mt));
  const float m_new = m_tile > m_old ? m_tile : m_old;
  const float m_use = m_new == kNegInf ? 0.0f : m_new;
  // exp(0) = 1: no vector exp for a tile that does not raise the maximum (most of them).
  const float alpha = m_new == m_old ? 1.0f : hn::GetLane(ExpNonPositive(df, hn::Set(df, m_old - m_use)));
  const VF mu = hn::Set(df, m_use);
  VF sum = hn::Zero(df);
  for (size_t k = v0; k < v1; k += n) {
    const VF p = ExpNonPositive(df, hn::Sub(hn::LoadU(df, s + k), mu));
    hn::StoreU(p, df, s + k);
    sum = hn::Add(sum, p);
  }
  t.l[r] = alpha * t.l[r] + SumLanes(df, sum);
  t.m[r] = m_new;
  if (!(alpha == 1.0f)) {
    float* HWY_RESTRICT o = t.o + r * t.d_pad;
    const VF al = hn::Set(df, alpha);
    for (size_t x = 0; x < t.d_pad; x += n) hn::StoreU(hn::Mul(hn::LoadU(df, o + x), al), df, o + x);
  }
}

}  // namespace attn

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace simd
}  // namespace headway
HWY_AFTER_NAMESPACE();

#endif  // HEADWAY_SIMD_ATTENTION_ATTENTION_DECODE_BLOCKS_INL_H_
