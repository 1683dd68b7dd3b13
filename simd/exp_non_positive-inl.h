// exp of a non-positive argument, per target: the softmax's weights (attention_math-inl.h) and
// SiLU's sigmoid (activation/activation-inl.h) both take exp of −|something| and no other.

#if defined(HEADWAY_SIMD_EXP_NON_POSITIVE_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef HEADWAY_SIMD_EXP_NON_POSITIVE_INL_H_
#undef HEADWAY_SIMD_EXP_NON_POSITIVE_INL_H_
#else
#define HEADWAY_SIMD_EXP_NON_POSITIVE_INL_H_
#endif

#include "hwy/highway.h"
#include "simd/vector_ops.h"

HWY_BEFORE_NAMESPACE();
namespace headway {
namespace simd {
namespace HWY_NAMESPACE {
namespace hn = HEADWAY_SIMD_OPS;

// exp(x) for x <= 0 (a score minus its row's running maximum, an old maximum minus the new, or
// −|x|): −inf gives 0, NaN stays NaN. Within 2 ulp of exp(x) where exp(x) >= 2^-125 (x >= −86.5),
// 0 below (a weight under 1e-37 beside the maximum's 1). About half the instructions of hn::Exp,
// which takes every input (and returns 0 for NaN in Highway 1.0.3): the softmax of both tilings
// spends most of its time here.
template <class DF>
HWY_INLINE hn::Vec<DF> ExpNonPositive(DF df, hn::Vec<DF> x) {
  using VF = hn::Vec<DF>;
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
  // p · 2^n: p is in [0.70, 1.42] and n >= −125 where the result is kept, so it stays a normal
  // number and the scaling is exact.
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3 && !HEADWAY_SIMD_HELIUM
  // One VSCALEFPS, bitwise what adding n to the exponent field gives there. NaN in x gives NaN
  // in p and in the result; x = −inf gives n = −inf and r = NaN, and the test below keeps 0.
  VF y;
  if constexpr (sizeof(y.raw) == 64) {
    y.raw = _mm512_scalef_ps(p.raw, n.raw);
  } else if constexpr (sizeof(y.raw) == 32) {
    y.raw = _mm256_scalef_ps(p.raw, n.raw);
  } else {
    y.raw = _mm_scalef_ps(p.raw, n.raw);
  }
  return hn::IfThenZeroElse(hn::Lt(x, hn::Set(df, -86.5f)), y);
#else
  // By adding n to the exponent field.
  const hn::RebindToSigned<DF> di;
  const auto e = hn::ShiftLeft<23>(hn::ConvertTo(di, n));
  const VF y = hn::BitCast(df, hn::Add(hn::BitCast(di, p), e));
  const VF z = hn::IfThenZeroElse(hn::Lt(x, hn::Set(df, -86.5f)), y);
  return hn::IfThenElse(hn::IsNaN(x), x, z);
#endif
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace simd
}  // namespace headway
HWY_AFTER_NAMESPACE();

#endif  // HEADWAY_SIMD_EXP_NON_POSITIVE_INL_H_
