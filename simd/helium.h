// Helium (Arm M-profile Vector Extension, MVE-F: Cortex-M55, M85): the subset of Highway's vector
// ops that the kernels use, with Highway's names and semantics, in arm_mve.h intrinsics.
// Highway 1.0.3 has no M-profile target (it compiles SCALAR there, one lane), so on a core with
// MVE-F the kernels are written against these instead (simd/vector_ops.h chooses): the same
// kernel source, four f32 lanes per 128-bit register.
//
// Vectors are 128 bits of four 32-bit lanes. Descriptors of narrower lane types with four lanes
// (Rebind<uint16_t, DF>: f16 and bf16 bits, Rebind<int8_t / uint8_t, DF>: q8_0 and q4_0 codes)
// keep each value widened in a 32-bit lane (zero- or sign-extended), which is what MVE's
// widening loads (VLDRH.U32, VLDRB.S32/U32) give: PromoteTo to 32 bits is then free. Masks are
// VPR predicates (mve_pred16_t, 4 bits per 32-bit lane). Only the ops and lane types the kernels
// instantiate exist; anything else fails to compile rather than run something untested.
//
// Known defects of the Debian 12 toolchain handled here (docs/embedded.md, "Cortex-M (bare metal)"):
// - binutils 2.40 encodes MVE VCVTB/VCVTT between f16 and f32 with both register numbers doubled
//   (vcvtb.f32.f16 q1, q2 assembles as q2, q4): PromoteTo(f16 → f32) emits the instruction as a
//   hand-encoded .inst.w, its registers chosen by the compiler and encoded by an assembler macro.
#pragma once

#if !defined(__ARM_FEATURE_MVE) || !(__ARM_FEATURE_MVE & 2)
#error "simd/helium.h needs MVE with floating point (-mcpu=cortex-m55 or -march=armv8.1-m.main+mve.fp)"
#endif

#include <arm_mve.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "hwy/base.h"  // hwy::float16_t, the lane type of Rebind<hwy::float16_t, D>

namespace headway {
namespace simd {
namespace helium {

// ---- Lane types, descriptors, vectors, masks

namespace detail {
// The MVE register that holds four lanes of T: f32, or 32-bit integers, the narrow types widened
// (signed ones sign-extended, the others, f16 bits included, zero-extended).
template <typename T>
using Raw = std::conditional_t<std::is_same_v<T, float>, float32x4_t,
                               std::conditional_t<std::is_integral_v<T> && std::is_signed_v<T>, int32x4_t, uint32x4_t>>;
// RebindToSigned / RebindToUnsigned of the lane types the kernels use: the 32-bit ones, and
// the q4_0 codes (int8_t → uint8_t).
template <typename T>
using Signed = int32_t;
template <typename T>
struct UnsignedOf {
  using type = uint32_t;
};
template <>
struct UnsignedOf<int8_t> {
  using type = uint8_t;
};
template <typename T>
using Unsigned = typename UnsignedOf<T>::type;
}  // namespace detail

// Every descriptor has four lanes: the kernels cap their f32 vectors at 16 lanes and rebind the
// narrow types to the f32 lane count.
template <typename Lane, size_t N = 4, int kPow2 = 0>
struct Simd {
  using T = Lane;
  static_assert(N >= 4, "Helium descriptors have four lanes");
  constexpr Simd() = default;
};
template <typename T, size_t kLimit>
using CappedTag = Simd<T, 4>;
template <typename T>
using ScalableTag = Simd<T, 4>;
template <typename T, class D>
using Rebind = Simd<T, 4>;
template <class D>
using RebindToSigned = Simd<detail::Signed<typename D::T>, 4>;
template <class D>
using RebindToUnsigned = Simd<detail::Unsigned<typename D::T>, 4>;
template <class D>
using TFromD = typename D::T;

template <typename T>
struct Vec128 {
  using PrivateT = T;
  detail::Raw<T> raw;
};
template <typename T>
struct Mask128 {
  mve_pred16_t raw;
};
template <class D>
using Vec = Vec128<typename D::T>;
template <class D>
using Mask = Mask128<typename D::T>;

template <class D>
constexpr size_t Lanes(D) {
  return 4;
}
template <class D>
constexpr size_t MaxLanes(D) {
  return 4;
}

// ---- Creation, loads and stores

// Set's f32 result: the scalar, made a vector where one is needed. MulAdd takes it as VFMA's scalar
// operand (a core register) instead: GCC 12 does not fold a VDUP into the VFMA by itself.
struct BroadcastF32 {
  float x;
  HWY_INLINE operator Vec128<float>() const { return {vdupq_n_f32(x)}; }  // NOLINT(google-explicit-constructor)
};

HWY_INLINE Vec128<float> Zero(Simd<float, 4>) { return {vdupq_n_f32(0.0f)}; }
HWY_INLINE BroadcastF32 Set(Simd<float, 4>, float x) { return {x}; }
HWY_INLINE Vec128<int32_t> Set(Simd<int32_t, 4>, int32_t x) { return {vdupq_n_s32(x)}; }
HWY_INLINE Vec128<uint32_t> Set(Simd<uint32_t, 4>, uint32_t x) { return {vdupq_n_u32(x)}; }
HWY_INLINE Vec128<uint16_t> Set(Simd<uint16_t, 4>, uint16_t x) { return {vdupq_n_u32(x)}; }
HWY_INLINE Vec128<uint8_t> Set(Simd<uint8_t, 4>, uint8_t x) { return {vdupq_n_u32(x)}; }
HWY_INLINE Vec128<int32_t> Iota(Simd<int32_t, 4>, int32_t first) {
  return {vreinterpretq_s32_u32(vidupq_n_u32(static_cast<uint32_t>(first), 1))};
}

HWY_INLINE Vec128<float> LoadU(Simd<float, 4>, const float* p) { return {vldrwq_f32(p)}; }
HWY_INLINE Vec128<float> Load(Simd<float, 4> d, const float* p) { return LoadU(d, p); }
HWY_INLINE Vec128<int32_t> LoadU(Simd<int32_t, 4>, const int32_t* p) { return {vldrwq_s32(p)}; }
HWY_INLINE Vec128<uint16_t> LoadU(Simd<uint16_t, 4>, const uint16_t* p) { return {vldrhq_u32(p)}; }
HWY_INLINE Vec128<int8_t> LoadU(Simd<int8_t, 4>, const int8_t* p) { return {vldrbq_s32(p)}; }
HWY_INLINE Vec128<uint8_t> LoadU(Simd<uint8_t, 4>, const uint8_t* p) { return {vldrbq_u32(p)}; }
HWY_INLINE void StoreU(Vec128<float> v, Simd<float, 4>, float* p) { vstrwq_f32(p, v.raw); }
HWY_INLINE void Store(Vec128<float> v, Simd<float, 4> d, float* p) { StoreU(v, d, p); }

// Lanes [0, n) true (n > 4: all): VCTP, the tail predicate of MVE's loops.
template <class D>
HWY_INLINE Mask<D> FirstN(D, size_t n) {
  return {vctp32q(static_cast<uint32_t>(n < 4 ? n : 4))};
}
// Lanes of m loaded, the others zero; the masked-off lanes are not read (no fault past a row).
HWY_INLINE Vec128<float> MaskedLoad(Mask128<float> m, Simd<float, 4>, const float* p) {
  return {vldrwq_z_f32(p, m.raw)};
}
HWY_INLINE Vec128<uint16_t> MaskedLoad(Mask128<uint16_t> m, Simd<uint16_t, 4>, const uint16_t* p) {
  return {vldrhq_z_u32(p, m.raw)};
}

HWY_INLINE float GetLane(Vec128<float> v) { return vgetq_lane_f32(v.raw, 0); }

// ---- Conversions

template <typename To, typename From>
HWY_INLINE Vec128<To> BitCast(Simd<To, 4>, Vec128<From> v) {
  using RawTo = detail::Raw<To>;
  using RawFrom = detail::Raw<From>;
  if constexpr (std::is_same_v<RawTo, RawFrom>) {
    return {v.raw};
  } else if constexpr (std::is_same_v<RawTo, float32x4_t>) {
    if constexpr (std::is_same_v<RawFrom, int32x4_t>) return {vreinterpretq_f32_s32(v.raw)};
    if constexpr (std::is_same_v<RawFrom, uint32x4_t>) return {vreinterpretq_f32_u32(v.raw)};
  } else if constexpr (std::is_same_v<RawTo, int32x4_t>) {
    if constexpr (std::is_same_v<RawFrom, float32x4_t>) return {vreinterpretq_s32_f32(v.raw)};
    if constexpr (std::is_same_v<RawFrom, uint32x4_t>) return {vreinterpretq_s32_u32(v.raw)};
  } else {
    if constexpr (std::is_same_v<RawFrom, float32x4_t>) return {vreinterpretq_u32_f32(v.raw)};
    if constexpr (std::is_same_v<RawFrom, int32x4_t>) return {vreinterpretq_u32_s32(v.raw)};
  }
}

// Narrow lanes are already widened in their 32-bit lanes.
HWY_INLINE Vec128<uint32_t> PromoteTo(Simd<uint32_t, 4>, Vec128<uint16_t> v) { return {v.raw}; }
HWY_INLINE Vec128<uint32_t> PromoteTo(Simd<uint32_t, 4>, Vec128<uint8_t> v) { return {v.raw}; }
HWY_INLINE Vec128<int32_t> PromoteTo(Simd<int32_t, 4>, Vec128<int8_t> v) { return {v.raw}; }

// f16 → f32, exact (subnormals, infinities, NaN): VCVTB.F32.F16 converts the half in the bottom of
// each 32-bit lane. Hand-encoded (binutils 2.40 doubles the register numbers of the mnemonic):
// T1 encoding 0xFE3F0E01 | Qd << 13 | Qm << 1; the macro finds the numbers of the registers the
// compiler chose.
HWY_INLINE Vec128<float> PromoteTo(Simd<float, 4>, Vec128<hwy::float16_t> v) {
  float32x4_t out;
  __asm__(
      ".ifndef headway_vcvtb_f32_f16_defined\n"
      ".set headway_vcvtb_f32_f16_defined, 1\n"
      ".macro headway_vcvtb_f32_f16 qd, qm\n"
      ".set headway_vcvtb_encoded, 0\n"
      ".irp d, 0, 1, 2, 3, 4, 5, 6, 7\n"
      ".ifc \\qd, q\\d\n"
      ".irp m, 0, 1, 2, 3, 4, 5, 6, 7\n"
      ".ifc \\qm, q\\m\n"
      ".inst.w 0xfe3f0e01 | (\\d << 13) | (\\m << 1)\n"
      ".set headway_vcvtb_encoded, 1\n"
      ".endif\n"
      ".endr\n"
      ".endif\n"
      ".endr\n"
      ".if headway_vcvtb_encoded == 0\n"
      ".error \"headway_vcvtb_f32_f16: operands are not MVE q registers\"\n"
      ".endif\n"
      ".endm\n"
      ".endif\n"
      "headway_vcvtb_f32_f16 %q0, %q1"
      : "=w"(out)
      : "w"(v.raw));
  return {out};
}

// f32 → i32 rounding toward zero (out of range saturates, NaN gives 0), and i32 → f32.
HWY_INLINE Vec128<int32_t> ConvertTo(Simd<int32_t, 4>, Vec128<float> v) { return {vcvtq_s32_f32(v.raw)}; }
HWY_INLINE Vec128<float> ConvertTo(Simd<float, 4>, Vec128<int32_t> v) { return {vcvtq_f32_s32(v.raw)}; }

// ---- Arithmetic

HWY_INLINE Vec128<float> Add(Vec128<float> a, Vec128<float> b) { return {vaddq_f32(a.raw, b.raw)}; }
HWY_INLINE Vec128<float> Sub(Vec128<float> a, Vec128<float> b) { return {vsubq_f32(a.raw, b.raw)}; }
HWY_INLINE Vec128<float> Mul(Vec128<float> a, Vec128<float> b) { return {vmulq_f32(a.raw, b.raw)}; }
// MVE has no vector division: each quotient is taken lane by lane in the S registers.
HWY_INLINE Vec128<float> Div(Vec128<float> a, Vec128<float> b) {
  float32x4_t q = a.raw;
  q = vsetq_lane_f32(vgetq_lane_f32(a.raw, 0) / vgetq_lane_f32(b.raw, 0), q, 0);
  q = vsetq_lane_f32(vgetq_lane_f32(a.raw, 1) / vgetq_lane_f32(b.raw, 1), q, 1);
  q = vsetq_lane_f32(vgetq_lane_f32(a.raw, 2) / vgetq_lane_f32(b.raw, 2), q, 2);
  q = vsetq_lane_f32(vgetq_lane_f32(a.raw, 3) / vgetq_lane_f32(b.raw, 3), q, 3);
  return {q};
}
// a · b + c and c − a · b, fused (one rounding), as Highway's MulAdd / NegMulAdd.
HWY_INLINE Vec128<float> MulAdd(Vec128<float> a, Vec128<float> b, Vec128<float> c) {
  return {vfmaq_f32(c.raw, a.raw, b.raw)};
}
HWY_INLINE Vec128<float> MulAdd(BroadcastF32 a, Vec128<float> b, Vec128<float> c) {
  return {vfmaq_n_f32(c.raw, b.raw, a.x)};
}
HWY_INLINE Vec128<float> MulAdd(Vec128<float> a, BroadcastF32 b, Vec128<float> c) {
  return {vfmaq_n_f32(c.raw, a.raw, b.x)};
}
HWY_INLINE Vec128<float> NegMulAdd(Vec128<float> a, Vec128<float> b, Vec128<float> c) {
  return {vfmsq_f32(c.raw, a.raw, b.raw)};
}
// Lanes of m: a · b + c; the others c, untouched (not Highway 1.0.3's: one predicated VFMA where
// IfThenElse(m, MulAdd(a, b, c), c) takes three instructions).
HWY_INLINE Vec128<float> MaskedMulAdd(Mask128<float> m, BroadcastF32 a, Vec128<float> b, Vec128<float> c) {
  return {vfmaq_m_n_f32(c.raw, b.raw, a.x, m.raw)};
}
// IEEE maxNum: a NaN operand gives the other one. The kernels never rely on Max to carry a NaN (the
// exp of a NaN score does), as on Highway's other targets, which differ in this.
HWY_INLINE Vec128<float> Max(Vec128<float> a, Vec128<float> b) { return {vmaxnmq_f32(a.raw, b.raw)}; }
HWY_INLINE Vec128<float> Abs(Vec128<float> v) { return {vabsq_f32(v.raw)}; }
// To the nearest integer, ties to even.
HWY_INLINE Vec128<float> Round(Vec128<float> v) { return {vrndnq_f32(v.raw)}; }

HWY_INLINE Vec128<int32_t> Add(Vec128<int32_t> a, Vec128<int32_t> b) { return {vaddq_s32(a.raw, b.raw)}; }
HWY_INLINE Vec128<int32_t> Sub(Vec128<int32_t> a, Vec128<int32_t> b) { return {vsubq_s32(a.raw, b.raw)}; }
template <int kBits>
HWY_INLINE Vec128<int32_t> ShiftLeft(Vec128<int32_t> v) {
  return {vshlq_n_s32(v.raw, kBits)};
}

HWY_INLINE Vec128<uint32_t> And(Vec128<uint32_t> a, Vec128<uint32_t> b) { return {vandq_u32(a.raw, b.raw)}; }
HWY_INLINE Vec128<uint8_t> And(Vec128<uint8_t> a, Vec128<uint8_t> b) { return {vandq_u32(a.raw, b.raw)}; }
template <int kBits>
HWY_INLINE Vec128<uint32_t> ShiftLeft(Vec128<uint32_t> v) {
  return {vshlq_n_u32(v.raw, kBits)};
}
template <int kBits>
HWY_INLINE Vec128<uint8_t> ShiftRight(Vec128<uint8_t> v) {  // the lanes hold bytes: no bits enter
  return {vshrq_n_u32(v.raw, kBits)};
}
// Bitwise on f32 lanes (sign and exponent assembly).
HWY_INLINE Vec128<float> Or(Vec128<float> a, Vec128<float> b) {
  return {vreinterpretq_f32_u32(vorrq_u32(vreinterpretq_u32_f32(a.raw), vreinterpretq_u32_f32(b.raw)))};
}

// ---- Comparisons, masks and selection

HWY_INLINE Mask128<float> Lt(Vec128<float> a, Vec128<float> b) { return {vcmpltq_f32(a.raw, b.raw)}; }
HWY_INLINE Mask128<float> Eq(Vec128<float> a, Vec128<float> b) { return {vcmpeqq_f32(a.raw, b.raw)}; }
HWY_INLINE Mask128<float> Ne(Vec128<float> a, Vec128<float> b) { return {vcmpneq_f32(a.raw, b.raw)}; }
HWY_INLINE Mask128<float> IsNaN(Vec128<float> v) { return {vcmpneq_f32(v.raw, v.raw)}; }
HWY_INLINE Mask128<int32_t> Gt(Vec128<int32_t> a, Vec128<int32_t> b) { return {vcmpgtq_s32(a.raw, b.raw)}; }

template <typename T>
HWY_INLINE Mask128<T> Not(Mask128<T> m) {
  return {vpnot(m.raw)};
}
template <typename T>
HWY_INLINE Mask128<T> Or(Mask128<T> a, Mask128<T> b) {
  return {static_cast<mve_pred16_t>(a.raw | b.raw)};
}
// Masks of 32-bit lanes mean the same whatever the lane type.
template <typename To, typename From>
HWY_INLINE Mask128<To> RebindMask(Simd<To, 4>, Mask128<From> m) {
  return {m.raw};
}

HWY_INLINE Vec128<float> IfThenElse(Mask128<float> m, Vec128<float> yes, Vec128<float> no) {
  return {vpselq_f32(yes.raw, no.raw, m.raw)};
}
HWY_INLINE Vec128<float> IfThenElseZero(Mask128<float> m, Vec128<float> yes) {
  return {vpselq_f32(yes.raw, vdupq_n_f32(0.0f), m.raw)};
}
HWY_INLINE Vec128<float> IfThenZeroElse(Mask128<float> m, Vec128<float> no) {
  return {vpselq_f32(vdupq_n_f32(0.0f), no.raw, m.raw)};
}

// ---- Reductions (the result in every lane, as Highway returns them)

// (v0 + v2) + (v1 + v3): the order of Highway's 128-bit reductions. MVE has no floating-point
// add across lanes; the lanes are the scalar FPU's S registers.
HWY_INLINE Vec128<float> SumOfLanes(Simd<float, 4>, Vec128<float> v) {
  const float s =
      (vgetq_lane_f32(v.raw, 0) + vgetq_lane_f32(v.raw, 2)) + (vgetq_lane_f32(v.raw, 1) + vgetq_lane_f32(v.raw, 3));
  return {vdupq_n_f32(s)};
}
HWY_INLINE Vec128<float> MaxOfLanes(Simd<float, 4>, Vec128<float> v) {
  return {vdupq_n_f32(vmaxnmvq_f32(vgetq_lane_f32(v.raw, 0), v.raw))};
}

// dst[0..3] = the sums of all lanes of a, b, c, e, each (x0 + x2) + (x1 + x3) as SumOfLanes: one
// de-interleaving load (VLD4) transposes the four vectors.
HWY_INLINE void StoreSums4(Vec128<float> a, Vec128<float> b, Vec128<float> c, Vec128<float> e, float* dst) {
  alignas(16) float m[16];
  vstrwq_f32(m + 0, a.raw);
  vstrwq_f32(m + 4, b.raw);
  vstrwq_f32(m + 8, c.raw);
  vstrwq_f32(m + 12, e.raw);
  const float32x4x4_t t = vld4q_f32(m);  // t.val[i] = lane i of a, b, c, e
  vstrwq_f32(dst, vaddq_f32(vaddq_f32(t.val[0], t.val[2]), vaddq_f32(t.val[1], t.val[3])));
}

// ---- Math

// tanh(x), within a few ulp; NaN stays NaN. Small |x|: the odd Taylor series to x^13 (below 0.4 the
// next term is under 1e-8 relative); otherwise (1 − u) / (1 + u) with u = e^(−2|x|) from exp_neg,
// the caller's exp of a non-positive argument (0 below 2^-125, which gives ±1).
template <class ExpNeg>
HWY_INLINE Vec128<float> Tanh(Simd<float, 4> d, Vec128<float> x, const ExpNeg& exp_neg) {
  const Vec128<float> ax = Abs(x);
  const Vec128<float> x2 = Mul(x, x);
  Vec128<float> p = Set(d, 21844.0f / 6081075.0f);
  p = MulAdd(p, x2, Set(d, -1382.0f / 155925.0f));
  p = MulAdd(p, x2, Set(d, 62.0f / 2835.0f));
  p = MulAdd(p, x2, Set(d, -17.0f / 315.0f));
  p = MulAdd(p, x2, Set(d, 2.0f / 15.0f));
  p = MulAdd(p, x2, Set(d, -1.0f / 3.0f));
  const Vec128<float> small = MulAdd(Mul(p, x2), x, x);
  const Vec128<float> u = exp_neg(Mul(ax, Set(d, -2.0f)));
  const Vec128<float> num = Sub(Set(d, 1.0f), u), den = Add(Set(d, 1.0f), u);
  // |tanh| with x's sign: the sign bit of x ORed into the non-negative quotient.
  const Vec128<float> sign = BitCast(d, And(BitCast(Simd<uint32_t, 4>(), x), Set(Simd<uint32_t, 4>(), 0x80000000u)));
  const Vec128<float> large = Or(Div(num, den), sign);
  return IfThenElse(Lt(ax, Set(d, 0.4f)), small, large);
}

}  // namespace helium
}  // namespace simd
}  // namespace headway
