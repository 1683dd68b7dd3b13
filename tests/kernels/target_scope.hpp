// Running a test on every SIMD target: the suites loop over test_targets() and pin dynamic
// dispatch to each with a TargetScope, naming it in failures with target_label().
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hwy/targets.h"
#include "simd/attention/attention.h"

namespace headway::test {

// The targets to test: supported by this CPU and compiled into the kernels. 0 stands for "the
// target dispatch picks" where Highway's run-time detection knows none of the compiled targets
// (32-bit ARM: libhwy detects nothing, the kernels are compiled for the NEON baseline only).
// Under qemu-user (HEADWAY_TEST_EMULATED, cross builds) only the best of them, the one dispatch
// picks: emulated SIMD runs tens of times slower, and each other target has an emulated CPU of
// its own whose best it is (the SIMD flavours of tests/CMakeLists.txt).
inline std::vector<int64_t> test_targets() {
  std::vector<int64_t> out;
  for (int64_t bits = hwy::SupportedTargets() & simd::attention_compiled_targets(); bits != 0; bits &= bits - 1) {
    out.push_back(bits & -bits);
  }
  if (out.empty()) out.push_back(0);
#ifdef HEADWAY_TEST_EMULATED
  out.resize(1);
#endif
  return out;
}

inline std::string target_label(int64_t target) {
  return std::string("target ") + (target != 0 ? hwy::TargetName(target) : simd::attention_target_name());
}

// Pins dynamic dispatch to one target for its lifetime (0: leaves dispatch alone).
struct TargetScope {
  explicit TargetScope(int64_t target) : active(target != 0) {
    if (!active) return;
    hwy::SetSupportedTargetsForTest(target);
    hwy::GetChosenTarget().Update(hwy::SupportedTargets());
  }
  ~TargetScope() {
    if (!active) return;
    hwy::SetSupportedTargetsForTest(0);
    hwy::GetChosenTarget().Update(hwy::SupportedTargets());
  }
  TargetScope(const TargetScope&) = delete;
  TargetScope& operator=(const TargetScope&) = delete;
  bool active;
};

}  // namespace headway::test
