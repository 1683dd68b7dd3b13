file(REMOVE_RECURSE ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT code EQUAL 0)
    message(FATAL_ERROR "failed (${code}): ${ARGN}\n${out}\n${err}")
  endif()
  message(STATUS "${out}")
endfunction()

run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix} --config ${CONFIG})
set(flags "")
if(SANITIZE)
  set(flags "-fsanitize=address,undefined")
endif()
run(${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${WORK_DIR}/build -DCMAKE_PREFIX_PATH=${prefix}
    -DCMAKE_CXX_COMPILER=${CXX} -DCMAKE_C_COMPILER=${CC} -DCMAKE_BUILD_TYPE=Release "-DCMAKE_CXX_FLAGS=${flags}"
    "-DCMAKE_C_FLAGS=${flags}" "-DCMAKE_EXE_LINKER_FLAGS=${flags}" -DCAPI_SOURCE=${CAPI_SOURCE})
run(${CMAKE_COMMAND} --build ${WORK_DIR}/build)
run(${WORK_DIR}/build/consumer)
run(${WORK_DIR}/build/capi_consumer)  # its RUNPATH names the installed libheadway.so

# pkg-config: the same program compiled by hand with the flags the .pc file gives.
find_program(PKG_CONFIG pkg-config REQUIRED)
file(GLOB pc_dirs ${prefix}/lib*/pkgconfig ${prefix}/lib/*/pkgconfig)
string(REPLACE ";" ":" pc_path "${pc_dirs}")
set(ENV{PKG_CONFIG_PATH} "${pc_path}")
execute_process(COMMAND ${PKG_CONFIG} --cflags --libs --static headway OUTPUT_VARIABLE pc_flags
                RESULT_VARIABLE code OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT code EQUAL 0)
  message(FATAL_ERROR "pkg-config could not find headway in ${pc_path}")
endif()
separate_arguments(pc_flags UNIX_COMMAND "${pc_flags}")
separate_arguments(san UNIX_COMMAND "${flags}")
run(${CXX} -std=c++20 ${san} ${SOURCE_DIR}/main.cc -o ${WORK_DIR}/consumer_pc ${pc_flags})
run(${WORK_DIR}/consumer_pc)

# headway-c.pc: the C program against the shared library, found at run time through its path.
execute_process(COMMAND ${PKG_CONFIG} --cflags --libs headway-c OUTPUT_VARIABLE pc_c_flags
                RESULT_VARIABLE code OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT code EQUAL 0)
  message(FATAL_ERROR "pkg-config could not find headway-c in ${pc_path}")
endif()
separate_arguments(pc_c_flags UNIX_COMMAND "${pc_c_flags}")
run(${CC} -std=c99 -Wall -Wextra -Werror -pedantic ${san} ${CAPI_SOURCE} -o ${WORK_DIR}/capi_consumer_pc ${pc_c_flags} -lm)
file(GLOB installed_libs ${prefix}/lib*/libheadway.so ${prefix}/lib/*/libheadway.so)
list(GET installed_libs 0 installed_lib)
get_filename_component(installed_lib_dir ${installed_lib} DIRECTORY)
run(${CMAKE_COMMAND} -E env LD_LIBRARY_PATH=${installed_lib_dir} ${WORK_DIR}/capi_consumer_pc)
