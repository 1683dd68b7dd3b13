# Bare metal Cortex-M4F (Armv7E-M with the single-precision FPU), e.g. STM32F4, nRF52, and the
# Arm MPS2 AN386 board, with Debian's gcc-arm-none-eabi and newlib.
#   toolchains/install-deps.sh cortex-m && cmake --workflow --preset cortex-m4
#
# The core library (no tools layer, no threads, no GPU, no allocator) and the firmware and test
# harness run under qemu-system-arm -M mps2-an386. No SIMD unit: the kernels compile for
# Highway's portable EMU128 target (four f32 lanes in plain C++) on the FPU.
set(HEADWAY_CORTEX_M_CPU_FLAGS "-mcpu=cortex-m4 -mfpu=fpv4-sp-d16 -mfloat-abi=hard")
set(HEADWAY_CORTEX_M_BOARD mps2-an386)
include(${CMAKE_CURRENT_LIST_DIR}/cortex-m/toolchain-common.cmake)
