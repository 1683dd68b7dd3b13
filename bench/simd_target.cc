#include "bench/simd_target.hpp"

#include <cstdint>
#include <cstring>

#include "hwy/targets.h"
#include "simd/attention/attention.h"

namespace headway::bench {
namespace {

// Lower target bits are the better targets on every architecture Highway 1.0.3 knows.
int64_t pinnable_bits() { return hwy::SupportedTargets() & simd::attention_compiled_targets(); }

}  // namespace

std::string pinnable_simd_targets() {
  std::string names;
  for (int64_t bits = pinnable_bits(); bits != 0; bits &= bits - 1) {
    if (!names.empty()) names += ", ";
    names += hwy::TargetName(bits & -bits);
  }
  return names;
}

Status pin_simd_target(const char* name) {
  for (int64_t bits = pinnable_bits(); bits != 0; bits &= bits - 1) {
    const int64_t target = bits & -bits;
    if (std::strcmp(hwy::TargetName(target), name) != 0) continue;
    hwy::SetSupportedTargetsForTest(target);
    hwy::GetChosenTarget().Update(hwy::SupportedTargets());
    return Status();
  }
  const std::string names = pinnable_simd_targets();
  if (names.empty()) {
    return Status::error(Code::kInvalidArgument,
                         "--target %s: this CPU reports no SIMD target to choose from (the kernels run their "
                         "compiled baseline)",
                         name);
  }
  return Status::error(Code::kInvalidArgument,
                       "--target %s is not one of %s (the SIMD targets this CPU runs and the kernels were "
                       "compiled for)",
                       name, names.c_str());
}

}  // namespace headway::bench
