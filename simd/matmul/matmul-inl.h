// Dense y = x · Wᵀ per Highway target (see matmul.h for the contract).
//
// Register block: R weight rows × T tokens of f32 accumulators along `in` (R, T <= 4): each
// k step loads R weight vectors (widened from f16/bf16 once, then used by T tokens) and T x
// vectors (used by R rows), for R·T FMAs: 16 independent chains at 4×4, enough for 2 FMA ports
// × 4 cycles latency. Blocks are named accumulators, not arrays, so that SVE's sizeless vectors
// compile too; rows or tokens past the block's R/T alias row/token 0 and the compiler drops
// their dead accumulators. The tail of `in` past whole vectors is scalar, but on Helium one more
// step on a partial vector loaded under a tail predicate (kv_load-inl.h's KvTail).
//
// GEMV (t == 1): blocks of 4 rows × 1 token; the weights stream once, at memory bandwidth.
// GEMM: tokens in panels of kTokenPanel (x panel: kTokenPanel · in · 4 bytes, 256 KiB at
// in = 2048, stays in L2 while every weight row block passes over it), 4 × 4 blocks inside.
// No allocation; a few hundred bytes of stack.

#if defined(HEADWAY_SIMD_MATMUL_MATMUL_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef HEADWAY_SIMD_MATMUL_MATMUL_INL_H_
#undef HEADWAY_SIMD_MATMUL_MATMUL_INL_H_
#else
#define HEADWAY_SIMD_MATMUL_MATMUL_INL_H_
#endif

#include <cstddef>
#include <cstdint>

#include "hwy/highway.h"
#include "simd/attention/kv_load-inl.h"
#include "simd/matmul/matmul.h"
#include "simd/vector_ops.h"

HWY_BEFORE_NAMESPACE();
namespace headway {
namespace simd {
namespace HWY_NAMESPACE {
namespace mm {
namespace hn = HEADWAY_SIMD_OPS;

using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;

constexpr size_t kTokenPanel = 32;

template <WeightType kW>
HWY_INLINE VF LoadW(DF df, const void* HWY_RESTRICT w, size_t i) {
  if constexpr (kW == WeightType::kF32) {
    return hn::LoadU(df, static_cast<const float*>(w) + i);
  } else if constexpr (kW == WeightType::kF16) {
    return WidenF16(df, static_cast<const uint16_t*>(w) + i);
  } else {
    return WidenBF16(df, static_cast<const uint16_t*>(w) + i);
  }
}

template <WeightType kW>
HWY_INLINE float ScalarW(const void* HWY_RESTRICT w, size_t i) {
  if constexpr (kW == WeightType::kF32) {
    return static_cast<const float*>(w)[i];
  } else if constexpr (kW == WeightType::kF16) {
    return KvF16ToF32(static_cast<const uint16_t*>(w)[i]);
  } else {
    return KvBF16ToF32(static_cast<const uint16_t*>(w)[i]);
  }
}

// Helium: the weights' elements [i, in) (fewer than a vector), zeros after, loaded under a tail
// predicate as K/V tails are.
template <WeightType kW>
HWY_INLINE VF LoadWTail(DF df, const void* HWY_RESTRICT w, size_t i, size_t in) {
  constexpr KvType kType = kW == WeightType::kF32   ? KvType::kF32
                           : kW == WeightType::kF16 ? KvType::kF16
                                                    : KvType::kBF16;
  return KvTail<kType>(df, static_cast<const char*>(w), i, in);
}

template <WeightType kW>
HWY_INLINE const void* RowPtr(const void* w, size_t row, size_t stride) {
  constexpr size_t kBytes = kW == WeightType::kF32 ? 4 : 2;
  return static_cast<const uint8_t*>(w) + row * stride * kBytes;
}

// y[t0 + j][o0 + r] for r < R, j < T (kAdd: added to what y holds).
template <WeightType kW, size_t R, size_t T, bool kAdd = false>
HWY_INLINE void Block(const MatmulArgs& a, size_t o0, size_t t0) {
  const DF df;
  const size_t n = hn::Lanes(df);
  const size_t in = a.in;
  const void* w0 = RowPtr<kW>(a.w, o0, a.w_stride);
  const void* w1 = RowPtr<kW>(a.w, o0 + (R > 1 ? 1 : 0), a.w_stride);
  const void* w2 = RowPtr<kW>(a.w, o0 + (R > 2 ? 2 : 0), a.w_stride);
  const void* w3 = RowPtr<kW>(a.w, o0 + (R > 3 ? 3 : 0), a.w_stride);
  const float* x0 = a.x + t0 * a.x_stride;
  const float* x1 = a.x + (t0 + (T > 1 ? 1 : 0)) * a.x_stride;
  const float* x2 = a.x + (t0 + (T > 2 ? 2 : 0)) * a.x_stride;
  const float* x3 = a.x + (t0 + (T > 3 ? 3 : 0)) * a.x_stride;
  VF a00 = hn::Zero(df), a01 = hn::Zero(df), a02 = hn::Zero(df), a03 = hn::Zero(df);
  VF a10 = hn::Zero(df), a11 = hn::Zero(df), a12 = hn::Zero(df), a13 = hn::Zero(df);
  VF a20 = hn::Zero(df), a21 = hn::Zero(df), a22 = hn::Zero(df), a23 = hn::Zero(df);
  VF a30 = hn::Zero(df), a31 = hn::Zero(df), a32 = hn::Zero(df), a33 = hn::Zero(df);
  // One step of R weight vectors × T x vectors.
  const auto step = [&](VF v0, VF v1, VF v2, VF v3, VF u0, VF u1, VF u2, VF u3) {
    a00 = hn::MulAdd(v0, u0, a00);
    if (T > 1) a01 = hn::MulAdd(v0, u1, a01);
    if (T > 2) a02 = hn::MulAdd(v0, u2, a02);
    if (T > 3) a03 = hn::MulAdd(v0, u3, a03);
    if (R > 1) {
      a10 = hn::MulAdd(v1, u0, a10);
      if (T > 1) a11 = hn::MulAdd(v1, u1, a11);
      if (T > 2) a12 = hn::MulAdd(v1, u2, a12);
      if (T > 3) a13 = hn::MulAdd(v1, u3, a13);
    }
    if (R > 2) {
      a20 = hn::MulAdd(v2, u0, a20);
      if (T > 1) a21 = hn::MulAdd(v2, u1, a21);
      if (T > 2) a22 = hn::MulAdd(v2, u2, a22);
      if (T > 3) a23 = hn::MulAdd(v2, u3, a23);
    }
    if (R > 3) {
      a30 = hn::MulAdd(v3, u0, a30);
      if (T > 1) a31 = hn::MulAdd(v3, u1, a31);
      if (T > 2) a32 = hn::MulAdd(v3, u2, a32);
      if (T > 3) a33 = hn::MulAdd(v3, u3, a33);
    }
  };
  size_t k = 0;
  for (; k + n <= in; k += n) {
    step(LoadW<kW>(df, w0, k), LoadW<kW>(df, w1, k), LoadW<kW>(df, w2, k), LoadW<kW>(df, w3, k), hn::LoadU(df, x0 + k),
         hn::LoadU(df, x1 + k), hn::LoadU(df, x2 + k), hn::LoadU(df, x3 + k));
  }
#if HEADWAY_SIMD_HELIUM
  if (k < in) {  // the last partial vector, zeros past `in`, loaded under a tail predicate
    const char* xc0 = reinterpret_cast<const char*>(x0);
    const char* xc1 = reinterpret_cast<const char*>(x1);
    const char* xc2 = reinterpret_cast<const char*>(x2);
    const char* xc3 = reinterpret_cast<const char*>(x3);
    step(LoadWTail<kW>(df, w0, k, in), LoadWTail<kW>(df, w1, k, in), LoadWTail<kW>(df, w2, k, in),
         LoadWTail<kW>(df, w3, k, in), KvTail<KvType::kF32>(df, xc0, k, in), KvTail<KvType::kF32>(df, xc1, k, in),
         KvTail<KvType::kF32>(df, xc2, k, in), KvTail<KvType::kF32>(df, xc3, k, in));
    k = in;
  }
#endif
  float s[4][4];
  s[0][0] = hn::GetLane(hn::SumOfLanes(df, a00));
  s[0][1] = hn::GetLane(hn::SumOfLanes(df, a01));
  s[0][2] = hn::GetLane(hn::SumOfLanes(df, a02));
  s[0][3] = hn::GetLane(hn::SumOfLanes(df, a03));
  s[1][0] = hn::GetLane(hn::SumOfLanes(df, a10));
  s[1][1] = hn::GetLane(hn::SumOfLanes(df, a11));
  s[1][2] = hn::GetLane(hn::SumOfLanes(df, a12));
  s[1][3] = hn::GetLane(hn::SumOfLanes(df, a13));
  s[2][0] = hn::GetLane(hn::SumOfLanes(df, a20));
  s[2][1] = hn::GetLane(hn::SumOfLanes(df, a21));
  s[2][2] = hn::GetLane(hn::SumOfLanes(df, a22));
  s[2][3] = hn::GetLane(hn::SumOfLanes(df, a23));
  s[3][0] = hn::GetLane(hn::SumOfLanes(df, a30));
  s[3][1] = hn::GetLane(hn::SumOfLanes(df, a31));
  s[3][2] = hn::GetLane(hn::SumOfLanes(df, a32));
  s[3][3] = hn::GetLane(hn::SumOfLanes(df, a33));
  const void* wr[4] = {w0, w1, w2, w3};
  const float* xr[4] = {x0, x1, x2, x3};
  for (size_t r = 0; r < R; ++r) {
    for (size_t j = 0; j < T; ++j) {
      float acc = s[r][j];
      if constexpr (!HEADWAY_SIMD_HELIUM) {  // the other targets' tail (Helium's took its step above)
        for (size_t kk = k; kk < in; ++kk) acc += ScalarW<kW>(wr[r], kk) * xr[j][kk];
      }
      float& out = a.y[(t0 + j) * a.y_stride + o0 + r];
      out = kAdd ? out + acc : acc;
    }
  }
}

template <WeightType kW, size_t T>
HWY_INLINE void RowBlocks(const MatmulArgs& a, size_t o_begin, size_t o_end, size_t t0) {
  size_t o = o_begin;
  for (; o + 4 <= o_end; o += 4) Block<kW, 4, T>(a, o, t0);
  for (; o < o_end; ++o) Block<kW, 1, T>(a, o, t0);
}

template <WeightType kW>
HWY_NOINLINE void MatmulT(const MatmulArgs& a, size_t o_begin, size_t o_end) {
  if (a.t == 1) {
    RowBlocks<kW, 1>(a, o_begin, o_end, 0);
    return;
  }
  for (size_t p0 = 0; p0 < a.t; p0 += kTokenPanel) {
    const size_t p1 = p0 + kTokenPanel < a.t ? p0 + kTokenPanel : a.t;
    size_t o = o_begin;
    for (; o + 4 <= o_end; o += 4) {
      size_t t = p0;
      for (; t + 4 <= p1; t += 4) Block<kW, 4, 4>(a, o, t);
      for (; t < p1; ++t) Block<kW, 4, 1>(a, o, t);
    }
    for (; o < o_end; ++o) {
      size_t t = p0;
      for (; t + 4 <= p1; t += 4) Block<kW, 1, 4>(a, o, t);
      for (; t < p1; ++t) Block<kW, 1, 1>(a, o, t);
    }
  }
}

}  // namespace mm
}  // namespace HWY_NAMESPACE
}  // namespace simd
}  // namespace headway
HWY_AFTER_NAMESPACE();

#include "simd/matmul/matmul_blocks-inl.h"

HWY_BEFORE_NAMESPACE();
namespace headway {
namespace simd {
namespace HWY_NAMESPACE {

void MatmulF32(const MatmulArgs& a, size_t o_begin, size_t o_end) {
  switch (a.w_type) {
    case WeightType::kF32: mm::MatmulT<WeightType::kF32>(a, o_begin, o_end); break;
    case WeightType::kF16: mm::MatmulT<WeightType::kF16>(a, o_begin, o_end); break;
    case WeightType::kBF16: mm::MatmulT<WeightType::kBF16>(a, o_begin, o_end); break;
    default: mm::MatmulBlocks(a, o_begin, o_end); break;  // ggml's block formats
  }
}

int MatmulXCodeMax(const MatmulArgs& a) {
  if (mm::RowGroupsRun(a)) return mm::kRowGroupsCodeMax;  // x in 16-bit codes (matmul_row_groups-inl.h)
  if (!mm::IntegerGemv(a)) return 0;                      // it admits block formats alone
  // Helium's q8_0 GEMV keeps x at 16 bits whatever precise_x says (matmul_helium-inl.h).
  return a.precise_x || (HEADWAY_SIMD_HELIUM && a.w_type == WeightType::kQ8_0) ? 32767 : 127;
}

const char* MatmulTargetName() { return HEADWAY_SIMD_TARGET_NAME; }

bool MatmulPrepareX(const MatmulArgs& a, void* out) {
  return a.t == 1 && mm::RowGroupsRun(a) && mm::PrepareRowGroupsX(a, out);
}

size_t MatmulTokenTask(const MatmulArgs& a) { return a.t > 1 && mm::RowGroupsRun(a) ? mm::GemmPanelTokens(a.in) : 0; }

bool MatmulReadsRowGroups(WeightType w) {
  MatmulArgs a;
  a.w_type = w;
  a.w_row_groups = true;
  a.t = 1;
  return mm::RowGroupsRun(a);
}

}  // namespace HWY_NAMESPACE
}  // namespace simd
}  // namespace headway
HWY_AFTER_NAMESPACE();

#endif  // HEADWAY_SIMD_MATMUL_MATMUL_INL_H_
