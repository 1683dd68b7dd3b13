# cmake -DEXPECT_EXIT=N -DEXPECT_REGEX=RE -DCOMMAND=prog;args... [-DEMULATOR=...] -P expect.cmake
# Runs COMMAND; passes when its exit code is N and stdout+stderr match RE.
execute_process(COMMAND ${EMULATOR} ${COMMAND} RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE err)
set(all "${out}${err}")
if(NOT "${code}" STREQUAL "${EXPECT_EXIT}")
  message(FATAL_ERROR "exit ${code}, expected ${EXPECT_EXIT}\n--- output ---\n${all}")
endif()
if(NOT "${all}" MATCHES "${EXPECT_REGEX}")
  message(FATAL_ERROR "output does not match '${EXPECT_REGEX}'\n--- output ---\n${all}")
endif()
message(STATUS "exit ${code} as expected; output matches")
