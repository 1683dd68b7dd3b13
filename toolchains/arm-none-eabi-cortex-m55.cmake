# Bare metal Cortex-M55 (Armv8.1-M with the Helium vector extension and FPU), e.g. the Arm
# Corstone-300 / MPS3 AN547 board, with Debian's gcc-arm-none-eabi and newlib.
#   toolchains/install-deps.sh cortex-m && cmake --workflow --preset cortex-m55
#
# The core library (no tools layer, no threads, no GPU, no allocator) and the firmware and test
# harness run under qemu-system-arm -M mps3-an547. Highway 1.0.3 has no Helium target (it compiles
# SCALAR here): the kernels use headway's Helium ops instead (simd/helium.h; HEADWAY_KERNELS_HELIUM
# OFF keeps Highway's SCALAR code).
#
# -fno-if-conversion -fno-if-conversion2: GCC 12.2 if-converts a float → int conversion under a
# "not equal" condition into vcvtne.s32.f32, which binutils 2.40 with MVE enabled refuses ("syntax
# error": it reads VCVTN). Off for everything built here; the test "toolchain: if-converted float
# to int conversion assembles" compiles a reproducer with these flags.
set(HEADWAY_CORTEX_M_CPU_FLAGS "-mcpu=cortex-m55 -mfloat-abi=hard")
set(HEADWAY_CORTEX_M_WORKAROUND_FLAGS "-fno-if-conversion -fno-if-conversion2")
set(HEADWAY_CORTEX_M_HELIUM ON)  # MVE-F: simd/CMakeLists.txt tunes the Helium kernels' build
set(HEADWAY_CORTEX_M_BOARD mps3-an547)
include(${CMAKE_CURRENT_LIST_DIR}/cortex-m/toolchain-common.cmake)
