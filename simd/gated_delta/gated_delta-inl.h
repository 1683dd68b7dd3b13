// The gated delta rule per Highway target (see gated_delta.h for the contract and the math).
//
// Recurrent: per token, columns of S in blocks of 4 vectors (the tail in 1-vector blocks, then
// scalar columns). Pass 1 runs down the block's dk rows accumulating Sᵀk and Sᵀq (8 independent
// FMA chains: 2 FMA ports × 4 cycles latency); pass 2 writes e·S + k δᵀ over the same block while
// it is still in L1 (dk · 4 vectors: 16 KiB at dk = 128 with AVX2). S is read twice and written
// once per token, the least a step that needs δ (from all of Sᵀk) before it can write S allows.
//
// Chunked: the per-chunk products with S (W·S, Q·S), with V' (M·V') and the state update (Kᵀ·V')
// are one tile: 4 rows × 2 vectors of f32 accumulators (8 chains; 8 accumulators + 2 loads + a
// broadcast fit the 16 registers of AVX2 and SSE4), columns of the right operand in the outer loop
// so its 2-vector slab stays in L1 while every row block passes over it. The Gram products
// (K·Kᵀ, Q·Kᵀ) are dot products along dk in tiles of 2 × 4 rows, lanes summed at the end.
// No allocation; the scratch is the caller's (its layout: ChunkScratch); a few hundred bytes of
// stack.

#if defined(HEADWAY_SIMD_GATED_DELTA_GATED_DELTA_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef HEADWAY_SIMD_GATED_DELTA_GATED_DELTA_INL_H_
#undef HEADWAY_SIMD_GATED_DELTA_GATED_DELTA_INL_H_
#else
#define HEADWAY_SIMD_GATED_DELTA_GATED_DELTA_INL_H_
#endif

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "hwy/highway.h"
#include "simd/gated_delta/gated_delta.h"
#include "simd/vector_ops.h"

HWY_BEFORE_NAMESPACE();
namespace headway {
namespace simd {
namespace HWY_NAMESPACE {
namespace gd {
namespace hn = HEADWAY_SIMD_OPS;

using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;

// ---- Recurrent

// Σ a[i]·b[i] in f32 (k·q of a token).
HWY_INLINE float Dot(const float* HWY_RESTRICT a, const float* HWY_RESTRICT b, size_t n) {
  const DF df;
  const size_t N = hn::Lanes(df);
  VF s0 = hn::Zero(df), s1 = hn::Zero(df);
  size_t i = 0;
  for (; i + 2 * N <= n; i += 2 * N) {
    s0 = hn::MulAdd(hn::LoadU(df, a + i), hn::LoadU(df, b + i), s0);
    s1 = hn::MulAdd(hn::LoadU(df, a + i + N), hn::LoadU(df, b + i + N), s1);
  }
  for (; i + N <= n; i += N) s0 = hn::MulAdd(hn::LoadU(df, a + i), hn::LoadU(df, b + i), s0);
  float s = hn::GetLane(hn::SumOfLanes(df, hn::Add(s0, s1)));
  for (; i < n; ++i) s += a[i] * b[i];
  return s;
}

// One token's scalars: e = exp(g), β, k·q.
struct Step {
  const float* k;
  const float* q;
  const float* v;
  float* out;
  float e, beta, kq;
};

// Columns [j0, j0 + kW·N) of S for one token (kW = 4 or 1 vectors).
template <int kW>
HWY_INLINE void RecurrentBlock(float* HWY_RESTRICT s, size_t dk, size_t dv, size_t j0, const Step& st) {
  const DF df;
  const size_t N = hn::Lanes(df);
  VF u0 = hn::Zero(df), u1 = hn::Zero(df), u2 = hn::Zero(df), u3 = hn::Zero(df);
  VF p0 = hn::Zero(df), p1 = hn::Zero(df), p2 = hn::Zero(df), p3 = hn::Zero(df);
  float* col = s + j0;
  for (size_t i = 0; i < dk; ++i, col += dv) {  // pass 1: Sᵀk and Sᵀq from the old S
    const auto ki = hn::Set(df, st.k[i]);
    const auto qi = hn::Set(df, st.q[i]);
    const VF s0 = hn::LoadU(df, col);
    u0 = hn::MulAdd(ki, s0, u0);
    p0 = hn::MulAdd(qi, s0, p0);
    if constexpr (kW > 1) {
      const VF s1 = hn::LoadU(df, col + N), s2 = hn::LoadU(df, col + 2 * N), s3 = hn::LoadU(df, col + 3 * N);
      u1 = hn::MulAdd(ki, s1, u1);
      p1 = hn::MulAdd(qi, s1, p1);
      u2 = hn::MulAdd(ki, s2, u2);
      p2 = hn::MulAdd(qi, s2, p2);
      u3 = hn::MulAdd(ki, s3, u3);
      p3 = hn::MulAdd(qi, s3, p3);
    }
  }
  // δ = β (v − e·u); o = e·p + (k·q) δ, which is (e·S + k δᵀ)ᵀ q.
  const VF e = hn::Set(df, st.e), beta = hn::Set(df, st.beta), kq = hn::Set(df, st.kq);
  const VF d0 = hn::Mul(beta, hn::NegMulAdd(e, u0, hn::LoadU(df, st.v + j0)));
  hn::StoreU(hn::MulAdd(kq, d0, hn::Mul(e, p0)), df, st.out + j0);
  VF d1 = d0, d2 = d0, d3 = d0;
  if constexpr (kW > 1) {
    d1 = hn::Mul(beta, hn::NegMulAdd(e, u1, hn::LoadU(df, st.v + j0 + N)));
    d2 = hn::Mul(beta, hn::NegMulAdd(e, u2, hn::LoadU(df, st.v + j0 + 2 * N)));
    d3 = hn::Mul(beta, hn::NegMulAdd(e, u3, hn::LoadU(df, st.v + j0 + 3 * N)));
    hn::StoreU(hn::MulAdd(kq, d1, hn::Mul(e, p1)), df, st.out + j0 + N);
    hn::StoreU(hn::MulAdd(kq, d2, hn::Mul(e, p2)), df, st.out + j0 + 2 * N);
    hn::StoreU(hn::MulAdd(kq, d3, hn::Mul(e, p3)), df, st.out + j0 + 3 * N);
  }
  col = s + j0;
  for (size_t i = 0; i < dk; ++i, col += dv) {  // pass 2: S ← e·S + k δᵀ
    const auto ki = hn::Set(df, st.k[i]);
    hn::StoreU(hn::MulAdd(ki, d0, hn::Mul(e, hn::LoadU(df, col))), df, col);
    if constexpr (kW > 1) {
      hn::StoreU(hn::MulAdd(ki, d1, hn::Mul(e, hn::LoadU(df, col + N))), df, col + N);
      hn::StoreU(hn::MulAdd(ki, d2, hn::Mul(e, hn::LoadU(df, col + 2 * N))), df, col + 2 * N);
      hn::StoreU(hn::MulAdd(ki, d3, hn::Mul(e, hn::LoadU(df, col + 3 * N))), df, col + 3 * N);
    }
  }
}

// Column j of S (past the whole vectors), the same steps in scalars.
HWY_INLINE void RecurrentColumn(float* HWY_RESTRICT s, size_t dk, size_t dv, size_t j, const Step& st) {
  float u = 0.0f, p = 0.0f;
  for (size_t i = 0; i < dk; ++i) {
    u += s[i * dv + j] * st.k[i];
    p += s[i * dv + j] * st.q[i];
  }
  const float d = st.beta * (st.v[j] - st.e * u);
  st.out[j] = st.e * p + st.kq * d;
  for (size_t i = 0; i < dk; ++i) s[i * dv + j] = st.e * s[i * dv + j] + st.k[i] * d;
}

HWY_INLINE void RecurrentToken(float* HWY_RESTRICT s, size_t dk, size_t dv, const Step& st) {
  const DF df;
  const size_t N = hn::Lanes(df);
  size_t j = 0;
  for (; j + 4 * N <= dv; j += 4 * N) RecurrentBlock<4>(s, dk, dv, j, st);
  for (; j + N <= dv; j += N) RecurrentBlock<1>(s, dk, dv, j, st);
  for (; j < dv; ++j) RecurrentColumn(s, dk, dv, j, st);
}

// ---- Chunked

// The scratch, in floats from its start; every part begins on a multiple of 16 floats (64 bytes).
//   ec, ed, b, bec [kC] each: exp(c_r) (c_r: the cumulative log decay in the chunk),
//     exp(c_last − c_r), β_r, β_r·exp(c_r)
//   D [kC, kC]: exp(c_r − c_s), s ≤ r
//   A [kC, kC]: the UT system's strictly lower part, β_r (k_r·k_s) D[r][s]
//   M [kC, kC]: (q_r·k_s) D[r][s] for s ≤ r, 0 above the diagonal
//   U [kC, dvp]: the solved values, then V' = U − W S, then diag(ed) V' (row stride dvp)
//   W [kC, dkp]: the solved decayed keys (row stride dkp)
// dkp, dvp: dk, dv rounded up to 16.
constexpr size_t kC = kGatedDeltaChunk;

HWY_INLINE size_t Round16(size_t n) { return (n + 15) / 16 * 16; }

struct ChunkScratch {
  float *ec, *ed, *b, *bec, *D, *A, *M, *U, *W;
  size_t dkp, dvp;
  ChunkScratch(float* p, size_t dk, size_t dv) : dkp(Round16(dk)), dvp(Round16(dv)) {
    ec = p;
    ed = ec + kC;
    b = ed + kC;
    bec = b + kC;
    D = bec + kC;
    A = D + kC * kC;
    M = A + kC * kC;
    U = M + kC * kC;
    W = U + kC * dvp;
  }
  // gated_delta_chunk_scratch_floats (headway/detail/attention_policy.hpp) is this layout's size.
  static_assert(gated_delta_chunk_scratch_floats(1, 1) == 4 * kC + 3 * kC * kC + 2 * kC * 16, "ChunkScratch's size");
};

// Dot products of up to 2 rows of a (a + r·as) with up to 4 rows of b (b + s·bs) over n floats:
// store(r, s, dot) for r < nr, s < nc. Rows past nr / nc alias the first; their sums are dropped.
template <class Store>
HWY_INLINE void Dots2x4(const float* a, size_t as, size_t nr, const float* b, size_t bs, size_t nc, size_t n,
                        const Store& store) {
  const DF df;
  const size_t N = hn::Lanes(df);
  const float* a0 = a;
  const float* a1 = a + (nr > 1 ? as : 0);
  const float* b0 = b;
  const float* b1 = b + (nc > 1 ? bs : 0);
  const float* b2 = b + (nc > 2 ? 2 * bs : 0);
  const float* b3 = b + (nc > 3 ? 3 * bs : 0);
  VF s00 = hn::Zero(df), s01 = hn::Zero(df), s02 = hn::Zero(df), s03 = hn::Zero(df);
  VF s10 = hn::Zero(df), s11 = hn::Zero(df), s12 = hn::Zero(df), s13 = hn::Zero(df);
  size_t i = 0;
  for (; i + N <= n; i += N) {
    const VF v0 = hn::LoadU(df, b0 + i), v1 = hn::LoadU(df, b1 + i);
    const VF v2 = hn::LoadU(df, b2 + i), v3 = hn::LoadU(df, b3 + i);
    const VF x0 = hn::LoadU(df, a0 + i);
    s00 = hn::MulAdd(x0, v0, s00);
    s01 = hn::MulAdd(x0, v1, s01);
    s02 = hn::MulAdd(x0, v2, s02);
    s03 = hn::MulAdd(x0, v3, s03);
    const VF x1 = hn::LoadU(df, a1 + i);
    s10 = hn::MulAdd(x1, v0, s10);
    s11 = hn::MulAdd(x1, v1, s11);
    s12 = hn::MulAdd(x1, v2, s12);
    s13 = hn::MulAdd(x1, v3, s13);
  }
  float d[2][4] = {{hn::GetLane(hn::SumOfLanes(df, s00)), hn::GetLane(hn::SumOfLanes(df, s01)),
                    hn::GetLane(hn::SumOfLanes(df, s02)), hn::GetLane(hn::SumOfLanes(df, s03))},
                   {hn::GetLane(hn::SumOfLanes(df, s10)), hn::GetLane(hn::SumOfLanes(df, s11)),
                    hn::GetLane(hn::SumOfLanes(df, s12)), hn::GetLane(hn::SumOfLanes(df, s13))}};
  const float* ar[2] = {a0, a1};
  const float* br[4] = {b0, b1, b2, b3};
  for (size_t r = 0; r < nr; ++r) {
    for (size_t c = 0; c < nc; ++c) {
      float acc = d[r][c];
      for (size_t ii = i; ii < n; ++ii) acc += ar[r][ii] * br[c][ii];
      store(r, c, acc);
    }
  }
}

// How a product meets what y holds: y − Σ (V' = U − W S), rowscale_r · Σ (O = diag(ec) Q S),
// y + Σ (O += M V'), yscale · y + Σ (S ← exp(c_last) S + Kᵀ V').
enum class Into { kSub, kSetRowScaled, kAdd, kScaleAdd };

// y[r][j] = Into(y[r][j], Σ_p x[r·xr + p·xc] · b[p·bs + j]) for r < rows, j < cols, p < n, or with
// tri, p < min(n, r0 + 4) for the 4-row block from r0 (x is 0 past the diagonal, M V').
struct Product {
  const float* x;
  size_t xr, xc;
  const float* b;
  size_t bs;
  float* y;
  size_t ys;
  size_t rows, cols, n;
  bool tri;
  const float* rowscale;  // kSetRowScaled
  float yscale;           // kScaleAdd
};

template <Into kInto>
HWY_INLINE VF Combine(DF df, const Product& p, size_t r, const float* y, VF acc) {
  if constexpr (kInto == Into::kSub) {
    return hn::Sub(hn::LoadU(df, y), acc);
  } else if constexpr (kInto == Into::kSetRowScaled) {
    return hn::Mul(hn::Set(df, p.rowscale[r]), acc);
  } else if constexpr (kInto == Into::kAdd) {
    return hn::Add(hn::LoadU(df, y), acc);
  } else {
    return hn::MulAdd(hn::Set(df, p.yscale), hn::LoadU(df, y), acc);
  }
}

template <Into kInto>
HWY_INLINE float CombineScalar(const Product& p, size_t r, float y, float acc) {
  if constexpr (kInto == Into::kSub) {
    return y - acc;
  } else if constexpr (kInto == Into::kSetRowScaled) {
    return p.rowscale[r] * acc;
  } else if constexpr (kInto == Into::kAdd) {
    return y + acc;
  } else {
    return p.yscale * y + acc;
  }
}

// Rows [r0, r0 + nr) (nr ≤ 4) × columns [j0, j0 + kW·N) (kW = 2 or 1 vectors). Rows past nr alias
// r0; their sums are dropped.
template <Into kInto, int kW>
HWY_INLINE void Tile(const Product& p, size_t r0, size_t nr, size_t j0) {
  const DF df;
  const size_t N = hn::Lanes(df);
  const size_t n = p.tri && r0 + 4 < p.n ? r0 + 4 : p.n;
  const float* x0 = p.x + r0 * p.xr;
  const float* x1 = p.x + (r0 + (nr > 1 ? 1 : 0)) * p.xr;
  const float* x2 = p.x + (r0 + (nr > 2 ? 2 : 0)) * p.xr;
  const float* x3 = p.x + (r0 + (nr > 3 ? 3 : 0)) * p.xr;
  VF a00 = hn::Zero(df), a01 = hn::Zero(df), a10 = hn::Zero(df), a11 = hn::Zero(df);
  VF a20 = hn::Zero(df), a21 = hn::Zero(df), a30 = hn::Zero(df), a31 = hn::Zero(df);
  const float* bp = p.b + j0;
  size_t xo = 0;
  for (size_t k = 0; k < n; ++k, bp += p.bs, xo += p.xc) {
    const VF b0 = hn::LoadU(df, bp);
    VF b1 = b0;
    if constexpr (kW > 1) b1 = hn::LoadU(df, bp + N);
    const auto c0 = hn::Set(df, x0[xo]);
    a00 = hn::MulAdd(c0, b0, a00);
    if constexpr (kW > 1) a01 = hn::MulAdd(c0, b1, a01);
    const auto c1 = hn::Set(df, x1[xo]);
    a10 = hn::MulAdd(c1, b0, a10);
    if constexpr (kW > 1) a11 = hn::MulAdd(c1, b1, a11);
    const auto c2 = hn::Set(df, x2[xo]);
    a20 = hn::MulAdd(c2, b0, a20);
    if constexpr (kW > 1) a21 = hn::MulAdd(c2, b1, a21);
    const auto c3 = hn::Set(df, x3[xo]);
    a30 = hn::MulAdd(c3, b0, a30);
    if constexpr (kW > 1) a31 = hn::MulAdd(c3, b1, a31);
  }
  float* y0 = p.y + r0 * p.ys + j0;
  hn::StoreU(Combine<kInto>(df, p, r0, y0, a00), df, y0);
  if constexpr (kW > 1) hn::StoreU(Combine<kInto>(df, p, r0, y0 + N, a01), df, y0 + N);
  if (nr > 1) {
    float* y1 = y0 + p.ys;
    hn::StoreU(Combine<kInto>(df, p, r0 + 1, y1, a10), df, y1);
    if constexpr (kW > 1) hn::StoreU(Combine<kInto>(df, p, r0 + 1, y1 + N, a11), df, y1 + N);
  }
  if (nr > 2) {
    float* y2 = y0 + 2 * p.ys;
    hn::StoreU(Combine<kInto>(df, p, r0 + 2, y2, a20), df, y2);
    if constexpr (kW > 1) hn::StoreU(Combine<kInto>(df, p, r0 + 2, y2 + N, a21), df, y2 + N);
  }
  if (nr > 3) {
    float* y3 = y0 + 3 * p.ys;
    hn::StoreU(Combine<kInto>(df, p, r0 + 3, y3, a30), df, y3);
    if constexpr (kW > 1) hn::StoreU(Combine<kInto>(df, p, r0 + 3, y3 + N, a31), df, y3 + N);
  }
}

// Column j past the whole vectors, in scalars.
template <Into kInto>
HWY_INLINE void TileColumn(const Product& p, size_t j) {
  for (size_t r = 0; r < p.rows; ++r) {
    const size_t n = p.tri && (r / 4 * 4 + 4) < p.n ? r / 4 * 4 + 4 : p.n;
    float acc = 0.0f;
    for (size_t k = 0; k < n; ++k) acc += p.x[r * p.xr + k * p.xc] * p.b[k * p.bs + j];
    float& y = p.y[r * p.ys + j];
    y = CombineScalar<kInto>(p, r, y, acc);
  }
}

template <Into kInto>
HWY_NOINLINE void Multiply(const Product& p) {
  const DF df;
  const size_t N = hn::Lanes(df);
  size_t j = 0;
  for (; j + 2 * N <= p.cols; j += 2 * N) {
    for (size_t r = 0; r < p.rows; r += 4) Tile<kInto, 2>(p, r, p.rows - r < 4 ? p.rows - r : 4, j);
  }
  for (; j + N <= p.cols; j += N) {
    for (size_t r = 0; r < p.rows; r += 4) Tile<kInto, 1>(p, r, p.rows - r < 4 ? p.rows - r : 4, j);
  }
  for (; j < p.cols; ++j) TileColumn<kInto>(p, j);
}

// y_r = scale_r · x_r − Σ_{s<r} A[r][s] · y_s for r < nrows, over n floats: (I + A) Y = diag(scale) X
// by forward substitution. Rows in order (each needs the ones before); columns in blocks of 4
// vectors, so that 4 chains of FMAs run side by side along s.
HWY_NOINLINE void ForwardSubstitute(const float* A, size_t nrows, const float* x, size_t xs, const float* scale,
                                    float* y, size_t ys, size_t n) {
  const DF df;
  const size_t N = hn::Lanes(df);
  for (size_t r = 0; r < nrows; ++r) {
    const float* ar = A + r * kC;
    const float* xr = x + r * xs;
    float* yr = y + r * ys;
    const VF sc = hn::Set(df, scale[r]);
    size_t j = 0;
    for (; j + 4 * N <= n; j += 4 * N) {
      VF y0 = hn::Mul(sc, hn::LoadU(df, xr + j)), y1 = hn::Mul(sc, hn::LoadU(df, xr + j + N));
      VF y2 = hn::Mul(sc, hn::LoadU(df, xr + j + 2 * N)), y3 = hn::Mul(sc, hn::LoadU(df, xr + j + 3 * N));
      const float* ysj = y + j;
      for (size_t s = 0; s < r; ++s, ysj += ys) {
        const VF a = hn::Set(df, ar[s]);
        y0 = hn::NegMulAdd(a, hn::LoadU(df, ysj), y0);
        y1 = hn::NegMulAdd(a, hn::LoadU(df, ysj + N), y1);
        y2 = hn::NegMulAdd(a, hn::LoadU(df, ysj + 2 * N), y2);
        y3 = hn::NegMulAdd(a, hn::LoadU(df, ysj + 3 * N), y3);
      }
      hn::StoreU(y0, df, yr + j);
      hn::StoreU(y1, df, yr + j + N);
      hn::StoreU(y2, df, yr + j + 2 * N);
      hn::StoreU(y3, df, yr + j + 3 * N);
    }
    for (; j + N <= n; j += N) {
      VF y0 = hn::Mul(sc, hn::LoadU(df, xr + j));
      for (size_t s = 0; s < r; ++s) y0 = hn::NegMulAdd(hn::Set(df, ar[s]), hn::LoadU(df, y + s * ys + j), y0);
      hn::StoreU(y0, df, yr + j);
    }
    for (; j < n; ++j) {
      float acc = scale[r] * xr[j];
      for (size_t s = 0; s < r; ++s) acc -= ar[s] * y[s * ys + j];
      yr[j] = acc;
    }
  }
}

// The decays of tokens [t0, t0 + C): ec, ed, b, bec and D (ChunkScratch). Every exponent is a
// running sum of the g it spans (c_r from the chunk's start, c_last − c_r from its end, c_r − c_s
// from s + 1 to r), never a difference of two cumulative sums: g ≤ 0, so the sums do not cancel and
// each is good to a few ulps of itself. transformers' c_r − c_s of f32 cumulative sums loses
// |c_r|·2^-24 to cancellation: with g = −30 every few tokens, |c_r| reaches 600 within a chunk and
// a decay exp(c_r − c_s) near 1 comes out 4e-5 off.
HWY_INLINE void ChunkDecays(const GatedDeltaArgs& a, size_t t0, size_t C, const ChunkScratch& w) {
  float rest = 0.0f;  // c_last − c_r
  for (size_t r = C; r-- > 0;) {
    w.ed[r] = std::exp(rest);
    rest += a.g[(t0 + r) * a.gb_stride];
  }
  float cum = 0.0f;  // c_r
  for (size_t r = 0; r < C; ++r) {
    cum += a.g[(t0 + r) * a.gb_stride];
    w.ec[r] = std::exp(cum);
    w.b[r] = a.beta[(t0 + r) * a.gb_stride];
    w.bec[r] = w.b[r] * w.ec[r];
    float* dr = w.D + r * kC;
    float span = 0.0f;  // c_r − c_s
    dr[r] = 1.0f;
    for (size_t s = r; s-- > 0;) {
      span += a.g[(t0 + s + 1) * a.gb_stride];
      dr[s] = std::exp(span);
    }
  }
}

// A (strictly lower) and M (lower with the diagonal, zeros above it up to C) of the chunk whose
// queries and keys start at q and k.
HWY_INLINE void ChunkGram(const float* q, const float* k, size_t stride, size_t dk, size_t C, const ChunkScratch& w) {
  for (size_t r0 = 0; r0 < C; r0 += 2) {
    const size_t nr = C - r0 < 2 ? C - r0 : 2;
    for (size_t s0 = 0; s0 < r0 + nr; s0 += 4) {
      const size_t nc = r0 + nr - s0 < 4 ? r0 + nr - s0 : 4;
      Dots2x4(k + r0 * stride, stride, nr, k + s0 * stride, stride, nc, dk, [&](size_t r, size_t s, float dot) {
        const size_t rr = r0 + r, ss = s0 + s;
        if (ss < rr) w.A[rr * kC + ss] = w.b[rr] * dot * w.D[rr * kC + ss];
      });
      Dots2x4(q + r0 * stride, stride, nr, k + s0 * stride, stride, nc, dk, [&](size_t r, size_t s, float dot) {
        const size_t rr = r0 + r, ss = s0 + s;
        if (ss <= rr) w.M[rr * kC + ss] = dot * w.D[rr * kC + ss];
      });
    }
  }
  for (size_t r = 0; r < C; ++r) {
    for (size_t s = r + 1; s < C; ++s) w.M[r * kC + s] = 0.0f;
  }
}

HWY_INLINE void Chunk(const GatedDeltaArgs& a, size_t t0, size_t C, const ChunkScratch& w) {
  const size_t dk = a.dk, dv = a.dv;
  const float* q = a.q + t0 * a.qk_stride;
  const float* k = a.k + t0 * a.qk_stride;
  float* out = a.out + t0 * a.out_stride;
  ChunkDecays(a, t0, C, w);
  ChunkGram(q, k, a.qk_stride, dk, C, w);
  // (I + A) U = diag(β) V, (I + A) W = diag(β·exp(c)) K.
  ForwardSubstitute(w.A, C, a.v + t0 * a.v_stride, a.v_stride, w.b, w.U, w.dvp, dv);
  ForwardSubstitute(w.A, C, k, a.qk_stride, w.bec, w.W, w.dkp, dk);
  // V' = U − W S (the part of U the old state does not already predict).
  Multiply<Into::kSub>({w.W, w.dkp, 1, a.state, dv, w.U, w.dvp, C, dv, dk, false, nullptr, 0.0f});
  // O = diag(exp(c)) Q S + M V'.
  Multiply<Into::kSetRowScaled>({q, a.qk_stride, 1, a.state, dv, out, a.out_stride, C, dv, dk, false, w.ec, 0.0f});
  Multiply<Into::kAdd>({w.M, kC, 1, w.U, w.dvp, out, a.out_stride, C, dv, C, true, nullptr, 0.0f});
  // S ← exp(c_last) S + Kᵀ diag(exp(c_last − c)) V'.
  const DF df;
  const size_t N = hn::Lanes(df);
  for (size_t r = 0; r < C; ++r) {
    float* ur = w.U + r * w.dvp;
    const VF e = hn::Set(df, w.ed[r]);
    size_t j = 0;
    for (; j + N <= dv; j += N) hn::StoreU(hn::Mul(e, hn::LoadU(df, ur + j)), df, ur + j);
    for (; j < dv; ++j) ur[j] *= w.ed[r];
  }
  Multiply<Into::kScaleAdd>({k, 1, a.qk_stride, w.U, w.dvp, a.state, dv, dk, dv, C, false, nullptr, w.ec[C - 1]});
}

}  // namespace gd

void GatedDeltaRecurrent(const GatedDeltaArgs& a) {
  for (size_t r = 0; r < a.t; ++r) {
    gd::Step st;
    st.q = a.q + r * a.qk_stride;
    st.k = a.k + r * a.qk_stride;
    st.v = a.v + r * a.v_stride;
    st.out = a.out + r * a.out_stride;
    st.e = std::exp(a.g[r * a.gb_stride]);
    st.beta = a.beta[r * a.gb_stride];
    st.kq = gd::Dot(st.k, st.q, a.dk);
    gd::RecurrentToken(a.state, a.dk, a.dv, st);
  }
}

void GatedDeltaChunked(const GatedDeltaArgs& a, float* scratch) {
  const gd::ChunkScratch w(scratch, a.dk, a.dv);
  for (size_t t0 = 0; t0 < a.t; t0 += gd::kC) gd::Chunk(a, t0, a.t - t0 < gd::kC ? a.t - t0 : gd::kC, w);
}

}  // namespace HWY_NAMESPACE
}  // namespace simd
}  // namespace headway
HWY_AFTER_NAMESPACE();

#endif  // HEADWAY_SIMD_GATED_DELTA_GATED_DELTA_INL_H_
