// The FMA loop of bench/peak_fma-inl.h for every target of the kernels (bench/CMakeLists.txt),
// dispatched at run time.

#include <cstdint>

#include "bench/peak_kernels.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "bench/peak_fma-inl.h"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "bench/peak_fma-inl.h"

#if HWY_ONCE
namespace headway::bench {

HWY_EXPORT(FmaLanes);
HWY_EXPORT(FmaLoop);
HWY_EXPORT(PeakTargetName);

uint32_t fma_lanes() { return HWY_DYNAMIC_DISPATCH(FmaLanes)(); }
float fma_loop(uint64_t iters) { return HWY_DYNAMIC_DISPATCH(FmaLoop)(iters); }
const char* peak_target_name() { return HWY_DYNAMIC_DISPATCH(PeakTargetName)(); }

}  // namespace headway::bench
#endif  // HWY_ONCE
