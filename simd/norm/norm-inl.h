// The row norms of norm.h, per Highway target (simd/CMakeLists.txt compiles this for each through
// norm.cc). A row's last partial vector goes through the same vector code from a zero-padded copy
// (zeros add nothing to a sum of squares).

#if defined(HEADWAY_SIMD_NORM_NORM_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef HEADWAY_SIMD_NORM_NORM_INL_H_
#undef HEADWAY_SIMD_NORM_NORM_INL_H_
#else
#define HEADWAY_SIMD_NORM_NORM_INL_H_
#endif

#include <cmath>
#include <cstddef>

#include "hwy/highway.h"
#include "simd/vector_ops.h"

HWY_BEFORE_NAMESPACE();
namespace headway {
namespace simd {
namespace HWY_NAMESPACE {
namespace hn = HEADWAY_SIMD_OPS;

namespace norm {

constexpr size_t kMaxLanes = 16;
using DF = hn::CappedTag<float, kMaxLanes>;
using VF = hn::Vec<DF>;

// Σ x[j]² over j < n: two vectors of partial sums (two chains of FMA), then their lanes' total.
HWY_INLINE float SumOfSquares(DF df, const float* x, size_t n) {
  const size_t N = hn::Lanes(df);
  VF s0 = hn::Zero(df), s1 = hn::Zero(df);
  size_t j = 0;
  for (; j + 2 * N <= n; j += 2 * N) {
    const VF a = hn::LoadU(df, x + j), b = hn::LoadU(df, x + j + N);
    s0 = hn::MulAdd(a, a, s0);
    s1 = hn::MulAdd(b, b, s1);
  }
  if (j + N <= n) {
    const VF a = hn::LoadU(df, x + j);
    s0 = hn::MulAdd(a, a, s0);
    j += N;
  }
  if (j < n) {
    HWY_ALIGN float tail[kMaxLanes] = {};
    for (size_t i = j; i < n; ++i) tail[i - j] = x[i];
    const VF a = hn::Load(df, tail);
    s1 = hn::MulAdd(a, a, s1);
  }
  return hn::GetLane(hn::SumOfLanes(df, hn::Add(s0, s1)));
}

}  // namespace norm

HWY_NOINLINE void RmsNorm(const float* x, const float* HWY_RESTRICT w, float* y, size_t t, size_t n, float eps) {
  const norm::DF df;
  const size_t N = hn::Lanes(df);
  for (size_t r = 0; r < t; ++r) {
    const float* xr = x + r * n;
    float* yr = y + r * n;
    const float inv = 1.0f / std::sqrt(norm::SumOfSquares(df, xr, n) / static_cast<float>(n) + eps);
    const norm::VF vinv = hn::Set(df, inv);
    size_t j = 0;
    for (; j + N <= n; j += N)
      hn::StoreU(hn::Mul(hn::LoadU(df, w + j), hn::Mul(hn::LoadU(df, xr + j), vinv)), df, yr + j);
    if (j == n) continue;
    HWY_ALIGN float xt[norm::kMaxLanes] = {}, wt[norm::kMaxLanes] = {};
    for (size_t i = j; i < n; ++i) {
      xt[i - j] = xr[i];
      wt[i - j] = w[i];
    }
    hn::Store(hn::Mul(hn::Load(df, wt), hn::Mul(hn::Load(df, xt), vinv)), df, xt);
    for (size_t i = j; i < n; ++i) yr[i] = xt[i - j];
  }
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace simd
}  // namespace headway
HWY_AFTER_NAMESPACE();

#endif  // HEADWAY_SIMD_NORM_NORM_INL_H_
