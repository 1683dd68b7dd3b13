// The row norms: compiles norm-inl.h for every target of the kernels (simd/CMakeLists.txt) and
// exports the plain functions of norm.h.

#include "simd/norm/norm.h"

#include <cstddef>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "simd/norm/norm-inl.h"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "simd/norm/norm-inl.h"

#if HWY_ONCE
namespace headway {
namespace simd {

HWY_EXPORT(RmsNorm);

void rms_norm(const float* x, const float* w, float* y, size_t t, size_t n, float eps) {
  if (t == 0) return;
  HWY_DYNAMIC_DISPATCH(RmsNorm)(x, w, y, t, n, eps);
}

}  // namespace simd
}  // namespace headway
#endif  // HWY_ONCE
