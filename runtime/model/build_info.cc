#include "headway/build_info.hpp"

#include <cstddef>

#include "runtime/linear/xnnpack_dense.hpp"
#include "simd/attention/attention.h"

namespace headway {

bool built_with_xnnpack() { return xnnpack_built(); }

const char* kernel_target_name() { return simd::attention_target_name(); }

namespace {

// Room for every Highway target's name of one architecture (x86 has the longest list).
constexpr size_t kTargetNamesBytes = 160;

}  // namespace

const char* kernel_compiled_targets() {
  static char names[kTargetNamesBytes];
  simd::target_names(simd::attention_compiled_targets(), names, sizeof(names));
  return names;
}

const char* cpu_simd_targets() {
  static char names[kTargetNamesBytes];
  simd::target_names(simd::cpu_supported_targets(), names, sizeof(names));
  return names;
}

}  // namespace headway
