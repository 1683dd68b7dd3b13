// The streaming read of bench/peak_read-inl.h for every target of the kernels
// (bench/CMakeLists.txt), dispatched at run time.

#include <cstddef>

#include "bench/peak_kernels.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "bench/peak_read-inl.h"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "bench/peak_read-inl.h"

#if HWY_ONCE
namespace headway::bench {

HWY_EXPORT(ReadSum);

float read_sum(const float* p, size_t n) { return HWY_DYNAMIC_DISPATCH(ReadSum)(p, n); }

}  // namespace headway::bench
#endif  // HWY_ONCE
