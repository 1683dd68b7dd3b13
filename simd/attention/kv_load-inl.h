// K/V rows, per Highway target: where the row of a key lies (ring caches, back-to-back rows),
// widening it from its storage dtype (f32, IEEE f16, bf16, the q8_0 and q4_0 blocks) to f32, and
// prefetching it. The widening is exact for every input, including f16 subnormals, infinities and
// NaN (a NaN stays a NaN, so it reaches the rows that see it), and reads exactly head_dim
// elements of each row (block types: its ceil(head_dim / 32) blocks), never past it. A block
// value is q · d in f32 with d the block's f16 scale widened, as ggml's dequantization computes it. matmul-inl.h widens
// f16/bf16 weights with the same functions.

#if defined(HEADWAY_SIMD_ATTENTION_KV_LOAD_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef HEADWAY_SIMD_ATTENTION_KV_LOAD_INL_H_
#undef HEADWAY_SIMD_ATTENTION_KV_LOAD_INL_H_
#else
#define HEADWAY_SIMD_ATTENTION_KV_LOAD_INL_H_
#endif

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "hwy/cache_control.h"
#include "hwy/highway.h"
#include "simd/attention/attention.h"
#include "simd/attention/attention_tiling.h"
#include "simd/vector_ops.h"

HWY_BEFORE_NAMESPACE();
namespace headway {
namespace simd {
namespace HWY_NAMESPACE {
namespace hn = HEADWAY_SIMD_OPS;

inline float KvF32FromBits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// One f16 value, exact (subnormals, infinities and NaN included).
inline float KvF16ToF32(uint16_t h) {
  const uint32_t sign = uint32_t{h & 0x8000u} << 16;
  const uint32_t exp = (h >> 10) & 0x1Fu;
  const uint32_t mant = h & 0x3FFu;
  if (exp == 0x1F) return KvF32FromBits(sign | 0x7F800000u | (mant << 13));
  if (exp == 0) {  // zero or subnormal: mant · 2^-24, exact in f32
    const float f = static_cast<float>(mant) * (1.0f / 16777216.0f);
    return sign ? -f : f;
  }
  return KvF32FromBits(sign | ((exp + 112) << 23) | (mant << 13));
}

inline float KvBF16ToF32(uint16_t b) { return KvF32FromBits(uint32_t{b} << 16); }

// N f16 values, given as their bits (one per lane of DF). Highway 1.0.3 converts in hardware on
// x86 from AVX2 up (F16C) and on ARM with half-precision FP (every AArch64 core), exactly;
// elsewhere (SSE4, SSSE3, EMU128, SCALAR, ARM without FP16) it emulates without infinities or NaN
// (exponent 31 becomes a finite 2^16..). Helium converts in hardware too (VCVTB, simd/helium.h).
// The other targets use the integer form below: shift the 15 magnitude bits into f32 position and
// multiply by 2^112 (rebias 15 → 127; exact, subnormals included), then patch exponent 31.
template <class DF>
HWY_INLINE hn::Vec<DF> WidenF16Bits(DF df, hn::Vec<hn::Rebind<uint16_t, DF>> h) {
#if !HEADWAY_SIMD_HELIUM &&                                                                             \
    (HWY_TARGET == HWY_SCALAR || HWY_TARGET == HWY_EMU128 || (HWY_ARCH_X86 && HWY_TARGET > HWY_AVX2) || \
     (HWY_ARCH_ARM && !(__ARM_FP & 2)) || !(HWY_ARCH_X86 || HWY_ARCH_ARM))
  const hn::RebindToUnsigned<DF> du32;
  const auto bits = hn::PromoteTo(du32, h);
  const auto sign = hn::ShiftLeft<16>(hn::And(bits, hn::Set(du32, 0x8000u)));
  const auto mag = hn::ShiftLeft<13>(hn::And(bits, hn::Set(du32, 0x7FFFu)));
  const auto finite = hn::Mul(hn::BitCast(df, mag), hn::Set(df, 0x1.0p112f));
  const auto inf_nan = hn::BitCast(df, hn::Or(mag, hn::Set(du32, 0x7F800000u)));
  const auto is_inf_nan = hn::RebindMask(df, hn::Eq(hn::And(bits, hn::Set(du32, 0x7C00u)), hn::Set(du32, 0x7C00u)));
  return hn::Or(hn::IfThenElse(is_inf_nan, inf_nan, finite), hn::BitCast(df, sign));
#else
  return hn::PromoteTo(df, hn::BitCast(hn::Rebind<hwy::float16_t, DF>(), h));
#endif
}

// N f16 values from memory.
template <class DF>
HWY_INLINE hn::Vec<DF> WidenF16(DF df, const uint16_t* HWY_RESTRICT p) {
  return WidenF16Bits(df, hn::LoadU(hn::Rebind<uint16_t, DF>(), p));
}

// N bf16 values, given as their bits, or from memory: exact, the 16 bits are the top half of the f32.
template <class DF>
HWY_INLINE hn::Vec<DF> WidenBF16Bits(DF df, hn::Vec<hn::Rebind<uint16_t, DF>> b) {
  const hn::RebindToUnsigned<DF> du32;
  return hn::BitCast(df, hn::ShiftLeft<16>(hn::PromoteTo(du32, b)));
}
template <class DF>
HWY_INLINE hn::Vec<DF> WidenBF16(DF df, const uint16_t* HWY_RESTRICT p) {
  return WidenBF16Bits(df, hn::LoadU(hn::Rebind<uint16_t, DF>(), p));
}

// Values [x, x + N) of a block-format row (N <= 16 divides 32 and x is a multiple of N, so they
// lie in one block; q4_0: in one half of its nibbles): the codes widened, times the block's scale.
template <KvType kType, class DF>
HWY_INLINE hn::Vec<DF> WidenBlock(DF df, const char* HWY_RESTRICT row, size_t x) {
  static_assert(KvTypeIsBlock(kType), "block formats only");
  const char* block = row + x / kKvBlockValues * KvBlockBytes(kType);
  uint16_t scale_bits;
  std::memcpy(&scale_bits, block, 2);
  // The scale widened in vector registers: the scalar form branches on the exponent, per vector.
  const auto scale = WidenF16Bits(df, hn::Set(hn::Rebind<uint16_t, DF>(), scale_bits));
  const hn::RebindToSigned<DF> di32;
  const size_t i = x % kKvBlockValues;
  if constexpr (kType == KvType::kQ8_0) {
    const hn::Rebind<int8_t, DF> di8;
    const auto q = hn::PromoteTo(di32, hn::LoadU(di8, reinterpret_cast<const int8_t*>(block + 2 + i)));
    return hn::Mul(hn::ConvertTo(df, q), scale);
  } else {
    // Byte j of the codes holds value j in its low nibble and value j + 16 in its high nibble.
    const hn::Rebind<uint8_t, DF> du8;
    const auto bytes = hn::LoadU(du8, reinterpret_cast<const uint8_t*>(block + 2 + i % 16));
    const auto nib = i < 16 ? hn::And(bytes, hn::Set(du8, 0x0F)) : hn::ShiftRight<4>(bytes);
    const auto n = hn::BitCast(di32, hn::PromoteTo(hn::RebindToUnsigned<decltype(di32)>(), nib));
#if !HEADWAY_SIMD_HELIUM && !HWY_HAVE_SCALABLE
    if constexpr (hn::MaxLanes(DF()) == 16) {
      // The 16 values a nibble stands for, (n − 8) · d, fill one vector: one permute per vector
      // replaces subtracting 8, converting and scaling. Each product is exact in f32 (a 4-bit
      // integer times an f16), so the values are those of the general form below.
      const auto values = hn::Mul(hn::Iota(df, -8.0f), scale);
      return hn::TableLookupLanes(values, hn::IndicesFromVec(df, n));
    }
#endif
    return hn::Mul(hn::ConvertTo(df, hn::Sub(n, hn::Set(di32, 8))), scale);
  }
}

// Value i of a block-format row, scalar.
template <KvType kType>
HWY_INLINE float BlockValue(const char* row, size_t i) {
  const char* block = row + i / kKvBlockValues * KvBlockBytes(kType);
  uint16_t scale_bits;
  std::memcpy(&scale_bits, block, 2);
  const size_t j = i % kKvBlockValues;
  int32_t q;
  if constexpr (kType == KvType::kQ8_0) {
    q = static_cast<int8_t>(block[2 + j]);
  } else {
    const uint8_t b = static_cast<uint8_t>(block[2 + j % 16]);
    q = static_cast<int32_t>(j < 16 ? (b & 0x0F) : (b >> 4)) - 8;
  }
  return static_cast<float>(q) * KvF16ToF32(scale_bits);
}

// Bytes of a K/V row before value x, as the decode prefetches pace themselves: KvOffsetBytes
// (attention.h) for f32, f16 and bf16; for the block formats exact where x starts a block (34 and
// 18 bytes per 32 values), proportional inside one (a prefetch hint never faults).
template <KvType kType>
constexpr size_t KvPaceBytes(size_t x) {
  if constexpr (KvTypeIsBlock(kType)) {
    constexpr size_t kBytes = KvBlockBytes(kType);
    return x / kKvBlockValues * kBytes + x % kKvBlockValues * kBytes / kKvBlockValues;
  } else {
    return static_cast<size_t>(KvOffsetBytes(kType, x));
  }
}

// The row of logical key j in K/V: (kv_first_row + j) mod kv_ring_rows in a ring cache, else j.
HWY_INLINE uint64_t KvRow(const AttentionArgs& a, uint64_t key) {
  return a.kv_ring_rows != 0 ? (a.kv_first_row + key) % a.kv_ring_rows : key;
}

// Whether keys [key, key + n) sit in consecutive rows: no ring, or one that does not wrap among them.
HWY_INLINE bool KvRowsConsecutive(const AttentionArgs& a, uint64_t key, uint64_t n) {
  return a.kv_ring_rows == 0 || KvRow(a, key) + n <= a.kv_ring_rows;
}

// The first byte of the row of key j of kv head g in K or V (base = a.k or a.v).
HWY_INLINE const char* KvRowAt(const AttentionArgs& a, const void* base, uint32_t g, uint64_t key) {
  const size_t row = static_cast<size_t>(KvRow(a, key));
  const size_t element = size_t{g} * a.kv_head_stride + row * a.kv_row_stride;
  return static_cast<const char*>(base) + KvOffsetBytes(a.kv_type, element);
}

// rows[i] = the row of key `key + i` of kv head g in K or V (base = a.k or a.v), i < n. One
// division for the run (ring caches); a run wraps at most once (n <= t_kv <= ring rows), so it
// is two linear runs of addresses: no test per key, and the loops vectorize.
HWY_INLINE void KvRows(const AttentionArgs& a, const void* base, uint32_t g, uint64_t key, size_t n,
                       const char** HWY_RESTRICT rows) {
  const size_t stride = static_cast<size_t>(KvOffsetBytes(a.kv_type, a.kv_row_stride));
  const char* head = static_cast<const char*>(base) + KvOffsetBytes(a.kv_type, size_t{g} * a.kv_head_stride);
  const uint64_t row = KvRow(a, key);
  size_t n1 = n;
  if (a.kv_ring_rows != 0) {
    const size_t left = static_cast<size_t>(a.kv_ring_rows - row);
    if (left < n1) n1 = left;
  }
  const char* p = head + static_cast<size_t>(row) * stride;
  for (size_t i = 0; i < n1; ++i) rows[i] = p + i * stride;
  for (size_t i = n1; i < n; ++i) rows[i] = head + (i - n1) * stride;
}

// The rows of a K/V head from some key on, back to back (kStride bytes apart: head_dim 64 or 128
// in the cache layout) and not wrapping in a ring: row i at p + i · kStride. The decode loops
// index these like KvRows' arrays (and shift them by +); a block's rows are then one register
// plus constant offsets, where four row pointers left the Q·Kᵀ loop short of registers on x86.
template <size_t kStride>
struct StridedRows {
  const char* p = nullptr;
  HWY_INLINE const char* operator[](size_t i) const { return p + i * kStride; }
  HWY_INLINE StridedRows operator+(size_t i) const { return StridedRows{p + i * kStride}; }
};

// Rows r with r[i] the K/V row of key `key + i`, i in [i0, i0 + n). kStride > 0: the keys lie
// back to back (StridedRows from `key`; the decode tiling checks that with KeysBackToBack); 0:
// KvRows fills rows[i0, i0 + n), which is returned.
template <size_t kStride>
HWY_INLINE auto TileRows(const AttentionArgs& a, const void* base, uint32_t g, uint64_t key, size_t i0, size_t n,
                         const char** rows) {
  if constexpr (kStride != 0) {
    (void)i0;
    (void)n;
    (void)rows;
    return StridedRows<kStride>{KvRowAt(a, base, g, key)};  // kStride = the rows' own stride here
  } else {
    KvRows(a, base, g, key + i0, n, rows + i0);
    return static_cast<const char* const*>(rows);
  }
}

// N elements [x, x + N) of a K/V row, widened to f32.
template <KvType kType, class DF>
HWY_INLINE hn::Vec<DF> KvVec(DF df, const char* row, size_t x) {
  if constexpr (kType == KvType::kF32) return hn::LoadU(df, reinterpret_cast<const float*>(row) + x);
  if constexpr (kType == KvType::kF16) return WidenF16(df, reinterpret_cast<const uint16_t*>(row) + x);
  if constexpr (KvTypeIsBlock(kType)) return WidenBlock<kType>(df, row, x);
  return WidenBF16(df, reinterpret_cast<const uint16_t*>(row) + x);
}

// Elements [x, d) of a K/V row (fewer than N), zeros after: never reads past the row (a block
// format's last block is whole in memory: only its values past d are zeroed). Helium loads under
// a tail predicate (VCTP); the other targets go through a buffer. DF has at most kMaxLanes lanes.
template <KvType kType, class DF>
HWY_INLINE hn::Vec<DF> KvTail(DF df, const char* row, size_t x, size_t d) {
#if HEADWAY_SIMD_HELIUM
  if constexpr (kType == KvType::kF32) {
    return hn::MaskedLoad(hn::FirstN(df, d - x), df, reinterpret_cast<const float*>(row) + x);
  } else if constexpr (KvTypeIsBlock(kType)) {
    return hn::IfThenElseZero(hn::FirstN(df, d - x), WidenBlock<kType>(df, row, x));
  } else {
    const hn::Rebind<uint16_t, DF> du16;
    const auto h = hn::MaskedLoad(hn::FirstN(du16, d - x), du16, reinterpret_cast<const uint16_t*>(row) + x);
    return kType == KvType::kF16 ? WidenF16Bits(df, h) : WidenBF16Bits(df, h);
  }
#endif
  static_assert(hn::MaxLanes(DF()) <= kAttnMaxLanes, "tail buffer holds kMaxLanes lanes");
  HWY_ALIGN float tmp[kAttnMaxLanes] = {};
  for (size_t i = x; i < d; ++i) {
    if constexpr (kType == KvType::kF32) {
      tmp[i - x] = reinterpret_cast<const float*>(row)[i];
    } else if constexpr (KvTypeIsBlock(kType)) {
      tmp[i - x] = BlockValue<kType>(row, i);
    } else {
      uint16_t h;
      std::memcpy(&h, row + 2 * i, 2);
      tmp[i - x] = kType == KvType::kF16 ? KvF16ToF32(h) : KvBF16ToF32(h);
    }
  }
  return hn::Load(df, tmp);
}

// Elements [x, x + N) (kTail: [x, d), zeros after) of a K/V row.
template <KvType kType, bool kTail, class DF>
HWY_INLINE hn::Vec<DF> KvLoad(DF df, const char* row, size_t x, size_t d) {
  return kTail ? KvTail<kType>(df, row, x, d) : KvVec<kType>(df, row, x);
}

// dst[0, d) = row widened to f32, dst[d, d_pad) = 0 (d_pad a multiple of kAttnMaxLanes, so the
// last partial vector, zeros past d, fits).
template <KvType kType, class DF>
HWY_INLINE void WidenKvRowTyped(DF df, const char* HWY_RESTRICT src, size_t d, size_t d_pad, float* HWY_RESTRICT dst) {
  const size_t n = hn::Lanes(df);
  size_t i = 0;
  for (; i + n <= d; i += n) hn::StoreU(KvVec<kType>(df, src, i), df, dst + i);
  if (i < d) {
    hn::StoreU(KvTail<kType>(df, src, i, d), df, dst + i);
    i += n;
  }
  for (; i < d_pad; i += n) hn::StoreU(hn::Zero(df), df, dst + i);
}
template <class DF>
HWY_INLINE void WidenKvRow(DF df, KvType type, const void* HWY_RESTRICT src, size_t d, size_t d_pad,
                           float* HWY_RESTRICT dst) {
  const char* s = static_cast<const char*>(src);
  switch (type) {
    case KvType::kF32: return WidenKvRowTyped<KvType::kF32>(df, s, d, d_pad, dst);
    case KvType::kF16: return WidenKvRowTyped<KvType::kF16>(df, s, d, d_pad, dst);
    case KvType::kBF16: return WidenKvRowTyped<KvType::kBF16>(df, s, d, d_pad, dst);
    case KvType::kQ8_0: return WidenKvRowTyped<KvType::kQ8_0>(df, s, d, d_pad, dst);
    case KvType::kQ4_0: return WidenKvRowTyped<KvType::kQ4_0>(df, s, d, d_pad, dst);
    default: return;  // weight formats: no cache stores them (attention_args_error refuses them)
  }
}

// Widens keys [k0, k0 + n) of kv head g (K or V, base = args.k or args.v) into rows [0, n) of
// tile [.., d_pad] f32. Ring caches map key j to row (kv_first_row + j) mod kv_ring_rows.
template <class DF>
HWY_INLINE void LoadKvTile(DF df, const AttentionArgs& a, const void* base, uint32_t g, uint64_t k0, size_t n, size_t d,
                           size_t d_pad, float* HWY_RESTRICT tile) {
  for (size_t i = 0; i < n; ++i) WidenKvRow(df, a.kv_type, KvRowAt(a, base, g, k0 + i), d, d_pad, tile + i * d_pad);
}

// Prefetch of one K/V cache line that is read once, half a tile from now. x86: into L2
// (PREFETCHT2), not non-temporal (PREFETCHNTA), which made decode slower on some x86 machines
// (the measurements: docs/PERFORMANCE.md, "decode prefetches into L2"). ARM: non-temporal
// (PLDL1STRM), not measured against the others.
HWY_INLINE void KvPrefetch(const char* p) {
#if HWY_COMPILER_GCC && HWY_ARCH_X86  // GCC and Clang
  __builtin_prefetch(p, 0, 1);
#elif HWY_COMPILER_GCC
  __builtin_prefetch(p, 0, 0);
#else
  hwy::Prefetch(p);
#endif
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace simd
}  // namespace headway
HWY_AFTER_NAMESPACE();

#endif  // HEADWAY_SIMD_ATTENTION_KV_LOAD_INL_H_
