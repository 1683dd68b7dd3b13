# Which layer may include which (the folder table of the design): every `#include "..."` of a
# layered folder must name a header that folder may use, or the build fails with the file, the
# line and the rule. Run by the layer_check target on every build:
#   cmake -DSOURCE_DIR=<repo> -P cmake/check_layers.cmake
#
#   folder             may include
#   include/headway/   headway/ (nothing of the project but itself)
#   simd/              simd/, hwy/, and headway/attention_policy.hpp (the work split and scratch
#                      layout: plain constexpr numbers that the plan and the kernels share)
#   runtime/ (formats) headway/, runtime/, and the kernels through their dispatch headers
#                      simd/attention.h and simd/matmul.h (never a per-target -inl.h)
#   runtime/capi/      headway/, runtime/
#   runtime/tokenizer/ headway/, runtime/ (hosted: PCRE2 and utf8proc come in as <...> headers)
#   runtime/gpu/       headway/, runtime/
#   examples/          headway/ and its own folder's headers
#   python/src/        headway/ and its own folder's headers (the bindings: the public API only)
# tests/ and bench/ may include anything.
cmake_minimum_required(VERSION 3.25)
if(NOT SOURCE_DIR)
  message(FATAL_ERROR "check_layers.cmake: set -DSOURCE_DIR")
endif()

# rule name @ folder glob @ allowed include regex
set(rules
  "public headers@include/headway/*@^headway/"
  "kernels@simd/*@^(simd/|hwy/|headway/attention_policy\\.hpp$)"
  "runtime@runtime/*@^(headway/|runtime/|simd/attention\\.h$|simd/matmul\\.h$)"
  "runtime formats@runtime/formats/*@^(headway/|runtime/)"
  "C API@runtime/capi/*@^(headway/|runtime/)"
  "tokenizers@runtime/tokenizer/*@^(headway/|runtime/)"
  "gpu backend@runtime/gpu/*@^(headway/|runtime/)"
  "command-line tool@examples/cli/*@^(headway/|examples/cli/)"
  "bare-metal firmware@examples/baremetal/*@^(headway/|[^/]+$)"
  "python bindings@python/src/*@^(headway/|python/src/)"
)

set(violations "")
foreach(rule IN LISTS rules)
  string(REPLACE "@" ";" parts "${rule}")
  list(GET parts 0 name)
  list(GET parts 1 glob)
  list(GET parts 2 allowed)
  file(GLOB files RELATIVE ${SOURCE_DIR} ${SOURCE_DIR}/${glob}.cc ${SOURCE_DIR}/${glob}.h ${SOURCE_DIR}/${glob}.hpp)
  foreach(f IN LISTS files)
    file(STRINGS ${SOURCE_DIR}/${f} lines REGEX "^[ \t]*#[ \t]*include[ \t]*\"")
    foreach(line IN LISTS lines)
      string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*\"([^\"]*)\".*" "\\1" header "${line}")
      if(NOT header MATCHES "${allowed}")
        string(APPEND violations "  ${f}: #include \"${header}\" (${name} may include: ${allowed})\n")
      endif()
    endforeach()
  endforeach()
endforeach()

if(violations)
  message(FATAL_ERROR "headway: includes across the layers (cmake/check_layers.cmake):\n${violations}")
endif()
