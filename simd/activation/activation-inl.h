// The gate activations of activation.h, per Highway target (simd/CMakeLists.txt compiles this for
// each through activation.cc). A row's last partial vector goes through the same vector code
// from a zero-padded copy, so every value is computed alike wherever it sits in its row.

#if defined(HEADWAY_SIMD_ACTIVATION_ACTIVATION_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef HEADWAY_SIMD_ACTIVATION_ACTIVATION_INL_H_
#undef HEADWAY_SIMD_ACTIVATION_ACTIVATION_INL_H_
#else
#define HEADWAY_SIMD_ACTIVATION_ACTIVATION_INL_H_
#endif

#include <cstddef>

#include "hwy/highway.h"
#include "simd/exp_non_positive-inl.h"
#include "simd/vector_ops.h"

HWY_BEFORE_NAMESPACE();
namespace headway {
namespace simd {
namespace HWY_NAMESPACE {
namespace hn = HEADWAY_SIMD_OPS;

namespace act {

constexpr size_t kMaxLanes = 16;
using DF = hn::CappedTag<float, kMaxLanes>;
using VF = hn::Vec<DF>;

// SiLU(g) · u. σ(g) = 1 / (1 + e) for g >= 0 and e / (1 + e) below, e = exp(−|g|) in (0, 1].
HWY_INLINE VF SiluMul(DF df, VF g, VF u) {
  const VF zero = hn::Zero(df), one = hn::Set(df, 1.0f);
  const VF e = ExpNonPositive(df, hn::Sub(zero, hn::Abs(g)));
  const VF sigmoid = hn::Div(hn::IfThenElse(hn::Lt(g, zero), e, one), hn::Add(one, e));
  return hn::Mul(hn::Mul(g, sigmoid), u);
}

}  // namespace act

HWY_NOINLINE void SiluMul(float* HWY_RESTRICT gate, const float* HWY_RESTRICT up, size_t n) {
  const act::DF df;
  const size_t N = hn::Lanes(df);
  size_t i = 0;
  for (; i + N <= n; i += N) hn::StoreU(act::SiluMul(df, hn::LoadU(df, gate + i), hn::LoadU(df, up + i)), df, gate + i);
  if (i == n) return;
  HWY_ALIGN float g[act::kMaxLanes] = {}, u[act::kMaxLanes] = {};
  for (size_t j = i; j < n; ++j) {
    g[j - i] = gate[j];
    u[j - i] = up[j];
  }
  hn::Store(act::SiluMul(df, hn::Load(df, g), hn::Load(df, u)), df, g);
  for (size_t j = i; j < n; ++j) gate[j] = g[j - i];
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace simd
}  // namespace headway
HWY_AFTER_NAMESPACE();

#endif  // HEADWAY_SIMD_ACTIVATION_ACTIVATION_INL_H_
