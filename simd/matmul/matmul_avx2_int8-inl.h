// The decode GEMV (t == 1) over q8_0, q4_0, q4_1, q5_0, q5_1, q4_K and q6_K weights in integers on
// x86 without AVX-512 VNNI, under Highway's AVX2 target, with the same quantization of x as the
// AVX-512 VNNI path (matmul_int8-inl.h: codes and d_x bit for bit), 32 codes per product:
//   q8_0, q6_K: each int32 lane ends exactly at Σ (q − offset) c of its four values (offset 0 and
//     32; an unsigned q8_0 code + 128 starts its lane at −128 · Σ c), then one conversion and one
//     FMA by d_w · d_x per block; q6_K's two 16-value sub-blocks (lanes 0-3 and 4-7) weighed by
//     their int8 scales in int32 first;
//   q4_0, q4_1, q5_0, q5_1: two blocks per product vector (Avx2PairRow), the codes as they are,
//     the offset (8, 16) or the min m_w as a term m · d_x Σ c in f32 beside the sums;
//   q4_K: per 32-value sub-block, (d·sc) d_x Σ q c − (dmin·mn) d_x Σ c.
// The product: where the CPU has AVX-VNNI (Alder Lake and later, the N100 class of edge boxes; the
// kernel asks CPUID leaf 7, subleaf 1, EAX bit 4 once, as attention_decode_int8-inl.h does), one
// VEX-encoded VPDPBUSD (inline assembly: Highway 1.0.3 has no op for it). Elsewhere (Haswell to
// Comet Lake, AMD Zen 1-3: the Ryzen Embedded class) VPMADDUBSW, whose pairs of u8 · s8 products
// saturate at int16, then VPMADDWD by ones and VPADDD, as ggml's AVX2 dot products: a pair stays
// within int16 for codes of up to 6 bits (2 · 63 · 127), so only q8_0 differs: |q| against x's
// codes with q's sign (VPSIGNB), from 0. Both give the same int32 sums, so the same y bit for bit.
// x per block of 32 on the stack (kMaxQuantizedIn values: 18 KiB): its codes in the order the
// weights' bytes load (Avx2X), d_x, d_x · Σ of its codes, and each lane's Σ of its four codes.
// precise_x over q8_0 takes x in 16-bit codes and VPDPWSSD (VPMADDWD and VPADDD without AVX-VNNI:
// the same sums), as GemvQ8Wide there. Every GEMV reads one row at a time: rows are read faster
// from memory as one stream, row after row, than four rows side by side sharing x's loads. Rows are
// independent: any split of the output rows gives bitwise the same y.

#if defined(HEADWAY_SIMD_MATMUL_MATMUL_AVX2_INT8_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef HEADWAY_SIMD_MATMUL_MATMUL_AVX2_INT8_INL_H_
#undef HEADWAY_SIMD_MATMUL_MATMUL_AVX2_INT8_INL_H_
#else
#define HEADWAY_SIMD_MATMUL_MATMUL_AVX2_INT8_INL_H_
#endif

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>

#include "headway/detail/ggml_blocks.hpp"
#include "hwy/highway.h"
#include "simd/matmul/matmul.h"

// The AVX2 target, where the compiler has <cpuid.h> (GCC, Clang) to ask for AVX-VNNI.
#undef HEADWAY_MATMUL_AVX2_INT8
#if HWY_TARGET == HWY_AVX2 && HWY_COMPILER_GCC
#define HEADWAY_MATMUL_AVX2_INT8 1
#include <cpuid.h>
#else
#define HEADWAY_MATMUL_AVX2_INT8 0
#endif

HWY_BEFORE_NAMESPACE();
namespace headway {
namespace simd {
namespace HWY_NAMESPACE {
namespace mm {

#if HEADWAY_MATMUL_AVX2_INT8

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
  return !a.w_row_groups && a.t == 1 && a.in <= kMaxQuantizedIn && integer_gemv_reads(a.w_type, a.precise_x);
}

// acc + Σ of four u8 · s8 products per int32 lane (VEX-encoded: registers 0-15). Without AVX-VNNI
// each pair of products must stay within int16 (VPMADDUBSW saturates): u8 · |s8| ≤ 2 · 63 · 127.
template <bool kVnni>
HWY_INLINE __m256i DotU8S8(__m256i acc, __m256i u8, __m256i s8) {
  if constexpr (kVnni) {
    asm("%{vex%} vpdpbusd %2, %1, %0" : "+x"(acc) : "x"(u8), "x"(s8));
    return acc;
  } else {
    return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u8, s8), _mm256_set1_epi16(1)));
  }
}
// acc + Σ of two i16 · i16 products per int32 lane (never both −32768 here: codes are symmetric).
template <bool kVnni>
HWY_INLINE __m256i DotI16(__m256i acc, __m256i a, __m256i b) {
  if constexpr (kVnni) {
    asm("%{vex%} vpdpwssd %2, %1, %0" : "+x"(acc) : "x"(a), "x"(b));
    return acc;
  } else {
    return _mm256_add_epi32(acc, _mm256_madd_epi16(a, b));
  }
}

HWY_INLINE float Avx2F16(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return _cvtsh_ss(h);
}

// One block of 32 x values (v[0..3]) scaled for codes of at most kMax, as ScaleBlock of
// matmul_int8-inl.h: max|x| from the values' bits less the sign (a NaN above infinity).
template <int kMax>
HWY_INLINE float Avx2Scale(const __m256 (&v)[4], float* id) {
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

// x's codes in value order per block of 32 (q8_0, q4_K, q6_K), or, for the 4- and 5-bit types
// (a byte j holds values j and j + 16), per pair of blocks in the order of Avx2PairRow's two
// products, [b 0-15 | b+1 0-15] then [b 16-31 | b+1 16-31], with zeros in b + 1's place after a
// last single block: two aligned loads per pair.
struct Avx2X {
  alignas(32) int8_t codes[kMaxQuantizedIn];
  alignas(32) int32_t lanes[kMaxQuantizedIn / 4];  // per block, each lane's Σ of its four codes
  // Per block b: ds[2b] its d_x, ds[2b + 1] d_x · Σ of its codes (a pair of blocks: one 128-bit load).
  alignas(16) float ds[kMaxQuantizedIn / 16];
};

template <bool kPairOrder>
HWY_INLINE void Avx2Quantize(const float* HWY_RESTRICT x, size_t nb, Avx2X* q) {
  if (kPairOrder && nb % 2 != 0) {
    for (size_t at = 32 * (nb - 1); at <= 32 * nb; at += 32) {
      _mm256_store_si256(reinterpret_cast<__m256i*>(q->codes + at), _mm256_setzero_si256());
    }
  }
  // PACKSSDW and PACKSSWB interleave 128-bit halves: dwords of four codes back in value order.
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  for (size_t b = 0; b < nb; ++b) {
    __m256 v[4];
    for (size_t i = 0; i < 4; ++i) v[i] = _mm256_loadu_ps(x + 32 * b + 8 * i);
    float id;
    const float d = Avx2Scale<127>(v, &id);
    const __m256 vid = _mm256_set1_ps(id);
    __m256i c[4];
    for (size_t i = 0; i < 4; ++i) c[i] = _mm256_cvtps_epi32(_mm256_mul_ps(v[i], vid));
    const __m256i codes = _mm256_permutevar8x32_epi32(
        _mm256_packs_epi16(_mm256_packs_epi32(c[0], c[1]), _mm256_packs_epi32(c[2], c[3])), order);
    if constexpr (kPairOrder) {
      int8_t* pair = q->codes + 64 * (b / 2) + 16 * (b % 2);
      _mm_store_si128(reinterpret_cast<__m128i*>(pair), _mm256_castsi256_si128(codes));
      _mm_store_si128(reinterpret_cast<__m128i*>(pair + 32), _mm256_extracti128_si256(codes, 1));
    } else {
      _mm256_store_si256(reinterpret_cast<__m256i*>(q->codes + 32 * b), codes);
    }
    const __m256i lanes = DotU8S8<false>(_mm256_setzero_si256(), _mm256_set1_epi8(1), codes);
    _mm256_store_si256(reinterpret_cast<__m256i*>(q->lanes + 8 * b), lanes);
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(lanes), _mm256_extracti128_si256(lanes, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
    q->ds[2 * b] = d;
    q->ds[2 * b + 1] = d * static_cast<float>(_mm_cvtsi128_si32(s));
  }
}

// The GEMVs fetch each weight row's bytes this many rows ahead: the matrices stream from memory
// once per token, and the hardware prefetchers alone lag behind (a matrix of a small model is a
// few hundred KiB).
inline constexpr size_t kAvx2PrefetchRows = 8;

HWY_INLINE void Avx2Prefetch(const uint8_t* p) { _mm_prefetch(reinterpret_cast<const char*>(p), _MM_HINT_T0); }

HWY_INLINE float Avx2Sum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// The 4- and 5-bit block formats: byte offsets of qs, qh (0: none) and m (0: none), the offset the
// codes carry.
struct Avx2Format {
  size_t block_bytes, codes, high, min;
  int32_t offset;
};
template <WeightType kW>
constexpr Avx2Format kAvx2Format = kW == WeightType::kQ4_0   ? Avx2Format{18, 2, 0, 0, 8}
                                   : kW == WeightType::kQ4_1 ? Avx2Format{20, 4, 0, 2, 0}
                                   : kW == WeightType::kQ5_0 ? Avx2Format{22, 6, 2, 0, 16}
                                                             : Avx2Format{24, 8, 4, 2, 0};  // q5_1

// y[o] over q8_0: a block's 32 codes against x's block, each int32 lane holding exactly Σ q c of
// its four values: with AVX-VNNI q + 128 unsigned from −128 · Σ c, without it |q| · (c with q's
// sign) from 0 (a pair of products within int16: 2 · 128 · 127).
template <bool kVnni>
HWY_INLINE void Avx2Q8Row(const MatmulArgs& a, const Avx2X& q, size_t o) {
  const size_t nb = a.in / 32, row_bytes = a.w_stride / 32 * 34;
  const uint8_t* w = static_cast<const uint8_t*>(a.w) + o * row_bytes;
  __m256 acc = _mm256_setzero_ps();
  for (size_t b = 0; b < nb; ++b) {
    const __m256i x = _mm256_load_si256(reinterpret_cast<const __m256i*>(q.codes + 32 * b));
    const __m256i start = kVnni
                              ? _mm256_mullo_epi32(_mm256_load_si256(reinterpret_cast<const __m256i*>(q.lanes + 8 * b)),
                                                   _mm256_set1_epi32(-128))
                              : _mm256_setzero_si256();
    const uint8_t* blk = w + b * 34;
    Avx2Prefetch(blk + kAvx2PrefetchRows * row_bytes);
    const __m256i codes = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 2));
    const __m256i dot = kVnni ? DotU8S8<true>(start, _mm256_xor_si256(codes, _mm256_set1_epi8(-128)), x)
                              : DotU8S8<false>(start, _mm256_sign_epi8(codes, codes), _mm256_sign_epi8(x, codes));
    acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), _mm256_set1_ps(Avx2F16(blk) * q.ds[2 * b]), acc);
  }
  a.y[o] = Avx2Sum(acc);
}

// The 4- and 5-bit types take their blocks in pairs (b, b + 1; a last single block with zeros in
// b + 1's place): one 256-bit vector holds both blocks' bytes of codes, its low nibbles
// [b values 0-15 | b + 1 values 0-15] and its high nibbles [b 16-31 | b + 1 16-31] (a q4 byte j
// holds values j and j + 16), met by x's codes in the same order, and both products sum into one
// int32 vector: lanes 0-3 block b, 4-7 block b + 1 (their sums exact, the same with or without
// AVX-VNNI). The scales convert together: [d_b, m_b, d_b+1, m_b+1] (d alone for q4_0 / q5_0,
// whose codes' offset −off · d_w stands as m) times [d_x,b, d_x,b Σ c_b, ...]: lanes 0 and 2
// scale the sums, lanes 1 and 3 are the blocks' min terms, summed apart per row.
// The fifth bits (0x10) of the values `pattern` picks from qh (bit j of qh is value j's: byte
// j / 8, bit j % 8), qh of block b in the low 128 bits and of b + 1 in the high.
HWY_INLINE __m256i Avx2PairHigh(__m256i qh, __m256i pattern) {
  const __m256i bit = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201ull));
  const __m256i bytes = _mm256_shuffle_epi8(qh, pattern);
  return _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(bytes, bit), bit), _mm256_set1_epi8(0x10));
}

template <WeightType kW, bool kVnni>
HWY_INLINE void Avx2PairRow(const MatmulArgs& a, const Avx2X& q, size_t o) {
  constexpr Avx2Format kF = kAvx2Format<kW>;
  const size_t nb = a.in / 32, row_bytes = a.w_stride / 32 * kF.block_bytes;
  const uint8_t* w = static_cast<const uint8_t*>(a.w) + o * row_bytes;
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  const __m256i low_bits = _mm256_setr_epi64x(0, 0x0101010101010101, 0, 0x0101010101010101);
  const __m256i high_bits =
      _mm256_setr_epi64x(0x0202020202020202, 0x0303030303030303, 0x0202020202020202, 0x0303030303030303);
  const __m256i spread = _mm256_setr_epi32(0, 0, 0, 0, 2, 2, 2, 2);
  // [1, −off, 1, −off]: x's pair scales for the types whose m is −off · d
  const __m128 offset = _mm_setr_ps(1.0f, static_cast<float>(-kF.offset), 1.0f, static_cast<float>(-kF.offset));
  __m256 acc = _mm256_setzero_ps();
  __m128 mins = _mm_setzero_ps();
  const auto pair = [&](size_t b, bool single) {
    const __m256i x_lo = _mm256_load_si256(reinterpret_cast<const __m256i*>(q.codes + 32 * b));
    const __m256i x_hi = _mm256_load_si256(reinterpret_cast<const __m256i*>(q.codes + 32 * b + 32));
    __m128 xs =
        single ? _mm_castpd_ps(_mm_load_sd(reinterpret_cast<const double*>(q.ds + 2 * b))) : _mm_load_ps(q.ds + 2 * b);
    if constexpr (kF.min == 0) xs = _mm_mul_ps(xs, offset);
    const uint8_t* blk0 = w + b * kF.block_bytes;
    const uint8_t* blk1 = blk0 + kF.block_bytes;
    Avx2Prefetch(blk0 + kAvx2PrefetchRows * row_bytes);
    const __m128i n0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk0 + kF.codes));
    const __m256i n =
        single ? _mm256_zextsi128_si256(n0)
               : _mm256_inserti128_si256(_mm256_castsi128_si256(n0),
                                         _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk1 + kF.codes)), 1);
    __m256i w_lo = _mm256_and_si256(n, low4), w_hi = _mm256_and_si256(_mm256_srli_epi16(n, 4), low4);
    if constexpr (kF.high != 0) {
      // each block's qh broadcast from memory (a load alone), b's to the low 128 bits, b + 1's high
      const auto broadcast = [](const uint8_t* p) {
        return _mm256_castps_si256(_mm256_broadcast_ss(reinterpret_cast<const float*>(p)));
      };
      const __m256i h0 = broadcast(blk0 + kF.high);
      const __m256i qh = single ? _mm256_blend_epi32(h0, _mm256_setzero_si256(), 0xF0)
                                : _mm256_blend_epi32(h0, broadcast(blk1 + kF.high), 0xF0);
      w_lo = _mm256_or_si256(w_lo, Avx2PairHigh(qh, low_bits));
      w_hi = _mm256_or_si256(w_hi, Avx2PairHigh(qh, high_bits));
    }
    __m256i dot;
    if constexpr (kVnni) {
      dot = DotU8S8<true>(DotU8S8<true>(_mm256_setzero_si256(), w_lo, x_lo), w_hi, x_hi);
    } else {  // each int16 pair sum below 2 · 2 · 31 · 127
      dot = _mm256_madd_epi16(_mm256_add_epi16(_mm256_maddubs_epi16(w_lo, x_lo), _mm256_maddubs_epi16(w_hi, x_hi)),
                              _mm256_set1_epi16(1));
    }
    // the blocks' d and m as f16 words [d_b, m_b, d_b+1, m_b+1], or d alone as [d_b, d_b+1]
    // widened to [d_b, d_b, d_b+1, d_b+1]; zeros in b + 1's place
    constexpr size_t kScaleBytes = kF.min != 0 ? 4 : 2;
    uint32_t s0 = 0, s1 = 0;
    std::memcpy(&s0, blk0, kScaleBytes);
    if (!single) std::memcpy(&s1, blk1, kScaleBytes);
    __m128 dm;
    if constexpr (kF.min != 0) {
      dm = _mm_cvtph_ps(_mm_insert_epi32(_mm_cvtsi32_si128(static_cast<int>(s0)), static_cast<int>(s1), 1));
    } else {
      dm = _mm_cvtph_ps(_mm_insert_epi16(_mm_cvtsi32_si128(static_cast<int>(s0)), static_cast<int>(s1), 1));
      dm = _mm_unpacklo_ps(dm, dm);
    }
    const __m128 p = _mm_mul_ps(dm, xs);
    acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), _mm256_permutevar8x32_ps(_mm256_castps128_ps256(p), spread), acc);
    mins = _mm_add_ps(mins, p);
  };
  size_t b = 0;
  for (; b + 2 <= nb; b += 2) pair(b, false);
  if (b < nb) pair(b, true);
  const __m128 m = _mm_movehdup_ps(mins);  // lanes 1 and 3
  a.y[o] = Avx2Sum(acc) + _mm_cvtss_f32(_mm_add_ss(m, _mm_movehl_ps(m, m)));
}

template <WeightType kW, bool kVnni>
HWY_NOINLINE void Avx2Gemv(const MatmulArgs& a, const Avx2X& q, size_t o_begin, size_t o_end) {
  for (size_t o = o_begin; o < o_end; ++o) {
    if constexpr (kW == WeightType::kQ8_0) {
      Avx2Q8Row<kVnni>(a, q, o);
    } else {
      Avx2PairRow<kW, kVnni>(a, q, o);
    }
  }
}

// q4_K: per super-block of 256, four chunks of 32 bytes: low nibbles sub-block 2c, high 2c + 1. The
// super-block's eight scales and mins widen as vectors, d · sc · d_x per sub-block, and the mins
// term dmin · mn · d_x Σ c in a vector per row.
template <bool kVnni>
HWY_NOINLINE void Avx2Q4K(const MatmulArgs& a, const Avx2X& q, size_t o_begin, size_t o_end) {
  const size_t ns = a.in / 256, row_bytes = a.w_stride / 256 * 144;
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  for (size_t o = o_begin; o < o_end; ++o) {
    __m256 acc = _mm256_setzero_ps(), mins = _mm256_setzero_ps();
    for (size_t s = 0; s < ns; ++s) {
      const uint8_t* blk = static_cast<const uint8_t*>(a.w) + o * row_bytes + s * 144;
      for (size_t line = 0; line < 144; line += 64) Avx2Prefetch(blk + kAvx2PrefetchRows * row_bytes + line);
      // x's [d_x, d_x Σ c] of the super-block's eight blocks, as [d_x 0-7] and [d_x Σ c 0-7]
      const __m256 ds0 = _mm256_loadu_ps(q.ds + 16 * s), ds1 = _mm256_loadu_ps(q.ds + 16 * s + 8);
      const auto in_order = [](__m256 v) { return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(v), 0xD8)); };
      const __m256 dx = in_order(_mm256_shuffle_ps(ds0, ds1, 0x88)),
                   dx_sum = in_order(_mm256_shuffle_ps(ds0, ds1, 0xDD));
      uint32_t sc[2], mn[2];
      ggml_blocks::k4_scales_mins(blk + 4, sc, mn);
      const __m128i packed = _mm_setr_epi32(static_cast<int>(sc[0]), static_cast<int>(sc[1]), static_cast<int>(mn[0]),
                                            static_cast<int>(mn[1]));
      const __m256 scf = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(packed));
      const __m256 mnf = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_unpackhi_epi64(packed, packed)));
      const __m256 scale = _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(Avx2F16(blk)), scf), dx);
      mins = _mm256_fmadd_ps(_mm256_mul_ps(_mm256_set1_ps(Avx2F16(blk + 2)), mnf), dx_sum, mins);
      for (size_t c = 0; c < 4; ++c) {
        const __m256i nib = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 16 + 32 * c));
        const size_t b = 8 * s + 2 * c;
        const __m256i x0 = _mm256_load_si256(reinterpret_cast<const __m256i*>(q.codes + 32 * b));
        const __m256i x1 = _mm256_load_si256(reinterpret_cast<const __m256i*>(q.codes + 32 * b + 32));
        const __m256 dot0 = _mm256_cvtepi32_ps(DotU8S8<kVnni>(_mm256_setzero_si256(), _mm256_and_si256(nib, low4), x0));
        const __m256 dot1 = _mm256_cvtepi32_ps(
            DotU8S8<kVnni>(_mm256_setzero_si256(), _mm256_and_si256(_mm256_srli_epi16(nib, 4), low4), x1));
        const auto lane = [&](size_t i) {
          return _mm256_permutevar8x32_ps(scale, _mm256_set1_epi32(static_cast<int>(i)));
        };
        acc = _mm256_fmadd_ps(dot0, lane(2 * c), acc);
        acc = _mm256_fmadd_ps(dot1, lane(2 * c + 1), acc);
      }
    }
    a.y[o] = Avx2Sum(acc) - Avx2Sum(mins);
  }
}

// q6_K: per super-block of 256, two halves of 128 values (64 bytes of ql, 32 of qh, 8 scales).
// Value l + 32k of a half: a nibble of ql[l] (k = 0, 2) or ql[l + 32] (k = 1, 3), low for k < 2,
// bits 2k, 2k + 1 of qh[l] above it; scale 2k + l / 16 of the half. Each int16 pair of VPMADDUBSW
// less 32 times its pair of x's codes is exactly Σ (q − 32) c (within ±2 · 32 · 127), and
// VPMADDWD by the sub-block's scale gives each int32 lane sc · Σ (q − 32) c: the same sums with or
// without AVX-VNNI, so one kernel for both.
HWY_NOINLINE void Avx2Q6K(const MatmulArgs& a, const Avx2X& q, size_t o_begin, size_t o_end) {
  const size_t ns = a.in / 256, row_bytes = a.w_stride / 256 * 210;
  const __m256i low4 = _mm256_set1_epi8(0x0F), low2 = _mm256_set1_epi8(0x03), offset = _mm256_set1_epi8(32);
  // VPSHUFB picks of block k's scales from the half's eight as int16 words in both 128-bit lanes:
  // word 2k to every word of the low lane (values 0-15), word 2k + 1 to the high lane's (16-31).
  const auto word = [](int w) { return _mm_set1_epi16(static_cast<int16_t>((2 * w + 1) << 8 | 2 * w)); };
  __m256i pick[4];
  for (int k = 0; k < 4; ++k) {
    pick[k] = _mm256_inserti128_si256(_mm256_castsi128_si256(word(2 * k)), word(2 * k + 1), 1);
  }
  for (size_t o = o_begin; o < o_end; ++o) {
    __m256 acc = _mm256_setzero_ps();
    for (size_t s = 0; s < ns; ++s) {
      const uint8_t* blk = static_cast<const uint8_t*>(a.w) + o * row_bytes + s * 210;
      for (size_t line = 0; line < 210; line += 64) Avx2Prefetch(blk + kAvx2PrefetchRows * row_bytes + line);
      const float d = Avx2F16(blk + 208);
      for (size_t h = 0; h < 2; ++h) {
        const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 128 + 32 * h));
        const __m256i scales = _mm256_broadcastsi128_si256(
            _mm_cvtepi8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(blk + 192 + 8 * h))));
        for (size_t k = 0; k < 4; ++k) {
          const __m256i ql = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 64 * h + 32 * (k % 2)));
          const __m256i lo = k < 2 ? _mm256_and_si256(ql, low4) : _mm256_and_si256(_mm256_srli_epi16(ql, 4), low4);
          const __m256i hi = _mm256_and_si256(_mm256_srl_epi16(qh, _mm_cvtsi32_si128(2 * static_cast<int>(k))), low2);
          const __m256i wb = _mm256_or_si256(lo, _mm256_slli_epi16(hi, 4));
          const size_t b = 8 * s + 4 * h + k;
          const __m256i x = _mm256_load_si256(reinterpret_cast<const __m256i*>(q.codes + 32 * b));
          const __m256i pairs = _mm256_sub_epi16(_mm256_maddubs_epi16(wb, x), _mm256_maddubs_epi16(offset, x));
          const __m256i sum = _mm256_madd_epi16(pairs, _mm256_shuffle_epi8(scales, pick[k]));
          acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum), _mm256_set1_ps(d * q.ds[2 * b]), acc);
        }
      }
    }
    a.y[o] = Avx2Sum(acc);
  }
}

// precise_x over q8_0: x in 16-bit codes per block of 32 (d_x = max|x| / 32767), each weight block
// widened to 16 bits and met by VPDPWSSD.
template <bool kVnni>
HWY_NOINLINE void Avx2Q8Wide(const MatmulArgs& a, size_t o_begin, size_t o_end) {
  const size_t nb = a.in / 32;
  alignas(32) int16_t codes[kMaxQuantizedIn];
  float dxs[kMaxQuantizedIn / 32];
  for (size_t b = 0; b < nb; ++b) {
    __m256 v[4];
    for (size_t i = 0; i < 4; ++i) v[i] = _mm256_loadu_ps(a.x + 32 * b + 8 * i);
    float id;
    dxs[b] = Avx2Scale<32767>(v, &id);
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
  for (size_t o = o_begin; o < o_end; ++o) {
    __m256 acc = _mm256_setzero_ps();
    for (size_t b = 0; b < nb; ++b) {
      const __m256i x0 = _mm256_load_si256(reinterpret_cast<const __m256i*>(codes + 32 * b));
      const __m256i x1 = _mm256_load_si256(reinterpret_cast<const __m256i*>(codes + 32 * b + 16));
      const uint8_t* blk = w + o * row_bytes + b * 34;
      Avx2Prefetch(blk + kAvx2PrefetchRows * row_bytes);
      const __m256i w0 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 2)));
      const __m256i w1 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 18)));
      const __m256 dot = _mm256_cvtepi32_ps(DotI16<kVnni>(DotI16<kVnni>(_mm256_setzero_si256(), w0, x0), w1, x1));
      acc = _mm256_fmadd_ps(dot, _mm256_set1_ps(Avx2F16(blk) * dxs[b]), acc);
    }
    a.y[o] = Avx2Sum(acc);
  }
}

template <bool kVnni>
HWY_INLINE void Avx2Integer(const MatmulArgs& a, size_t o_begin, size_t o_end) {
  if (a.precise_x) return Avx2Q8Wide<kVnni>(a, o_begin, o_end);
  Avx2X q;
  const bool pair_order =
      a.w_type != WeightType::kQ8_0 && a.w_type != WeightType::kQ4_K && a.w_type != WeightType::kQ6_K;
  if (pair_order) {
    Avx2Quantize<true>(a.x, a.in / 32, &q);
  } else {
    Avx2Quantize<false>(a.x, a.in / 32, &q);
  }
  switch (a.w_type) {
    case WeightType::kQ8_0: return Avx2Gemv<WeightType::kQ8_0, kVnni>(a, q, o_begin, o_end);
    case WeightType::kQ4_0: return Avx2Gemv<WeightType::kQ4_0, kVnni>(a, q, o_begin, o_end);
    case WeightType::kQ4_1: return Avx2Gemv<WeightType::kQ4_1, kVnni>(a, q, o_begin, o_end);
    case WeightType::kQ5_0: return Avx2Gemv<WeightType::kQ5_0, kVnni>(a, q, o_begin, o_end);
    case WeightType::kQ5_1: return Avx2Gemv<WeightType::kQ5_1, kVnni>(a, q, o_begin, o_end);
    case WeightType::kQ4_K: return Avx2Q4K<kVnni>(a, q, o_begin, o_end);
    default: return Avx2Q6K(a, q, o_begin, o_end);
  }
}

HWY_NOINLINE void MatmulInteger(const MatmulArgs& a, size_t o_begin, size_t o_end) {
  if (AvxVnniAvailable() && matmul_avx_vnni_allowed()) return Avx2Integer<true>(a, o_begin, o_end);
  Avx2Integer<false>(a, o_begin, o_end);
}

#endif  // HEADWAY_MATMUL_AVX2_INT8

}  // namespace mm
}  // namespace HWY_NAMESPACE
}  // namespace simd
}  // namespace headway
HWY_AFTER_NAMESPACE();

#endif  // HEADWAY_SIMD_MATMUL_MATMUL_AVX2_INT8_INL_H_
