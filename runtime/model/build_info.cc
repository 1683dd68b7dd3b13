#include "headway/build_info.hpp"

#include "runtime/linear/xnnpack_dense.hpp"
#include "simd/attention.h"

namespace headway {

bool built_with_xnnpack() { return xnnpack_built(); }

const char* kernel_target_name() { return simd::attention_target_name(); }

}  // namespace headway
