# Cross-compiling for 32-bit ARM Linux, hard float (Raspberry Pi 2/3/4 with a 32-bit OS, i.MX 6UL/7,
# Cortex-A7/A15/A17 boards) with Debian's g++-arm-linux-gnueabihf.
#   toolchains/install-deps.sh armv7 && cmake --workflow --preset armv7
#
# Baseline: ARMv7-A with NEON and VFPv4 (Cortex-A7 and later; Cortex-A9 lacks VFPv4 and ARMv6
# boards such as the Raspberry Pi 1 / Zero lack NEON: neither is supported by this file).
# NEON must be the compile-time baseline: Debian's armhf libhwy (Highway 1.0.3, built for the
# armhf baseline without NEON) reports only EMU128 and SCALAR from hwy::SupportedTargets() even on
# a NEON CPU, so without it every kernel dispatches to scalar code; with it, dispatch falls back to
# the NEON baseline. -mfp16-format=ieee lets Highway use the f16 conversion instructions.
set(HEADWAY_CROSS_TRIPLE arm-linux-gnueabihf)
set(HEADWAY_CROSS_PROCESSOR armv7-a)
set(HEADWAY_CROSS_QEMU qemu-arm)
set(CMAKE_C_FLAGS_INIT "-march=armv7-a -mfpu=neon-vfpv4 -mfloat-abi=hard -mfp16-format=ieee")
set(CMAKE_CXX_FLAGS_INIT "-march=armv7-a -mfpu=neon-vfpv4 -mfloat-abi=hard -mfp16-format=ieee")
include(${CMAKE_CURRENT_LIST_DIR}/linux-cross-common.cmake)
