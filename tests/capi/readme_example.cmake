# The README's C example, as the README shows it: the ```c block of "## From C" compiled with
# -std=c99 -Wall -Wextra -Werror -pedantic against headway.h and libheadway.so, run, and its
# output compared with the line the README prints after `./a.out`.
#   cmake -DREADME=... -DCC=... -DINCLUDE=... -DLIBRARY=... -DWORK_DIR=... [-DFLAGS=...] -P readme_example.cmake
file(READ ${README} text)
string(FIND "${text}" "## From C" at)
if(at EQUAL -1)
  message(FATAL_ERROR "${README}: no section \"## From C\"")
endif()
string(SUBSTRING "${text}" ${at} -1 text)
if(NOT text MATCHES "```c\n(.*)\n```\n\n```sh\n[^\n]*\n([^\n]*)\n```")
  message(FATAL_ERROR "${README}: \"## From C\" has no ```c block followed by a ```sh block with its output")
endif()
set(program "${CMAKE_MATCH_1}\n")
set(expected "${CMAKE_MATCH_2}")
string(FIND "${program}" "```" fence)
if(NOT fence EQUAL -1)
  string(SUBSTRING "${program}" 0 ${fence} program)
endif()
file(MAKE_DIRECTORY ${WORK_DIR})
file(WRITE ${WORK_DIR}/app.c "${program}")
get_filename_component(lib_dir ${LIBRARY} DIRECTORY)
separate_arguments(flags UNIX_COMMAND "${FLAGS}")
execute_process(COMMAND ${CC} -std=c99 -Wall -Wextra -Werror -pedantic ${flags} -I${INCLUDE} ${WORK_DIR}/app.c
                        -o ${WORK_DIR}/app -L${lib_dir} -lheadway -Wl,-rpath,${lib_dir}
                RESULT_VARIABLE code ERROR_VARIABLE err)
if(NOT code EQUAL 0)
  message(FATAL_ERROR "the README's C example does not compile:\n${err}")
endif()
execute_process(COMMAND ${WORK_DIR}/app RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE err
                OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT code EQUAL 0)
  message(FATAL_ERROR "the README's C example exited ${code}: ${err}")
endif()
if(NOT out STREQUAL expected)
  message(FATAL_ERROR "the README's C example printed\n  ${out}\nthe README says\n  ${expected}")
endif()
message(STATUS "README C example: ${out}")
