# headway_host_golden(OUTPUT header SOURCES src... [DEPENDS header...]): compiles SOURCES with
# the build machine's C++ compiler (the project's compiler is the cross one) and runs the program at build time as
# `program OUTPUT`, which writes the header. For reference outputs computed on the host by the
# double-precision reference.
include_guard(GLOBAL)
find_program(HEADWAY_HOST_CXX NAMES c++ g++ clang++ NO_CMAKE_FIND_ROOT_PATH REQUIRED
             DOC "The build machine's C++ compiler (golden data for the Cortex-M harness)")

function(headway_host_golden)
  cmake_parse_arguments(ARG "" "OUTPUT" "SOURCES;DEPENDS" ${ARGN})
  get_filename_component(stem ${ARG_OUTPUT} NAME_WE)
  set(program ${CMAKE_CURRENT_BINARY_DIR}/${stem}_gen_host)
  add_custom_command(OUTPUT ${program}
    COMMAND ${HEADWAY_HOST_CXX} -std=c++20 -O2 -ffp-contract=off -I${PROJECT_SOURCE_DIR} -I${PROJECT_SOURCE_DIR}/include
            ${ARG_SOURCES} -o ${program}
    DEPENDS ${ARG_SOURCES} ${ARG_DEPENDS}
    IMPLICIT_DEPENDS CXX ${ARG_SOURCES}
    COMMENT "Building ${stem} generator for the build machine"
    VERBATIM)
  add_custom_command(OUTPUT ${ARG_OUTPUT}
    COMMAND ${program} ${ARG_OUTPUT}
    DEPENDS ${program}
    COMMENT "Reference outputs on the build machine: ${stem}.h"
    VERBATIM)
endfunction()
