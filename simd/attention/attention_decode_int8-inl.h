// Decode Q·Kᵀ in integers over q8_0 and q4_0 K, per Highway target: where the CPU multiplies
// int8 vectors into int32 lanes in one instruction, each query row is quantized to int8 per block
// of 32 values (as ggml's q8_0 dot product does) and a score is Σ_b d_k,b · d_q,b · Σ_i k_i q_i,
// the inner sums exact in int32. Three kinds of CPU have such an instruction:
// - x86 AVX-512 VNNI (VPDPBUSD): Highway's AVX3_DL, whose runtime dispatch requires AVX512_VNNI.
//   Highway 1.0.3 has no op for it and names "avxvnni" rather than "avx512vnni" in that target's
//   attributes, so the instruction is inline assembly.
// - x86 AVX-VNNI (the same instruction, VEX-encoded, 256 bits; Alder Lake and later, the N100
//   class of edge boxes without AVX-512) under Highway's AVX2 target, which does not require it:
//   the kernel asks CPUID (leaf 7, subleaf 1, EAX bit 4) once. Inline assembly too.
// - Arm's dot product extension (SDOT, Armv8.2; Cortex-A55/A76 and later, not A53/A72) under
//   Highway's AArch64 targets on Linux, none of which requires it: the kernel asks the OS
//   (HWCAP_ASIMDDP) and runs SDOT in a function compiled for Armv8.2 with it, which therefore
//   cannot be inlined into the kernel and uses NEON intrinsics, not Highway's ops. The SVE
//   targets run the same NEON function: their cores have NEON, and their 128-bit SVE (phones,
//   Neoverse V2) would do the same work per instruction.
// Elsewhere (other targets, CPUs without the instruction, head_dims that are not whole blocks)
// decode widens K to f32 (kv_load-inl.h).
//
// VPDPBUSD multiplies unsigned bytes by signed bytes, four to an int32 lane. K supplies the
// unsigned side: q8_0 codes with the sign bit flipped (k + 128), q4_0 nibbles (k + 8) as they
// are; the query codes the signed side. Each lane starts from −128 (q8_0) or −8 (q4_0) times the
// sum of its four query codes, so it ends holding exactly Σ k_i q_i of its four values. SDOT
// multiplies signed bytes by signed bytes: q8_0 codes as they are, q4_0 nibbles minus 8, each
// lane from 0.
//
// The quantized query of row r replaces its f32 row in the scratch (t.q + r · d_pad floats: 4 ·
// d_pad bytes, at least 3 · d for the head_dims taken here), per pair p of blocks (2p, 2p + 1;
// the last pair may hold one block), np pairs:
//   codes  bytes [64p, 64p + 64): int8, in the order the pair's K bytes are loaded;
//   bias   bytes 64 · np + [64p, 64p + 64): 16 int32, each lane's starting value (above; VNNI);
//   scales bytes 128 · np + [64p, 64p + 64): 16 f32, each lane's block's d_q.
// A pair of q8_0 K blocks loads as its two code runs (lanes 0-7 block 2p, 8-15 block 2p + 1); a
// q4_0 pair as [low nibbles of 2p, of 2p + 1, high nibbles of 2p, of 2p + 1] (values 0-15 and
// 16-31 of each; lanes 0-3 and 8-11 block 2p). A single last block fills lanes 0-7 in value order,
// lanes 8-15 stay zero. AVX-VNNI reads the same layout 32 bytes (8 lanes) at a time, SDOT 16
// bytes (4 lanes): block b's codes are two of its pair's four 16-byte runs.

#if defined(HEADWAY_SIMD_ATTENTION_ATTENTION_DECODE_INT8_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef HEADWAY_SIMD_ATTENTION_ATTENTION_DECODE_INT8_INL_H_
#undef HEADWAY_SIMD_ATTENTION_ATTENTION_DECODE_INT8_INL_H_
#else
#define HEADWAY_SIMD_ATTENTION_ATTENTION_DECODE_INT8_INL_H_
#endif

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>

#include "hwy/highway.h"
#include "simd/attention/attention.h"
#include "simd/attention/attention_math-inl.h"
#include "simd/attention/attention_task-inl.h"
#include "simd/attention/attention_tiling.h"
#include "simd/attention/kv_load-inl.h"
#include "simd/vector_ops.h"

// SDOT on every AArch64 SIMD target (NEON and the SVE ones, whose cores have NEON too), where its
// pragma has this spelling (GCC) and the OS reports it (Linux, Android).
#undef HEADWAY_DECODE_SDOT
#if HWY_ARCH_ARM_A64 && HWY_TARGET != HWY_EMU128 && HWY_TARGET != HWY_SCALAR && defined(__linux__) && \
    HWY_COMPILER_GCC_ACTUAL
#define HEADWAY_DECODE_SDOT 1
#include <arm_neon.h>
#include <asm/hwcap.h>
#include <sys/auxv.h>
#else
#define HEADWAY_DECODE_SDOT 0
#endif

// AVX-VNNI under the AVX2 target, where the compiler has <cpuid.h> (GCC, Clang).
#undef HEADWAY_DECODE_AVXVNNI
#if HWY_TARGET == HWY_AVX2 && HWY_COMPILER_GCC
#define HEADWAY_DECODE_AVXVNNI 1
#include <cpuid.h>
#else
#define HEADWAY_DECODE_AVXVNNI 0
#endif

HWY_BEFORE_NAMESPACE();
namespace headway {
namespace simd {
namespace HWY_NAMESPACE {
namespace hn = HEADWAY_SIMD_OPS;

namespace attn {

// kDecodeIntegerDot: this target compiles an integer Q·Kᵀ; kDecodeDotUnsignedK: its instruction
// takes K as unsigned bytes (VPDPBUSD; SDOT takes signed); DecodeIntegerDotAvailable(): this CPU
// runs it, asked once.
#if HWY_TARGET == HWY_AVX3_DL
inline constexpr bool kDecodeIntegerDot = true;
inline constexpr bool kDecodeDotUnsignedK = true;
inline bool DecodeIntegerDotAvailable() { return true; }
#elif HEADWAY_DECODE_AVXVNNI
inline constexpr bool kDecodeIntegerDot = true;
inline constexpr bool kDecodeDotUnsignedK = true;
inline bool DecodeIntegerDotAvailable() {
  static const bool has = [] {
    unsigned a = 0, b = 0, c = 0, d = 0;
    return __get_cpuid_count(7, 1, &a, &b, &c, &d) != 0 && (a >> 4 & 1u) != 0;
  }();
  return has;
}
#elif HEADWAY_DECODE_SDOT
inline constexpr bool kDecodeIntegerDot = true;
inline constexpr bool kDecodeDotUnsignedK = false;
inline bool DecodeIntegerDotAvailable() {
  static const bool has = (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0;
  return has;
}
#else
inline constexpr bool kDecodeIntegerDot = false;
inline constexpr bool kDecodeDotUnsignedK = false;
inline bool DecodeIntegerDotAvailable() { return false; }
#endif

// A call quantizes the query only when each of its rows sees at least this many keys. The query's
// rounding moves every score a little; a row's output weighs those errors by its probabilities
// against the spread of the V rows, so a row that sees a handful of keys of similar weight keeps
// most of them (up to 1.5e-2 on the shared case table's rows that see 1 to 24 keys) and one that
// sees many averages them out. Short rows also leave little time to gain. ALiBi's distance penalty
// can leave a row a few keys of any weight however many it sees, so ALiBi calls widen too.
inline constexpr int64_t kDecodeQuantizedQueryMinKeys = 64;

// Whether decode on this target and CPU quantizes the query for a: K in a block format, head_dim
// whole blocks and at least two (the quantized row must fit in the f32 row's place), no ALiBi, and
// every row seeing at least kDecodeQuantizedQueryMinKeys keys (so no general mask, which can leave
// a row fewer). A function of the shapes and the CPU, so every task and every chunk of a call
// agrees.
inline bool DecodeQuantizesQuery(const AttentionArgs& a) {
  return DecodeIntegerDotAvailable() && KvTypeIsBlock(a.kv_type) && a.head_dim >= 2 * kKvBlockValues &&
         a.head_dim % kKvBlockValues == 0 && a.alibi_slopes == nullptr && !detail::HasGeneralMask(a) &&
         detail::FewestVisibleKeys(a) >= kDecodeQuantizedQueryMinKeys;
}

// Byte j of the 64 loaded for block b_in_pair (0 or 1) of a pair: where value i of that block sits.
template <KvType kType>
constexpr size_t PairPosition(size_t b_in_pair, size_t i) {
  if constexpr (kType == KvType::kQ8_0) {
    return b_in_pair * 32 + i;
  } else {
    return (i < 16 ? 0 : 32) + b_in_pair * 16 + i % 16;
  }
}

// The query code of a pre-scaled value x given the block's 1/d_q: ggml's roundf(x · id), which
// stays within ±127 (|x| <= amax), with no float-to-int conversion of NaN or infinity: those give
// 0 (a block that is not finite has d_q NaN already; one of subnormals whose 1/d_q overflowed
// counts as zeros).
inline int8_t QueryCode(float x, float id) {
  const float s = x * id;
  const float a = s < 0.0f ? -s : s;
  if (!(a < 127.5f)) return 0;
  int whole = static_cast<int>(a);
  if (a - static_cast<float>(whole) >= 0.5f) ++whole;
  return static_cast<int8_t>(s < 0.0f ? -whole : whole);
}

// Quantizes the task's query rows, pre-scaled as DotLoadQ scales them, into the layout above. A
// block with a value that is not finite gets d_q NaN: its rows' scores are NaN, as they are where
// decode widens.
template <size_t kDim, KvType kType>
inline void DotLoadQInt8(const Task& t) {
  const size_t d = HeadDim<kDim>(t);
  const size_t nb = d / kKvBlockValues;
  const size_t np = (nb + 1) / 2;
  const float k_offset = !kDecodeDotUnsignedK ? 0.0f : kType == KvType::kQ8_0 ? 128.0f : 8.0f;
  for (size_t r = 0; r < t.rows; ++r) {
    const float* q = QueryRow(t, r);
    char* row = reinterpret_cast<char*>(t.q + r * PaddedHeadDim<kDim>(t));
    int8_t* codes = reinterpret_cast<int8_t*>(row);
    std::memset(row, 0, 192 * np);
    float scales[kAttentionMaxHeadDim / 32 * 2] = {};  // per pair and byte quarter (16-byte run)
    for (size_t b = 0; b < nb; ++b) {
      float x[kKvBlockValues];
      float amax = 0.0f;
      bool finite = true;
      for (size_t i = 0; i < kKvBlockValues; ++i) {
        x[i] = q[b * kKvBlockValues + i] * t.q_scale;
        const float ax = x[i] < 0.0f ? -x[i] : x[i];
        finite = finite && ax <= 3.4028235e38f;
        amax = ax > amax ? ax : amax;
      }
      const float dq = finite ? amax / 127.0f : std::numeric_limits<float>::quiet_NaN();
      const float id = finite && dq != 0.0f ? 1.0f / dq : 0.0f;
      const size_t p = b / 2;
      const bool single = b + 1 == nb && nb % 2 == 1;
      for (size_t i = 0; i < kKvBlockValues; ++i) {
        const size_t at = single ? i : PairPosition<kType>(b % 2, i);
        codes[64 * p + at] = QueryCode(x[i], id);
        scales[4 * p + at / 16] = dq;
      }
    }
    int32_t bias[16];
    float dq[16];
    for (size_t p = 0; p < np; ++p) {
      for (size_t lane = 0; lane < 16; ++lane) {
        int32_t sum = 0;
        for (size_t j = 0; j < 4; ++j) sum += codes[64 * p + 4 * lane + j];
        bias[lane] = static_cast<int32_t>(-k_offset) * sum;
        dq[lane] = scales[4 * p + lane / 4];
      }
      std::memcpy(row + 64 * np + 64 * p, bias, sizeof(bias));
      std::memcpy(row + 128 * np + 64 * p, dq, sizeof(dq));
    }
  }
}

#if HWY_TARGET == HWY_AVX3_DL
// acc + Σ of four u8 · s8 products per int32 lane (VPDPBUSD).
HWY_INLINE __m512i DotBytes(__m512i acc, __m512i u8, __m512i s8) {
  asm("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(u8), "v"(s8));
  return acc;
}
HWY_INLINE __m256i DotBytes(__m256i acc, __m256i u8, __m256i s8) {
  asm("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(u8), "v"(s8));
  return acc;
}
#elif HEADWAY_DECODE_AVXVNNI
// The same, VEX-encoded (AVX-VNNI: registers 0-15).
HWY_INLINE __m256i DotBytes(__m256i acc, __m256i u8, __m256i s8) {
  asm("%{vex%} vpdpbusd %2, %1, %0" : "+x"(acc) : "x"(u8), "x"(s8));
  return acc;
}
#endif

#if HWY_TARGET == HWY_AVX3_DL || HEADWAY_DECODE_AVXVNNI

HWY_INLINE __m128i BroadcastF16(const char* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return _mm_set1_epi16(static_cast<short>(h));
}

// The same for a single block: lanes 0-7 in value order.
template <KvType kType>
HWY_INLINE void LoadKBlock(const char* block, __m256i& k, __m256& dk) {
  dk = _mm256_cvtph_ps(BroadcastF16(block));
  if constexpr (kType == KvType::kQ8_0) {
    k = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + 2)), _mm256_set1_epi8(-128));
  } else {
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 2));
    k = _mm256_and_si256(_mm256_inserti128_si256(_mm256_castsi128_si256(c), _mm_srli_epi16(c, 4), 1),
                         _mm256_set1_epi8(0x0F));
  }
}

// Half h (bytes [32h, 32h + 32) of the layout above) of the pair of K blocks at `blocks`, and each
// of its lanes' d_k: q8_0 block 2p + h's codes; q4_0 the low (h = 0) or high nibbles of both
// blocks, lanes 0-3 block 2p.
template <KvType kType>
HWY_INLINE void LoadKPairHalf(const char* blocks, size_t h, __m256i& k, __m256& dk) {
  constexpr size_t kB = KvBlockBytes(kType);
  if constexpr (kType == KvType::kQ8_0) {
    LoadKBlock<kType>(blocks + h * kB, k, dk);
  } else {
    const __m128i c0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blocks + 2));
    const __m128i c1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blocks + kB + 2));
    const __m256i c = _mm256_inserti128_si256(_mm256_castsi128_si256(c0), c1, 1);
    k = _mm256_and_si256(h == 0 ? c : _mm256_srli_epi16(c, 4), _mm256_set1_epi8(0x0F));
    dk = _mm256_cvtph_ps(_mm_unpacklo_epi64(BroadcastF16(blocks), BroadcastF16(blocks + kB)));
  }
}
#endif

#if HWY_TARGET == HWY_AVX3_DL

// K of the pair of blocks at `blocks` (its first block's first byte) as the unsigned bytes of
// the layout above, and each lane's block's d_k (F16C: exact for every f16).
template <KvType kType>
HWY_INLINE void LoadKPair(const char* blocks, __m512i& k, __m512& dk) {
  constexpr size_t kB = KvBlockBytes(kType);
  const __m128i h0 = BroadcastF16(blocks), h1 = BroadcastF16(blocks + kB);
  if constexpr (kType == KvType::kQ8_0) {
    const __m256i c0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blocks + 2));
    const __m256i c1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blocks + kB + 2));
    k = _mm512_xor_si512(_mm512_inserti64x4(_mm512_castsi256_si512(c0), c1, 1), _mm512_set1_epi8(-128));
    dk = _mm512_cvtph_ps(_mm256_inserti128_si256(_mm256_castsi128_si256(h0), h1, 1));
  } else {
    const __m128i c0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blocks + 2));
    const __m128i c1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blocks + kB + 2));
    const __m256i c = _mm256_inserti128_si256(_mm256_castsi128_si256(c0), c1, 1);
    k = _mm512_and_si512(_mm512_inserti64x4(_mm512_castsi256_si512(c), _mm256_srli_epi16(c, 4), 1),
                         _mm512_set1_epi8(0x0F));
    dk = _mm512_cvtph_ps(_mm256_broadcastsi128_si256(_mm_unpacklo_epi64(h0, h1)));
  }
}

#endif

#if HEADWAY_DECODE_SDOT
// acc[r][k] (4 lanes) for rows [0, kRB) of the quantized query at qb (rows row_bytes apart) and
// the kKB K rows kr, over their nb blocks: lane sums are the scores. Per block, the two 16-byte
// runs of codes go through two SDOTs into one int32 vector, then one conversion and one FMA by
// d_k · d_q.
// (GCC 12 gives the functions defined after one with a target attribute that target too, so the
// kernels could no longer inline them; the pragmas keep it to this one.)
#pragma GCC push_options
#pragma GCC target("arch=armv8.2-a+dotprod")
template <KvType kType, size_t kRB, size_t kKB>
HWY_NOINLINE void DotQkSdot(const char* HWY_RESTRICT qb, size_t row_bytes, const char* const* kr, size_t nb,
                            float32x4_t (&acc)[kRB][kKB]) {
  constexpr size_t kB = KvBlockBytes(kType);
  const size_t np = (nb + 1) / 2;
  for (size_t r = 0; r < kRB; ++r) {
    for (size_t k = 0; k < kKB; ++k) acc[r][k] = vdupq_n_f32(0.0f);
  }
  for (size_t b = 0; b < nb; ++b) {
    // The pair's 16-byte runs that hold block b (layout above).
    const bool single = nb % 2 == 1 && b + 1 == nb;
    const size_t c0 = single ? 0 : kType == KvType::kQ8_0 ? 2 * (b % 2) : b % 2;
    const size_t c1 = single ? 1 : kType == KvType::kQ8_0 ? c0 + 1 : c0 + 2;
    const size_t at = 64 * (b / 2);
    int8x16_t k0[kKB], k1[kKB];
    float32x4_t dk[kKB];
    for (size_t k = 0; k < kKB; ++k) {
      const char* block = kr[k] + b * kB;
      uint16_t h;
      std::memcpy(&h, block, 2);
      dk[k] = vcvt_f32_f16(vreinterpret_f16_u16(vdup_n_u16(h)));
      if constexpr (kType == KvType::kQ8_0) {
        k0[k] = vld1q_s8(reinterpret_cast<const int8_t*>(block + 2));
        k1[k] = vld1q_s8(reinterpret_cast<const int8_t*>(block + 18));
      } else {
        const uint8x16_t c = vld1q_u8(reinterpret_cast<const uint8_t*>(block + 2));
        const int8x16_t eight = vdupq_n_s8(8);
        k0[k] = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(c, vdupq_n_u8(0x0F))), eight);
        k1[k] = vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(c, 4)), eight);
      }
    }
    for (size_t r = 0; r < kRB; ++r) {
      const char* q = qb + r * row_bytes;
      const int8x16_t q0 = vld1q_s8(reinterpret_cast<const int8_t*>(q + at + 16 * c0));
      const int8x16_t q1 = vld1q_s8(reinterpret_cast<const int8_t*>(q + at + 16 * c1));
      const float32x4_t dq = vld1q_f32(reinterpret_cast<const float*>(q + 128 * np + at + 16 * c0));
      for (size_t k = 0; k < kKB; ++k) {
        const int32x4_t dot = vdotq_s32(vdotq_s32(vdupq_n_s32(0), k0[k], q0), k1[k], q1);
        acc[r][k] = vfmaq_f32(acc[r][k], vcvtq_f32_s32(dot), vmulq_f32(dk[k], dq));
      }
    }
  }
}
#pragma GCC pop_options
#endif

// DotQk's accumulator of row r0 + r and key k0 + k: set r, member k, or, 1 row × 8 keys, set
// k / 4, member k % 4.
template <size_t kKB>
HWY_INLINE VF& SetMember(VF* const (&sets)[4][4], size_t r, size_t k) {
  return *sets[kKB == 8 ? k / 4 : r][kKB == 8 ? k % 4 : k];
}

// The accumulators of DotQk (attention_decode_blocks-inl.h) for rows [r0, r0 + kRB) and tile
// keys [k0, k0 + kKB), from the quantized query: lane sums of each are the scores. Each score is
// the same sequence of operations whatever the block, so a row's scores do not depend on its
// neighbours.
template <size_t kDim, KvType kType, size_t kRB, size_t kKB, class Rows, class Pf>
HWY_INLINE void DotQkInt8(const Task& t, Rows krow, size_t r0, size_t k0, const Pf& pf, VF& a00, VF& a01, VF& a02,
                          VF& a03, VF& a10, VF& a11, VF& a12, VF& a13, VF& a20, VF& a21, VF& a22, VF& a23, VF& a30,
                          VF& a31, VF& a32, VF& a33) {
  VF* const sets[4][4] = {
      {&a00, &a01, &a02, &a03}, {&a10, &a11, &a12, &a13}, {&a20, &a21, &a22, &a23}, {&a30, &a31, &a32, &a33}};
#if HWY_TARGET == HWY_AVX3_DL || HEADWAY_DECODE_AVXVNNI
  constexpr size_t kB = KvBlockBytes(kType);
  const size_t nb = HeadDim<kDim>(t) / kKvBlockValues;
  const size_t np = (nb + 1) / 2;
  const size_t row_bytes = 4 * PaddedHeadDim<kDim>(t);
  const char* HWY_RESTRICT qb = reinterpret_cast<const char*>(t.q) + r0 * row_bytes;
  const Rows kr = krow + k0;
  decltype(VF().raw) acc[kRB][kKB];  // __m512 (AVX3_DL) or __m256 (AVX2)
  for (size_t r = 0; r < kRB; ++r) {
    for (size_t k = 0; k < kKB; ++k) acc[r][k] = hn::Zero(DF()).raw;
  }
#if HWY_TARGET == HWY_AVX3_DL
  size_t p = 0;
  for (; 2 * p + 2 <= nb; ++p) {
    pf.template Qk<kType>(k0, kKB, 64 * p, 64);
    __m512i kv[kKB];
    __m512 dk[kKB];
    for (size_t k = 0; k < kKB; ++k) LoadKPair<kType>(kr[k] + 2 * p * kB, kv[k], dk[k]);
    for (size_t r = 0; r < kRB; ++r) {
      const char* q = qb + r * row_bytes;
      const __m512i qv = _mm512_loadu_si512(q + 64 * p);
      const __m512i bias = _mm512_loadu_si512(q + 64 * np + 64 * p);
      const __m512 dq = _mm512_loadu_ps(reinterpret_cast<const float*>(q + 128 * np + 64 * p));
      for (size_t k = 0; k < kKB; ++k) {
        const __m512 dot = _mm512_cvtepi32_ps(DotBytes(bias, kv[k], qv));
        acc[r][k] = _mm512_fmadd_ps(dot, _mm512_mul_ps(dk[k], dq), acc[r][k]);
      }
    }
  }
  if (2 * p < nb) {
    pf.template Qk<kType>(k0, kKB, 64 * p, 32);
    __m256i kv[kKB];
    __m256 dk[kKB];
    for (size_t k = 0; k < kKB; ++k) LoadKBlock<kType>(kr[k] + 2 * p * kB, kv[k], dk[k]);
    for (size_t r = 0; r < kRB; ++r) {
      const char* q = qb + r * row_bytes;
      const __m256i qv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + 64 * p));
      const __m256i bias = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + 64 * np + 64 * p));
      const __m256 dq = _mm256_loadu_ps(reinterpret_cast<const float*>(q + 128 * np + 64 * p));
      for (size_t k = 0; k < kKB; ++k) {
        const __m256 dot = _mm256_mul_ps(_mm256_cvtepi32_ps(DotBytes(bias, kv[k], qv)), _mm256_mul_ps(dk[k], dq));
        acc[r][k] = _mm512_add_ps(acc[r][k], _mm512_zextps256_ps512(dot));
      }
    }
  }
#else
  // The layout in 32-byte halves, as many as blocks: half u % 2 of pair u / 2, or a single last
  // block.
  for (size_t u = 0; u < nb; ++u) {
    if (u % 2 == 0) pf.template Qk<kType>(k0, kKB, 32 * u, u + 2 <= nb ? 64 : 32);
    const bool single = nb % 2 == 1 && u + 1 == nb;
    __m256i kv[kKB];
    __m256 dk[kKB];
    for (size_t k = 0; k < kKB; ++k) {
      if (single) {
        LoadKBlock<kType>(kr[k] + u * kB, kv[k], dk[k]);
      } else {
        LoadKPairHalf<kType>(kr[k] + (u - u % 2) * kB, u % 2, kv[k], dk[k]);
      }
    }
    for (size_t r = 0; r < kRB; ++r) {
      const char* q = qb + r * row_bytes;
      const __m256i qv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + 32 * u));
      const __m256i bias = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + 64 * np + 32 * u));
      const __m256 dq = _mm256_loadu_ps(reinterpret_cast<const float*>(q + 128 * np + 32 * u));
      for (size_t k = 0; k < kKB; ++k) {
        acc[r][k] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(DotBytes(bias, kv[k], qv)), _mm256_mul_ps(dk[k], dq), acc[r][k]);
      }
    }
  }
#endif
  for (size_t r = 0; r < kRB; ++r) {
    for (size_t k = 0; k < kKB; ++k) SetMember<kKB>(sets, r, k) = VF{acc[r][k]};
  }
#elif HEADWAY_DECODE_SDOT
  const size_t nb = HeadDim<kDim>(t) / kKvBlockValues;
  for (size_t p = 0; 2 * p < nb; ++p) pf.template Qk<kType>(k0, kKB, 64 * p, 2 * p + 2 <= nb ? 64 : 32);
  const char* kr[kKB];
  for (size_t k = 0; k < kKB; ++k) kr[k] = krow[k0 + k];
  float32x4_t acc[kRB][kKB];
  DotQkSdot<kType, kRB, kKB>(reinterpret_cast<const char*>(t.q + r0 * PaddedHeadDim<kDim>(t)),
                             4 * PaddedHeadDim<kDim>(t), kr, nb, acc);
  // Each accumulator's 4 lanes into the first 4 of DotQk's vector (SVE's may be wider), the rest
  // zero: the lane sums stay the scores.
  const DF df;
  for (size_t r = 0; r < kRB; ++r) {
    for (size_t k = 0; k < kKB; ++k) {
      SetMember<kKB>(sets, r, k) = hn::MaskedLoad(hn::FirstN(df, 4), df, reinterpret_cast<const float*>(&acc[r][k]));
    }
  }
#else
  static_assert(kDecodeIntegerDot && kRB == 0, "targets with integer dot products only");
  (void)t, (void)krow, (void)r0, (void)k0, (void)pf, (void)sets;
#endif
}

}  // namespace attn

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace simd
}  // namespace headway
HWY_AFTER_NAMESPACE();

#endif  // HEADWAY_SIMD_ATTENTION_ATTENTION_DECODE_INT8_INL_H_
