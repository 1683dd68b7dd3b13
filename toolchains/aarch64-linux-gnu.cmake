# Cross-compiling for 64-bit ARM Linux (Raspberry Pi 3/4/5 with a 64-bit OS, Jetson, RK35xx,
# i.MX 8, phones' Linux userlands) with Debian's g++-aarch64-linux-gnu.
#   toolchains/install-deps.sh aarch64 && cmake --workflow --preset aarch64
#
# Baseline: ARMv8-A with NEON (every AArch64 core has it). Highway compiles the kernels for NEON,
# SVE and SVE2 and picks the best one the board has at run time.
set(HEADWAY_CROSS_TRIPLE aarch64-linux-gnu)
set(HEADWAY_CROSS_PROCESSOR aarch64)
set(HEADWAY_CROSS_QEMU qemu-aarch64)
include(${CMAKE_CURRENT_LIST_DIR}/linux-cross-common.cmake)
