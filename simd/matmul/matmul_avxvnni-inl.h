// The decode GEMV (t == 1) over q8_0, q4_0, q4_1, q5_0, q5_1, q4_K and q6_K weights in integers on
// x86 with AVX-VNNI and no AVX-512 (Alder Lake and later, the N100 class of edge boxes) under
// Highway's AVX2 target, which does not require it: the kernel asks CPUID (leaf 7, subleaf 1, EAX
// bit 4) once, as attention_decode_int8-inl.h does; other AVX2 CPUs decode tiles to f32. The same
// quantization of x as the AVX-512 VNNI path (matmul_int8-inl.h: codes and d_x bit for bit) and the
// same block math, 32 codes per VEX-encoded VPDPBUSD (inline assembly: Highway 1.0.3 has no op for
// it), one block of 32 values per instruction:
//   the weight codes unsigned (q8_0 + 128, the nibbles and 5- and 6-bit values as they are), each
//   int32 lane starting at −offset · Σ of its four x codes (offset 128, 8, 16, 0, 0, 0, 32), so
//   that it ends exactly at Σ (q − offset) c of its four values; then one conversion and one FMA
//   by d_w · d_x per block, and for the types with a min m_w · (d_x Σ c) in f32 beside;
//   q6_K's two 16-value sub-blocks (lanes 0-3 and 4-7) weighed by their int8 scales in int32.
// x per block of 32 on the stack (kMaxQuantizedIn values: 18 KiB): its codes in value order (as
// every block type's bytes load: a q4/q5 byte j holds values j and j + 16), d_x, d_x · Σ of its
// codes, and each lane's Σ of its four codes. precise_x over q8_0 takes x in 16-bit codes and
// VPDPWSSD, as GemvQ8Wide there. Four rows of the 32-value types share each load of x's codes;
// rows are independent: any split of the output rows gives bitwise the same y.

#if defined(HEADWAY_SIMD_MATMUL_MATMUL_AVXVNNI_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef HEADWAY_SIMD_MATMUL_MATMUL_AVXVNNI_INL_H_
#undef HEADWAY_SIMD_MATMUL_MATMUL_AVXVNNI_INL_H_
#else
#define HEADWAY_SIMD_MATMUL_MATMUL_AVXVNNI_INL_H_
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

// AVX-VNNI under the AVX2 target, where the compiler has <cpuid.h> (GCC, Clang).
#undef HEADWAY_MATMUL_AVXVNNI
#if HWY_TARGET == HWY_AVX2 && HWY_COMPILER_GCC
#define HEADWAY_MATMUL_AVXVNNI 1
#include <cpuid.h>
#else
#define HEADWAY_MATMUL_AVXVNNI 0
#endif

HWY_BEFORE_NAMESPACE();
namespace headway {
namespace simd {
namespace HWY_NAMESPACE {
namespace mm {

#if HEADWAY_MATMUL_AVXVNNI

inline constexpr size_t kMaxQuantizedIn = 8192;

inline bool AvxVnniAvailable() {
  static const bool has = [] {
    unsigned a = 0, b = 0, c = 0, d = 0;
    return __get_cpuid_count(7, 1, &a, &b, &c, &d) != 0 && (a >> 4 & 1u) != 0;
  }();
  return has;
}

// Whether the integer GEMV takes this call (with precise_x: q8_0 alone, x at 16 bits).
inline bool IntegerGemv(const MatmulArgs& a) {
  return !a.w_row_groups && a.t == 1 && a.in <= kMaxQuantizedIn && AvxVnniAvailable() &&
         integer_gemv_reads(a.w_type, a.precise_x);
}

// acc + Σ of four u8 · s8 products per int32 lane (VEX-encoded: registers 0-15).
HWY_INLINE __m256i VnniU8S8(__m256i acc, __m256i u8, __m256i s8) {
  asm("%{vex%} vpdpbusd %2, %1, %0" : "+x"(acc) : "x"(u8), "x"(s8));
  return acc;
}
// acc + Σ of two i16 · i16 products per int32 lane.
HWY_INLINE __m256i VnniI16(__m256i acc, __m256i a, __m256i b) {
  asm("%{vex%} vpdpwssd %2, %1, %0" : "+x"(acc) : "x"(a), "x"(b));
  return acc;
}

HWY_INLINE float VnniF16(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return _cvtsh_ss(h);
}

// One block of 32 x values (v[0..3]) scaled for codes of at most kMax, as ScaleBlock of
// matmul_int8-inl.h: max|x| from the values' bits less the sign (a NaN above infinity).
template <int kMax>
HWY_INLINE float VnniScale(const __m256 (&v)[4], float* id) {
  const __m256i abs_mask = _mm256_set1_epi32(0x7fffffff);
  __m256i m = _mm256_and_si256(_mm256_castps_si256(v[0]), abs_mask);
  for (size_t i = 1; i < 4; ++i) m = _mm256_max_epu32(m, _mm256_and_si256(_mm256_castps_si256(v[i]), abs_mask));
  __m128i h = _mm_max_epu32(_mm256_castsi256_si128(m), _mm256_extracti128_si256(m, 1));
  h = _mm_max_epu32(h, _mm_shuffle_epi32(h, 0x4E));
  h = _mm_max_epu32(h, _mm_shuffle_epi32(h, 0xB1));
  const uint32_t top = static_cast<uint32_t>(_mm_cvtsi128_si32(h));
  float amax;
  std::memcpy(&amax, &top, 4);
  const bool finite = top < 0x7f800000u;
  *id = finite && amax != 0.0f ? static_cast<float>(kMax) / amax : 0.0f;
  return finite ? amax / static_cast<float>(kMax) : std::numeric_limits<float>::quiet_NaN();
}

struct VnniX {
  alignas(32) int8_t codes[kMaxQuantizedIn];       // value order, per block of 32
  alignas(32) int32_t lanes[kMaxQuantizedIn / 4];  // per block, each lane's Σ of its four codes
  float dx[kMaxQuantizedIn / 32];                  // the block's d_x
  float sx[kMaxQuantizedIn / 32];                  // d_x · Σ of the block's codes
};

HWY_INLINE void VnniQuantize(const float* HWY_RESTRICT x, size_t nb, VnniX* q) {
  // PACKSSDW and PACKSSWB interleave 128-bit halves: dwords of four codes back in value order.
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  for (size_t b = 0; b < nb; ++b) {
    __m256 v[4];
    for (size_t i = 0; i < 4; ++i) v[i] = _mm256_loadu_ps(x + 32 * b + 8 * i);
    float id;
    const float d = VnniScale<127>(v, &id);
    const __m256 vid = _mm256_set1_ps(id);
    __m256i c[4];
    for (size_t i = 0; i < 4; ++i) c[i] = _mm256_cvtps_epi32(_mm256_mul_ps(v[i], vid));
    const __m256i codes = _mm256_permutevar8x32_epi32(
        _mm256_packs_epi16(_mm256_packs_epi32(c[0], c[1]), _mm256_packs_epi32(c[2], c[3])), order);
    _mm256_store_si256(reinterpret_cast<__m256i*>(q->codes + 32 * b), codes);
    const __m256i lanes = VnniU8S8(_mm256_setzero_si256(), _mm256_set1_epi8(1), codes);
    _mm256_store_si256(reinterpret_cast<__m256i*>(q->lanes + 8 * b), lanes);
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(lanes), _mm256_extracti128_si256(lanes, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
    q->dx[b] = d;
    q->sx[b] = d * static_cast<float>(_mm_cvtsi128_si32(s));
  }
}

HWY_INLINE float VnniSum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// The 32-value block formats: byte offsets of qs, qh (0: none) and m (0: none), the offset the
// codes carry.
struct VnniFormat {
  size_t block_bytes, codes, high, min;
  int32_t offset;
};
template <WeightType kW>
constexpr VnniFormat kVnni = kW == WeightType::kQ8_0   ? VnniFormat{34, 2, 0, 0, 128}
                             : kW == WeightType::kQ4_0 ? VnniFormat{18, 2, 0, 0, 8}
                             : kW == WeightType::kQ4_1 ? VnniFormat{20, 4, 0, 2, 0}
                             : kW == WeightType::kQ5_0 ? VnniFormat{22, 6, 2, 0, 16}
                                                       : VnniFormat{24, 8, 4, 2, 0};  // q5_1

// A weight block's 32 codes as unsigned bytes in value order.
template <WeightType kW>
HWY_INLINE __m256i VnniBlock(const uint8_t* blk) {
  constexpr VnniFormat kF = kVnni<kW>;
  if constexpr (kW == WeightType::kQ8_0) {
    return _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 2)), _mm256_set1_epi8(-128));
  } else {
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + kF.codes));
    __m256i w = _mm256_and_si256(_mm256_inserti128_si256(_mm256_castsi128_si256(c), _mm_srli_epi16(c, 4), 1),
                                 _mm256_set1_epi8(0x0F));
    if constexpr (kF.high != 0) {  // bit j of qh is value j's fifth bit: byte j / 8, bit j % 8
      uint32_t qh;
      std::memcpy(&qh, blk + kF.high, 4);
      const __m256i bytes =
          _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int>(qh)),
                              _mm256_setr_epi64x(0, 0x0101010101010101, 0x0202020202020202, 0x0303030303030303));
      const __m256i bit = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201ull));
      w = _mm256_or_si256(
          w, _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(bytes, bit), bit), _mm256_set1_epi8(0x10)));
    }
    return w;
  }
}

// y[o, o + R) of a 32-value block type.
template <WeightType kW, size_t R>
HWY_INLINE void VnniRows(const MatmulArgs& a, const VnniX& q, size_t o) {
  constexpr VnniFormat kF = kVnni<kW>;
  const size_t nb = a.in / 32, row_bytes = a.w_stride / 32 * kF.block_bytes;
  const uint8_t* w = static_cast<const uint8_t*>(a.w) + o * row_bytes;
  __m256 acc[R];
  float mins[R];
  for (size_t r = 0; r < R; ++r) {
    acc[r] = _mm256_setzero_ps();
    mins[r] = 0.0f;
  }
  for (size_t b = 0; b < nb; ++b) {
    const __m256i x = _mm256_load_si256(reinterpret_cast<const __m256i*>(q.codes + 32 * b));
    const __m256i start = kF.offset == 0
                              ? _mm256_setzero_si256()
                              : _mm256_mullo_epi32(_mm256_load_si256(reinterpret_cast<const __m256i*>(q.lanes + 8 * b)),
                                                   _mm256_set1_epi32(-kF.offset));
    const float dx = q.dx[b];
    for (size_t r = 0; r < R; ++r) {
      const uint8_t* blk = w + r * row_bytes + b * kF.block_bytes;
      const __m256 dot = _mm256_cvtepi32_ps(VnniU8S8(start, VnniBlock<kW>(blk), x));
      acc[r] = _mm256_fmadd_ps(dot, _mm256_set1_ps(VnniF16(blk) * dx), acc[r]);
      if constexpr (kF.min != 0) mins[r] = std::fma(VnniF16(blk + kF.min), q.sx[b], mins[r]);
    }
  }
  for (size_t r = 0; r < R; ++r) a.y[o + r] = VnniSum(acc[r]) + mins[r];
}

template <WeightType kW>
HWY_NOINLINE void VnniGemv(const MatmulArgs& a, const VnniX& q, size_t o_begin, size_t o_end) {
  size_t o = o_begin;
  for (; o + 4 <= o_end; o += 4) VnniRows<kW, 4>(a, q, o);
  for (; o < o_end; ++o) VnniRows<kW, 1>(a, q, o);
}

// q4_K: per super-block of 256, four chunks of 32 bytes: low nibbles sub-block 2c, high 2c + 1.
HWY_NOINLINE void VnniQ4K(const MatmulArgs& a, const VnniX& q, size_t o_begin, size_t o_end) {
  const size_t ns = a.in / 256, row_bytes = a.w_stride / 256 * 144;
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  for (size_t o = o_begin; o < o_end; ++o) {
    __m256 acc = _mm256_setzero_ps();
    float mins = 0.0f;
    for (size_t s = 0; s < ns; ++s) {
      const uint8_t* blk = static_cast<const uint8_t*>(a.w) + o * row_bytes + s * 144;
      const float d = VnniF16(blk), dmin = VnniF16(blk + 2);
      for (size_t c = 0; c < 4; ++c) {
        unsigned s0, m0, s1, m1;
        ggml_blocks::k4_scale_min(blk + 4, 2 * c, &s0, &m0);
        ggml_blocks::k4_scale_min(blk + 4, 2 * c + 1, &s1, &m1);
        const __m256i nib = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 16 + 32 * c));
        const size_t b = 8 * s + 2 * c;
        const __m256i x0 = _mm256_load_si256(reinterpret_cast<const __m256i*>(q.codes + 32 * b));
        const __m256i x1 = _mm256_load_si256(reinterpret_cast<const __m256i*>(q.codes + 32 * b + 32));
        const __m256 dot0 = _mm256_cvtepi32_ps(VnniU8S8(_mm256_setzero_si256(), _mm256_and_si256(nib, low4), x0));
        const __m256 dot1 =
            _mm256_cvtepi32_ps(VnniU8S8(_mm256_setzero_si256(), _mm256_and_si256(_mm256_srli_epi16(nib, 4), low4), x1));
        acc = _mm256_fmadd_ps(dot0, _mm256_set1_ps(d * static_cast<float>(s0) * q.dx[b]), acc);
        acc = _mm256_fmadd_ps(dot1, _mm256_set1_ps(d * static_cast<float>(s1) * q.dx[b + 1]), acc);
        mins = std::fma(dmin * static_cast<float>(m0), q.sx[b], mins);
        mins = std::fma(dmin * static_cast<float>(m1), q.sx[b + 1], mins);
      }
    }
    a.y[o] = VnniSum(acc) - mins;
  }
}

// q6_K: per super-block of 256, two halves of 128 values (64 bytes of ql, 32 of qh, 8 scales).
// Value l + 32k of a half: a nibble of ql[l] (k = 0, 2) or ql[l + 32] (k = 1, 3), low for k < 2,
// bits 2k, 2k + 1 of qh[l] above it; scale 2k + l / 16 of the half.
HWY_NOINLINE void VnniQ6K(const MatmulArgs& a, const VnniX& q, size_t o_begin, size_t o_end) {
  const size_t ns = a.in / 256, row_bytes = a.w_stride / 256 * 210;
  const __m256i low4 = _mm256_set1_epi8(0x0F), low2 = _mm256_set1_epi8(0x03);
  for (size_t o = o_begin; o < o_end; ++o) {
    __m256 acc = _mm256_setzero_ps();
    for (size_t s = 0; s < ns; ++s) {
      const uint8_t* blk = static_cast<const uint8_t*>(a.w) + o * row_bytes + s * 210;
      const float d = VnniF16(blk + 208);
      for (size_t h = 0; h < 2; ++h) {
        const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 128 + 32 * h));
        const int8_t* sc = reinterpret_cast<const int8_t*>(blk + 192 + 8 * h);
        for (size_t k = 0; k < 4; ++k) {
          const __m256i ql = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 64 * h + 32 * (k % 2)));
          const __m256i lo = k < 2 ? _mm256_and_si256(ql, low4) : _mm256_and_si256(_mm256_srli_epi16(ql, 4), low4);
          const __m256i hi = _mm256_and_si256(_mm256_srl_epi16(qh, _mm_cvtsi32_si128(2 * static_cast<int>(k))), low2);
          const __m256i wb = _mm256_or_si256(lo, _mm256_slli_epi16(hi, 4));
          const size_t b = 8 * s + 4 * h + k;
          const __m256i x = _mm256_load_si256(reinterpret_cast<const __m256i*>(q.codes + 32 * b));
          const __m256i start = _mm256_mullo_epi32(_mm256_load_si256(reinterpret_cast<const __m256i*>(q.lanes + 8 * b)),
                                                   _mm256_set1_epi32(-32));
          // lanes 0-3: values 0-15 (scale 2k), 4-7: values 16-31 (scale 2k + 1)
          const __m256i scale = _mm256_inserti128_si256(_mm256_set1_epi32(sc[2 * k]), _mm_set1_epi32(sc[2 * k + 1]), 1);
          const __m256i sum = _mm256_mullo_epi32(VnniU8S8(start, wb, x), scale);
          acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum), _mm256_set1_ps(d * q.dx[b]), acc);
        }
      }
    }
    a.y[o] = VnniSum(acc);
  }
}

// precise_x over q8_0: x in 16-bit codes per block of 32 (d_x = max|x| / 32767), each weight block
// widened to 16 bits and met by VPDPWSSD.
HWY_NOINLINE void VnniQ8Wide(const MatmulArgs& a, size_t o_begin, size_t o_end) {
  const size_t nb = a.in / 32;
  alignas(32) int16_t codes[kMaxQuantizedIn];
  float dxs[kMaxQuantizedIn / 32];
  for (size_t b = 0; b < nb; ++b) {
    __m256 v[4];
    for (size_t i = 0; i < 4; ++i) v[i] = _mm256_loadu_ps(a.x + 32 * b + 8 * i);
    float id;
    dxs[b] = VnniScale<32767>(v, &id);
    const __m256 vid = _mm256_set1_ps(id);
    __m256i c[4];
    for (size_t i = 0; i < 4; ++i) c[i] = _mm256_cvtps_epi32(_mm256_mul_ps(v[i], vid));
    // PACKSSDW interleaves 128-bit halves: values 0-3, 8-11, 4-7, 12-15 back in order.
    _mm256_store_si256(reinterpret_cast<__m256i*>(codes + 32 * b),
                       _mm256_permute4x64_epi64(_mm256_packs_epi32(c[0], c[1]), 0xD8));
    _mm256_store_si256(reinterpret_cast<__m256i*>(codes + 32 * b + 16),
                       _mm256_permute4x64_epi64(_mm256_packs_epi32(c[2], c[3]), 0xD8));
  }
  const size_t row_bytes = a.w_stride / 32 * 34;
  const uint8_t* w = static_cast<const uint8_t*>(a.w);
  const auto rows = [&](size_t o, auto kR) {
    constexpr size_t R = decltype(kR)::value;
    __m256 acc[R];
    for (size_t r = 0; r < R; ++r) acc[r] = _mm256_setzero_ps();
    for (size_t b = 0; b < nb; ++b) {
      const __m256i x0 = _mm256_load_si256(reinterpret_cast<const __m256i*>(codes + 32 * b));
      const __m256i x1 = _mm256_load_si256(reinterpret_cast<const __m256i*>(codes + 32 * b + 16));
      for (size_t r = 0; r < R; ++r) {
        const uint8_t* blk = w + (o + r) * row_bytes + b * 34;
        const __m256i w0 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 2)));
        const __m256i w1 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 18)));
        const __m256 dot = _mm256_cvtepi32_ps(VnniI16(VnniI16(_mm256_setzero_si256(), w0, x0), w1, x1));
        acc[r] = _mm256_fmadd_ps(dot, _mm256_set1_ps(VnniF16(blk) * dxs[b]), acc[r]);
      }
    }
    for (size_t r = 0; r < R; ++r) a.y[o + r] = VnniSum(acc[r]);
  };
  size_t o = o_begin;
  for (; o + 4 <= o_end; o += 4) rows(o, std::integral_constant<size_t, 4>());
  for (; o < o_end; ++o) rows(o, std::integral_constant<size_t, 1>());
}

HWY_NOINLINE void MatmulInteger(const MatmulArgs& a, size_t o_begin, size_t o_end) {
  if (a.precise_x) return VnniQ8Wide(a, o_begin, o_end);
  VnniX q;
  VnniQuantize(a.x, a.in / 32, &q);
  switch (a.w_type) {
    case WeightType::kQ8_0: return VnniGemv<WeightType::kQ8_0>(a, q, o_begin, o_end);
    case WeightType::kQ4_0: return VnniGemv<WeightType::kQ4_0>(a, q, o_begin, o_end);
    case WeightType::kQ4_1: return VnniGemv<WeightType::kQ4_1>(a, q, o_begin, o_end);
    case WeightType::kQ5_0: return VnniGemv<WeightType::kQ5_0>(a, q, o_begin, o_end);
    case WeightType::kQ5_1: return VnniGemv<WeightType::kQ5_1>(a, q, o_begin, o_end);
    case WeightType::kQ4_K: return VnniQ4K(a, q, o_begin, o_end);
    default: return VnniQ6K(a, q, o_begin, o_end);
  }
}

#endif  // HEADWAY_MATMUL_AVXVNNI

}  // namespace mm
}  // namespace HWY_NAMESPACE
}  // namespace simd
}  // namespace headway
HWY_AFTER_NAMESPACE();

#endif  // HEADWAY_SIMD_MATMUL_MATMUL_AVXVNNI_INL_H_
