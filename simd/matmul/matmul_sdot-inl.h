// The decode GEMV (t == 1) over q8_0, q4_0, q4_1, q5_0, q5_1, q4_K and q6_K weights in integers on
// AArch64 with Arm's dot product extension (SDOT, Armv8.2: Cortex-A55/A76 and later), as
// matmul_int8-inl.h does it on AVX-512 VNNI: x is quantized once per call exactly as there (codes
// and d_x bit for bit: d_x = max|x| / 127, code = x · (127 / max|x|) rounded to nearest even, d_x
// NaN for a block with a value that is not finite), each block's integer sum is the same exact
// int32 and meets the same scales; only the order of the f32 sums differs (4 lanes, not 16).
// No Highway 1.0.3 target of AArch64 requires SDOT and Highway has no op for it: as in
// attention_decode_int8-inl.h, every AArch64 SIMD target (NEON, and the SVE ones, whose cores have
// NEON) asks the OS once (HWCAP_ASIMDDP; a build for Armv8.2+dotprod knows) and runs functions
// compiled for Armv8.2 with the extension, in NEON intrinsics (GCC's pragma spelling).
//
// SDOT multiplies signed bytes by signed bytes, four products to an int32 lane, 16 per
// instruction. x's codes lie on the stack in value order per block of 32 (kMaxQuantizedIn values:
// 10 KiB), beside each block's d_x and d_x · Σ of its codes; each weight block loads as two 16-byte
// runs of signed values in the same order (a q4/q5 byte j holds values j and j + 16):
//   q8_0  q as it is                       Σ w x = d_w d_x Σ q c
//   q4_0  nibble − 8, q5_0 (nibble | fifth bit << 4) − 16: as q8_0
//   q4_1, q5_1  nibble (| fifth bit << 4)   Σ w x = d_w d_x Σ q c + m_w (d_x Σ c)
//   q4_K  per 32-value sub-block j (chunk j / 2's low or high nibbles):
//                                          (d·sc_j) d_x Σ q c − (dmin·m_j) (d_x Σ c)
//   q6_K  per block of 32 (values l + 32k of a half, l < 32: two 16-value sub-blocks) the two
//         sub-blocks' sums times their int8 scales in int32 (exact), then times d · d_x
// Per block and row: two SDOTs into one int32 vector, one conversion, one FMA. Four rows of the
// 32-value types share each load of x's codes. precise_x over q8_0 (x in 16-bit codes, as
// GemvQ8Wide of matmul_int8-inl.h) widens the weight bytes and multiplies with SMLAL, which every
// AArch64 core has. Rows are independent: any split of the output rows gives bitwise the same y.

#if defined(HEADWAY_SIMD_MATMUL_MATMUL_SDOT_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef HEADWAY_SIMD_MATMUL_MATMUL_SDOT_INL_H_
#undef HEADWAY_SIMD_MATMUL_MATMUL_SDOT_INL_H_
#else
#define HEADWAY_SIMD_MATMUL_MATMUL_SDOT_INL_H_
#endif

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "headway/detail/ggml_blocks.hpp"
#include "hwy/highway.h"
#include "simd/matmul/matmul.h"

#undef HEADWAY_MATMUL_SDOT
#if HWY_ARCH_ARM_A64 && HWY_TARGET != HWY_EMU128 && HWY_TARGET != HWY_SCALAR && HWY_COMPILER_GCC_ACTUAL && \
    (defined(__linux__) || defined(__ARM_FEATURE_DOTPROD))
#define HEADWAY_MATMUL_SDOT 1
#include <arm_neon.h>
#if !defined(__ARM_FEATURE_DOTPROD)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#endif
#else
#define HEADWAY_MATMUL_SDOT 0
#endif

HWY_BEFORE_NAMESPACE();
namespace headway {
namespace simd {
namespace HWY_NAMESPACE {
namespace mm {

#if HEADWAY_MATMUL_SDOT

inline constexpr size_t kMaxQuantizedIn = 8192;

inline bool SdotAvailable() {
#if defined(__ARM_FEATURE_DOTPROD)
  return true;
#else
  static const bool has = (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0;
  return has;
#endif
}

// Whether the integer GEMV takes this call (with precise_x: q8_0 alone, x at 16 bits, on any core).
inline bool IntegerGemv(const MatmulArgs& a) {
  if (a.w_row_groups || a.t != 1 || a.in > kMaxQuantizedIn) return false;
  if (a.precise_x) return integer_gemv_reads(a.w_type, true);  // 16-bit codes: on any core
  return SdotAvailable() && integer_gemv_reads(a.w_type, false);
}

// max|x| of the 32 values in v (NaN when one is NaN: FMAX and FMAXV carry it).
HWY_INLINE float BlockAbsMax(const float32x4_t (&v)[8]) {
  float32x4_t m = vabsq_f32(v[0]);
  for (size_t i = 1; i < 8; ++i) m = vmaxq_f32(m, vabsq_f32(v[i]));
  return vmaxvq_f32(m);
}

// precise_x over q8_0: x in 16-bit codes per block of 32 (d_x = max|x| / 32767), each weight
// block widened to 16 bits and met by SMULL/SMLAL (8 products per lane at most: exact in int32).
HWY_NOINLINE void GemvQ8Wide(const MatmulArgs& a, size_t o_begin, size_t o_end) {
  const size_t nb = a.in / 32;
  alignas(16) int16_t codes[kMaxQuantizedIn];
  float dxs[kMaxQuantizedIn / 32];
  for (size_t b = 0; b < nb; ++b) {
    float32x4_t v[8];
    for (size_t i = 0; i < 8; ++i) v[i] = vld1q_f32(a.x + 32 * b + 4 * i);
    const float amax = BlockAbsMax(v);
    const bool finite = amax <= std::numeric_limits<float>::max();
    const float id = finite && amax != 0.0f ? 32767.0f / amax : 0.0f;
    dxs[b] = finite ? amax / 32767.0f : std::numeric_limits<float>::quiet_NaN();
    for (size_t i = 0; i < 8; ++i) vst1_s16(codes + 32 * b + 4 * i, vqmovn_s32(vcvtnq_s32_f32(vmulq_n_f32(v[i], id))));
  }
  const size_t row_bytes = a.w_stride / 32 * 34;
  const uint8_t* w = static_cast<const uint8_t*>(a.w);
  const auto rows = [&](size_t o, auto kR) {
    constexpr size_t R = decltype(kR)::value;
    float32x4_t acc[R];
    for (size_t r = 0; r < R; ++r) acc[r] = vdupq_n_f32(0.0f);
    for (size_t b = 0; b < nb; ++b) {
      const int16x8_t x0 = vld1q_s16(codes + 32 * b), x1 = vld1q_s16(codes + 32 * b + 8);
      const int16x8_t x2 = vld1q_s16(codes + 32 * b + 16), x3 = vld1q_s16(codes + 32 * b + 24);
      for (size_t r = 0; r < R; ++r) {
        const uint8_t* blk = w + (o + r) * row_bytes + b * 34;
        __fp16 h;
        std::memcpy(&h, blk, 2);
        const int8x16_t c0 = vld1q_s8(reinterpret_cast<const int8_t*>(blk + 2));
        const int8x16_t c1 = vld1q_s8(reinterpret_cast<const int8_t*>(blk + 18));
        const int16x8_t w0 = vmovl_s8(vget_low_s8(c0)), w1 = vmovl_high_s8(c0);
        const int16x8_t w2 = vmovl_s8(vget_low_s8(c1)), w3 = vmovl_high_s8(c1);
        int32x4_t s = vmull_s16(vget_low_s16(w0), vget_low_s16(x0));
        s = vmlal_high_s16(s, w0, x0);
        s = vmlal_s16(s, vget_low_s16(w1), vget_low_s16(x1));
        s = vmlal_high_s16(s, w1, x1);
        s = vmlal_s16(s, vget_low_s16(w2), vget_low_s16(x2));
        s = vmlal_high_s16(s, w2, x2);
        s = vmlal_s16(s, vget_low_s16(w3), vget_low_s16(x3));
        s = vmlal_high_s16(s, w3, x3);
        acc[r] = vfmaq_n_f32(acc[r], vcvtq_f32_s32(s), static_cast<float>(h) * dxs[b]);
      }
    }
    for (size_t r = 0; r < R; ++r) a.y[o + r] = vaddvq_f32(acc[r]);
  };
  size_t o = o_begin;
  for (; o + 4 <= o_end; o += 4) rows(o, std::integral_constant<size_t, 4>());
  for (; o < o_end; ++o) rows(o, std::integral_constant<size_t, 1>());
}

// Everything below runs SDOT: compiled for Armv8.2 with the extension, called only where the CPU
// has it. (GCC 12 gives the functions defined after one with a target attribute that target too,
// so that the kernels could no longer inline theirs: the pragmas keep it to this part. Functions
// of the other targets are not inlined into it either: its helpers are its own.)
#pragma GCC push_options
#pragma GCC target("arch=armv8.2-a+dotprod")

struct SdotX {
  alignas(16) int8_t codes[kMaxQuantizedIn];  // value order, per block of 32
  float dx[kMaxQuantizedIn / 32];             // the block's d_x
  float sx[kMaxQuantizedIn / 32];             // d_x · Σ of the block's codes
};

HWY_INLINE float SdotF16(const uint8_t* p) {
  __fp16 h;
  std::memcpy(&h, p, 2);
  return static_cast<float>(h);
}

HWY_INLINE void SdotQuantize(const float* HWY_RESTRICT x, size_t nb, SdotX* q) {
  for (size_t b = 0; b < nb; ++b) {
    float32x4_t v[8];
    for (size_t i = 0; i < 8; ++i) v[i] = vld1q_f32(x + 32 * b + 4 * i);
    float32x4_t m = vabsq_f32(v[0]);
    for (size_t i = 1; i < 8; ++i) m = vmaxq_f32(m, vabsq_f32(v[i]));
    const float amax = vmaxvq_f32(m);  // NaN when a value is NaN (FMAX and FMAXV carry it)
    const bool finite = amax <= std::numeric_limits<float>::max();
    const float id = finite && amax != 0.0f ? 127.0f / amax : 0.0f;
    const float d = finite ? amax / 127.0f : std::numeric_limits<float>::quiet_NaN();
    int16x8_t h[4];
    for (size_t i = 0; i < 4; ++i) {
      h[i] = vcombine_s16(vqmovn_s32(vcvtnq_s32_f32(vmulq_n_f32(v[2 * i], id))),
                          vqmovn_s32(vcvtnq_s32_f32(vmulq_n_f32(v[2 * i + 1], id))));
    }
    vst1q_s8(q->codes + 32 * b, vcombine_s8(vqmovn_s16(h[0]), vqmovn_s16(h[1])));
    vst1q_s8(q->codes + 32 * b + 16, vcombine_s8(vqmovn_s16(h[2]), vqmovn_s16(h[3])));
    q->dx[b] = d;
    q->sx[b] = d * static_cast<float>(vaddvq_s16(vaddq_s16(vaddq_s16(h[0], h[1]), vaddq_s16(h[2], h[3]))));
  }
}

// The 32-value block formats (layouts: headway/ggml_types.hpp): byte offsets of qs, qh (0: none)
// and m (0: none), and the offset subtracted from each code.
struct SdotFormat {
  size_t block_bytes, codes, high, min;
  uint8_t offset;
};
template <WeightType kW>
constexpr SdotFormat kSdot = kW == WeightType::kQ8_0   ? SdotFormat{34, 2, 0, 0, 0}
                             : kW == WeightType::kQ4_0 ? SdotFormat{18, 2, 0, 0, 8}
                             : kW == WeightType::kQ4_1 ? SdotFormat{20, 4, 0, 2, 0}
                             : kW == WeightType::kQ5_0 ? SdotFormat{22, 6, 2, 0, 16}
                                                       : SdotFormat{24, 8, 4, 2, 0};  // q5_1

// A weight block's values 0-15 (w0) and 16-31 (w1) as signed bytes, its d_w and m_w.
template <WeightType kW>
HWY_INLINE void SdotBlock(const uint8_t* blk, int8x16_t& w0, int8x16_t& w1, float& d, float& m) {
  constexpr SdotFormat kF = kSdot<kW>;
  d = SdotF16(blk);
  if constexpr (kF.min != 0) m = SdotF16(blk + kF.min);
  if constexpr (kW == WeightType::kQ8_0) {
    w0 = vld1q_s8(reinterpret_cast<const int8_t*>(blk + 2));
    w1 = vld1q_s8(reinterpret_cast<const int8_t*>(blk + 18));
  } else {
    const uint8x16_t c = vld1q_u8(blk + kF.codes);
    uint8x16_t lo = vandq_u8(c, vdupq_n_u8(0x0F)), hi = vshrq_n_u8(c, 4);
    if constexpr (kF.high != 0) {  // bit j of qh is value j's fifth bit: byte j / 8, bit j % 8
      static constexpr uint8_t kBit[16] = {1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128};
      static constexpr uint8_t kLow[16] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1};
      static constexpr uint8_t kHigh[16] = {2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3};
      const uint8x8_t qh8 = vld1_u8(blk + kF.high);  // qh and the first codes after it
      const uint8x16_t qh = vcombine_u8(qh8, qh8), bit = vld1q_u8(kBit), five = vdupq_n_u8(0x10);
      lo = vorrq_u8(lo, vandq_u8(vtstq_u8(vqtbl1q_u8(qh, vld1q_u8(kLow)), bit), five));
      hi = vorrq_u8(hi, vandq_u8(vtstq_u8(vqtbl1q_u8(qh, vld1q_u8(kHigh)), bit), five));
    }
    w0 = vsubq_s8(vreinterpretq_s8_u8(lo), vdupq_n_s8(static_cast<int8_t>(kF.offset)));
    w1 = vsubq_s8(vreinterpretq_s8_u8(hi), vdupq_n_s8(static_cast<int8_t>(kF.offset)));
  }
}

HWY_INLINE int32x4_t Sdot32(int8x16_t w0, int8x16_t w1, const int8_t* x) {
  return vdotq_s32(vdotq_s32(vdupq_n_s32(0), w0, vld1q_s8(x)), w1, vld1q_s8(x + 16));
}

// y[o, o + R) of a 32-value block type.
template <WeightType kW, size_t R>
HWY_INLINE void SdotRows(const MatmulArgs& a, const SdotX& q, size_t o) {
  constexpr size_t kB = kSdot<kW>.block_bytes;
  const size_t nb = a.in / 32, row_bytes = a.w_stride / 32 * kB;
  const uint8_t* w = static_cast<const uint8_t*>(a.w) + o * row_bytes;
  float32x4_t acc[R];
  float mins[R];
  for (size_t r = 0; r < R; ++r) {
    acc[r] = vdupq_n_f32(0.0f);
    mins[r] = 0.0f;
  }
  for (size_t b = 0; b < nb; ++b) {
    const int8x16_t x0 = vld1q_s8(q.codes + 32 * b), x1 = vld1q_s8(q.codes + 32 * b + 16);
    const float dx = q.dx[b];
    for (size_t r = 0; r < R; ++r) {
      int8x16_t w0, w1;
      float d, m;
      SdotBlock<kW>(w + r * row_bytes + b * kB, w0, w1, d, m);
      const int32x4_t dot = vdotq_s32(vdotq_s32(vdupq_n_s32(0), w0, x0), w1, x1);
      acc[r] = vfmaq_n_f32(acc[r], vcvtq_f32_s32(dot), d * dx);
      if constexpr (kSdot<kW>.min != 0) mins[r] = std::fma(m, q.sx[b], mins[r]);
    }
  }
  for (size_t r = 0; r < R; ++r) a.y[o + r] = vaddvq_f32(acc[r]) + mins[r];
}

template <WeightType kW>
HWY_NOINLINE void SdotGemv(const MatmulArgs& a, const SdotX& q, size_t o_begin, size_t o_end) {
  size_t o = o_begin;
  for (; o + 4 <= o_end; o += 4) SdotRows<kW, 4>(a, q, o);
  for (; o < o_end; ++o) SdotRows<kW, 1>(a, q, o);
}

// q4_K: per super-block of 256, four chunks of 32 bytes: low nibbles sub-block 2c, high 2c + 1.
HWY_NOINLINE void SdotQ4K(const MatmulArgs& a, const SdotX& q, size_t o_begin, size_t o_end) {
  const size_t ns = a.in / 256, row_bytes = a.w_stride / 256 * 144;
  const uint8x16_t low4 = vdupq_n_u8(0x0F);
  for (size_t o = o_begin; o < o_end; ++o) {
    float32x4_t acc = vdupq_n_f32(0.0f);
    float mins = 0.0f;
    for (size_t s = 0; s < ns; ++s) {
      const uint8_t* blk = static_cast<const uint8_t*>(a.w) + o * row_bytes + s * 144;
      const float d = SdotF16(blk), dmin = SdotF16(blk + 2);
      for (size_t c = 0; c < 4; ++c) {
        unsigned s0, m0, s1, m1;
        ggml_blocks::k4_scale_min(blk + 4, 2 * c, &s0, &m0);
        ggml_blocks::k4_scale_min(blk + 4, 2 * c + 1, &s1, &m1);
        const uint8x16_t n0 = vld1q_u8(blk + 16 + 32 * c), n1 = vld1q_u8(blk + 32 + 32 * c);
        const size_t b = 8 * s + 2 * c;
        const int32x4_t dot0 =
            Sdot32(vreinterpretq_s8_u8(vandq_u8(n0, low4)), vreinterpretq_s8_u8(vandq_u8(n1, low4)), q.codes + 32 * b);
        const int32x4_t dot1 = Sdot32(vreinterpretq_s8_u8(vshrq_n_u8(n0, 4)), vreinterpretq_s8_u8(vshrq_n_u8(n1, 4)),
                                      q.codes + 32 * b + 32);
        acc = vfmaq_n_f32(acc, vcvtq_f32_s32(dot0), d * static_cast<float>(s0) * q.dx[b]);
        acc = vfmaq_n_f32(acc, vcvtq_f32_s32(dot1), d * static_cast<float>(s1) * q.dx[b + 1]);
        mins = std::fma(dmin * static_cast<float>(m0), q.sx[b], mins);
        mins = std::fma(dmin * static_cast<float>(m1), q.sx[b + 1], mins);
      }
    }
    a.y[o] = vaddvq_f32(acc) - mins;
  }
}

// q6_K: per super-block of 256, two halves of 128 values (64 bytes of ql, 32 of qh, 8 scales).
// Value l + 32k of a half: a nibble of ql[l] (k = 0, 2) or ql[l + 32] (k = 1, 3), low for k < 2,
// bits 2k, 2k + 1 of qh[l] above it; scale 2k + l / 16 of the half.
HWY_NOINLINE void SdotQ6K(const MatmulArgs& a, const SdotX& q, size_t o_begin, size_t o_end) {
  const size_t ns = a.in / 256, row_bytes = a.w_stride / 256 * 210;
  const uint8x16_t low4 = vdupq_n_u8(0x0F), bits45 = vdupq_n_u8(0x30);
  const int8x16_t k32 = vdupq_n_s8(32);
  for (size_t o = o_begin; o < o_end; ++o) {
    float32x4_t acc = vdupq_n_f32(0.0f);
    for (size_t s = 0; s < ns; ++s) {
      const uint8_t* blk = static_cast<const uint8_t*>(a.w) + o * row_bytes + s * 210;
      const float d = SdotF16(blk + 208);
      for (size_t h = 0; h < 2; ++h) {
        const uint8_t* ql = blk + 64 * h;
        const int8_t* sc = reinterpret_cast<const int8_t*>(blk + 192 + 8 * h);
        const uint8x16_t qh0 = vld1q_u8(blk + 128 + 32 * h), qh1 = vld1q_u8(blk + 144 + 32 * h);
        for (size_t k = 0; k < 4; ++k) {
          const uint8_t* nib = ql + (k % 2) * 32;
          uint8x16_t l0 = vld1q_u8(nib), l1 = vld1q_u8(nib + 16);
          l0 = k < 2 ? vandq_u8(l0, low4) : vshrq_n_u8(l0, 4);
          l1 = k < 2 ? vandq_u8(l1, low4) : vshrq_n_u8(l1, 4);
          // qh's bits 2k, 2k + 1 to bits 4, 5 (a negative count shifts right)
          const int8x16_t up = vdupq_n_s8(static_cast<int8_t>(4 - 2 * static_cast<int>(k)));
          const uint8x16_t h0 = vandq_u8(vshlq_u8(qh0, up), bits45), h1 = vandq_u8(vshlq_u8(qh1, up), bits45);
          const int8x16_t w0 = vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(l0, h0)), k32);
          const int8x16_t w1 = vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(l1, h1)), k32);
          const size_t b = 8 * s + 4 * h + k;
          const int32x4_t dot0 = vdotq_s32(vdupq_n_s32(0), w0, vld1q_s8(q.codes + 32 * b));
          const int32x4_t dot1 = vdotq_s32(vdupq_n_s32(0), w1, vld1q_s8(q.codes + 32 * b + 16));
          const int32x4_t sum = vmlaq_n_s32(vmulq_n_s32(dot0, sc[2 * k]), dot1, sc[2 * k + 1]);
          acc = vfmaq_n_f32(acc, vcvtq_f32_s32(sum), d * q.dx[b]);
        }
      }
    }
    a.y[o] = vaddvq_f32(acc);
  }
}

HWY_NOINLINE void SdotMatmul(const MatmulArgs& a, size_t o_begin, size_t o_end) {
  SdotX q;
  SdotQuantize(a.x, a.in / 32, &q);
  switch (a.w_type) {
    case WeightType::kQ8_0: return SdotGemv<WeightType::kQ8_0>(a, q, o_begin, o_end);
    case WeightType::kQ4_0: return SdotGemv<WeightType::kQ4_0>(a, q, o_begin, o_end);
    case WeightType::kQ4_1: return SdotGemv<WeightType::kQ4_1>(a, q, o_begin, o_end);
    case WeightType::kQ5_0: return SdotGemv<WeightType::kQ5_0>(a, q, o_begin, o_end);
    case WeightType::kQ5_1: return SdotGemv<WeightType::kQ5_1>(a, q, o_begin, o_end);
    case WeightType::kQ4_K: return SdotQ4K(a, q, o_begin, o_end);
    default: return SdotQ6K(a, q, o_begin, o_end);
  }
}

#pragma GCC pop_options

inline void MatmulInteger(const MatmulArgs& a, size_t o_begin, size_t o_end) {
  if (a.precise_x) return GemvQ8Wide(a, o_begin, o_end);
  SdotMatmul(a, o_begin, o_end);
}

#endif  // HEADWAY_MATMUL_SDOT

}  // namespace mm
}  // namespace HWY_NAMESPACE
}  // namespace simd
}  // namespace headway
HWY_AFTER_NAMESPACE();

#endif  // HEADWAY_SIMD_MATMUL_MATMUL_SDOT_INL_H_
