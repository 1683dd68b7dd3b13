# cmake -DCOMMAND=prog;args... [-DEMULATOR=...] -P bad_input_check.cmake
# Hostile input must end in exit status 2 with a message on stderr: never 0, never 1 (internal
# fault), never a signal (a crash shows as a non-numeric result or a code above 128).
execute_process(COMMAND ${EMULATOR} ${COMMAND} RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE err
                TIMEOUT 60)
string(STRIP "${err}" err_text)
if(NOT "${code}" STREQUAL "2")
  message(FATAL_ERROR "exit '${code}', expected 2\n--- stderr ---\n${err}\n--- stdout ---\n${out}")
endif()
if(err_text STREQUAL "")
  message(FATAL_ERROR "exit 2 but nothing on stderr\n--- stdout ---\n${out}")
endif()
message(STATUS "exit 2: ${err_text}")
