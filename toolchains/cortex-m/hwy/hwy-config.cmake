# find_package(hwy) for bare metal (toolchain-common.cmake points hwy_DIR here). There is no
# libhwy for arm-none-eabi and none is needed: with one static target the kernels use only
# Highway's headers (targets.cc, aligned_allocator.cc and the dispatch tables stay out).
# HWY_COMPILE_ONLY_STATIC makes foreach_target.h compile the one baseline target and
# HWY_DYNAMIC_DISPATCH a direct call.
#
# The host's headers are staged as <build>/hwy-headers/hwy: putting /usr/include itself on the
# include path would put glibc's headers in front of newlib's.
if(TARGET hwy::hwy)
  return()
endif()
find_path(HEADWAY_HWY_HEADERS hwy/highway.h PATHS /usr/include /usr/local/include NO_CMAKE_FIND_ROOT_PATH
          DOC "The directory that holds Highway's hwy/ headers")
if(NOT HEADWAY_HWY_HEADERS)
  set(hwy_FOUND FALSE)
  set(hwy_NOT_FOUND_MESSAGE "Highway's headers (hwy/highway.h) not found: install libhwy-dev")
  return()
endif()
set(staged ${CMAKE_BINARY_DIR}/hwy-headers)
file(MAKE_DIRECTORY ${staged})
file(CREATE_LINK ${HEADWAY_HWY_HEADERS}/hwy ${staged}/hwy SYMBOLIC)
add_library(hwy::hwy INTERFACE IMPORTED)
set_target_properties(hwy::hwy PROPERTIES
  INTERFACE_SYSTEM_INCLUDE_DIRECTORIES ${staged}
  INTERFACE_INCLUDE_DIRECTORIES ${staged}
  INTERFACE_COMPILE_DEFINITIONS HWY_COMPILE_ONLY_STATIC)
set(hwy_FOUND TRUE)
