// The decode tiling over f32 K/V (attention_decode-inl.h) for every target of the kernels
// (simd/CMakeLists.txt), exported behind dynamic dispatch as attention_decode_f32_range
// (attention_range.h).

#include "simd/attention/attention_range.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "simd/attention/attention_decode_f32.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "simd/attention/attention_decode-inl.h"

HWY_BEFORE_NAMESPACE();
namespace headway {
namespace simd {
namespace HWY_NAMESPACE {

HWY_NOINLINE void AttentionDecodeF32(const detail::AttentionRange& r) { attn::DecodeRange<KvType::kF32>(r); }

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace simd
}  // namespace headway
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace headway {
namespace simd {
namespace detail {

HWY_EXPORT(AttentionDecodeF32);

void attention_decode_f32_range(const AttentionRange& r) { HWY_DYNAMIC_DISPATCH(AttentionDecodeF32)(r); }

}  // namespace detail
}  // namespace simd
}  // namespace headway
#endif  // HWY_ONCE
