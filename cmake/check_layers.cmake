# Which layer may include which (the folder table of the design): every `#include "..."` of a
# layered folder must name a header that folder may use, or the build fails with the file, the
# line and the rule. Run by the layer_check target on every build:
#   cmake -DSOURCE_DIR=<repo> -P cmake/check_layers.cmake
#
#   folder               may include
#   include/headway/     headway/ (nothing of the project but itself)
#   simd/                simd/, hwy/, headway/attention_policy.hpp (the work split and scratch
#                        layout: plain constexpr numbers that the plan and the kernels share) and
#                        headway/dtype.hpp (the storage types' table, likewise plain constexpr data),
#                        headway/dtype_convert.hpp and headway/ggml_blocks.hpp (the scalar f16 and
#                        block decodes the loaders use too: header-only, integer or plain f32 code)
#   runtime/, room by room, each the public headers and the rooms below it (runtime/CMakeLists.txt):
#     core/              core/
#     quant/             core/, quant/
#     linear/            core/, linear/, and the GEMM through its dispatch header simd/matmul.h
#     attention/         core/, quant/, attention/, and the kernels through simd/attention.h
#     gpu/               core/, attention/, gpu/
#     model/             core/, quant/, linear/, attention/, model/, and the dispatch headers
#                        (attention, matmul, gated_delta)
#     capi/              every room
#     formats/           core/, formats/ (hosted only)
#     tokenizer/         core/, formats/, tokenizer/ (hosted only: PCRE2 and utf8proc come in as <...>)
#   examples/cli/        headway/ and its own folder's headers
#   examples/baremetal/  headway/ and the firmware's own headers (no folder)
#   python/src/          headway/ and its own folder's headers (the bindings: the public API only)
#   integrations/executorch/  headway/ and its own folder's headers (ExecuTorch's come in as <...>)
#   bench/               headway/, bench/, hwy/, the dispatch headers, and the prepared attention
#                        call (runtime/attention/attention_run.hpp) that the runner times
#   bench/command/       bench/'s, and the command-line tool's flag parser and command table: the
#                        one place bench/ meets the tool (the tool reaches it through cmd_bench())
#   bench/baremetal/     headway/, the dispatch headers, the firmware's tiny model and the
#                        bare-metal support headers (no folder)
# tests/ may include anything.
cmake_minimum_required(VERSION 3.25)
if(NOT SOURCE_DIR)
  message(FATAL_ERROR "check_layers.cmake: set -DSOURCE_DIR")
endif()

# rule name @ folder glob @ allowed include regex
set(rules
  "public headers@include/headway/*@^headway/"
  "kernels@simd/*@^(simd/|hwy/|headway/(attention_policy|dtype|dtype_convert|ggml_blocks)\\.hpp$)"
  "runtime core@runtime/core/*@^(headway/|runtime/core/)"
  "runtime quant@runtime/quant/*@^(headway/|runtime/(core|quant)/)"
  "runtime linear@runtime/linear/*@^(headway/|runtime/(core|linear)/|simd/matmul\\.h$)"
  "runtime attention@runtime/attention/*@^(headway/|runtime/(core|quant|attention)/|simd/attention\\.h$)"
  "gpu backend@runtime/gpu/*@^(headway/|runtime/(core|attention|gpu)/)"
  "runtime model@runtime/model/*@^(headway/|runtime/(core|quant|linear|attention|model)/|simd/(attention|matmul|gated_delta)\\.h$)"
  "C API@runtime/capi/*@^(headway/|runtime/)"
  "runtime formats@runtime/formats/*@^(headway/|runtime/(core|formats)/)"
  "tokenizers@runtime/tokenizer/*@^(headway/|runtime/(core|formats|tokenizer)/)"
  "command-line tool@examples/cli/*@^(headway/|examples/cli/)"
  "bare-metal firmware@examples/baremetal/*@^(headway/|[^/]+$)"
  "python bindings@python/src/*@^(headway/|python/src/)"
  "executorch kernels@integrations/executorch/*@^(headway/|integrations/executorch/)"
  "bench@bench/*@^(headway/|bench/|hwy/|simd/(attention|matmul|gated_delta)\\.h$|runtime/attention/attention_run\\.hpp$)"
  "bench command@bench/command/*@^(headway/|bench/|examples/cli/(cli_common|commands)\\.hpp$)"
  "bare-metal bench@bench/baremetal/*@^(headway/|simd/(attention|matmul)\\.h$|examples/baremetal/tiny_model\\.hpp$|[^/]+$)"
)

set(violations "")
set(checked "")
foreach(rule IN LISTS rules)
  string(REPLACE "@" ";" parts "${rule}")
  list(GET parts 0 name)
  list(GET parts 1 glob)
  list(GET parts 2 allowed)
  file(GLOB files RELATIVE ${SOURCE_DIR} ${SOURCE_DIR}/${glob}.cc ${SOURCE_DIR}/${glob}.h ${SOURCE_DIR}/${glob}.hpp)
  list(APPEND checked ${files})
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

# A source in a layered tree that no rule covers (a new folder, a file at a room's parent) is a
# violation too: every folder gets its rule when it is made.
file(GLOB_RECURSE layered RELATIVE ${SOURCE_DIR}
  ${SOURCE_DIR}/include/headway/*.hpp ${SOURCE_DIR}/include/headway/*.h
  ${SOURCE_DIR}/simd/*.cc ${SOURCE_DIR}/simd/*.h ${SOURCE_DIR}/simd/*.hpp
  ${SOURCE_DIR}/runtime/*.cc ${SOURCE_DIR}/runtime/*.h ${SOURCE_DIR}/runtime/*.hpp
  ${SOURCE_DIR}/examples/*.cc ${SOURCE_DIR}/examples/*.h ${SOURCE_DIR}/examples/*.hpp
  ${SOURCE_DIR}/python/src/*.cc ${SOURCE_DIR}/python/src/*.h ${SOURCE_DIR}/python/src/*.hpp
  ${SOURCE_DIR}/integrations/*.cc ${SOURCE_DIR}/integrations/*.h ${SOURCE_DIR}/integrations/*.hpp
  ${SOURCE_DIR}/bench/*.cc ${SOURCE_DIR}/bench/*.h ${SOURCE_DIR}/bench/*.hpp)
foreach(f IN LISTS layered)
  if(NOT f IN_LIST checked)
    string(APPEND violations "  ${f}: no rule covers its folder (add one to cmake/check_layers.cmake)\n")
  endif()
endforeach()

if(violations)
  message(FATAL_ERROR "headway: includes across the layers (cmake/check_layers.cmake):\n${violations}")
endif()
