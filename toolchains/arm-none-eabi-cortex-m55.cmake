# Bare metal Cortex-M55 (Armv8.1-M with the Helium vector extension and FPU), e.g. the Arm
# Corstone-300 / MPS3 AN547 board, with Debian's gcc-arm-none-eabi and newlib.
#   toolchains/install-deps.sh cortex-m && cmake --workflow --preset cortex-m55
#
# The core library (no tools layer, no threads, no GPU, no allocator) and the firmware and test
# harness run under qemu-system-arm -M mps3-an547. Highway 1.0.3 has no Helium target: the
# kernels compile for its portable EMU128 target (four f32 lanes in plain C++), which GCC
# auto-vectorizes with Helium where it can.
set(HEADWAY_CORTEX_M_CPU_FLAGS "-mcpu=cortex-m55 -mfloat-abi=hard")
set(HEADWAY_CORTEX_M_BOARD mps3-an547)
include(${CMAKE_CURRENT_LIST_DIR}/cortex-m/toolchain-common.cmake)
