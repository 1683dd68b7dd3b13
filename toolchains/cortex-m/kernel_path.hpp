// The kernel path a Cortex-M build must run. headway_add_firmware (firmware.cmake) defines
// HEADWAY_EXPECTED_KERNELS from HEADWAY_CORTEX_M_KERNELS (simd/CMakeLists.txt: "MVE" on a core
// with Helium unless the build turned it off, else "SCALAR"); the images compare it with the
// target name the kernels report.
#pragma once

#include <cstring>

#include "semihosting.hpp"

namespace cortex_m {

// Whether `running` (headway's kernel target name) is the path this build must run. Any other path
// is a failure of the build, not a slower pass: it prints FAIL with both names.
inline bool kernel_path_is_expected(const char* running) {
  if (std::strcmp(running, HEADWAY_EXPECTED_KERNELS) == 0) return true;
  Text().str("FAIL: the kernels are ").str(running).str(", expected ").str(HEADWAY_EXPECTED_KERNELS).str("\n").print();
  return false;
}

}  // namespace cortex_m
