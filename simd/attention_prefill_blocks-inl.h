// Prefill register blocks, per Highway target (lanes along query rows; attention_prefill-inl.h
// runs them over the tiles): Q·Kᵀ of a block of row vectors into Sᵀ, their online softmax over a
// tile, and P·V into Oᵀ. Q·Kᵀ is broadcast(K[k][d]) × Qᵀ[d] and P·V is broadcast(V[k][d]) ×
// Pᵀ[k]: no horizontal reductions, and the softmax (max, exp, sum, rescale) is elementwise over
// rows.
//
// Register blocks: 2 row vectors × 8 keys (Q·Kᵀ) or 2 row vectors × 8 dims (P·V) = 16
// independent accumulators where there are 32 vector registers (AVX-512: 2 FMA pipes × 4 cycles
// latency need >= 8 chains), 1 × 8 where there are 16, written as arrays of vectors. SVE and SVE2
// (HWY_HAVE_SCALABLE) have sizeless vector types, which cannot form those arrays: there the
// blocks are named accumulators, 1 row vector × 8 keys or 8 dims (512-bit A64FX: 2 FMA pipes × 9
// cycles would like more chains, but 8 keep the code one block shape).

#if defined(HEADWAY_SIMD_ATTENTION_PREFILL_BLOCKS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef HEADWAY_SIMD_ATTENTION_PREFILL_BLOCKS_INL_H_
#undef HEADWAY_SIMD_ATTENTION_PREFILL_BLOCKS_INL_H_
#else
#define HEADWAY_SIMD_ATTENTION_PREFILL_BLOCKS_INL_H_
#endif

#include <cstddef>

#include "hwy/highway.h"
#include "simd/attention_math-inl.h"
#include "simd/attention_task-inl.h"
#include "simd/attention_tiling.h"

HWY_BEFORE_NAMESPACE();
namespace headway {
namespace simd {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

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

#if !HWY_HAVE_SCALABLE
// Scores of tile keys [b0, b1) (whole key blocks) for row vectors [col, col + kRV · N): Sᵀ[k][rows].
template <size_t kDim, size_t kRV>
HWY_INLINE void RowsQk(const Task& t, size_t col, size_t b0, size_t b1, bool masked) {
  const DF df;
  const DI di;
  const size_t n = hn::Lanes(df);
  const size_t d = HeadDim<kDim>(t);
  const size_t d_pad = PaddedHeadDim<kDim>(t);
  const size_t rpad = t.rpad;
  const float* HWY_RESTRICT qt = t.q + col;
  const VF cap = hn::Set(df, t.a->softcap);
  const bool softcap = t.a->softcap > 0.0f;
  for (size_t kb = b0; kb < b1; kb += kKeyBlock) {
    const float* HWY_RESTRICT kt = t.kt + kb * d_pad;
    VF acc[kRV][kKeyBlock];
    for (size_t j = 0; j < kRV; ++j) {
      for (size_t i = 0; i < kKeyBlock; ++i) acc[j][i] = hn::Zero(df);
    }
    for (size_t x = 0; x < d; ++x) {
      VF qv[kRV];
      for (size_t j = 0; j < kRV; ++j) qv[j] = hn::LoadU(df, qt + x * rpad + j * n);
      for (size_t i = 0; i < kKeyBlock; ++i) {
        const VF kv = hn::Set(df, kt[i * d_pad + x]);
        for (size_t j = 0; j < kRV; ++j) acc[j][i] = hn::MulAdd(kv, qv[j], acc[j][i]);
      }
    }
    for (size_t j = 0; j < kRV; ++j) {
      const size_t c = col + j * n;
      const VI lo = hn::LoadU(di, t.lo + c);
      const VI hi = hn::LoadU(di, t.hi + c);
      for (size_t i = 0; i < kKeyBlock; ++i) {
        VF sv = acc[j][i];
        if (softcap) sv = Softcap(df, sv, cap);
        if (masked) sv = hn::IfThenElse(Visible(df, di, kb + i, lo, hi), sv, hn::Set(df, kNegInf));
        hn::StoreU(sv, df, t.s + (kb + i) * rpad + c);
      }
    }
  }
}

// Oᵀ[x0, x0 + kDB) ← alpha · Oᵀ + Σ_{k in [i0, i1)} V[k][x] · Pᵀ[k] for row vectors
// [col, col + kRV · N), keys in ascending order.
template <size_t kDim, size_t kRV, size_t kDB>
HWY_INLINE void RowsPvBlock(const Task& t, size_t col, size_t x0, size_t i0, size_t i1, const VF* alpha, bool masked) {
  const DF df;
  const DI di;
  const size_t n = hn::Lanes(df);
  const size_t d_pad = PaddedHeadDim<kDim>(t);
  const size_t rpad = t.rpad;
  float* HWY_RESTRICT ot = t.o + x0 * rpad + col;
  const float* HWY_RESTRICT vt = t.vt + x0;
  const float* HWY_RESTRICT pt = t.s + col;
  VF acc[kRV][kDB];
  for (size_t j = 0; j < kRV; ++j) {
    for (size_t i = 0; i < kDB; ++i) acc[j][i] = hn::Mul(hn::LoadU(df, ot + i * rpad + j * n), alpha[j]);
  }
  if (!masked) {
    for (size_t k = i0; k < i1; ++k) {
      VF p[kRV];
      for (size_t j = 0; j < kRV; ++j) p[j] = hn::LoadU(df, pt + k * rpad + j * n);
      for (size_t i = 0; i < kDB; ++i) {
        const VF vv = hn::Set(df, vt[k * d_pad + i]);
        for (size_t j = 0; j < kRV; ++j) acc[j][i] = hn::MulAdd(vv, p[j], acc[j][i]);
      }
    }
  } else {
    // Same FMA for visible lanes (bitwise equal to the unmasked path); masked lanes keep their
    // accumulator, so 0 · Inf or 0 · NaN from a V they do not see never reaches them.
    VI lo[kRV], hi[kRV];
    for (size_t j = 0; j < kRV; ++j) {
      lo[j] = hn::LoadU(di, t.lo + col + j * n);
      hi[j] = hn::LoadU(di, t.hi + col + j * n);
    }
    for (size_t k = i0; k < i1; ++k) {
      VF p[kRV];
      hn::Mask<DF> vis[kRV];
      for (size_t j = 0; j < kRV; ++j) {
        p[j] = hn::LoadU(df, pt + k * rpad + j * n);
        vis[j] = Visible(df, di, k, lo[j], hi[j]);
      }
      for (size_t i = 0; i < kDB; ++i) {
        const VF vv = hn::Set(df, vt[k * d_pad + i]);
        for (size_t j = 0; j < kRV; ++j) {
          acc[j][i] = hn::IfThenElse(vis[j], hn::MulAdd(vv, p[j], acc[j][i]), acc[j][i]);
        }
      }
    }
  }
  for (size_t j = 0; j < kRV; ++j) {
    for (size_t i = 0; i < kDB; ++i) hn::StoreU(acc[j][i], df, ot + i * rpad + j * n);
  }
}

// One tile for row vectors [col, col + kRV · N): keys [i0, i1) of the tile are loaded, [b0, b1)
// is that range widened to whole key blocks (the extra keys are zero and never visible).
template <size_t kDim, size_t kRV>
inline void RowsTileStep(const Task& t, size_t col, size_t i0, size_t i1, size_t b0, size_t b1, bool masked) {
  const DF df;
  const size_t n = hn::Lanes(df);
  const size_t d = HeadDim<kDim>(t);
  RowsQk<kDim, kRV>(t, col, b0, b1, masked);
  VF alpha[kRV];
  for (size_t j = 0; j < kRV; ++j) alpha[j] = RowsSoftmax(t, col + j * n, b0, b1);
  size_t x = 0;
  for (; x + kDimBlock <= d; x += kDimBlock) {
    RowsPvBlock<kDim, kRV, kDimBlock>(t, col, x, i0, i1, alpha, masked);
  }
  for (; x + 4 <= d; x += 4) RowsPvBlock<kDim, kRV, 4>(t, col, x, i0, i1, alpha, masked);
  for (; x < d; ++x) RowsPvBlock<kDim, kRV, 1>(t, col, x, i0, i1, alpha, masked);
}

#else   // HWY_HAVE_SCALABLE
// Sizeless vectors (SVE): one row vector per block and named accumulators. Every lane goes
// through the same operations as in the array blocks above, so the per-row guarantees hold.

// Score of tile key k for the row vector at c: softcap, mask, store into Sᵀ.
HWY_INLINE void RowsStoreScore(const Task& t, size_t k, size_t c, VF sv, VI lo, VI hi, bool masked) {
  const DF df;
  const DI di;
  if (t.a->softcap > 0.0f) sv = Softcap(df, sv, hn::Set(df, t.a->softcap));
  if (masked) sv = hn::IfThenElse(Visible(df, di, k, lo, hi), sv, hn::Set(df, kNegInf));
  hn::StoreU(sv, df, t.s + k * t.rpad + c);
}

// Scores of tile keys [b0, b1) (whole blocks of kKeyBlock = 8 keys) for the row vector at col.
template <size_t kDim, size_t kRV>
HWY_INLINE void RowsQk(const Task& t, size_t col, size_t b0, size_t b1, bool masked) {
  static_assert(kRV == 1 && kKeyBlock == 8, "scalable blocks: 1 row vector x 8 keys");
  const DF df;
  const DI di;
  const size_t d = HeadDim<kDim>(t);
  const size_t d_pad = PaddedHeadDim<kDim>(t);
  const size_t rpad = t.rpad;
  const float* HWY_RESTRICT qt = t.q + col;
  const VI lo = hn::LoadU(di, t.lo + col);
  const VI hi = hn::LoadU(di, t.hi + col);
  for (size_t kb = b0; kb < b1; kb += kKeyBlock) {
    const float* HWY_RESTRICT kt = t.kt + kb * d_pad;
    VF a0 = hn::Zero(df), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
    for (size_t x = 0; x < d; ++x) {
      const VF qv = hn::LoadU(df, qt + x * rpad);
      const float* HWY_RESTRICT kx = kt + x;
      a0 = hn::MulAdd(hn::Set(df, kx[0 * d_pad]), qv, a0);
      a1 = hn::MulAdd(hn::Set(df, kx[1 * d_pad]), qv, a1);
      a2 = hn::MulAdd(hn::Set(df, kx[2 * d_pad]), qv, a2);
      a3 = hn::MulAdd(hn::Set(df, kx[3 * d_pad]), qv, a3);
      a4 = hn::MulAdd(hn::Set(df, kx[4 * d_pad]), qv, a4);
      a5 = hn::MulAdd(hn::Set(df, kx[5 * d_pad]), qv, a5);
      a6 = hn::MulAdd(hn::Set(df, kx[6 * d_pad]), qv, a6);
      a7 = hn::MulAdd(hn::Set(df, kx[7 * d_pad]), qv, a7);
    }
    RowsStoreScore(t, kb + 0, col, a0, lo, hi, masked);
    RowsStoreScore(t, kb + 1, col, a1, lo, hi, masked);
    RowsStoreScore(t, kb + 2, col, a2, lo, hi, masked);
    RowsStoreScore(t, kb + 3, col, a3, lo, hi, masked);
    RowsStoreScore(t, kb + 4, col, a4, lo, hi, masked);
    RowsStoreScore(t, kb + 5, col, a5, lo, hi, masked);
    RowsStoreScore(t, kb + 6, col, a6, lo, hi, masked);
    RowsStoreScore(t, kb + 7, col, a7, lo, hi, masked);
  }
}

// acc + v · p, or (kMasked) only in the lanes of vis: a masked lane keeps its accumulator.
template <bool kMasked>
HWY_INLINE VF PvFma(DF df, hn::Mask<DF> vis, float v, VF p, VF acc) {
  const VF r = hn::MulAdd(hn::Set(df, v), p, acc);
  return kMasked ? hn::IfThenElse(vis, r, acc) : r;
}

// Oᵀ[x0, x0 + kDB) ← alpha · Oᵀ + Σ_{k in [i0, i1)} V[k][x] · Pᵀ[k] for the row vector at col,
// keys in ascending order; kDB is 8, 4 or 1 (accumulators past kDB are dead code).
template <size_t kDim, size_t kDB, bool kMasked>
HWY_INLINE void RowsPvBlock(const Task& t, size_t col, size_t x0, size_t i0, size_t i1, VF alpha) {
  static_assert(kDB == 8 || kDB == 4 || kDB == 1, "kDB is 8, 4 or 1");
  const DF df;
  const DI di;
  const size_t d_pad = PaddedHeadDim<kDim>(t);
  const size_t rpad = t.rpad;
  float* HWY_RESTRICT ot = t.o + x0 * rpad + col;
  const float* HWY_RESTRICT vt = t.vt + x0;
  const float* HWY_RESTRICT pt = t.s + col;
  const VI lo = hn::LoadU(di, t.lo + col);
  const VI hi = hn::LoadU(di, t.hi + col);
  VF a0 = hn::Mul(hn::LoadU(df, ot), alpha), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
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
  const hn::Mask<DF> all = hn::FirstN(df, hn::Lanes(df));  // unused when !kMasked
  for (size_t k = i0; k < i1; ++k) {
    const VF p = hn::LoadU(df, pt + k * rpad);
    const hn::Mask<DF> vis = kMasked ? Visible(df, di, k, lo, hi) : all;
    const float* HWY_RESTRICT vk = vt + k * d_pad;
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

template <size_t kDim, bool kMasked>
inline void RowsPv(const Task& t, size_t col, size_t i0, size_t i1, VF alpha) {
  const size_t d = HeadDim<kDim>(t);
  size_t x = 0;
  for (; x + kDimBlock <= d; x += kDimBlock) RowsPvBlock<kDim, kDimBlock, kMasked>(t, col, x, i0, i1, alpha);
  for (; x + 4 <= d; x += 4) RowsPvBlock<kDim, 4, kMasked>(t, col, x, i0, i1, alpha);
  for (; x < d; ++x) RowsPvBlock<kDim, 1, kMasked>(t, col, x, i0, i1, alpha);
}

// One tile for the row vector at col (see the array form above).
template <size_t kDim, size_t kRV>
inline void RowsTileStep(const Task& t, size_t col, size_t i0, size_t i1, size_t b0, size_t b1, bool masked) {
  static_assert(kRV == 1, "scalable blocks: 1 row vector");
  RowsQk<kDim, 1>(t, col, b0, b1, masked);
  const VF alpha = RowsSoftmax(t, col, b0, b1);
  if (masked) {
    RowsPv<kDim, true>(t, col, i0, i1, alpha);
  } else {
    RowsPv<kDim, false>(t, col, i0, i1, alpha);
  }
}
#endif  // HWY_HAVE_SCALABLE

}  // namespace attn

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace simd
}  // namespace headway
HWY_AFTER_NAMESPACE();

#endif  // HEADWAY_SIMD_ATTENTION_PREFILL_BLOCKS_INL_H_
