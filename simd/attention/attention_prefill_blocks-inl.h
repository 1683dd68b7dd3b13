// Prefill register blocks, per Highway target (lanes along query rows; attention_prefill-inl.h
// runs them over the tiles): Q·Kᵀ of a block of row vectors into Sᵀ, their online softmax over a
// tile, and P·V into Oᵀ. Q·Kᵀ is broadcast(K[k][d]) × Qᵀ[d] and P·V is broadcast(V[k][d]) ×
// Pᵀ[k]: no horizontal reductions, and the softmax (max, exp, sum, rescale) is elementwise over
// rows.
//
// Register blocks, named accumulators on every target (as in matmul-inl.h: SVE's sizeless
// vectors cannot form arrays): kRowVecs row vectors × 8 keys (Q·Kᵀ) or × 8 dims (P·V). 2 × 8 =
// 16 independent accumulators where there are 32 vector registers (AVX-512, AArch64 NEON: 2 FMA
// pipes × 4 cycles latency need >= 8 chains), 1 × 8 where there are 16, and 1 × 8 on SVE and
// SVE2 (512-bit A64FX: 2 FMA pipes × 9 cycles would like more chains, but 8 keep one block
// shape). The accumulators of the second row vector are dead code where kRowVecs is 1, as are
// those past 4 or 1 dims in the blocks of the last head dims.

#if defined(HEADWAY_SIMD_ATTENTION_ATTENTION_PREFILL_BLOCKS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef HEADWAY_SIMD_ATTENTION_ATTENTION_PREFILL_BLOCKS_INL_H_
#undef HEADWAY_SIMD_ATTENTION_ATTENTION_PREFILL_BLOCKS_INL_H_
#else
#define HEADWAY_SIMD_ATTENTION_ATTENTION_PREFILL_BLOCKS_INL_H_
#endif

#include <cstddef>

#include "hwy/highway.h"
#include "simd/attention/attention_math-inl.h"
#include "simd/attention/attention_task-inl.h"
#include "simd/attention/attention_tiling.h"
#include "simd/vector_ops.h"

HWY_BEFORE_NAMESPACE();
namespace headway {
namespace simd {
namespace HWY_NAMESPACE {
namespace hn = HEADWAY_SIMD_OPS;

namespace attn {

// Online softmax of one row vector over tile keys [b0, b1): new running max, Pᵀ = exp(Sᵀ − max)
// in place, running sum. Returns alpha = exp(old max − new max), the factor for the old
// accumulators. b0 is even: the two partial sums take keys by absolute parity.
HWY_INLINE VF RowsSoftmax(const Task& t, size_t c, size_t b0, size_t b1) {
  const DF df;
  const size_t rpad = t.rpad;
  const VF neg_inf = hn::Set(df, kNegInf);
  VF mt = neg_inf;
  for (size_t k = b0; k < b1; ++k) mt = hn::Max(mt, hn::LoadU(df, t.s + k * rpad + c));
  const VF m_old = hn::LoadU(df, t.m + c);
  const VF m_new = hn::Max(m_old, mt);
  const VF m_use = hn::IfThenElseZero(hn::Ne(m_new, neg_inf), m_new);
  const VF alpha = ExpNonPositive(df, hn::Sub(m_old, m_use));
  VF sum0 = hn::Zero(df), sum1 = hn::Zero(df);
  size_t k = b0;
  for (; k + 2 <= b1; k += 2) {
    const VF p0 = ExpNonPositive(df, hn::Sub(hn::LoadU(df, t.s + k * rpad + c), m_use));
    const VF p1 = ExpNonPositive(df, hn::Sub(hn::LoadU(df, t.s + (k + 1) * rpad + c), m_use));
    hn::StoreU(p0, df, t.s + k * rpad + c);
    hn::StoreU(p1, df, t.s + (k + 1) * rpad + c);
    sum0 = hn::Add(sum0, p0);
    sum1 = hn::Add(sum1, p1);
  }
  for (; k < b1; ++k) {
    const VF p = ExpNonPositive(df, hn::Sub(hn::LoadU(df, t.s + k * rpad + c), m_use));
    hn::StoreU(p, df, t.s + k * rpad + c);
    sum0 = hn::Add(sum0, p);
  }
  hn::StoreU(hn::MulAdd(alpha, hn::LoadU(df, t.l + c), hn::Add(sum0, sum1)), df, t.l + c);
  hn::StoreU(m_new, df, t.m + c);
  return alpha;
}

// ALiBi over the scores of tile keys [b0, b1) for the row vector at c: S += −slope · |p − k|, the
// distance exact in f32 (an integer below 2^24), one rounding (the FMA). Masked keys stay −inf.
HWY_INLINE void RowsAlibi(const Task& t, size_t c, size_t b0, size_t b1) {
  const DF df;
  const DI di;
  const VF slope = hn::LoadU(df, t.slope + c);
  const VI prel = hn::LoadU(di, t.prel + c);
  for (size_t k = b0; k < b1; ++k) {
    const VF dist = hn::Abs(hn::ConvertTo(df, hn::Sub(prel, hn::Set(di, static_cast<int32_t>(k)))));
    float* sk = t.s + k * t.rpad + c;
    hn::StoreU(hn::NegMulAdd(slope, dist, hn::LoadU(df, sk)), df, sk);
  }
}

// The general mask over the scores of the rows [c0, c1) of the tile's keys each row sees (the
// others are −inf already). Rows are lanes of different tokens: one entry at a time.
HWY_INLINE void RowsGeneralMask(const Task& t, size_t c0, size_t c1) {
  const AttentionArgs& a = *t.a;
  for (size_t r = c0; r < c1 && r < t.rows; ++r) {
    const size_t token = t.t0 + r / t.group;
    for (int32_t k = t.lo[r]; k <= t.hi[r]; ++k) {
      float* sk = t.s + static_cast<size_t>(k) * t.rpad + r;
      *sk = detail::GeneralMaskLogit(detail::GeneralMaskEntry(a, token, t.tile_base + k), *sk);
    }
  }
}

// Score of tile key k for the row vector at c: softcap, mask, store into Sᵀ.
HWY_INLINE void RowsStoreScore(const Task& t, size_t k, size_t c, VF sv, VI lo, VI hi, bool masked) {
  const DF df;
  const DI di;
  if (t.a->softcap > 0.0f) sv = Softcap(df, sv, hn::Set(df, t.a->softcap));
  if (masked) sv = hn::IfThenElse(Visible(df, di, k, lo, hi), sv, hn::Set(df, kNegInf));
  hn::StoreU(sv, df, t.s + k * t.rpad + c);
}

// a_i += K[i][x] · Qᵀ[x] for the kKeyBlock (8 or 4) keys of a block (kx = &K[0][x], rows d_pad
// apart); a4..a7 are dead code for 4.
HWY_INLINE void RowsQkFma(DF df, const float* HWY_RESTRICT kx, size_t d_pad, VF qv, VF& a0, VF& a1, VF& a2, VF& a3,
                          VF& a4, VF& a5, VF& a6, VF& a7) {
  a0 = hn::MulAdd(hn::Set(df, kx[0 * d_pad]), qv, a0);
  a1 = hn::MulAdd(hn::Set(df, kx[1 * d_pad]), qv, a1);
  a2 = hn::MulAdd(hn::Set(df, kx[2 * d_pad]), qv, a2);
  a3 = hn::MulAdd(hn::Set(df, kx[3 * d_pad]), qv, a3);
  if constexpr (kKeyBlock == 8) {
    a4 = hn::MulAdd(hn::Set(df, kx[4 * d_pad]), qv, a4);
    a5 = hn::MulAdd(hn::Set(df, kx[5 * d_pad]), qv, a5);
    a6 = hn::MulAdd(hn::Set(df, kx[6 * d_pad]), qv, a6);
    a7 = hn::MulAdd(hn::Set(df, kx[7 * d_pad]), qv, a7);
  }
}

// Scores of the kKeyBlock keys from kb for the row vector at c.
HWY_INLINE void RowsStoreScores(const Task& t, size_t kb, size_t c, VI lo, VI hi, bool masked, VF a0, VF a1, VF a2,
                                VF a3, VF a4, VF a5, VF a6, VF a7) {
  RowsStoreScore(t, kb + 0, c, a0, lo, hi, masked);
  RowsStoreScore(t, kb + 1, c, a1, lo, hi, masked);
  RowsStoreScore(t, kb + 2, c, a2, lo, hi, masked);
  RowsStoreScore(t, kb + 3, c, a3, lo, hi, masked);
  if constexpr (kKeyBlock == 8) {
    RowsStoreScore(t, kb + 4, c, a4, lo, hi, masked);
    RowsStoreScore(t, kb + 5, c, a5, lo, hi, masked);
    RowsStoreScore(t, kb + 6, c, a6, lo, hi, masked);
    RowsStoreScore(t, kb + 7, c, a7, lo, hi, masked);
  }
}

// Scores of tile keys [b0, b1) (whole blocks of kKeyBlock keys) for row vectors
// [col, col + kRV · N): Sᵀ[k][rows]. a0..a7 take the row vector at col, e0..e7 the one after it.
template <size_t kDim, size_t kRV>
HWY_INLINE void RowsQk(const Task& t, size_t col, size_t b0, size_t b1, bool masked) {
  static_assert((kRV == 1 || kRV == 2) && (kKeyBlock == 8 || kKeyBlock == 4),
                "blocks: 1 or 2 row vectors x 8 or 4 keys");
  const DF df;
  const DI di;
  const size_t n = hn::Lanes(df);
  const size_t d = HeadDim<kDim>(t);
  const size_t d_pad = PaddedHeadDim<kDim>(t);
  const size_t rpad = t.rpad;
  const float* HWY_RESTRICT qt = t.q + col;
  const size_t c1 = kRV == 2 ? col + n : col;
  const VI lo0 = hn::LoadU(di, t.lo + col), hi0 = hn::LoadU(di, t.hi + col);
  const VI lo1 = hn::LoadU(di, t.lo + c1), hi1 = hn::LoadU(di, t.hi + c1);
  for (size_t kb = b0; kb < b1; kb += kKeyBlock) {
    const float* HWY_RESTRICT kt = t.kt + kb * d_pad;
    VF a0 = hn::Zero(df), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
    VF e0 = a0, e1 = a0, e2 = a0, e3 = a0, e4 = a0, e5 = a0, e6 = a0, e7 = a0;
    for (size_t x = 0; x < d; ++x) {
      RowsQkFma(df, kt + x, d_pad, hn::LoadU(df, qt + x * rpad), a0, a1, a2, a3, a4, a5, a6, a7);
      if constexpr (kRV == 2) {
        RowsQkFma(df, kt + x, d_pad, hn::LoadU(df, qt + x * rpad + n), e0, e1, e2, e3, e4, e5, e6, e7);
      }
    }
    RowsStoreScores(t, kb, col, lo0, hi0, masked, a0, a1, a2, a3, a4, a5, a6, a7);
    if constexpr (kRV == 2) RowsStoreScores(t, kb, c1, lo1, hi1, masked, e0, e1, e2, e3, e4, e5, e6, e7);
  }
}

// a_i ← alpha · Oᵀ[i] for i < kDB (ot = &Oᵀ[x0][c], rows rpad apart); kDB is 8, 4 or 1 and the
// accumulators past kDB are dead code.
template <size_t kDB>
HWY_INLINE void RowsPvLoad(DF df, const float* HWY_RESTRICT ot, size_t rpad, VF alpha, VF& a0, VF& a1, VF& a2, VF& a3,
                           VF& a4, VF& a5, VF& a6, VF& a7) {
  a0 = hn::Mul(hn::LoadU(df, ot), alpha);
  a1 = a2 = a3 = a4 = a5 = a6 = a7 = a0;
  if constexpr (kDB >= 4) {
    a1 = hn::Mul(hn::LoadU(df, ot + 1 * rpad), alpha);
    a2 = hn::Mul(hn::LoadU(df, ot + 2 * rpad), alpha);
    a3 = hn::Mul(hn::LoadU(df, ot + 3 * rpad), alpha);
  }
  if constexpr (kDB == 8) {
    a4 = hn::Mul(hn::LoadU(df, ot + 4 * rpad), alpha);
    a5 = hn::Mul(hn::LoadU(df, ot + 5 * rpad), alpha);
    a6 = hn::Mul(hn::LoadU(df, ot + 6 * rpad), alpha);
    a7 = hn::Mul(hn::LoadU(df, ot + 7 * rpad), alpha);
  }
}

template <size_t kDB>
HWY_INLINE void RowsPvStore(DF df, float* HWY_RESTRICT ot, size_t rpad, VF a0, VF a1, VF a2, VF a3, VF a4, VF a5, VF a6,
                            VF a7) {
  hn::StoreU(a0, df, ot);
  if constexpr (kDB >= 4) {
    hn::StoreU(a1, df, ot + 1 * rpad);
    hn::StoreU(a2, df, ot + 2 * rpad);
    hn::StoreU(a3, df, ot + 3 * rpad);
  }
  if constexpr (kDB == 8) {
    hn::StoreU(a4, df, ot + 4 * rpad);
    hn::StoreU(a5, df, ot + 5 * rpad);
    hn::StoreU(a6, df, ot + 6 * rpad);
    hn::StoreU(a7, df, ot + 7 * rpad);
  }
}

// acc + v · p, or (kMasked) only in the lanes of vis: a masked lane keeps its accumulator, so
// 0 · Inf or 0 · NaN from a V it does not see never reaches it. Visible lanes get the same FMA
// either way: the unmasked path is bitwise equal to the masked one there.
template <bool kMasked>
HWY_INLINE VF PvFma(DF df, hn::Mask<DF> vis, float v, VF p, VF acc) {
#if HEADWAY_SIMD_HELIUM
  if constexpr (kMasked) return hn::MaskedMulAdd(vis, hn::Set(df, v), p, acc);  // one predicated VFMA
#endif
  const VF r = hn::MulAdd(hn::Set(df, v), p, acc);
  return kMasked ? hn::IfThenElse(vis, r, acc) : r;
}

// a_i += V[k][x0 + i] · Pᵀ[k] for i < kDB (vk = &V[k][x0]).
template <size_t kDB, bool kMasked>
HWY_INLINE void RowsPvFma(DF df, hn::Mask<DF> vis, const float* HWY_RESTRICT vk, VF p, VF& a0, VF& a1, VF& a2, VF& a3,
                          VF& a4, VF& a5, VF& a6, VF& a7) {
  a0 = PvFma<kMasked>(df, vis, vk[0], p, a0);
  if constexpr (kDB >= 4) {
    a1 = PvFma<kMasked>(df, vis, vk[1], p, a1);
    a2 = PvFma<kMasked>(df, vis, vk[2], p, a2);
    a3 = PvFma<kMasked>(df, vis, vk[3], p, a3);
  }
  if constexpr (kDB == 8) {
    a4 = PvFma<kMasked>(df, vis, vk[4], p, a4);
    a5 = PvFma<kMasked>(df, vis, vk[5], p, a5);
    a6 = PvFma<kMasked>(df, vis, vk[6], p, a6);
    a7 = PvFma<kMasked>(df, vis, vk[7], p, a7);
  }
}

// Oᵀ[x0, x0 + kDB) ← alpha · Oᵀ + Σ_{k in [i0, i1)} V[k][x] · Pᵀ[k] for row vectors
// [col, col + kRV · N), keys in ascending order: a0..a7 for the row vector at col (alpha0),
// e0..e7 for the one after it (alpha1).
template <size_t kDim, size_t kRV, size_t kDB, bool kMasked>
HWY_INLINE void RowsPvBlock(const Task& t, size_t col, size_t x0, size_t i0, size_t i1, VF alpha0, VF alpha1) {
  const DF df;
  const DI di;
  const size_t n = hn::Lanes(df);
  const size_t d_pad = PaddedHeadDim<kDim>(t);
  const size_t rpad = t.rpad;
  const size_t c1 = kRV == 2 ? n : 0;  // the second row vector, from col
  float* HWY_RESTRICT ot = t.o + x0 * rpad + col;
  const float* HWY_RESTRICT vt = t.vt + x0;
  const float* HWY_RESTRICT pt = t.s + col;
  const VI lo0 = hn::LoadU(di, t.lo + col), hi0 = hn::LoadU(di, t.hi + col);
  const VI lo1 = hn::LoadU(di, t.lo + col + c1), hi1 = hn::LoadU(di, t.hi + col + c1);
  VF a0, a1, a2, a3, a4, a5, a6, a7, e0, e1, e2, e3, e4, e5, e6, e7;
  RowsPvLoad<kDB>(df, ot, rpad, alpha0, a0, a1, a2, a3, a4, a5, a6, a7);
  RowsPvLoad<kRV == 2 ? kDB : 1>(df, ot + c1, rpad, alpha1, e0, e1, e2, e3, e4, e5, e6, e7);
  const hn::Mask<DF> all = hn::FirstN(df, n);  // unused when !kMasked
  for (size_t k = i0; k < i1; ++k) {
    const float* HWY_RESTRICT vk = vt + k * d_pad;
    const VF p0 = hn::LoadU(df, pt + k * rpad);
    RowsPvFma<kDB, kMasked>(df, kMasked ? Visible(df, di, k, lo0, hi0) : all, vk, p0, a0, a1, a2, a3, a4, a5, a6, a7);
    if constexpr (kRV == 2) {
      const VF p1 = hn::LoadU(df, pt + k * rpad + c1);
      const hn::Mask<DF> vis1 = kMasked ? Visible(df, di, k, lo1, hi1) : all;
      RowsPvFma<kDB, kMasked>(df, vis1, vk, p1, e0, e1, e2, e3, e4, e5, e6, e7);
    }
  }
  RowsPvStore<kDB>(df, ot, rpad, a0, a1, a2, a3, a4, a5, a6, a7);
  if constexpr (kRV == 2) RowsPvStore<kDB>(df, ot + c1, rpad, e0, e1, e2, e3, e4, e5, e6, e7);
}

template <size_t kDim, size_t kRV, bool kMasked>
inline void RowsPv(const Task& t, size_t col, size_t i0, size_t i1, VF alpha0, VF alpha1) {
  const size_t d = HeadDim<kDim>(t);
  size_t x = 0;
  for (; x + kDimBlock <= d; x += kDimBlock) {
    RowsPvBlock<kDim, kRV, kDimBlock, kMasked>(t, col, x, i0, i1, alpha0, alpha1);
  }
  for (; x + 4 <= d; x += 4) RowsPvBlock<kDim, kRV, 4, kMasked>(t, col, x, i0, i1, alpha0, alpha1);
  for (; x < d; ++x) RowsPvBlock<kDim, kRV, 1, kMasked>(t, col, x, i0, i1, alpha0, alpha1);
}

// One tile for row vectors [col, col + kRV · N): keys [i0, i1) of the tile are loaded, [b0, b1)
// is that range widened to whole key blocks (the extra keys are zero and never visible).
template <size_t kDim, size_t kRV>
inline void RowsTileStep(const Task& t, size_t col, size_t i0, size_t i1, size_t b0, size_t b1, bool masked) {
  static_assert(kDimBlock == 8 || kDimBlock == 4, "P·V blocks: 8 or 4, then 4 or 1 dims");
  RowsQk<kDim, kRV>(t, col, b0, b1, masked);
  if (t.a->alibi_slopes != nullptr) {
    for (size_t c = col; c < col + kRV * hn::Lanes(DF()); c += hn::Lanes(DF())) RowsAlibi(t, c, b0, b1);
  }
  if (detail::HasGeneralMask(*t.a)) RowsGeneralMask(t, col, col + kRV * hn::Lanes(DF()));
  const VF alpha0 = RowsSoftmax(t, col, b0, b1);
  const VF alpha1 = kRV == 2 ? RowsSoftmax(t, col + hn::Lanes(DF()), b0, b1) : alpha0;
  if (masked) {
    RowsPv<kDim, kRV, true>(t, col, i0, i1, alpha0, alpha1);
  } else {
    RowsPv<kDim, kRV, false>(t, col, i0, i1, alpha0, alpha1);
  }
}

}  // namespace attn

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace simd
}  // namespace headway
HWY_AFTER_NAMESPACE();

#endif  // HEADWAY_SIMD_ATTENTION_ATTENTION_PREFILL_BLOCKS_INL_H_
