# Which layer may include which (the folder table of the design): every `#include "..."` of a
# layered folder must name a header that folder may use, or the build fails with the file, the
# line and the rule. Run by the layer_check target on every build:
#   cmake -DSOURCE_DIR=<repo> -P cmake/check_layers.cmake
#
#   folder               may include
#   include/headway/     headway/ and headway/detail/ (the public API: nothing of the project but
#                        itself, never the hosted tools layer)
#   include/headway/detail/  likewise: what the kernels and the runtime share and users never
#                        include (attention_policy, ggml_blocks, plan_for)
#   include/headway/tools/   headway/ (all of it): the hosted tools layer's headers (headway::tools)
#   simd/                its own vector ops (simd/*.h: vector_ops.h, helium.h) and hwy/ only
#   simd/attention/      simd/attention/, simd/*.h, hwy/, and of headway/ only
#                        detail/attention_policy.hpp (the work split and scratch layout: plain
#                        constexpr numbers that the plan and the kernels share), dtype.hpp (the
#                        storage types' table, likewise plain constexpr data), dtype_convert.hpp
#                        and detail/ggml_blocks.hpp (the scalar f16 and block decodes the loaders
#                        use too: header-only, integer or plain f32 code)
#   simd/matmul/         simd/matmul/ and the same, not simd/attention/ but for its K/V row loads
#                        (simd/attention/kv_load-inl.h: matmul widens f16/bf16 weights with them)
#   simd/gated_delta/    simd/gated_delta/ and the same
#   simd/activation/     simd/activation/ and the same
#   simd/norm/           simd/norm/ and the same
#   runtime/, room by room, each the public and detail headers (never headway/tools/) and the
#   rooms below it (runtime/CMakeLists.txt):
#     core/              core/ (and headway/tools/heap_count.hpp for core/heap_count.cc, which is
#                        the opt-in hosted library headway_heap_count, never the core library)
#     quant/             core/, quant/
#     linear/            core/, linear/, and the GEMM through its dispatch header simd/matmul/matmul.h
#     attention/         core/, quant/, attention/, and the kernels through simd/attention/attention.h
#     gpu/               core/, attention/, gpu/
#     model/             core/, quant/, linear/, attention/, model/, and the dispatch headers
#                        (simd/attention/attention.h, simd/matmul/matmul.h,
#                        simd/gated_delta/gated_delta.h, simd/activation/activation.h,
#                        simd/norm/norm.h)
#     capi/              every room, and headway/tools/: capi_files.cc and capi_model_file.cc
#                        (the hosted file calls) compile into headway_tools, not the core library
#     formats/           headway/ (tools/ too), core/, formats/ (hosted only)
#     tokenizer/         headway/ (tools/ too), core/, formats/, tokenizer/ (hosted only: PCRE2
#                        and utf8proc come in as <...>)
#   examples/cli/        headway/ and its own folder's headers
#   examples/baremetal/  headway/ and the firmware's own headers (no folder)
#   python/src/          headway/ and its own folder's headers (the bindings: the public API only)
#   integrations/executorch/  headway/ and its own folder's headers (ExecuTorch's come in as <...>)
#   bench/               headway/, bench/, hwy/, the dispatch headers, and the prepared attention
#                        call (runtime/attention/attention_run.hpp) that the runner times
#   bench/command/       bench/'s, and the command-line tool's flag parser and command table: the
#                        one place bench/ meets the tool (the tool reaches it through cmd_bench())
#   bench/baremetal/     headway/, the attention and matmul dispatch headers, the firmware's tiny
#                        model and the bare-metal support headers (no folder)
# tests/ may include anything.
cmake_minimum_required(VERSION 3.25)
if(NOT SOURCE_DIR)
  message(FATAL_ERROR "check_layers.cmake: set -DSOURCE_DIR")
endif()

# The public and detail headers, not the hosted tools layer's (headway/tools/).
set(core_headers "headway/([^/]+|detail/[^/]+)$")
# What every kernel room may include besides its own folder.
set(kernel_common "simd/[^/]+\\.h$|hwy/|headway/detail/(attention_policy|ggml_blocks|row_groups)\\.hpp$|headway/(dtype|dtype_convert)\\.hpp$")
# The kernels' dispatch headers, the one way into simd/ from outside it.
set(dispatch "simd/(attention/attention|matmul/matmul|gated_delta/gated_delta|activation/activation|norm/norm)\\.h$")

# rule name @ folder glob @ allowed include regex
set(rules
  "public headers@include/headway/*@^${core_headers}"
  "internal headers@include/headway/detail/*@^${core_headers}"
  "hosted tools headers@include/headway/tools/*@^headway/"
  "kernels' vector ops@simd/*@^(simd/[^/]+\\.h$|hwy/)"
  "attention kernels@simd/attention/*@^(simd/attention/|${kernel_common})"
  "matmul kernels@simd/matmul/*@^(simd/matmul/|simd/attention/kv_load-inl\\.h$|${kernel_common})"
  "gated_delta kernels@simd/gated_delta/*@^(simd/gated_delta/|${kernel_common})"
  "activation kernels@simd/activation/*@^(simd/activation/|${kernel_common})"
  "norm kernels@simd/norm/*@^(simd/norm/|${kernel_common})"
  "runtime core@runtime/core/*@^(${core_headers}|runtime/core/|headway/tools/heap_count\\.hpp$)"
  "runtime quant@runtime/quant/*@^(${core_headers}|runtime/(core|quant)/)"
  "runtime linear@runtime/linear/*@^(${core_headers}|runtime/(core|linear)/|simd/matmul/matmul\\.h$)"
  "runtime attention@runtime/attention/*@^(${core_headers}|runtime/(core|quant|attention)/|simd/attention/attention\\.h$)"
  "gpu backend@runtime/gpu/*@^(${core_headers}|runtime/(core|attention|gpu)/)"
  "runtime model@runtime/model/*@^(${core_headers}|runtime/(core|quant|linear|attention|model)/|${dispatch})"
  "C API@runtime/capi/*@^(headway/|runtime/)"
  "runtime formats@runtime/formats/*@^(headway/|runtime/(core|formats)/)"
  "tokenizers@runtime/tokenizer/*@^(headway/|runtime/(core|formats|tokenizer)/)"
  "command-line tool@examples/cli/*@^(headway/|examples/cli/)"
  "bare-metal firmware@examples/baremetal/*@^(headway/|[^/]+$)"
  "python bindings@python/src/*@^(headway/|python/src/)"
  "executorch kernels@integrations/executorch/*@^(headway/|integrations/executorch/)"
  "bench@bench/*@^(headway/|bench/|hwy/|${dispatch}|runtime/attention/attention_run\\.hpp$)"
  "bench command@bench/command/*@^(headway/|bench/|examples/cli/(cli_common|commands)\\.hpp$)"
  "bare-metal bench@bench/baremetal/*@^(headway/|simd/(attention/attention|matmul/matmul)\\.h$|examples/baremetal/tiny_model\\.hpp$|[^/]+$)"
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
# violation too: every folder gets its rule when it is made. GLOB_RECURSE: every subfolder of
# these (a new room of simd/ or of include/headway/ included), whatever its depth.
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
