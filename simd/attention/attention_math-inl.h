// The arithmetic both attention tilings share, per Highway target: the vector types, each target's
// register-block sizes, softcap and the visibility mask.
//
// Masking and non-finite values: a key outside a row's visible range gets logit −inf and
// contributes nothing, not even 0 · V (so a NaN or Inf in V reaches only the rows that see it).
// Every softmax weight (and rescale factor) is ExpNonPositive of a non-positive difference, which
// keeps NaN; Highway 1.0.3's Tanh(NaN) is not NaN and is patched: a NaN logit makes its row NaN,
// as IEEE arithmetic would. While a row has seen only masked keys its running max is −inf and
// exp is taken relative to 0, never −inf − −inf.
//
// The register blocks (attention_prefill_blocks-inl.h, attention_decode_blocks-inl.h) are named
// accumulators on every target, SVE and SVE2 (HWY_HAVE_SCALABLE, sizeless vectors) included, of
// the sizes below; everything else (scratch, softmax, masking, drivers) is shared too. Lanes(DF)
// stays a power of two up to 16 on SVE (Highway counts SVE lanes SV_POW2).

#if defined(HEADWAY_SIMD_ATTENTION_ATTENTION_MATH_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef HEADWAY_SIMD_ATTENTION_ATTENTION_MATH_INL_H_
#undef HEADWAY_SIMD_ATTENTION_ATTENTION_MATH_INL_H_
#else
#define HEADWAY_SIMD_ATTENTION_ATTENTION_MATH_INL_H_
#endif

#include <cstddef>
#include <cstdint>
#include <limits>

#include "hwy/contrib/math/math-inl.h"
#include "hwy/highway.h"
#include "simd/attention/attention_tiling.h"
#include "simd/exp_non_positive-inl.h"
#include "simd/vector_ops.h"

HWY_BEFORE_NAMESPACE();
namespace headway {
namespace simd {
namespace HWY_NAMESPACE {
namespace hn = HEADWAY_SIMD_OPS;

namespace attn {

// Vectors are capped at 16 f32 lanes: the scratch layout pads rows and head_dim to 16.
using DF = hn::CappedTag<float, kAttnMaxLanes>;
using DI = hn::RebindToSigned<DF>;
using VF = hn::Vec<DF>;
using VI = hn::Vec<DI>;

#if HEADWAY_SIMD_HELIUM
// Helium: 8 registers of 4 lanes. A decode block is 1 row × 4 keys (4 accumulators, the K vector,
// the query) and a prefill block 4 keys or 4 dims (kKeyBlock, kDimBlock), so none spills.
constexpr size_t kRowVecs = 1;
constexpr size_t kDotRows = 1;
constexpr size_t kDotKeys1 = 4;
constexpr size_t kPvVecs1 = 4;
#elif HWY_HAVE_SCALABLE
constexpr size_t kRowVecs = 1;  // SVE: one block shape for every vector length
constexpr size_t kDotRows = 1;
constexpr size_t kDotKeys1 = 4;
constexpr size_t kPvVecs1 = 4;
#elif (HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3) || HWY_ARCH_ARM_A64
constexpr size_t kRowVecs = 2;  // prefill: row vectors per register block (32 registers)
constexpr size_t kDotRows = 4;  // decode: query rows per register block
// Decode blocks of a single row (MHA: one row per kv head): 8 keys (Q·Kᵀ) or 8 vectors of
// head_dim (P·V) keep 8 independent FMA chains (2 pipes × 4 cycles latency) where 4 would
// leave the FMA pipes half idle.
constexpr size_t kDotKeys1 = 8;
constexpr size_t kPvVecs1 = 8;
#else
constexpr size_t kRowVecs = 1;  // 16 registers: 8 accumulators + operands
constexpr size_t kDotRows = 2;
constexpr size_t kDotKeys1 = 4;
constexpr size_t kPvVecs1 = 4;
#endif
// Prefill Q·Kᵀ: keys per register block; P·V: head dims per register block. 8 accumulators each,
// 4 on Helium, whose 8 registers must also hold the operands.
constexpr size_t kKeyBlock = HEADWAY_SIMD_HELIUM ? 4 : 8;
constexpr size_t kDimBlock = HEADWAY_SIMD_HELIUM ? 4 : 8;
constexpr size_t kDotKeys = 4;  // decode Q·Kᵀ: keys per register block
constexpr size_t kTile = kAttnKvTile;

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// cap · tanh(x) (x is already logit / cap); NaN stays NaN.
HWY_INLINE VF Softcap(DF df, VF x, VF cap) {
#if HEADWAY_SIMD_HELIUM
  const VF t = hn::Tanh(df, x, [df](VF y) { return ExpNonPositive(df, y); });
#else
  const VF t = hn::Tanh(df, x);
#endif
  return hn::Mul(hn::IfThenElse(hn::IsNaN(x), x, t), cap);
}

// lo <= k <= hi, lanewise.
HWY_INLINE hn::Mask<DF> Visible(DF df, DI di, size_t k, VI lo, VI hi) {
  const VI kk = hn::Set(di, static_cast<int32_t>(k));
  return hn::RebindMask(df, hn::Not(hn::Or(hn::Gt(lo, kk), hn::Gt(kk, hi))));
}

}  // namespace attn

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace simd
}  // namespace headway
HWY_AFTER_NAMESPACE();

#endif  // HEADWAY_SIMD_ATTENTION_ATTENTION_MATH_INL_H_
