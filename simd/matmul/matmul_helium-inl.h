// The decode GEMV (t == 1) over q8_0 and q4_0 weights in integers on Helium (Armv8.1-M MVE:
// Cortex-M55, M85; simd/helium.h), for which Highway has no target. x is quantized once per call
// per block of 32 values as the other integer paths do (d_x = max|x| / kMax, code = x · (kMax /
// max|x|) rounded to nearest even, d_x NaN for a block with a value that is not finite), each
// weight block's sum of products is one scalar int32 of VMLADAV (multiply-accumulate across the
// vector, exact), and four blocks' sums at a time are converted and meet d_w · d_x in one FMA:
//   q8_0  x in 16-bit codes (kMax 32767, as precise_x on the other targets, whatever precise_x
//         says): the weight bytes load 8 at a time sign-extended to 16-bit lanes (VLDRB.S16), four
//         VMLADAV.S16 per block. 8-bit x would take two VMLADAV.S8 instead, but its rounding (half
//         a code of max|x| / 127 per value) in every projection moves the firmware's whole-decoder
//         logits (examples/baremetal) far past the 1e-3 it holds them to against its double
//         reference; at 16 bits they stay within it.
//   q4_0  x in 8-bit codes (kMax 127) as ggml quantizes it: the nibbles as they are (0..15), two
//         VMLADAV.S8 per block, −8 · Σ of the block's codes added to its sum:
//         Σ w x = d_w d_x (Σ q c − 8 Σ c).
// The codes lie on the stack (kMaxQuantizedIn values: 8 KiB of 16-bit ones, 2 KiB beside). Two
// rows share each load of x's codes. Each row's arithmetic is the same whichever row it goes with:
// any split of the output rows gives bitwise the same y.

#if defined(HEADWAY_SIMD_MATMUL_MATMUL_HELIUM_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef HEADWAY_SIMD_MATMUL_MATMUL_HELIUM_INL_H_
#undef HEADWAY_SIMD_MATMUL_MATMUL_HELIUM_INL_H_
#else
#define HEADWAY_SIMD_MATMUL_MATMUL_HELIUM_INL_H_
#endif

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "hwy/highway.h"
#include "simd/matmul/matmul.h"
#include "simd/vector_ops.h"

HWY_BEFORE_NAMESPACE();
namespace headway {
namespace simd {
namespace HWY_NAMESPACE {
namespace mm {

#if HEADWAY_SIMD_HELIUM

inline constexpr size_t kMaxQuantizedIn = 4096;

inline bool IntegerGemv(const MatmulArgs& a) {
  if (a.w_row_groups || a.t != 1 || a.in > kMaxQuantizedIn) return false;
  return a.w_type == WeightType::kQ8_0 || (a.w_type == WeightType::kQ4_0 && !a.precise_x);
}

// Block b of x (nb blocks) to codes of at most kMax, d_x and Σ of the codes. max|x| is the largest
// of the values' bits less the sign, as unsigned integers: they order as the values do, a NaN above
// infinity (VMAXNM would drop a NaN). x is read twice, for max|x| and then for the codes, so that
// the 8 values' vectors need not stay in MVE's 8 registers.
template <int kMax, typename Code>
HWY_INLINE void HeliumQuantize(const float* HWY_RESTRICT x, size_t nb, Code* HWY_RESTRICT codes, float* HWY_RESTRICT dx,
                               int32_t* HWY_RESTRICT sums) {
  const uint32x4_t abs_mask = vdupq_n_u32(0x7fffffffu);
  for (size_t b = 0; b < nb; ++b) {
    const float* v = x + 32 * b;
    uint32x4_t m = vandq_u32(vreinterpretq_u32_f32(vldrwq_f32(v)), abs_mask);
    for (size_t i = 4; i < 32; i += 4) m = vmaxq_u32(m, vandq_u32(vreinterpretq_u32_f32(vldrwq_f32(v + i)), abs_mask));
    const uint32_t top = vmaxvq_u32(0, m);
    float amax;
    std::memcpy(&amax, &top, 4);
    const bool finite = top < 0x7f800000u;
    const float id = finite && amax != 0.0f ? static_cast<float>(kMax) / amax : 0.0f;
    dx[b] = finite ? amax / static_cast<float>(kMax) : std::numeric_limits<float>::quiet_NaN();
    int32_t sum = 0;
    for (size_t i = 0; i < 32; i += 4) {
      // |x · id| <= kMax (rounded, at most kMax): the narrowing stores keep every code whole.
      const int32x4_t c = vcvtnq_s32_f32(vmulq_n_f32(vldrwq_f32(v + i), id));
      if constexpr (std::is_same_v<Code, int8_t>) {
        vstrbq_s32(codes + 32 * b + i, c);
      } else {
        vstrhq_s32(codes + 32 * b + i, c);
      }
      sum = vaddvaq_s32(sum, c);
    }
    sums[b] = sum;
  }
}

// Σ q c over the 32 values of the weight blocks at w0 and w1 (their f16 scales first; kTwo false:
// w0 alone) and x's codes xb, exact, into d0 and d1: each 16-byte run of codes loaded once for both.
template <WeightType kW, bool kTwo, typename Code>
HWY_INLINE void HeliumDots(const uint8_t* HWY_RESTRICT w0, const uint8_t* HWY_RESTRICT w1, const Code* HWY_RESTRICT xb,
                           int32_t* d0, int32_t* d1) {
  if constexpr (kW == WeightType::kQ8_0) {
    const int8_t* q0 = reinterpret_cast<const int8_t*>(w0 + 2);
    const int8_t* q1 = reinterpret_cast<const int8_t*>(w1 + 2);
    int16x8_t x = vldrhq_s16(xb);
    int32_t s0 = vmladavq_s16(vldrbq_s16(q0), x), s1 = kTwo ? vmladavq_s16(vldrbq_s16(q1), x) : 0;
    for (size_t i = 8; i < 32; i += 8) {
      x = vldrhq_s16(xb + i);
      s0 = vmladavaq_s16(s0, vldrbq_s16(q0 + i), x);
      if constexpr (kTwo) s1 = vmladavaq_s16(s1, vldrbq_s16(q1 + i), x);
    }
    *d0 = s0;
    if constexpr (kTwo) *d1 = s1;
  } else {
    const uint8x16_t low4 = vdupq_n_u8(0x0F);
    const uint8x16_t c0 = vldrbq_u8(w0 + 2), c1 = kTwo ? vldrbq_u8(w1 + 2) : c0;
    const int8x16_t lo = vldrbq_s8(xb), hi = vldrbq_s8(xb + 16);
    *d0 = vmladavaq_s8(vmladavq_s8(vreinterpretq_s8_u8(vandq_u8(c0, low4)), lo), vreinterpretq_s8_u8(vshrq_n_u8(c0, 4)),
                       hi);
    if constexpr (kTwo) {
      *d1 = vmladavaq_s8(vmladavq_s8(vreinterpretq_s8_u8(vandq_u8(c1, low4)), lo),
                         vreinterpretq_s8_u8(vshrq_n_u8(c1, 4)), hi);
    }
  }
}

// y[o] (and y[o + 1] with kTwo) of q8_0 (x in 16-bit codes) or q4_0 rows (8-bit codes) from their
// blocks' int32 sums (dots0, dots1): four blocks at a time (the last group under a tail predicate)
// the sums converted (q4_0's −8 · Σ c added first), the f16 scales gathered byte by byte (rows of
// 18- or 34-byte blocks align to nothing) and widened at once, and one FMA by d_w · d_x.
template <WeightType kW, bool kTwo>
HWY_INLINE void HeliumScaleRows(const MatmulArgs& a, const float* HWY_RESTRICT dxs, const int32_t* HWY_RESTRICT sums,
                                const int32_t* HWY_RESTRICT dots0, const int32_t* HWY_RESTRICT dots1, size_t o) {
  constexpr uint32_t kB = kW == WeightType::kQ8_0 ? 34 : 18;
  const size_t nb = a.in / 32, row_bytes = a.w_stride / 32 * kB;
  const uint8_t* w = static_cast<const uint8_t*>(a.w) + o * row_bytes;
  const uint32x4_t offsets = vmulq_n_u32(vidupq_n_u32(0u, 1), kB);  // four blocks' first bytes
  const auto scales = [&](const uint8_t* blk, mve_pred16_t p) {
    const uint32x4_t lo = vldrbq_gather_offset_z_u32(blk, offsets, p);
    const uint32x4_t hi = vldrbq_gather_offset_z_u32(blk + 1, offsets, p);
    return helium::PromoteTo(helium::Simd<float, 4>(), helium::Vec128<hwy::float16_t>{vsliq_n_u32(lo, hi, 8)}).raw;
  };
  float32x4_t acc0 = vdupq_n_f32(0.0f), acc1 = vdupq_n_f32(0.0f);
  for (size_t b = 0; b < nb; b += 4) {
    const mve_pred16_t p = vctp32q(static_cast<uint32_t>(nb - b));
    const float32x4_t dx = vldrwq_z_f32(dxs + b, p);
    int32x4_t s0 = vldrwq_z_s32(dots0 + b, p), s1 = kTwo ? vldrwq_z_s32(dots1 + b, p) : s0;
    if constexpr (kW == WeightType::kQ4_0) {
      const int32x4_t c = vldrwq_z_s32(sums + b, p);
      s0 = vmlaq_n_s32(s0, c, -8);
      if constexpr (kTwo) s1 = vmlaq_n_s32(s1, c, -8);
    }
    acc0 = vfmaq_f32(acc0, vcvtq_f32_s32(s0), vmulq_f32(scales(w + b * kB, p), dx));
    if constexpr (kTwo) acc1 = vfmaq_f32(acc1, vcvtq_f32_s32(s1), vmulq_f32(scales(w + row_bytes + b * kB, p), dx));
  }
  const helium::Simd<float, 4> df;
  a.y[o] = helium::GetLane(helium::SumOfLanes(df, helium::Vec128<float>{acc0}));
  if constexpr (kTwo) a.y[o + 1] = helium::GetLane(helium::SumOfLanes(df, helium::Vec128<float>{acc1}));
}

// Rows two at a time, each 16-byte run of x's codes loaded once for both (more rows spill: MVE
// has 8 vector registers, and the scalar FPU's registers are among them). The blocks' sums go
// through `dots` so that the loops GCC 12 compiles stay in registers; each row's arithmetic is the
// same whichever rows it goes with.
template <WeightType kW, typename Code>
HWY_INLINE void HeliumRows(const MatmulArgs& a, const Code* HWY_RESTRICT codes, const float* HWY_RESTRICT dxs,
                           const int32_t* HWY_RESTRICT sums, int32_t* HWY_RESTRICT dots, size_t o_begin, size_t o_end) {
  constexpr size_t kB = kW == WeightType::kQ8_0 ? 34 : 18;
  const size_t nb = a.in / 32, row_bytes = a.w_stride / 32 * kB;
  int32_t* dots1 = dots + kMaxQuantizedIn / 32;
  size_t o = o_begin;
  for (; o + 2 <= o_end; o += 2) {
    const uint8_t* w0 = static_cast<const uint8_t*>(a.w) + o * row_bytes;
    for (size_t b = 0; b < nb; ++b) {
      HeliumDots<kW, true>(w0 + b * kB, w0 + row_bytes + b * kB, codes + 32 * b, dots + b, dots1 + b);
    }
    HeliumScaleRows<kW, true>(a, dxs, sums, dots, dots1, o);
  }
  if (o < o_end) {
    const uint8_t* w0 = static_cast<const uint8_t*>(a.w) + o * row_bytes;
    for (size_t b = 0; b < nb; ++b) HeliumDots<kW, false>(w0 + b * kB, w0 + b * kB, codes + 32 * b, dots + b, dots + b);
    HeliumScaleRows<kW, false>(a, dxs, sums, dots, dots, o);
  }
}

HWY_NOINLINE void MatmulInteger(const MatmulArgs& a, size_t o_begin, size_t o_end) {
  const size_t nb = a.in / 32;
  float dx[kMaxQuantizedIn / 32];
  int32_t sums[kMaxQuantizedIn / 32];
  int32_t dots[2 * kMaxQuantizedIn / 32];  // two rows' block sums
  if (a.w_type == WeightType::kQ8_0) {
    alignas(16) int16_t codes[kMaxQuantizedIn];
    HeliumQuantize<32767>(a.x, nb, codes, dx, sums);
    HeliumRows<WeightType::kQ8_0>(a, codes, dx, sums, dots, o_begin, o_end);
  } else {
    alignas(16) int8_t codes[kMaxQuantizedIn];
    HeliumQuantize<127>(a.x, nb, codes, dx, sums);
    HeliumRows<WeightType::kQ4_0>(a, codes, dx, sums, dots, o_begin, o_end);
  }
}

#endif  // HEADWAY_SIMD_HELIUM

}  // namespace mm
}  // namespace HWY_NAMESPACE
}  // namespace simd
}  // namespace headway
HWY_AFTER_NAMESPACE();

#endif  // HEADWAY_SIMD_MATMUL_MATMUL_HELIUM_INL_H_
