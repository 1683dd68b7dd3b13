# XNNPACK for the Q/K/V/O projections (runtime/linear/xnnpack_dense.cc). Debian's 2022 snapshot ships
# neither CMake config nor pkg-config files (and find_package(cpuinfo) is broken there): find the
# header and the library by name. Without it, or with HEADWAY_XNNPACK=OFF (bare metal), the
# Highway GEMM (simd/matmul/matmul.h) serves every projection and a plan that asks for XNNPACK is refused.
find_library(HEADWAY_XNNPACK_LIBRARY XNNPACK)
find_path(HEADWAY_XNNPACK_INCLUDE_DIR xnnpack.h)
find_library(HEADWAY_XNNPACK_PTHREADPOOL_LIBRARY pthreadpool)
if(HEADWAY_XNNPACK_LIBRARY AND HEADWAY_XNNPACK_INCLUDE_DIR AND HEADWAY_XNNPACK_PTHREADPOOL_LIBRARY
   AND NOT CMAKE_CROSSCOMPILING)
  set(headway_xnnpack_default ON)
else()
  set(headway_xnnpack_default OFF)
  message(STATUS "headway: HEADWAY_XNNPACK is OFF (no libxnnpack-dev here, or a cross build): "
                 "projections run on the Highway GEMM")
endif()
option(HEADWAY_XNNPACK "Run the attention projections on XNNPACK fully-connected operators" ${headway_xnnpack_default})
set(HEADWAY_PC_XNNPACK_LIBS "" PARENT_SCOPE)
if(HEADWAY_XNNPACK)
  if(NOT (HEADWAY_XNNPACK_LIBRARY AND HEADWAY_XNNPACK_INCLUDE_DIR AND HEADWAY_XNNPACK_PTHREADPOOL_LIBRARY))
    message(FATAL_ERROR "HEADWAY_XNNPACK is ON but XNNPACK was not found (install libxnnpack-dev, "
                        "or configure with -DHEADWAY_XNNPACK=OFF)")
  endif()
  target_sources(headway PRIVATE linear/xnnpack_dense.cc)
  target_include_directories(headway PRIVATE ${HEADWAY_XNNPACK_INCLUDE_DIR})
  target_link_libraries(headway PRIVATE $<BUILD_INTERFACE:${HEADWAY_XNNPACK_LIBRARY}> $<INSTALL_INTERFACE:XNNPACK>
                                        $<BUILD_INTERFACE:${HEADWAY_XNNPACK_PTHREADPOOL_LIBRARY}>
                                        $<INSTALL_INTERFACE:pthreadpool>)
  set(HEADWAY_PC_XNNPACK_LIBS "-lXNNPACK -lpthreadpool" PARENT_SCOPE)
else()
  target_sources(headway PRIVATE linear/xnnpack_stub.cc)
endif()
