# Shared part of the Debian multiarch cross toolchains (aarch64-linux-gnu.cmake,
# armv7-linux-gnueabihf.cmake). The includer sets HEADWAY_CROSS_TRIPLE (the GNU triple, which is
# also the compiler prefix and the multiarch directory name), HEADWAY_CROSS_PROCESSOR and
# HEADWAY_CROSS_QEMU, then includes this file.
#
# Layout (toolchains/install-deps.sh aarch64|armv7 installs it):
#   /usr/bin/<triple>-g++             cross compiler (g++-<triple> package)
#   /usr/<triple>/                    its sysroot: libc, libstdc++ (what the binaries link against)
#   /usr/lib/<triple>/, /usr/include  target libraries from Debian multiarch (libhwy-dev:arm64 ...)
#   /usr/bin/qemu-<arch>              user-mode emulator that runs the tests (qemu-user)
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR ${HEADWAY_CROSS_PROCESSOR})

set(CMAKE_C_COMPILER ${HEADWAY_CROSS_TRIPLE}-gcc)
set(CMAKE_CXX_COMPILER ${HEADWAY_CROSS_TRIPLE}-g++)

# Multiarch packages live under / (not in a separate sysroot): / must be a find root, and
# CMAKE_LIBRARY_ARCHITECTURE makes find_package/find_library look in /usr/lib/<triple> (where
# hwy-config.cmake and libhwy.so of libhwy-dev:<arch> are) instead of the host's directory.
set(CMAKE_LIBRARY_ARCHITECTURE ${HEADWAY_CROSS_TRIPLE})
set(CMAKE_FIND_ROOT_PATH /usr/${HEADWAY_CROSS_TRIPLE} /)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)   # tools (glslc, python3) run on the build machine
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# pkg-config (PCRE2 and utf8proc for the tokenizers) reads the target's .pc files only, never the
# build machine's.
set(ENV{PKG_CONFIG_LIBDIR} "/usr/lib/${HEADWAY_CROSS_TRIPLE}/pkgconfig:/usr/share/pkgconfig")

# Tests (ctest, and doctest's test discovery at build time) run the target binaries through
# qemu-user. -L points it at the cross sysroot for the dynamic loader and libc; libraries it does
# not find there (libhwy.so.1) it loads from the multiarch directories of /.
# QEMU_CPU in the environment picks the emulated CPU (tests/CMakeLists.txt uses it to run the
# kernel tests once per SIMD flavour).
find_program(HEADWAY_CROSS_QEMU_PATH ${HEADWAY_CROSS_QEMU})
if(HEADWAY_CROSS_QEMU_PATH)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${HEADWAY_CROSS_QEMU_PATH} -L /usr/${HEADWAY_CROSS_TRIPLE})
else()
  message(WARNING "${HEADWAY_CROSS_QEMU} not found: the ${HEADWAY_CROSS_PROCESSOR} build can be "
                  "configured and built but not tested here (toolchains/install-deps.sh installs qemu-user)")
endif()
