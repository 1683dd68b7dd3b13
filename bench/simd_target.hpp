// `headway bench --target NAME`: the attention kernels, the projections and the roof loops run one
// Highway target named by the caller instead of the best this CPU supports, so that one machine can
// time what a lesser CPU of its family runs (the AVX2 target with AVX-VNNI beside AVX3_DL, SSE4,
// the portable SCALAR code of bare metal). Highway 1.0.3 narrows run-time dispatch only through
// hwy::SetSupportedTargetsForTest, for the whole process: the pin lasts until the process ends.
#pragma once

#include <string>

#include "headway/status.hpp"

namespace headway::bench {

// The targets --target takes: this CPU supports them and the kernels were compiled for them, best
// first, as Highway names them, separated by ", " (empty where run-time detection knows none:
// 32-bit ARM, whose kernels are compiled for their baseline only).
std::string pinnable_simd_targets();

// Pins dynamic dispatch to the target of that name (exact, as pinnable_simd_targets() spells it).
// Fails naming the value and the targets there are; dispatch is then left as it was.
Status pin_simd_target(const char* name);

}  // namespace headway::bench
