# x86-64 Linux with a portable baseline (any x86-64 CPU, SSE2), for binaries that are copied to
# other machines (edge boxes of unknown generation). The kernels still dispatch at run time to
# the best target the CPU has: Highway compiles them for SSSE3, SSE4, AVX2, AVX3 (AVX-512) and
# AVX3_DL (simd/CMakeLists.txt) and picks one on first call. Do not add -march=native here: it
# would raise the baseline to the build machine and the binary would fault on older CPUs.
#   cmake --preset release -DCMAKE_TOOLCHAIN_FILE=toolchains/x86_64-linux-gnu.cmake
#
# On an x86-64 build machine this is a native build (tests run directly); on any other machine
# it cross-compiles with Debian's g++-x86-64-linux-gnu and runs the tests under qemu-x86_64.
if(NOT CMAKE_HOST_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$")
  set(CMAKE_SYSTEM_NAME Linux)
  set(CMAKE_SYSTEM_PROCESSOR x86_64)
  set(CMAKE_LIBRARY_ARCHITECTURE x86_64-linux-gnu)
  set(CMAKE_FIND_ROOT_PATH /usr/x86_64-linux-gnu /)
  set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
  set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
  set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
  set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
  find_program(HEADWAY_CROSS_QEMU_PATH qemu-x86_64)
  if(HEADWAY_CROSS_QEMU_PATH)
    set(CMAKE_CROSSCOMPILING_EMULATOR ${HEADWAY_CROSS_QEMU_PATH} -L /usr/x86_64-linux-gnu)
  endif()
endif()
set(CMAKE_C_COMPILER x86_64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER x86_64-linux-gnu-g++)
set(CMAKE_C_FLAGS_INIT "-march=x86-64 -mtune=generic")
set(CMAKE_CXX_FLAGS_INIT "-march=x86-64 -mtune=generic")
