// The decode tiling over q8_0 K/V (attention_decode-inl.h: ggml's block format, dequantized in
// registers) for every target of the kernels (simd/CMakeLists.txt), exported behind dynamic
// dispatch as attention_decode_q8_0_range (attention_range.h).

#include "simd/attention/attention_range.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "simd/attention/attention_decode_q8_0.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "simd/attention/attention_decode-inl.h"

HWY_BEFORE_NAMESPACE();
namespace headway {
namespace simd {
namespace HWY_NAMESPACE {

HWY_NOINLINE void AttentionDecodeQ8_0(const detail::AttentionRange& r) { attn::DecodeRange<KvType::kQ8_0>(r); }

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace simd
}  // namespace headway
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace headway {
namespace simd {
namespace detail {

HWY_EXPORT(AttentionDecodeQ8_0);

void attention_decode_q8_0_range(const AttentionRange& r) { HWY_DYNAMIC_DISPATCH(AttentionDecodeQ8_0)(r); }

}  // namespace detail
}  // namespace simd
}  // namespace headway
#endif  // HWY_ONCE
