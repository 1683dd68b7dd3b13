// Attention kernels, per Highway target: online softmax over K/V tiles of kKvTile keys (flash
// attention), never a T_q × T_kv score matrix. A task is one kv head × up to kQueryRows query rows
// (tokens × all query heads of the group): each K/V tile is read once per task and serves every
// query head of the group. Two tilings (attention_tiling.h chooses):
//
//  prefill: lanes run along query rows. The K/V tile is widened to f32 into scratch once per task
//    (it then serves every row); f32 K/V already in that layout (the KV cache's, head_dim a
//    multiple of 16) is read in place. Qᵀ [D][rows], scores Sᵀ [keys][rows] and Oᵀ [D][rows]
//    live in scratch, so Q·Kᵀ is broadcast(K[k][d]) × Qᵀ[d] and P·V is broadcast(V[k][d]) ×
//    Pᵀ[k]: no horizontal reductions, and the softmax (max, exp, sum, rescale) is elementwise
//    over rows.
//    Register blocks: 2 row vectors × 8 keys (Q·Kᵀ) or 2 row vectors × 8 dims (P·V) = 16
//    independent accumulators where there are 32 vector registers (AVX-512: 2 FMA pipes × 4
//    cycles latency need >= 8 chains), 1 × 8 where there are 16.
//  decode: at most kAttentionDecodeMaxRows rows; lanes run along head_dim. K and V are widened
//    in registers straight from the cache (a scratch copy costs more store traffic than the few
//    rows save), prefetched half a tile ahead. Scores are dot products: 4 rows × 4 keys of
//    accumulators share their K and Q loads, and a transposing add tree reduces 4 at a time;
//    P·V runs 4 rows × 4 vectors of head_dim per V load; the rows left over (a group of 3) form
//    one block of 2 or 3. A single row (MHA) takes 8 keys or 8 vectors per block instead, so it
//    still has 8 independent FMA chains.
//
// SVE and SVE2 (HWY_HAVE_SCALABLE) have sizeless vector types, which cannot form the arrays the
// blocks above are written with: there the blocks are named accumulators, 1 row vector × 8 keys
// or 8 dims (prefill; 512-bit A64FX: 2 FMA pipes × 9 cycles would like more chains, but 8 keep
// the code one block shape) and 1 row × 4 keys or 4 vectors (decode; scores reduce with
// SumOfLanes, the same for every block). Everything else (scratch, softmax, masking, drivers) is
// shared. Lanes(DF) stays a power of two up to 16 there (Highway counts SVE lanes SV_POW2).
//
// Specialized at compile time for head_dim 64 and 128 (kDim); kDim = 0 is the runtime-head_dim
// code for every head_dim 1..512. No allocation: everything lives in the caller's scratch (layout
// in attention_tiling.h), in vector registers, or on ~1.6 KiB of stack (decode: the K and V row
// pointers of one tile and the K row pointers of the next).
//
// Masking and non-finite values: a key outside a row's visible range gets logit −inf and
// contributes nothing, not even 0 · V (so a NaN or Inf in V reaches only the rows that see it).
// Every softmax weight (and rescale factor) is ExpNonPositive of a non-positive difference, which
// keeps NaN; Highway 1.0.3's Tanh(NaN) is not NaN and is patched: a NaN logit makes its row NaN,
// as IEEE arithmetic would. While a row has seen only masked keys its running max is −inf and
// exp is taken relative to 0, never −inf − −inf.

#if defined(HEADWAY_SIMD_ATTENTION_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef HEADWAY_SIMD_ATTENTION_INL_H_
#undef HEADWAY_SIMD_ATTENTION_INL_H_
#else
#define HEADWAY_SIMD_ATTENTION_INL_H_
#endif

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>

#include "hwy/cache_control.h"
#include "hwy/contrib/math/math-inl.h"
#include "hwy/highway.h"
#include "simd/attention.h"
#include "simd/attention_tiling.h"
#include "simd/kv_load-inl.h"

HWY_BEFORE_NAMESPACE();
namespace headway {
namespace simd {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

namespace attn {

// Vectors are capped at 16 f32 lanes: the scratch layout pads rows and head_dim to 16.
using DF = hn::CappedTag<float, detail::kMaxLanes>;
using DI = hn::RebindToSigned<DF>;
using VF = hn::Vec<DF>;
using VI = hn::Vec<DI>;

#if HWY_HAVE_SCALABLE
constexpr size_t kRowVecs = 1;  // SVE: sizeless vectors, blocks of named accumulators (below)
constexpr size_t kDotRows = 1;
constexpr size_t kDotKeys1 = 4;
constexpr size_t kPvVecs1 = 4;
#elif (HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3) || HWY_ARCH_ARM_A64
constexpr size_t kRowVecs = 2;  // prefill: row vectors per register block (32 registers)
constexpr size_t kDotRows = 4;  // decode: query rows per register block
// Decode blocks of a single row (MHA: one row per kv head): 8 keys (Q·Kᵀ) or 8 vectors of
// head_dim (P·V) keep 8 independent FMA chains (2 pipes × 4 cycles latency) where 4 would
// leave the FMA pipes half idle.
constexpr size_t kDotKeys1 = 8;
constexpr size_t kPvVecs1 = 8;
#else
constexpr size_t kRowVecs = 1;  // 16 registers: 8 accumulators + operands
constexpr size_t kDotRows = 2;
constexpr size_t kDotKeys1 = 4;
constexpr size_t kPvVecs1 = 4;
#endif
constexpr size_t kKeyBlock = 8;  // prefill Q·Kᵀ: keys per register block
constexpr size_t kDimBlock = 8;  // prefill P·V: head dims per register block
constexpr size_t kDotKeys = 4;   // decode Q·Kᵀ: keys per register block
constexpr size_t kTile = detail::kKvTile;

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// exp(x) for x <= 0 (a score minus its row's running maximum, or an old maximum minus the new):
// −inf gives 0, NaN stays NaN. Within 2 ulp of exp(x) where exp(x) >= 2^-125 (x >= −86.5), 0
// below (a weight under 1e-37 beside the maximum's 1). About half the instructions of hn::Exp,
// which takes every input (and returns 0 for NaN in Highway 1.0.3): the softmax of both tilings
// spends most of its time here.
HWY_INLINE VF ExpNonPositive(DF df, VF x) {
  const DI di;
  const VF n = hn::Round(hn::Mul(x, hn::Set(df, 1.44269504088896341f)));  // x / ln 2
  // r = x − n · ln 2 in [−ln 2 / 2, ln 2 / 2], ln 2 in two parts (n · hi is exact).
  VF r = hn::NegMulAdd(n, hn::Set(df, 0.693359375f), x);
  r = hn::NegMulAdd(n, hn::Set(df, -2.12194440e-4f), r);
  // exp(r): Taylor series to r^7 (truncation below 1e-8 relative on that interval).
  VF p = hn::Set(df, 1.0f / 5040.0f);
  p = hn::MulAdd(p, r, hn::Set(df, 1.0f / 720.0f));
  p = hn::MulAdd(p, r, hn::Set(df, 1.0f / 120.0f));
  p = hn::MulAdd(p, r, hn::Set(df, 1.0f / 24.0f));
  p = hn::MulAdd(p, r, hn::Set(df, 1.0f / 6.0f));
  p = hn::MulAdd(p, r, hn::Set(df, 0.5f));
  p = hn::MulAdd(p, r, hn::Set(df, 1.0f));
  p = hn::MulAdd(p, r, hn::Set(df, 1.0f));
  // p · 2^n by adding n to the exponent field: p is in [0.70, 1.42] and n >= −125 where the
  // result is kept, so it stays a normal number.
  const VI e = hn::ShiftLeft<23>(hn::ConvertTo(di, n));
  const VF y = hn::BitCast(df, hn::Add(hn::BitCast(di, p), e));
  const VF z = hn::IfThenZeroElse(hn::Lt(x, hn::Set(df, -86.5f)), y);
  return hn::IfThenElse(hn::IsNaN(x), x, z);
}

// cap · tanh(x) (x is already logit / cap); NaN stays NaN.
HWY_INLINE VF Softcap(DF df, VF x, VF cap) {
  const VF t = hn::Tanh(df, x);
  return hn::Mul(hn::IfThenElse(hn::IsNaN(x), x, t), cap);
}

// lo <= k <= hi, lanewise.
HWY_INLINE hn::Mask<DF> Visible(DF df, DI di, size_t k, VI lo, VI hi) {
  const VI kk = hn::Set(di, static_cast<int32_t>(k));
  return hn::RebindMask(df, hn::Not(hn::Or(hn::Gt(lo, kk), hn::Gt(kk, hi))));
}

// One task: kv head g, query tokens [t0, t0 + nt), keys restricted to [key_begin, key_end).
// Row r is token t0 + r / group, query head g · group + r % group.
struct Task {
  const AttentionArgs* a = nullptr;
  uint32_t g = 0;
  uint32_t group = 0;
  uint32_t t0 = 0;
  uint32_t nt = 0;
  size_t rows = 0;
  size_t rpad = 0;  // prefill: rows rounded up to whole vectors
  int64_t key_begin = 0;
  int64_t key_end = 0;
  size_t d = 0;
  size_t d_pad = 0;
  float q_scale = 0.0f;  // scale, or scale / softcap: Q is pre-multiplied
  // Scratch regions (attention_tiling.h).
  float* q = nullptr;
  float* o = nullptr;
  float* m = nullptr;
  float* l = nullptr;
  int32_t* lo = nullptr;  // per tile; prefill: inclusive [lo, hi]; decode: [lo, hi)
  int32_t* hi = nullptr;
  int64_t* klo = nullptr;  // absolute, inclusive; klo > khi when empty
  int64_t* khi = nullptr;
  float* s = nullptr;
  float* k = nullptr;
  float* v = nullptr;
  // Prefill: key i of the current tile at kt + i · d_pad, vt likewise: the widened copies k and v,
  // or the cache rows themselves where they are f32 and already in that layout (RowsRun).
  const float* kt = nullptr;
  const float* vt = nullptr;
  // Keys any row sees, and keys every row sees.
  int64_t union_lo = 0, union_hi = -1;
  int64_t common_lo = 0, common_hi = -1;
};

HWY_INLINE const float* QueryRow(const Task& t, size_t r) {
  const AttentionArgs& a = *t.a;
  const size_t token = t.t0 + r / t.group;
  const size_t head = size_t{t.g} * t.group + r % t.group;
  return a.q + token * a.q_token_stride + head * a.head_dim;
}

// Carves the scratch, computes each row's visible keys and resets m, l, O.
inline void SetupTask(Task& t, const AttentionArgs& a, void* scratch, uint32_t g, uint32_t t0, uint32_t nt,
                      int64_t key_begin, int64_t key_end, bool decode) {
  const DF df;
  const size_t n = hn::Lanes(df);
  const uint32_t group = a.n_heads / a.n_kv_heads;
  const detail::ScratchLayout layout = detail::MakeScratchLayout(a.head_dim, group);
  char* base = static_cast<char*>(scratch);
  t.a = &a;
  t.g = g;
  t.group = group;
  t.t0 = t0;
  t.nt = nt;
  t.rows = size_t{nt} * group;
  t.rpad = decode ? t.rows : (t.rows + n - 1) / n * n;
  t.key_begin = key_begin;
  t.key_end = key_end;
  t.d = a.head_dim;
  t.d_pad = layout.d_pad;
  t.q_scale = a.softcap > 0.0f ? a.scale / a.softcap : a.scale;
  t.q = reinterpret_cast<float*>(base + layout.q);
  t.o = reinterpret_cast<float*>(base + layout.o);
  t.m = reinterpret_cast<float*>(base + layout.m);
  t.l = reinterpret_cast<float*>(base + layout.l);
  t.lo = reinterpret_cast<int32_t*>(base + layout.lo);
  t.hi = reinterpret_cast<int32_t*>(base + layout.hi);
  t.klo = reinterpret_cast<int64_t*>(base + layout.klo);
  t.khi = reinterpret_cast<int64_t*>(base + layout.khi);
  t.s = reinterpret_cast<float*>(base + layout.s);
  t.k = reinterpret_cast<float*>(base + layout.k);
  t.v = reinterpret_cast<float*>(base + layout.v);

  t.union_lo = std::numeric_limits<int64_t>::max();
  t.union_hi = -1;
  t.common_lo = 0;
  t.common_hi = std::numeric_limits<int64_t>::max();
  for (size_t r = 0; r < t.rpad; ++r) {
    int64_t lo = 1, hi = 0;  // padding rows see nothing
    if (r < t.rows) {
      const detail::KeyRange kr = detail::VisibleKeys(a, t0 + static_cast<uint32_t>(r / group));
      lo = kr.lo > key_begin ? kr.lo : key_begin;
      hi = kr.hi < key_end - 1 ? kr.hi : key_end - 1;
      if (lo <= hi) {
        if (lo < t.union_lo) t.union_lo = lo;
        if (hi > t.union_hi) t.union_hi = hi;
      }
      if (lo > t.common_lo) t.common_lo = lo;
      if (hi < t.common_hi) t.common_hi = hi;
    }
    t.klo[r] = lo;
    t.khi[r] = hi;
    t.m[r] = kNegInf;
    t.l[r] = 0.0f;
  }
  std::memset(t.o, 0, t.rpad * t.d_pad * sizeof(float));
}

// ---------------------------------------------------------------------------------------------
// Prefill tiling: lanes along query rows.

template <size_t kDim>
inline void RowsLoadQ(const Task& t) {
  const size_t d = kDim ? kDim : t.d;
  for (size_t r = 0; r < t.rpad; ++r) {
    if (r < t.rows) {
      const float* q = QueryRow(t, r);
      for (size_t i = 0; i < d; ++i) t.q[i * t.rpad + r] = q[i] * t.q_scale;
    } else {
      for (size_t i = 0; i < d; ++i) t.q[i * t.rpad + r] = 0.0f;
    }
  }
}

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
  const size_t d = kDim ? kDim : t.d;
  const size_t d_pad = kDim ? detail::RoundUp(kDim, detail::kMaxLanes) : t.d_pad;
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
HWY_INLINE void RowsPvBlock(const Task& t, size_t col, size_t x0, size_t i0, size_t i1, const VF* alpha,
                            bool masked) {
  const DF df;
  const DI di;
  const size_t n = hn::Lanes(df);
  const size_t d_pad = kDim ? detail::RoundUp(kDim, detail::kMaxLanes) : t.d_pad;
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
  const size_t d = kDim ? kDim : t.d;
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

#else  // HWY_HAVE_SCALABLE
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
  const size_t d = kDim ? kDim : t.d;
  const size_t d_pad = kDim ? detail::RoundUp(kDim, detail::kMaxLanes) : t.d_pad;
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
  const size_t d_pad = kDim ? detail::RoundUp(kDim, detail::kMaxLanes) : t.d_pad;
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
  const size_t d = kDim ? kDim : t.d;
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

// Each row's keys of the loaded keys [k0, k1] of the tile at tb, tile-relative and inclusive;
// [kTile + 1, -1] when none.
inline void RowsTileRanges(const Task& t, int64_t tb, int64_t k0, int64_t k1) {
  for (size_t r = 0; r < t.rpad; ++r) {
    const int64_t lo = t.klo[r] > k0 ? t.klo[r] : k0;
    const int64_t hi = t.khi[r] < k1 ? t.khi[r] : k1;
    t.lo[r] = lo <= hi ? static_cast<int32_t>(lo - tb) : static_cast<int32_t>(kTile) + 1;
    t.hi[r] = lo <= hi ? static_cast<int32_t>(hi - tb) : -1;
  }
}

// Whether keys [tb, tb + n) lie in K/V as a widened tile holds them: f32 rows d_pad apart, not
// wrapping in a ring. Prefill then reads the tile in place: no copy, and half the bytes through
// L1 (f32 prefill ran 10-14% faster on x86-64 AVX-512).
inline bool TileInPlace(const AttentionArgs& a, int64_t tb, size_t n, size_t d_pad) {
  return a.kv_type == KvType::kF32 && a.kv_row_stride == d_pad && KvRowsConsecutive(a, static_cast<uint64_t>(tb), n);
}

template <size_t kDim>
inline void RowsRun(Task& t) {
  const DF df;
  const size_t n = hn::Lanes(df);
  const size_t d = kDim ? kDim : t.d;
  const size_t d_pad = kDim ? detail::RoundUp(kDim, detail::kMaxLanes) : t.d_pad;
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

// Oᵀ[x][r] of row r.
HWY_INLINE float RowsOut(const Task& t, size_t r, size_t x) { return t.o[x * t.rpad + r]; }

// ---------------------------------------------------------------------------------------------
// Decode tiling: lanes along head_dim. K and V are widened straight from the cache into
// registers (each element serves at most a few rows here, so a scratch copy would cost more
// store traffic than it saves); a register block of rows shares every K and V load.

// rows[i] = the row of key `key + i` of kv head g in K or V (base = a.k or a.v), i < n. One
// division for the run (ring caches); a run wraps at most once (n <= t_kv <= ring rows), so it
// is two linear runs of addresses: no test per key, and the loops vectorize.
HWY_INLINE void KvRows(const AttentionArgs& a, const void* base, uint32_t g, uint64_t key, size_t n,
                       const char** HWY_RESTRICT rows) {
  const size_t eb = KvElementBytes(a.kv_type);
  const size_t stride = a.kv_row_stride * eb;
  const char* head = static_cast<const char*>(base) + size_t{g} * a.kv_head_stride * eb;
  const uint64_t row = KvRow(a, key);
  size_t n1 = n;
  if (a.kv_ring_rows != 0) {
    const size_t left = static_cast<size_t>(a.kv_ring_rows - row);
    if (left < n1) n1 = left;
  }
  const char* p = head + static_cast<size_t>(row) * stride;
  for (size_t i = 0; i < n1; ++i) rows[i] = p + i * stride;
  for (size_t i = n1; i < n; ++i) rows[i] = head + (i - n1) * stride;
}

// N elements [x, x + N) of a K/V row, widened to f32.
template <KvType kType>
HWY_INLINE VF KvVec(DF df, const char* row, size_t x) {
  if constexpr (kType == KvType::kF32) return hn::LoadU(df, reinterpret_cast<const float*>(row) + x);
  if constexpr (kType == KvType::kF16) return WidenF16(df, reinterpret_cast<const uint16_t*>(row) + x);
  return WidenBF16(df, reinterpret_cast<const uint16_t*>(row) + x);
}

// Elements [x, d) of a K/V row (fewer than N), zeros after: never reads past the row.
template <KvType kType>
HWY_INLINE VF KvTail(DF df, const char* row, size_t x, size_t d) {
  HWY_ALIGN float tmp[detail::kMaxLanes] = {};
  for (size_t i = x; i < d; ++i) {
    if constexpr (kType == KvType::kF32) {
      tmp[i - x] = reinterpret_cast<const float*>(row)[i];
    } else {
      uint16_t h;
      std::memcpy(&h, row + 2 * i, 2);
      tmp[i - x] = kType == KvType::kF16 ? KvF16ToF32(h) : KvBF16ToF32(h);
    }
  }
  return hn::Load(df, tmp);
}

// Prefetch of one K/V cache line that is read once, half a tile from now. Non-temporal (x86
// PREFETCHNTA, ARM PLDL1STRM): on x86-64 AVX-512 (f16, head_dim 128, T_kv 32768, 1 thread) it
// ran ~12% faster than a T0 prefetch.
HWY_INLINE void KvPrefetch(const char* p) {
#if HWY_COMPILER_GCC  // GCC and Clang
  __builtin_prefetch(p, 0, 0);
#else
  hwy::Prefetch(p);
#endif
}

// The rows of a K/V head from some key on, back to back (kStride bytes apart: head_dim 64 or 128
// in the cache layout) and not wrapping in a ring: row i at p + i · kStride. The decode loops
// index these like KvRows' arrays (and shift them by +); a block's rows are then one register
// plus constant offsets, where four row pointers left the Q·Kᵀ loop short of registers on x86.
template <size_t kStride>
struct StridedRows {
  const char* p = nullptr;
  HWY_INLINE const char* operator[](size_t i) const { return p + i * kStride; }
  HWY_INLINE StridedRows operator+(size_t i) const { return StridedRows{p + i * kStride}; }
};

// Prefetch policies of the decode loops, which say at each step which part of a tile they have
// reached: Q·Kᵀ at element x of the rows of keys [k0, k0 + kKB) (Qk), P·V at elements
// [x, x + count) of the row of key k (Pv); eb is the K/V element size.
struct NoPrefetch {
  HWY_INLINE void Qk(size_t, size_t, size_t, size_t, size_t) const {}
  HWY_INLINE void Pv(size_t, size_t, size_t, size_t) const {}
};

// The P·V loops prefetch the next tile's K rows as they go: the same part of rows[k] as they read
// of key k's V row (none past n).
template <class Rows>
struct RowPrefetch {
  Rows rows{};
  size_t n = 0;
  HWY_INLINE void Pv(size_t k, size_t x, size_t count, size_t eb) const {
    if (k >= n) return;
    const char* p = rows[k] + x * eb;
    for (size_t off = 0; off < count * eb; off += 64) KvPrefetch(p + off);
  }
};

// A whole tile of rows of kRowBytes back to back, bytes [0, n) from p (this tile's V rows, or the
// next tile's K rows), prefetched in address order at an even pace through a loop over the tile:
// each step asks for the lines that start in its share of the bytes. Q·Kᵀ steps over kKB-key
// blocks: the block at k0 has bytes [k0, k0 + kKB) · kRowBytes, x elements into each of its rows
// is x · kKB · eb into that. P·V passes over every key for elements [x, x + count): the pass has
// bytes [x, x + count) · eb · kTile, key k the k-th count · eb of them.
template <size_t kRowBytes>
struct TilePrefetch {
  const char* p = nullptr;
  size_t n = 0;
  HWY_INLINE void Lines(size_t b0, size_t b1) const {
    for (size_t off = (b0 + 63) / 64 * 64; off < b1 && off < n; off += 64) KvPrefetch(p + off);
  }
  HWY_INLINE void Qk(size_t k0, size_t kKB, size_t x, size_t count, size_t eb) const {
    const size_t b = k0 * kRowBytes + x * kKB * eb;
    Lines(b, b + count * kKB * eb);
  }
  HWY_INLINE void Pv(size_t k, size_t x, size_t count, size_t eb) const {
    const size_t b = x * eb * kTile + k * count * eb;
    Lines(b, b + count * eb);
  }
};

#if HWY_TARGET != HWY_SCALAR && !HWY_HAVE_SCALABLE
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

template <size_t kDim>
inline void DotLoadQ(const Task& t) {
  const size_t d = kDim ? kDim : t.d;
  const size_t d_pad = kDim ? detail::RoundUp(kDim, detail::kMaxLanes) : t.d_pad;
  for (size_t r = 0; r < t.rows; ++r) {
    const float* q = QueryRow(t, r);
    float* dst = t.q + r * d_pad;
    for (size_t i = 0; i < d; ++i) dst[i] = q[i] * t.q_scale;
    for (size_t i = d; i < d_pad; ++i) dst[i] = 0.0f;
  }
}

#if !HWY_HAVE_SCALABLE
// One step of DotQk over elements [x, x + N) (kTail: [x, d)).
template <KvType kType, size_t kRB, size_t kKB, bool kTail, class Rows>
HWY_INLINE void DotQkStep(DF df, const float* HWY_RESTRICT q, size_t d_pad, Rows krow, size_t x,
                          size_t d, VF (&acc)[kRB][kKB]) {
  VF kv[kKB];
  for (size_t i = 0; i < kKB; ++i)
    kv[i] = kTail ? KvTail<kType>(df, krow[i], x, d) : KvVec<kType>(df, krow[i], x);
  for (size_t r = 0; r < kRB; ++r) {
    const VF qv = hn::LoadU(df, q + r * d_pad + x);
    for (size_t i = 0; i < kKB; ++i) acc[r][i] = hn::MulAdd(qv, kv[i], acc[r][i]);
  }
}

// S[r][k] = Q[r] · K[k] for rows [r0, r0 + kRB) and tile keys [k0, k0 + kKB). Each score is the
// same sequence of operations whatever the block, so a row's scores do not depend on its
// neighbours.
template <size_t kDim, KvType kType, size_t kRB, size_t kKB, class Rows, class Pf = NoPrefetch>
HWY_INLINE void DotQk(const Task& t, Rows krow, size_t r0, size_t k0, const Pf& pf = Pf()) {
  const DF df;
  const size_t n = hn::Lanes(df);
  const size_t d = kDim ? kDim : t.d;
  const size_t d_pad = kDim ? detail::RoundUp(kDim, detail::kMaxLanes) : t.d_pad;
  constexpr size_t eb = KvElementBytes(kType);
  const float* HWY_RESTRICT q = t.q + r0 * d_pad;
  VF acc[kRB][kKB];
  for (size_t r = 0; r < kRB; ++r) {
    for (size_t i = 0; i < kKB; ++i) acc[r][i] = hn::Zero(df);
  }
  size_t x = 0;
  for (; x + n <= d; x += n) {
    pf.Qk(k0, kKB, x, n, eb);
    DotQkStep<kType, kRB, kKB, false>(df, q, d_pad, krow + k0, x, d, acc);
  }
  if (x < d) {
    pf.Qk(k0, kKB, x, d - x, eb);
    DotQkStep<kType, kRB, kKB, true>(df, q, d_pad, krow + k0, x, d, acc);
  }
  float* HWY_RESTRICT s = t.s + r0 * kTile + k0;
  if constexpr (kKB % 4 == 0) {
    for (size_t r = 0; r < kRB; ++r) {
      for (size_t i = 0; i < kKB; i += 4)
        StoreSums4(df, acc[r][i], acc[r][i + 1], acc[r][i + 2], acc[r][i + 3], s + r * kTile + i);
    }
  } else {
    for (size_t r = 0; r < kRB; ++r) {
      for (size_t i = 0; i < kKB; ++i) s[r * kTile + i] = SumLanes(df, acc[r][i]);
    }
  }
}

// O[r][x, x + kC · N) += Σ_{k in [a, b)} P[r][k] · V[k] for rows [r0, r0 + kRB), keys in
// ascending order (kTail: the last, partial vector of the row).
template <KvType kType, size_t kRB, size_t kC, bool kTail, class Rows, class Pf>
HWY_INLINE void DotPvStep(const Task& t, Rows vrow, size_t r0, size_t x, size_t d, size_t a, size_t b,
                          const Pf& pf) {
  const DF df;
  const size_t n = hn::Lanes(df);
  float* HWY_RESTRICT o = t.o + r0 * t.d_pad + x;
  const float* HWY_RESTRICT p = t.s + r0 * kTile;
  VF acc[kRB][kC];
  for (size_t r = 0; r < kRB; ++r) {
    for (size_t c = 0; c < kC; ++c) acc[r][c] = hn::LoadU(df, o + r * t.d_pad + c * n);
  }
  for (size_t k = a; k < b; ++k) {
    pf.Pv(k, x, kTail ? d - x : kC * n, KvElementBytes(kType));
    VF v[kC];
    for (size_t c = 0; c < kC; ++c)
      v[c] = kTail ? KvTail<kType>(df, vrow[k], x, d) : KvVec<kType>(df, vrow[k], x + c * n);
    for (size_t r = 0; r < kRB; ++r) {
      const VF pk = hn::Set(df, p[r * kTile + k]);
      for (size_t c = 0; c < kC; ++c) acc[r][c] = hn::MulAdd(pk, v[c], acc[r][c]);
    }
  }
  for (size_t r = 0; r < kRB; ++r) {
    for (size_t c = 0; c < kC; ++c) hn::StoreU(acc[r][c], df, o + r * t.d_pad + c * n);
  }
}

#else  // HWY_HAVE_SCALABLE
// Sizeless vectors (SVE): one row per block and named accumulators (kDotRows is 1).

// Elements [x, x + N) (kTail: [x, d), zeros after) of a K/V row.
template <KvType kType, bool kTail>
HWY_INLINE VF KvLoad(DF df, const char* row, size_t x, size_t d) {
  return kTail ? KvTail<kType>(df, row, x, d) : KvVec<kType>(df, row, x);
}

// One step of DotQk over elements [x, x + N) (kTail: [x, d)) for kKB (1 or 4) keys.
template <KvType kType, size_t kKB, bool kTail, class Rows>
HWY_INLINE void DotQkStep(DF df, const float* HWY_RESTRICT q, Rows krow, size_t x, size_t d,
                          VF& a0, VF& a1, VF& a2, VF& a3) {
  const VF qv = hn::LoadU(df, q + x);
  a0 = hn::MulAdd(qv, KvLoad<kType, kTail>(df, krow[0], x, d), a0);
  if constexpr (kKB == 4) {
    a1 = hn::MulAdd(qv, KvLoad<kType, kTail>(df, krow[1], x, d), a1);
    a2 = hn::MulAdd(qv, KvLoad<kType, kTail>(df, krow[2], x, d), a2);
    a3 = hn::MulAdd(qv, KvLoad<kType, kTail>(df, krow[3], x, d), a3);
  }
}

// S[r0][k] = Q[r0] · K[k] for tile keys [k0, k0 + kKB), kKB 1 or 4. Each score is the same
// sequence of operations whatever the block.
template <size_t kDim, KvType kType, size_t kRB, size_t kKB, class Rows, class Pf = NoPrefetch>
HWY_INLINE void DotQk(const Task& t, Rows krow, size_t r0, size_t k0, const Pf& pf = Pf()) {
  static_assert(kRB == 1 && (kKB == 1 || kKB == 4), "scalable blocks: 1 row x 1 or 4 keys");
  constexpr size_t eb = KvElementBytes(kType);
  const DF df;
  const size_t n = hn::Lanes(df);
  const size_t d = kDim ? kDim : t.d;
  const size_t d_pad = kDim ? detail::RoundUp(kDim, detail::kMaxLanes) : t.d_pad;
  const float* HWY_RESTRICT q = t.q + r0 * d_pad;
  const Rows kr = krow + k0;
  VF a0 = hn::Zero(df), a1 = a0, a2 = a0, a3 = a0;
  size_t x = 0;
  for (; x + n <= d; x += n) {
    pf.Qk(k0, kKB, x, n, eb);
    DotQkStep<kType, kKB, false>(df, q, kr, x, d, a0, a1, a2, a3);
  }
  if (x < d) {
    pf.Qk(k0, kKB, x, d - x, eb);
    DotQkStep<kType, kKB, true>(df, q, kr, x, d, a0, a1, a2, a3);
  }
  float* HWY_RESTRICT s = t.s + r0 * kTile + k0;
  s[0] = SumLanes(df, a0);
  if constexpr (kKB == 4) {
    s[1] = SumLanes(df, a1);
    s[2] = SumLanes(df, a2);
    s[3] = SumLanes(df, a3);
  }
}

// O[r0][x, x + kC · N) += Σ_{k in [a, b)} P[r0][k] · V[k], keys in ascending order; kC 1 or 4
// (kTail: the last, partial vector of the row).
template <KvType kType, size_t kRB, size_t kC, bool kTail, class Rows, class Pf>
HWY_INLINE void DotPvStep(const Task& t, Rows vrow, size_t r0, size_t x, size_t d, size_t a, size_t b,
                          const Pf& pf) {
  static_assert(kRB == 1 && (kC == 1 || kC == 4), "scalable blocks: 1 row x 1 or 4 vectors");
  const DF df;
  const size_t n = hn::Lanes(df);
  float* HWY_RESTRICT o = t.o + r0 * t.d_pad + x;
  const float* HWY_RESTRICT p = t.s + r0 * kTile;
  VF a0 = hn::LoadU(df, o), a1 = a0, a2 = a0, a3 = a0;
  if constexpr (kC == 4) {
    a1 = hn::LoadU(df, o + 1 * n);
    a2 = hn::LoadU(df, o + 2 * n);
    a3 = hn::LoadU(df, o + 3 * n);
  }
  for (size_t k = a; k < b; ++k) {
    pf.Pv(k, x, kTail ? d - x : kC * n, KvElementBytes(kType));
    const VF pk = hn::Set(df, p[k]);
    a0 = hn::MulAdd(pk, KvLoad<kType, kTail>(df, vrow[k], x, d), a0);
    if constexpr (kC == 4) {
      a1 = hn::MulAdd(pk, KvVec<kType>(df, vrow[k], x + 1 * n), a1);
      a2 = hn::MulAdd(pk, KvVec<kType>(df, vrow[k], x + 2 * n), a2);
      a3 = hn::MulAdd(pk, KvVec<kType>(df, vrow[k], x + 3 * n), a3);
    }
  }
  hn::StoreU(a0, df, o);
  if constexpr (kC == 4) {
    hn::StoreU(a1, df, o + 1 * n);
    hn::StoreU(a2, df, o + 2 * n);
    hn::StoreU(a3, df, o + 3 * n);
  }
}
#endif  // HWY_HAVE_SCALABLE

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
  const size_t d = kDim ? kDim : t.d;
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
  float* HWY_RESTRICT s = t.s + r * kTile;
  const VI lo = hn::Set(di, static_cast<int32_t>(a));
  const VI hi = hn::Set(di, static_cast<int32_t>(b) - 1);
  // Whole vectors around [a, b), at fixed places in the tile (kTile is a multiple of 16).
  const size_t v0 = a / n * n, v1 = (b + n - 1) / n * n;
  VF mt = neg_inf;
  if (!softcap && v0 == a && v1 == b) {
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
    for (size_t k = v0; k < v1; k += n) {
      // Keys outside [a, b) were never computed: replace them, never read them into the result.
      const VI kk = hn::Iota(di, static_cast<int32_t>(k));
      const auto vis = hn::RebindMask(df, hn::Not(hn::Or(hn::Gt(lo, kk), hn::Gt(kk, hi))));
      VF sv = hn::IfThenElse(vis, hn::LoadU(df, s + k), neg_inf);
      if (softcap) sv = hn::IfThenElse(vis, Softcap(df, sv, cap), neg_inf);
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

// Rows r with r[i] the K/V row of key `key + i`, i in [i0, i0 + n). kStride > 0: the keys lie
// back to back (StridedRows from `key`, see KeysBackToBack); 0: KvRows fills rows[i0, i0 + n),
// which is returned.
template <size_t kStride>
HWY_INLINE auto TileRows(const AttentionArgs& a, const void* base, uint32_t g, uint64_t key, size_t i0, size_t n,
                         const char** rows) {
  if constexpr (kStride != 0) {
    (void)i0;
    (void)n;
    (void)rows;
    return StridedRows<kStride>{KvRowAt(a, base, g, key)};  // kStride = the rows' own stride here
  } else {
    KvRows(a, base, g, key + i0, n, rows + i0);
    return static_cast<const char* const*>(rows);
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
// long decode. The blocks of DotRunTyped's general loop (the same operations, so the same bits)
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

// kStride: the bytes of one K/V row, which lie back to back (KeysBackToBack), or 0: rows found by
// KvRows (any layout, any ring).
template <size_t kDim, KvType kType, size_t kStride>
inline void DotRunTyped(Task& t) {
  const AttentionArgs& a = *t.a;
  const char* krow_a[kStride != 0 ? 1 : kTile];
  const char* vrow_a[kStride != 0 ? 1 : kTile];
  const char* pf_k_a[kStride != 0 ? 1 : kTile];
  // Bytes of one K/V row: a constant for the specialized head_dims, so the prefetch loop unrolls.
  const size_t row_bytes = (kDim ? kDim : t.d) * KvElementBytes(kType);
  const int64_t first_tile = t.union_lo / int64_t{kTile} * int64_t{kTile};
  {
    // No earlier tile prefetched the first tile's K: ask for all of it at once, so its misses
    // overlap one another instead of coming one demand load at a time.
    const int64_t k1 = first_tile + int64_t{kTile} - 1 < t.union_hi ? first_tile + int64_t{kTile} - 1 : t.union_hi;
    const size_t n0 = static_cast<size_t>(k1 - t.union_lo) + 1;
    const auto pf_k = TileRows<kStride>(a, a.k, t.g, static_cast<uint64_t>(t.union_lo), 0, n0, pf_k_a);
    for (size_t i = 0; i < n0; ++i) {
      for (size_t off = 0; off < row_bytes; off += 64) KvPrefetch(pf_k[i] + off);
    }
  }
  for (int64_t tb = first_tile; tb <= t.union_hi; tb += kTile) {
    const int64_t k0 = tb > t.union_lo ? tb : t.union_lo;
    const int64_t k1 = tb + int64_t{kTile} - 1 < t.union_hi ? tb + int64_t{kTile} - 1 : t.union_hi;
    // A key keeps its place in the tile (key − tb) whatever part of the tile is loaded, so a
    // row's vectors of scores do not depend on the other rows of the task.
    const size_t i0 = static_cast<size_t>(k0 - tb), i1 = static_cast<size_t>(k1 - tb) + 1;
    // krow[i], vrow[i]: the rows of key tb + i, i in [i0, i1).
    const auto krow = TileRows<kStride>(a, a.k, t.g, static_cast<uint64_t>(tb), i0, i1 - i0, krow_a);
    const auto vrow = TileRows<kStride>(a, a.v, t.g, static_cast<uint64_t>(tb), i0, i1 - i0, vrow_a);
    // Decode streams the cache once (without these prefetches it ran at ~60% of the speed: f16,
    // head_dim 128, T_kv 8192). Each phase prefetches what the other phase reads next, half a
    // tile ahead: this tile's V rows a few rows at a time between the Q·Kᵀ blocks below, the
    // next tile's K rows a part at a time inside the P·V loops. Spread out, the misses overlap
    // the arithmetic (a burst fills the miss queue and stalls); prefetching a whole tile ahead
    // (K and V of the next tile) ran 15-30% slower at T_kv 32768 (likely: twice the lines in
    // flight, more than L1 holds).
    // The next tile's K may lie past this task's keys, up to the last key: with the keys split
    // into chunks (attention_partial_f32), those start the next chunk, which the same thread most
    // likely runs next. It then starts with its first tile on the way instead of waiting for it.
    const int64_t pf0 = tb + int64_t{kTile};
    const int64_t pf_last = int64_t{a.t_kv} - 1;
    const size_t n_pf = pf0 > pf_last                          ? 0
                        : pf_last - pf0 < int64_t{kTile} ? static_cast<size_t>(pf_last - pf0) + 1
                                                         : kTile;
    const auto pf_k = TileRows<kStride>(a, a.k, t.g, static_cast<uint64_t>(n_pf != 0 ? pf0 : tb), 0, n_pf, pf_k_a);
    size_t pf_done = i0;
    auto prefetch_rows = [&](size_t count) {
      const size_t end = pf_done + count < i1 ? pf_done + count : i1;
      for (; pf_done < end; ++pf_done) {
        for (size_t off = 0; off < row_bytes; off += 64) KvPrefetch(vrow[pf_done] + off);
      }
    };
    // Each row's keys of this tile, [lo, hi) tile-relative, and the keys all rows share.
    size_t ca = i0, cb = i1;
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
    if constexpr (kStride != 0) {
      if (i0 == 0 && i1 == kTile && ca == 0 && cb == kTile && !(a.softcap > 0.0f)) {
        DotFullTile<kDim, kType>(t, krow, vrow, TilePrefetch<kStride>{vrow[0], kTile * kStride},
                                 TilePrefetch<kStride>{pf_k[0], n_pf * kStride});
        continue;
      }
    }
    // Q·Kᵀ: shared keys in register blocks of rows, then each row's own keys. Key blocks outer,
    // row blocks inner (a score does not depend on the order), with as many prefetched rows as
    // keys in between.
    size_t r = 0;
    size_t kb = ca;
    if (t.rows == 1) {
      for (; kb + kDotKeys1 <= cb; kb += kDotKeys1) {
        DotQk<kDim, kType, 1, kDotKeys1>(t, krow, 0, kb);
        prefetch_rows(kDotKeys1);
      }
    }
    for (; kb + kDotKeys <= cb; kb += kDotKeys) {
      for (r = 0; r + kDotRows <= t.rows; r += kDotRows) DotQk<kDim, kType, kDotRows, kDotKeys>(t, krow, r, kb);
      DotQkRest<kDim, kType, kDotKeys>(t, krow, r, kb);
      prefetch_rows(kDotKeys);
    }
    for (r = 0; r + kDotRows <= t.rows; r += kDotRows) DotQkKeys<kDim, kType, kDotRows>(t, krow, r, kb, cb);
    for (; r < t.rows; ++r) DotQkKeys<kDim, kType, 1>(t, krow, r, kb, cb);
    prefetch_rows(kTile);
    for (r = 0; r < t.rows; ++r) {
      const size_t lo = static_cast<size_t>(t.lo[r]), hi = static_cast<size_t>(t.hi[r]);
      if (lo >= hi) continue;
      DotQkKeys<kDim, kType, 1>(t, krow, r, lo, ca > lo ? (ca < hi ? ca : hi) : lo);
      DotQkKeys<kDim, kType, 1>(t, krow, r, cb > lo ? cb : lo, hi);
      DotRowSoftmax(t, r, lo, hi);
    }
    // P·V, every row's keys in ascending order: its own keys below the shared ones, the shared
    // ones in register blocks of rows, its own keys above.
    for (r = 0; r < t.rows; ++r) {
      const size_t lo = static_cast<size_t>(t.lo[r]), hi = static_cast<size_t>(t.hi[r]);
      if (lo < hi) DotPvKeys<kDim, kType, 1>(t, vrow, r, lo, ca > lo ? (ca < hi ? ca : hi) : lo);
    }
    // The first row block prefetches the next tile's K rows [ca, cb); the rest follow after.
    RowPrefetch<std::remove_const_t<decltype(pf_k)>> pfv{pf_k, n_pf};
    for (r = 0; r + kDotRows <= t.rows; r += kDotRows) {
      DotPvKeys<kDim, kType, kDotRows>(t, vrow, r, ca, cb, pfv);
      pfv.n = 0;
    }
    DotPvRest<kDim, kType>(t, vrow, r, ca, cb, pfv);
    for (r = 0; r < t.rows; ++r) {
      const size_t lo = static_cast<size_t>(t.lo[r]), hi = static_cast<size_t>(t.hi[r]);
      if (lo < hi) DotPvKeys<kDim, kType, 1>(t, vrow, r, cb > lo ? cb : lo, hi);
    }
    // The rest of the next tile's K: the rows outside [ca, cb), which the P·V loops skip.
    const size_t skip0 = ca < cb && ca < n_pf ? ca : n_pf;
    const size_t skip1 = ca < cb && cb < n_pf ? cb : n_pf;
    for (size_t i = 0; i < skip0; ++i) {
      for (size_t off = 0; off < row_bytes; off += 64) KvPrefetch(pf_k[i] + off);
    }
    for (size_t i = skip1; i < n_pf; ++i) {
      for (size_t off = 0; off < row_bytes; off += 64) KvPrefetch(pf_k[i] + off);
    }
  }
}

// Rows back to back take StridedRows (and full tiles DotFullTile), except on the scalar targets:
// there (bare-metal builds) a second copy of the decode loops would cost flash, and the gain was
// measured on x86 only.
template <size_t kDim, KvType kType>
inline void DotRunLayout(Task& t) {
#if HWY_TARGET != HWY_SCALAR && HWY_TARGET != HWY_EMU128
  constexpr size_t kStride = kDim * KvElementBytes(kType);
  if constexpr (kStride != 0) {
    if (KeysBackToBack<kDim>(*t.a, t.union_lo / int64_t{kTile} * int64_t{kTile})) {
      return DotRunTyped<kDim, kType, kStride>(t);
    }
  }
#endif
  DotRunTyped<kDim, kType, 0>(t);
}

template <size_t kDim>
inline void DotRun(Task& t) {
  DotLoadQ<kDim>(t);
  if (t.union_lo > t.union_hi) return;
  switch (t.a->kv_type) {
    case KvType::kF32:
      return DotRunLayout<kDim, KvType::kF32>(t);
    case KvType::kF16:
      return DotRunLayout<kDim, KvType::kF16>(t);
    default:
      return DotRunLayout<kDim, KvType::kBF16>(t);
  }
}

HWY_INLINE float DotOut(const Task& t, size_t r, size_t x) { return t.o[r * t.d_pad + x]; }

// ---------------------------------------------------------------------------------------------
// Drivers.

// Normalized output of the task's rows into O (zeros for rows that see no key).
template <bool kDecode>
inline void WriteOutput(const Task& t) {
  const AttentionArgs& a = *t.a;
  for (size_t r = 0; r < t.rows; ++r) {
    const size_t token = t.t0 + r / t.group;
    const size_t head = size_t{t.g} * t.group + r % t.group;
    float* out = a.o + token * a.o_token_stride + head * a.head_dim;
    if (t.klo[r] > t.khi[r]) {
      for (size_t x = 0; x < t.d; ++x) out[x] = 0.0f;
      continue;
    }
    const float l = t.l[r];
    for (size_t x = 0; x < t.d; ++x) out[x] = (kDecode ? DotOut(t, r, x) : RowsOut(t, r, x)) / l;
  }
}

// Partials of the task's rows for chunk c.
template <bool kDecode>
inline void WritePartials(const Task& t, uint32_t c, const AttentionPartials& p) {
  const AttentionArgs& a = *t.a;
  const size_t all_rows = size_t{a.t_q} * t.group;
  for (size_t r = 0; r < t.rows; ++r) {
    const size_t row = size_t{c} * all_rows + size_t{t.t0} * t.group + r;
    p.m[row] = t.m[r];
    p.l[row] = t.l[r];
    float* o = p.o + row * a.head_dim;
    for (size_t x = 0; x < t.d; ++x) o[x] = kDecode ? DotOut(t, r, x) : RowsOut(t, r, x);
  }
}

template <size_t kDim>
inline void RunTask(Task& t, bool decode) {
  if (decode) {
    DotRun<kDim>(t);
  } else {
    RowsRun<kDim>(t);
  }
}

// Tasks cover tokens [q_begin, q_end) of kv head g, aligned to multiples of the task size in
// absolute token index (a row's task does not depend on the range of the call).
template <size_t kDim>
inline void RunRange(const AttentionArgs& a, uint32_t g, uint32_t q_begin, uint32_t q_end, int64_t key_begin,
                     int64_t key_end, void* scratch, bool partial, uint32_t chunk_index,
                     const AttentionPartials* partials) {
  const uint32_t group = a.n_heads / a.n_kv_heads;
  const uint32_t per_task = detail::TokensPerTask(group);
  const bool decode = detail::UseDecodeTiling(a);
  for (uint32_t t0 = q_begin; t0 < q_end;) {
    const uint64_t aligned_end = (uint64_t{t0} / per_task + 1) * per_task;
    const uint32_t t1 = aligned_end < q_end ? static_cast<uint32_t>(aligned_end) : q_end;
    Task t;
    SetupTask(t, a, scratch, g, t0, t1 - t0, key_begin, key_end, decode);
    RunTask<kDim>(t, decode);
    if (partial) {
      if (decode) {
        WritePartials<true>(t, chunk_index, *partials);
      } else {
        WritePartials<false>(t, chunk_index, *partials);
      }
    } else if (decode) {
      WriteOutput<true>(t);
    } else {
      WriteOutput<false>(t);
    }
    t0 = t1;
  }
}

inline void RunRangeAnyDim(const AttentionArgs& a, uint32_t g, uint32_t q_begin, uint32_t q_end,
                           int64_t key_begin, int64_t key_end, void* scratch, bool partial,
                           uint32_t chunk_index, const AttentionPartials* partials) {
  switch (detail::SpecializedDim(a)) {
    case 64:
      return RunRange<64>(a, g, q_begin, q_end, key_begin, key_end, scratch, partial, chunk_index, partials);
    case 128:
      return RunRange<128>(a, g, q_begin, q_end, key_begin, key_end, scratch, partial, chunk_index, partials);
    default:
      return RunRange<0>(a, g, q_begin, q_end, key_begin, key_end, scratch, partial, chunk_index, partials);
  }
}

}  // namespace attn

// Entry points (arguments already checked by attention.cc).

HWY_NOINLINE void AttentionF32(const AttentionArgs& a, uint32_t kv_head_begin, uint32_t kv_head_end,
                               uint32_t q_begin, uint32_t q_end, void* scratch) {
  for (uint32_t g = kv_head_begin; g < kv_head_end; ++g) {
    attn::RunRangeAnyDim(a, g, q_begin, q_end, 0, int64_t{a.t_kv}, scratch, false, 0, nullptr);
  }
}

HWY_NOINLINE void AttentionPartialF32(const AttentionArgs& a, uint32_t kv_head, uint32_t chunk_index,
                                      uint32_t chunk, const AttentionPartials& partials, void* scratch) {
  uint64_t key_begin = uint64_t{chunk_index} * chunk;  // < 2^64: both factors < 2^32
  if (key_begin > a.t_kv) key_begin = a.t_kv;
  uint64_t key_end = key_begin + chunk;
  if (key_end > a.t_kv) key_end = a.t_kv;
  attn::RunRangeAnyDim(a, kv_head, 0, a.t_q, static_cast<int64_t>(key_begin), static_cast<int64_t>(key_end),
                       scratch, true, chunk_index, &partials);
}

// out = Σ_c exp(m_c − M) · o_c / Σ_c exp(m_c − M) · l_c, M = max_c m_c, chunks in order.
HWY_NOINLINE void AttentionMergeF32(const AttentionArgs& a, uint32_t kv_head, uint32_t n_chunks,
                                    const AttentionPartials& p) {
  const attn::DF df;
  const size_t n = hn::Lanes(df);
  const uint32_t group = a.n_heads / a.n_kv_heads;
  const size_t all_rows = size_t{a.t_q} * group;
  const size_t d = a.head_dim;
  for (uint32_t t = 0; t < a.t_q; ++t) {
    const bool empty = detail::VisibleKeys(a, t).empty();
    for (uint32_t h = 0; h < group; ++h) {
      const size_t row = size_t{t} * group + h;
      float* out = a.o + size_t{t} * a.o_token_stride + (size_t{kv_head} * group + h) * d;
      for (size_t x = 0; x < d; ++x) out[x] = 0.0f;
      if (empty) continue;
      float m_max = attn::kNegInf;
      for (uint32_t c = 0; c < n_chunks; ++c) {
        const float m = p.m[c * all_rows + row];
        if (m != m) {
          m_max = m;
          break;
        }
        if (m > m_max) m_max = m;
      }
      float l_sum = 0.0f;
      for (uint32_t c = 0; c < n_chunks; ++c) {
        const float m = p.m[c * all_rows + row];
        if (m == attn::kNegInf) continue;  // the chunk saw no key of this row
        const float w = hn::GetLane(attn::ExpNonPositive(df, hn::Set(df, m - m_max)));
        l_sum += w * p.l[c * all_rows + row];
        const float* o = p.o + (c * all_rows + row) * d;
        const attn::VF wv = hn::Set(df, w);
        size_t x = 0;
        for (; x + n <= d; x += n) {
          hn::StoreU(hn::MulAdd(wv, hn::LoadU(df, o + x), hn::LoadU(df, out + x)), df, out + x);
        }
        for (; x < d; ++x) out[x] += w * o[x];
      }
      for (size_t x = 0; x < d; ++x) out[x] /= l_sum;
    }
  }
}

HWY_NOINLINE const char* AttentionTargetName() { return hwy::TargetName(HWY_TARGET); }

// y[i] = the softmax's exp of x[i] (attn::ExpNonPositive), for tests.
HWY_NOINLINE void SoftmaxExp(const float* HWY_RESTRICT x, float* HWY_RESTRICT y, size_t n) {
  const attn::DF df;
  const size_t N = hn::Lanes(df);
  size_t i = 0;
  for (; i + N <= n; i += N) hn::StoreU(attn::ExpNonPositive(df, hn::LoadU(df, x + i)), df, y + i);
  if (i == n) return;
  HWY_ALIGN float tail[detail::kMaxLanes] = {};
  for (size_t j = i; j < n; ++j) tail[j - i] = x[j];
  hn::Store(attn::ExpNonPositive(df, hn::Load(df, tail)), df, tail);
  for (size_t j = i; j < n; ++j) y[j] = tail[j - i];
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace simd
}  // namespace headway
HWY_AFTER_NAMESPACE();

#endif  // HEADWAY_SIMD_ATTENTION_INL_H_
