// The decode GEMV (t == 1) over q8_0, q4_0, q4_1, q5_0, q5_1, q4_K and q6_K weights in integers, on
// x86 with AVX-512 VNNI (Highway's AVX3_DL target, whose dispatch requires it), as ggml's own dot
// products do: x is quantized once per call to int8 codes per block of 32 values (d_x = max|x| /
// 127, code = x · (127 / max|x|) rounded to nearest even, a block with a value that is not finite
// gets d_x NaN), and each weight block meets its x block in VPDPBUSD (unsigned weight bytes ×
// signed x codes, four products to an int32 lane, exact), then one conversion and one FMA by
// d_w · d_x per 16 lanes:
//   q8_0  Σ w x = d_w d_x Σ q c          (q + 128 unsigned; each lane starts at −128 · Σ of its codes)
//   q4_0  Σ w x = d_w d_x Σ (q − 8) c    (q as it is; each lane starts at −8 · Σ of its codes)
//   q4_1  Σ w x = d_w d_x Σ q c + m_w d_x Σ c
//   q5_0  Σ w x = d_w d_x Σ (q − 16) c    (each lane starts at −16 · Σ of its codes), q5_1 as q4_1
//   q4_K  Σ w x = Σ over its 32-value sub-blocks of (d·sc) d_x Σ q c − (dmin·mn) d_x Σ c
//   q6_K  Σ w x = Σ over its 16-value sub-blocks of (d·sc) d_x Σ (q − 32) c
// The error against x · Wᵀ with W dequantized is x's rounding alone (half a code of each block's
// d_x per value; tests/kernels/matmul_blocks_test.cc bounds it), the same that ggml's q8_0 / q8_1
// / q8_K activations bring. Highway 1.0.3 has no op for VPDPBUSD: inline assembly, as in
// attention_decode_int8-inl.h.
//
// x's codes and per-lane constants lie on the stack (kMaxQuantizedIn values at most: 24 KiB), per
// pair p of x blocks (2p, 2p + 1; a last single block pairs with zeros), in the order the pair's
// weight bytes load:
//   q8_0, q4_K, q6_K: values in order (lanes 0-7 block 2p, 8-15 block 2p + 1);
//   q4_*, q5_*: [values 0-15 of 2p, of 2p + 1, values 16-31 of 2p, of 2p + 1] (a q4 pair's low
//               nibbles then high nibbles; lanes 0-3 and 8-11 block 2p).
// Per lane: d_x of its block, and Σ of its four codes (as the int32 start, −8 or −128 times it,
// or as d_x times it in f32 for the types with a min).
// Rows are independent: any split of the output rows gives bitwise the same y.
// The same GEMV under the AVX2 target (VPDPBUSD with AVX-VNNI, else VPMADDUBSW):
// matmul_avx2_int8-inl.h; on AArch64 with SDOT: matmul_sdot-inl.h (both with the same codes); on
// Helium for q8_0 and q4_0: matmul_helium-inl.h.
// Elsewhere IntegerGemv is false and the tiles decode to f32.

#if defined(HEADWAY_SIMD_MATMUL_MATMUL_INT8_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef HEADWAY_SIMD_MATMUL_MATMUL_INT8_INL_H_
#undef HEADWAY_SIMD_MATMUL_MATMUL_INT8_INL_H_
#else
#define HEADWAY_SIMD_MATMUL_MATMUL_INT8_INL_H_
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
#include "simd/matmul/matmul_avx2_int8-inl.h"  // on AVX2 (HEADWAY_MATMUL_AVX2_INT8)
#include "simd/matmul/matmul_helium-inl.h"     // on Helium (HEADWAY_SIMD_HELIUM)
#include "simd/matmul/matmul_sdot-inl.h"       // on AArch64 with SDOT (HEADWAY_MATMUL_SDOT)

HWY_BEFORE_NAMESPACE();
namespace headway {
namespace simd {
namespace HWY_NAMESPACE {
namespace mm {

#if HWY_TARGET == HWY_AVX3_DL

inline constexpr size_t kMaxQuantizedIn = 8192;

// Whether the integer GEMV takes this call (with precise_x: q8_0 alone, x at 16 bits).
inline bool IntegerGemv(const MatmulArgs& a) {
  return !a.w_row_groups && a.t == 1 && a.in <= kMaxQuantizedIn && integer_gemv_reads(a.w_type, a.precise_x);
}

// acc + Σ of four u8 · s8 products per int32 lane.
HWY_INLINE __m512i DotU8S8(__m512i acc, __m512i u8, __m512i s8) {
  asm("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(u8), "v"(s8));
  return acc;
}

// acc + Σ of the four products of each lane's u8 with the four s8 at p (the same in every lane):
// VPDPBUSD's third operand broadcast from memory ({1to16}), one instruction where a broadcast and
// the product took two.
HWY_INLINE __m512i DotU8S8Broadcast(__m512i acc, __m512i u8, const uint8_t* p) {
  struct Four {
    uint8_t b[4];
  };
  asm("vpdpbusd %2%{1to16%}, %1, %0" : "+v"(acc) : "v"(u8), "m"(*reinterpret_cast<const Four*>(p)));
  return acc;
}

struct QuantizedX {
  alignas(64) int8_t codes[kMaxQuantizedIn];
  alignas(64) float dx[kMaxQuantizedIn / 4];     // per pair, 16 lanes
  alignas(64) int32_t aux[kMaxQuantizedIn / 4];  // per pair, 16 lanes: the int32 start or d_x · Σ (f32 bits)
};

// The 32-value block formats as the pair kernel reads them (layouts: headway/ggml_types.hpp).
struct PairFormat {
  size_t block_bytes;
  size_t codes;    // offset of qs
  size_t high;     // offset of qh (the fifth bits); 0: none
  bool nibbles;    // q4/q5: byte j holds values j and j + 16
  bool min;        // x = q · d + m (m at offset 2)
  int32_t offset;  // x = (q − offset) · d: each lane starts at −offset · Σ of its codes
};
template <WeightType kW>
constexpr PairFormat kPair = kW == WeightType::kQ8_0   ? PairFormat{34, 2, 0, false, false, 128}
                             : kW == WeightType::kQ4_0 ? PairFormat{18, 2, 0, true, false, 8}
                             : kW == WeightType::kQ4_1 ? PairFormat{20, 4, 0, true, true, 0}
                             : kW == WeightType::kQ5_0 ? PairFormat{22, 6, 2, true, false, 16}
                             : kW == WeightType::kQ5_1 ? PairFormat{24, 8, 4, true, true, 0}
                             : kW == WeightType::kQ6_K ? PairFormat{0, 0, 0, false, false, 32}  // values in order
                                                       : PairFormat{0, 0, 0, false, true, 0};   // q4_K: likewise

// The position in its pair's 64 bytes of value i of block h (0 or 1) of the pair.
template <WeightType kW>
HWY_INLINE size_t PairAt(size_t h, size_t i) {
  if constexpr (kPair<kW>.nibbles) return (i / 16) * 32 + h * 16 + i % 16;
  return h * 32 + i;
}

// Lane i of a pair's 64 bytes → its value: the permutation PairAt undoes (a q4 pair's order), as
// VPERMB indices over the pair's codes in value order.
template <WeightType kW>
HWY_INLINE __m512i PairOrder() {
  alignas(64) uint8_t idx[64];
  for (size_t h = 0; h < 2; ++h) {
    for (size_t i = 0; i < 32; ++i) idx[PairAt<kW>(h, i)] = static_cast<uint8_t>(h * 32 + i);
  }
  return _mm512_load_si512(idx);
}

// One block of 32 x values (v0, v1) scaled to codes of at most kMax: v · id, rounded, is each
// value's code, and d = max|x| / kMax its step. A value that is not finite makes amax NaN or inf:
// then d is NaN (the block's products NaN, as widening would give) and id 0. max|x| is the largest
// of the values' bits less the sign, as unsigned integers: they order as the values do, a NaN
// above infinity (VMAXPS would drop a NaN: it returns its second operand when either is NaN).
template <int kMax>
HWY_INLINE float ScaleBlock(__m512 v0, __m512 v1, __m512* id) {
  const __m512i abs_mask = _mm512_set1_epi32(0x7fffffff);
  const uint32_t top = _mm512_reduce_max_epu32(_mm512_max_epu32(_mm512_and_si512(_mm512_castps_si512(v0), abs_mask),
                                                                _mm512_and_si512(_mm512_castps_si512(v1), abs_mask)));
  float amax;
  std::memcpy(&amax, &top, 4);
  const bool finite = top < 0x7f800000u;
  *id = _mm512_set1_ps(finite && amax != 0.0f ? static_cast<float>(kMax) / amax : 0.0f);
  return finite ? amax / static_cast<float>(kMax) : std::numeric_limits<float>::quiet_NaN();
}

template <WeightType kW>
HWY_INLINE void QuantizeX(const float* HWY_RESTRICT x, size_t in, QuantizedX* q) {
  constexpr bool kNibbles = kPair<kW>.nibbles;
  const size_t nb = in / 32, np = (nb + 1) / 2;
  const __m512i order = PairOrder<kW>();
  for (size_t p = 0; p < np; ++p) {
    float d[2] = {0.0f, 0.0f};
    __m512i codes = _mm512_setzero_si512();
    for (size_t h = 0; h < 2 && 2 * p + h < nb; ++h) {
      const float* v = x + (2 * p + h) * 32;
      const __m512 v0 = _mm512_loadu_ps(v), v1 = _mm512_loadu_ps(v + 16);
      __m512 id;
      d[h] = ScaleBlock<127>(v0, v1, &id);
      const __m128i c0 = _mm512_cvtsepi32_epi8(_mm512_cvtps_epi32(_mm512_mul_ps(v0, id)));
      const __m128i c1 = _mm512_cvtsepi32_epi8(_mm512_cvtps_epi32(_mm512_mul_ps(v1, id)));
      const __m256i c = _mm256_inserti128_si256(_mm256_castsi128_si256(c0), c1, 1);
      codes = h == 0 ? _mm512_inserti64x4(codes, c, 0) : _mm512_inserti64x4(codes, c, 1);
    }
    codes = _mm512_permutexvar_epi8(order, codes);
    _mm512_store_si512(q->codes + p * 64, codes);
    // Each lane's four codes summed (VPDPBUSD against ones), its block's d_x.
    const __m512i sums = DotU8S8(_mm512_setzero_si512(), _mm512_set1_epi8(1), codes);
    const __mmask16 first = kNibbles ? 0x0F0F : 0x00FF;
    const __m512 dx = _mm512_mask_blend_ps(first, _mm512_set1_ps(d[1]), _mm512_set1_ps(d[0]));
    _mm512_store_ps(q->dx + p * 16, dx);
    if constexpr (!kPair<kW>.min) {
      _mm512_store_si512(q->aux + p * 16, _mm512_mullo_epi32(sums, _mm512_set1_epi32(-kPair<kW>.offset)));
    } else {
      _mm512_store_ps(reinterpret_cast<float*>(q->aux + p * 16), _mm512_mul_ps(dx, _mm512_cvtepi32_ps(sums)));
    }
  }
}

HWY_INLINE uint32_t Load32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
HWY_INLINE uint32_t Load16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}

// Each lane's index into a pair's scales [d_a, d_b] (q8_0, q4_0) or [d_a, m_a, d_b, m_b] (q4_1).
template <WeightType kW>
HWY_INLINE __m512i ScaleLanes(bool min) {
  alignas(64) int32_t idx[16];
  for (int lane = 0; lane < 16; ++lane) {
    const bool first = kPair<kW>.nibbles ? lane % 8 < 4 : lane < 8;
    idx[lane] = kPair<kW>.min ? (first ? 0 : 2) + (min ? 1 : 0) : (first ? 0 : 1);
  }
  return _mm512_load_si512(idx);
}

// A pair of 32-value weight blocks (the second absent when `single`) as the bytes VPDPBUSD takes
// (the x layout above), and each lane's d_w (and m_w for q4_1): the pair's two or four f16
// scales converted at once, then spread over the lanes.
template <WeightType kW>
HWY_INLINE void LoadPair(const uint8_t* a, bool single, const __m512i& d_lanes, const __m512i& m_lanes, __m512i& w,
                         __m512& dw, __m512& mw) {
  constexpr PairFormat kF = kPair<kW>;
  const uint8_t* b = a + kF.block_bytes;
  __m128 scales;
  if constexpr (kF.min) {
    scales = _mm_cvtph_ps(_mm_set_epi32(0, 0, static_cast<int>(single ? 0 : Load32(b)), static_cast<int>(Load32(a))));
  } else {
    scales = _mm_cvtph_ps(_mm_cvtsi32_si128(static_cast<int>(Load16(a) | (single ? 0 : Load16(b)) << 16)));
  }
  dw = _mm512_permutexvar_ps(d_lanes, _mm512_castps128_ps512(scales));
  if constexpr (kF.min) mw = _mm512_permutexvar_ps(m_lanes, _mm512_castps128_ps512(scales));
  if constexpr (kW == WeightType::kQ8_0) {
    const __m256i c0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a + 2));
    const __m256i c1 = single ? _mm256_set1_epi8(-128) : _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 2));
    w = _mm512_xor_si512(_mm512_inserti64x4(_mm512_castsi256_si512(c0), c1, 1), _mm512_set1_epi8(-128));
  } else {
    const __m128i c0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(a + kF.codes));
    const __m128i c1 = single ? _mm_setzero_si128() : _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + kF.codes));
    const __m256i c = _mm256_inserti128_si256(_mm256_castsi128_si256(c0), c1, 1);
    w = _mm512_and_si512(_mm512_inserti64x4(_mm512_castsi256_si512(c), _mm256_srli_epi16(c, 4), 1),
                         _mm512_set1_epi8(0x0F));
    if constexpr (kF.high != 0) {  // the fifth bits, in the bytes' order: values 0-15 of a, of b, 16-31 of a, of b
      const uint64_t ha = Load32(a + kF.high), hb = single ? 0 : Load32(b + kF.high);
      const __mmask64 bits = (ha & 0xFFFF) | (hb & 0xFFFF) << 16 | (ha >> 16) << 32 | (hb >> 16) << 48;
      w = _mm512_or_si512(w, _mm512_maskz_mov_epi8(bits, _mm512_set1_epi8(0x10)));
    }
  }
}

// y[o] for rows [o_begin, o_end) of a 32-value block type, four rows sharing each x load.
template <WeightType kW>
HWY_NOINLINE void GemvPairs(const MatmulArgs& a, const QuantizedX& q, size_t o_begin, size_t o_end) {
  constexpr size_t kB = kPair<kW>.block_bytes;
  const size_t nb = a.in / 32, np = (nb + 1) / 2;
  const size_t row_bytes = a.w_stride / 32 * kB;
  const uint8_t* w = static_cast<const uint8_t*>(a.w);
  const __m512i d_lanes = ScaleLanes<kW>(false), m_lanes = ScaleLanes<kW>(true);
  size_t o = o_begin;
  const auto rows = [&](auto kR) {
    constexpr size_t R = decltype(kR)::value;
    __m512 acc[R];
    for (size_t r = 0; r < R; ++r) acc[r] = _mm512_setzero_ps();
    for (size_t p = 0; p < np; ++p) {
      const bool single = 2 * p + 1 == nb;
      const __m512i xc = _mm512_load_si512(q.codes + p * 64);
      const __m512 dx = _mm512_load_ps(q.dx + p * 16);
      const __m512i aux = _mm512_load_si512(q.aux + p * 16);
      for (size_t r = 0; r < R; ++r) {
        __m512i wb;
        __m512 dw, mw;
        LoadPair<kW>(w + (o + r) * row_bytes + 2 * p * kB, single, d_lanes, m_lanes, wb, dw, mw);
        if constexpr (kPair<kW>.min) {
          const __m512 dot = _mm512_cvtepi32_ps(DotU8S8(_mm512_setzero_si512(), wb, xc));
          acc[r] = _mm512_fmadd_ps(dot, _mm512_mul_ps(dw, dx), acc[r]);
          acc[r] = _mm512_fmadd_ps(mw, _mm512_castsi512_ps(aux), acc[r]);
        } else {
          const __m512 dot = _mm512_cvtepi32_ps(DotU8S8(aux, wb, xc));
          acc[r] = _mm512_fmadd_ps(dot, _mm512_mul_ps(dw, dx), acc[r]);
        }
      }
    }
    for (size_t r = 0; r < R; ++r) a.y[o + r] = _mm512_reduce_add_ps(acc[r]);
  };
  for (; o + 4 <= o_end; o += 4) rows(std::integral_constant<size_t, 4>());
  for (; o < o_end; ++o) rows(std::integral_constant<size_t, 1>());
}

// q4_K: per super-block of 256, four chunks of 64 values (32 bytes of nibbles: sub-block 2c in
// the low nibbles, 2c + 1 in the high), each one VPDPBUSD against x's pair c of the super-block.
HWY_NOINLINE void GemvQ4K(const MatmulArgs& a, const QuantizedX& q, size_t o_begin, size_t o_end) {
  const size_t ns = a.in / 256;
  const size_t row_bytes = a.w_stride / 256 * 144;
  const uint8_t* w = static_cast<const uint8_t*>(a.w);
  for (size_t o = o_begin; o < o_end; ++o) {
    __m512 acc = _mm512_setzero_ps();
    for (size_t s = 0; s < ns; ++s) {
      const uint8_t* blk = w + o * row_bytes + s * 144;
      uint16_t hd, hm;
      std::memcpy(&hd, blk, 2);
      std::memcpy(&hm, blk + 2, 2);
      const __m128 dd = _mm_cvtph_ps(_mm_set_epi16(0, 0, 0, 0, 0, 0, static_cast<short>(hm), static_cast<short>(hd)));
      const float d = _mm_cvtss_f32(dd), dmin = _mm_cvtss_f32(_mm_shuffle_ps(dd, dd, 1));
      const uint8_t* sc = blk + 4;
      for (size_t c = 0; c < 4; ++c) {
        unsigned s0, m0, s1, m1;
        ggml_blocks::k4_scale_min(sc, 2 * c, &s0, &m0);
        ggml_blocks::k4_scale_min(sc, 2 * c + 1, &s1, &m1);
        const __m256i nib = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 16 + 32 * c));
        const __m512i wb = _mm512_and_si512(
            _mm512_inserti64x4(_mm512_castsi256_si512(nib), _mm256_srli_epi16(nib, 4), 1), _mm512_set1_epi8(0x0F));
        const size_t p = s * 4 + c;
        const __m512i xc = _mm512_load_si512(q.codes + p * 64);
        const __m512 dx = _mm512_load_ps(q.dx + p * 16);
        const __m512 sx = _mm512_castsi512_ps(_mm512_load_si512(q.aux + p * 16));
        const __m512 scale = _mm512_insertf32x8(_mm512_set1_ps(d * static_cast<float>(s0)),
                                                _mm256_set1_ps(d * static_cast<float>(s1)), 1);
        const __m512 mins = _mm512_insertf32x8(_mm512_set1_ps(dmin * static_cast<float>(m0)),
                                               _mm256_set1_ps(dmin * static_cast<float>(m1)), 1);
        const __m512 dot = _mm512_cvtepi32_ps(DotU8S8(_mm512_setzero_si512(), wb, xc));
        acc = _mm512_fmadd_ps(dot, _mm512_mul_ps(scale, dx), acc);
        acc = _mm512_fnmadd_ps(mins, sx, acc);
      }
    }
    a.y[o] = _mm512_reduce_add_ps(acc);
  }
}

// acc + Σ of two i16 · i16 products per int32 lane.
HWY_INLINE __m512i DotI16(__m512i acc, __m512i a, __m512i b) {
  asm("vpdpwssd %2, %1, %0" : "+v"(acc) : "v"(a), "v"(b));
  return acc;
}

// precise_x over q8_0: x in 16-bit codes per block of 32 (d_x = max|x| / 32767), each weight block
// widened to 16 bits and met by VPDPWSSD: x's rounding 256 times finer than the 8-bit path's.
HWY_NOINLINE void GemvQ8Wide(const MatmulArgs& a, size_t o_begin, size_t o_end) {
  const size_t nb = a.in / 32;
  alignas(64) int16_t codes[kMaxQuantizedIn];
  alignas(64) float dxs[kMaxQuantizedIn / 32];
  for (size_t b = 0; b < nb; ++b) {
    const __m512 v0 = _mm512_loadu_ps(a.x + b * 32), v1 = _mm512_loadu_ps(a.x + b * 32 + 16);
    __m512 id;
    dxs[b] = ScaleBlock<32767>(v0, v1, &id);
    const __m256i c0 = _mm512_cvtsepi32_epi16(_mm512_cvtps_epi32(_mm512_mul_ps(v0, id)));
    const __m256i c1 = _mm512_cvtsepi32_epi16(_mm512_cvtps_epi32(_mm512_mul_ps(v1, id)));
    _mm512_store_si512(codes + b * 32, _mm512_inserti64x4(_mm512_castsi256_si512(c0), c1, 1));
  }
  const size_t row_bytes = a.w_stride / 32 * 34;
  const uint8_t* w = static_cast<const uint8_t*>(a.w);
  size_t o = o_begin;
  const auto rows = [&](auto kR) {
    constexpr size_t R = decltype(kR)::value;
    __m512 acc[R];
    for (size_t r = 0; r < R; ++r) acc[r] = _mm512_setzero_ps();
    for (size_t b = 0; b < nb; ++b) {
      const __m512i xc = _mm512_load_si512(codes + b * 32);
      const __m512 dx = _mm512_set1_ps(dxs[b]);
      for (size_t r = 0; r < R; ++r) {
        const uint8_t* blk = w + (o + r) * row_bytes + b * 34;
        const __m512i wc = _mm512_cvtepi8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 2)));
        uint16_t h;
        std::memcpy(&h, blk, 2);
        const __m512 dot = _mm512_cvtepi32_ps(DotI16(_mm512_setzero_si512(), wc, xc));
        acc[r] = _mm512_fmadd_ps(dot, _mm512_mul_ps(_mm512_set1_ps(_cvtsh_ss(h)), dx), acc[r]);
      }
    }
    for (size_t r = 0; r < R; ++r) a.y[o + r] = _mm512_reduce_add_ps(acc[r]);
  };
  for (; o + 4 <= o_end; o += 4) rows(std::integral_constant<size_t, 4>());
  for (; o < o_end; ++o) rows(std::integral_constant<size_t, 1>());
}

// q6_K: per super-block of 256, two halves of 128 values (64 bytes of ql, 32 of qh, 8 scales);
// each half's two pairs of x blocks meet [low nibbles of ql | bits 0-1 (then 2-3) of qh] and
// [high nibbles | bits 4-5 (then 6-7)], values 0-63 and 64-127 of the half in order. Each lane's
// four values share one of the 16-value sub-blocks' int8 scales.
HWY_NOINLINE void GemvQ6K(const MatmulArgs& a, const QuantizedX& q, size_t o_begin, size_t o_end) {
  const size_t ns = a.in / 256;
  const size_t row_bytes = a.w_stride / 256 * 210;
  const uint8_t* w = static_cast<const uint8_t*>(a.w);
  const __m512i low4 = _mm512_set1_epi8(0x0F), low2 = _mm512_set1_epi8(0x03);
  const __m512i sub = _mm512_set_epi32(3, 3, 3, 3, 2, 2, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0);
  for (size_t o = o_begin; o < o_end; ++o) {
    __m512 acc = _mm512_setzero_ps();
    for (size_t s = 0; s < ns; ++s) {
      const uint8_t* blk = w + o * row_bytes + s * 210;
      uint16_t hd;
      std::memcpy(&hd, blk + 208, 2);
      const float d = _cvtsh_ss(hd);
      for (size_t h = 0; h < 2; ++h) {
        const __m512i ql = _mm512_loadu_si512(blk + 64 * h);
        const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 128 + 32 * h));
        // bytes 0-31: qh, 32-63: qh >> 2 (the high bits of values l and l + 32 of each pair)
        const __m512i hh = _mm512_inserti64x4(_mm512_castsi256_si512(qh), _mm256_srli_epi16(qh, 2), 1);
        // The half's eight scales as f32, times d.
        const __m128i sc8 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(blk + 192 + 8 * h));
        const __m256 scales = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(sc8)), _mm256_set1_ps(d));
        for (size_t k = 0; k < 2; ++k) {
          const __m512i lo = k == 0 ? _mm512_and_si512(ql, low4) : _mm512_and_si512(_mm512_srli_epi16(ql, 4), low4);
          const __m512i hi = _mm512_and_si512(_mm512_srli_epi16(hh, static_cast<unsigned>(4 * k)), low2);
          const __m512i wb = _mm512_or_si512(lo, _mm512_slli_epi16(hi, 4));
          const size_t p = s * 4 + h * 2 + k;
          const __m512i xc = _mm512_load_si512(q.codes + p * 64);
          const __m512 dx = _mm512_load_ps(q.dx + p * 16);
          const __m512i start = _mm512_load_si512(q.aux + p * 16);
          // Lanes 0-3 values 0-15 of the pair (scale 4k + 0 of the half), 4-7 (4k + 1), 8-11 the
          // second block's first 16 (4k + 2), 12-15 (4k + 3): ggml's sc[l / 16 + 2j] order.
          const __m512 sc = _mm512_permutexvar_ps(_mm512_add_epi32(sub, _mm512_set1_epi32(static_cast<int>(4 * k))),
                                                  _mm512_castps256_ps512(scales));
          const __m512 dot = _mm512_cvtepi32_ps(DotU8S8(start, wb, xc));
          acc = _mm512_fmadd_ps(dot, _mm512_mul_ps(sc, dx), acc);
        }
      }
    }
    a.y[o] = _mm512_reduce_add_ps(acc);
  }
}

HWY_NOINLINE void MatmulInteger(const MatmulArgs& a, size_t o_begin, size_t o_end) {
  if (a.precise_x) return GemvQ8Wide(a, o_begin, o_end);
  QuantizedX q;
  switch (a.w_type) {
    case WeightType::kQ8_0:
      QuantizeX<WeightType::kQ8_0>(a.x, a.in, &q);
      return GemvPairs<WeightType::kQ8_0>(a, q, o_begin, o_end);
    case WeightType::kQ4_0:
      QuantizeX<WeightType::kQ4_0>(a.x, a.in, &q);
      return GemvPairs<WeightType::kQ4_0>(a, q, o_begin, o_end);
    case WeightType::kQ4_1:
      QuantizeX<WeightType::kQ4_1>(a.x, a.in, &q);
      return GemvPairs<WeightType::kQ4_1>(a, q, o_begin, o_end);
    case WeightType::kQ5_0:
      QuantizeX<WeightType::kQ5_0>(a.x, a.in, &q);
      return GemvPairs<WeightType::kQ5_0>(a, q, o_begin, o_end);
    case WeightType::kQ5_1:
      QuantizeX<WeightType::kQ5_1>(a.x, a.in, &q);
      return GemvPairs<WeightType::kQ5_1>(a, q, o_begin, o_end);
    case WeightType::kQ6_K: QuantizeX<WeightType::kQ6_K>(a.x, a.in, &q); return GemvQ6K(a, q, o_begin, o_end);
    default: QuantizeX<WeightType::kQ4_K>(a.x, a.in, &q); return GemvQ4K(a, q, o_begin, o_end);
  }
}

#elif !HEADWAY_MATMUL_AVX2_INT8 && !HEADWAY_MATMUL_SDOT && !HEADWAY_SIMD_HELIUM

inline bool IntegerGemv(const MatmulArgs&) { return false; }
inline void MatmulInteger(const MatmulArgs&, size_t, size_t) {}

#endif  // HWY_TARGET == HWY_AVX3_DL

}  // namespace mm
}  // namespace HWY_NAMESPACE
}  // namespace simd
}  // namespace headway
HWY_AFTER_NAMESPACE();

#include "simd/matmul/matmul_row_groups-inl.h"       // W in row groups, on AVX3_DL: x's codes, the GEMV
#include "simd/matmul/matmul_row_groups_gemm-inl.h"  // and the GEMM

#endif  // HEADWAY_SIMD_MATMUL_MATMUL_INT8_INL_H_
