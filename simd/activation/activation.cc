// The gate activations: compiles activation-inl.h for every target of the kernels
// (simd/CMakeLists.txt) and exports the plain functions of activation.h.

#include "simd/activation/activation.h"

#include <cstddef>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "simd/activation/activation-inl.h"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "simd/activation/activation-inl.h"

#if HWY_ONCE
namespace headway {
namespace simd {

HWY_EXPORT(SiluMul);

void silu_mul(float* gate, const float* up, size_t n) {
  if (n == 0) return;
  HWY_DYNAMIC_DISPATCH(SiluMul)(gate, up, n);
}

}  // namespace simd
}  // namespace headway
#endif  // HWY_ONCE
