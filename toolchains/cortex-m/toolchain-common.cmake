# Shared part of the bare-metal Cortex-M toolchains (arm-none-eabi-cortex-m55.cmake,
# arm-none-eabi-cortex-m4.cmake). The includer sets HEADWAY_CORTEX_M_CPU_FLAGS (-mcpu, -mfpu,
# -mfloat-abi), HEADWAY_CORTEX_M_BOARD (the qemu-system-arm machine; <board>.ld is its memory
# map) and, where its toolchain needs them, HEADWAY_CORTEX_M_WORKAROUND_FLAGS (flags that avoid a
# known defect of the compiler or assembler), then includes this file.
#
# Everything is built for a heap-free world: no exceptions, no RTTI, no thread-safe statics
# (there are no threads), every function and object in its own section so that the linker drops
# what the firmware does not call. -Wno-format: newlib's uint32_t is unsigned long, so every
# "%u" of a uint32_t warns here although int and long are the same 32 bits on this ABI (the
# hosted builds keep checking the formats). Executables link our own startup (startup.cc,
# -nostartfiles) and newlib-nano's libc and libm for memcpy, expf and the like;
# firmware.cmake checks that no allocator ends up in them.
set(CMAKE_SYSTEM_NAME Generic)
set(CMAKE_SYSTEM_PROCESSOR arm)

set(CMAKE_C_COMPILER arm-none-eabi-gcc)
set(CMAKE_CXX_COMPILER arm-none-eabi-g++)
set(CMAKE_ASM_COMPILER arm-none-eabi-gcc)
# The compiler checks cannot link a program without our startup and linker script.
set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)

set(HEADWAY_CORTEX_M_DIR ${CMAKE_CURRENT_LIST_DIR})
set(CMAKE_C_FLAGS_INIT "-mthumb ${HEADWAY_CORTEX_M_CPU_FLAGS} ${HEADWAY_CORTEX_M_WORKAROUND_FLAGS} -ffunction-sections -fdata-sections")
set(CMAKE_CXX_FLAGS_INIT
    "-mthumb ${HEADWAY_CORTEX_M_CPU_FLAGS} ${HEADWAY_CORTEX_M_WORKAROUND_FLAGS} -ffunction-sections -fdata-sections -fno-exceptions -fno-rtti -fno-threadsafe-statics -Wno-format")
set(CMAKE_EXE_LINKER_FLAGS_INIT
    "--specs=nano.specs -nostartfiles -Wl,--gc-sections -L${HEADWAY_CORTEX_M_DIR} -T${HEADWAY_CORTEX_M_DIR}/${HEADWAY_CORTEX_M_BOARD}.ld")

# Only the compilers come from the host; libraries and headers come from the toolchain's newlib,
# except Highway, which is header-only here: hwy/hwy-config.cmake makes find_package(hwy) give
# the host's headers (only hwy/, never the rest of /usr/include) and static dispatch.
set(CMAKE_FIND_ROOT_PATH /usr/lib/arm-none-eabi)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
set(hwy_DIR ${HEADWAY_CORTEX_M_DIR}/hwy CACHE PATH "Highway, header-only, for bare metal")

# Tests run the firmware in the emulator: semihosting carries its output to stdout and its exit
# status to qemu's (SYS_EXIT_EXTENDED), which is what ctest sees.
find_program(HEADWAY_QEMU_SYSTEM_ARM qemu-system-arm)
if(HEADWAY_QEMU_SYSTEM_ARM)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${HEADWAY_QEMU_SYSTEM_ARM} -M ${HEADWAY_CORTEX_M_BOARD} -nographic
      -semihosting-config enable=on,target=native -kernel)
else()
  message(WARNING "qemu-system-arm not found: the ${HEADWAY_CORTEX_M_BOARD} firmware can be built "
                  "but not run here (toolchains/install-deps.sh cortex-m installs it)")
endif()
