file(REMOVE_RECURSE ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT code EQUAL 0)
    message(FATAL_ERROR "failed (${code}): ${ARGN}\n${out}\n${err}")
  endif()
endfunction()

run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix} --config ${CONFIG})
# The tool's folder alone, at the path its includes name ("examples/cli/...").
file(COPY ${CLI_DIR} DESTINATION ${WORK_DIR}/src/examples)
set(flags "")
if(SANITIZE)
  set(flags "-fsanitize=address,undefined")
endif()
run(${CMAKE_COMMAND} -S ${WORK_DIR}/src/examples/cli -B ${WORK_DIR}/build -DCMAKE_PREFIX_PATH=${prefix}
    -DCMAKE_CXX_COMPILER=${CXX} -DCMAKE_BUILD_TYPE=Release "-DCMAKE_CXX_FLAGS=${flags}"
    "-DCMAKE_EXE_LINKER_FLAGS=${flags}")
run(${CMAKE_COMMAND} --build ${WORK_DIR}/build -j2)

# The same bytes and exit status as the tool built in the tree, for a few commands.
set(cases "presets" "plan --preset llama-3-8b --json" [[plan --spec "d_model=800 heads=12 ctx=2048"]]
    "bench --list")
foreach(c IN LISTS cases)
  separate_arguments(args UNIX_COMMAND "${c}")
  execute_process(COMMAND ${TOOL} ${args} RESULT_VARIABLE want_code OUTPUT_VARIABLE want_out ERROR_VARIABLE want_err)
  execute_process(COMMAND ${WORK_DIR}/build/headway ${args} RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT code STREQUAL want_code OR NOT out STREQUAL want_out OR NOT err STREQUAL want_err)
    message(FATAL_ERROR "headway ${c}: the installed-package build differs from the tool "
                        "(exit ${code} vs ${want_code})\n${out}${err}\n--- the tool:\n${want_out}${want_err}")
  endif()
  message(STATUS "headway ${c}: same output, exit ${code}")
endforeach()
