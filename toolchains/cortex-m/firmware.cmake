# Cortex-M images:
#   headway_add_firmware(NAME SOURCES ... [LIBS ...])
# builds NAME.elf with the startup code, the semihosting console and the SysTick instruction
# counter (instruction_count.hpp, for qemu -icount) and checks after every link that no allocator
# is in it (check_no_allocator.cmake: malloc, free, calloc, realloc, their newlib _r forms, sbrk,
# operator new and delete).
#   headway_add_firmware_tests(NAME [TIMEOUT s])
# adds the ctest tests "NAME", which runs the image in qemu-system-arm
# (CMAKE_CROSSCOMPILING_EMULATOR, toolchain-common.cmake) and passes on its exit status, and
# "NAME: no allocator", which repeats the check on the final image. Call it where testing is
# enabled (under tests/: examples/ comes before enable_testing()).
include_guard(GLOBAL)

set(HEADWAY_CORTEX_M_DIR ${CMAKE_CURRENT_LIST_DIR})
find_program(HEADWAY_ARM_NM arm-none-eabi-nm REQUIRED)
find_program(HEADWAY_ARM_SIZE arm-none-eabi-size REQUIRED)

add_library(headway_cortex_m_runtime OBJECT ${HEADWAY_CORTEX_M_DIR}/startup.cc ${HEADWAY_CORTEX_M_DIR}/semihosting.cc
            ${HEADWAY_CORTEX_M_DIR}/instruction_count.cc)
target_include_directories(headway_cortex_m_runtime PUBLIC ${HEADWAY_CORTEX_M_DIR})
target_compile_options(headway_cortex_m_runtime PRIVATE -O2 -Wall -Wextra)

function(headway_add_firmware name)
  cmake_parse_arguments(ARG "" "" "SOURCES;LIBS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES} $<TARGET_OBJECTS:headway_cortex_m_runtime>)
  set_target_properties(${name} PROPERTIES SUFFIX .elf RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/firmware)
  target_include_directories(${name} PRIVATE ${HEADWAY_CORTEX_M_DIR})
  target_compile_options(${name} PRIVATE -Wall -Wextra)
  if(DEFINED HEADWAY_CORTEX_M_KERNELS)  # simd/CMakeLists.txt; kernel_path.hpp reads it
    target_compile_definitions(${name} PRIVATE HEADWAY_EXPECTED_KERNELS="${HEADWAY_CORTEX_M_KERNELS}")
  endif()
  target_link_libraries(${name} PRIVATE ${ARG_LIBS} m)
  target_link_options(${name} PRIVATE -Wl,-Map=$<TARGET_FILE_DIR:${name}>/${name}.map)
  add_custom_command(TARGET ${name} POST_BUILD
    COMMAND ${CMAKE_COMMAND} -DNM=${HEADWAY_ARM_NM} -DFILES=$<TARGET_FILE:${name}>
            -P ${HEADWAY_CORTEX_M_DIR}/check_no_allocator.cmake
    VERBATIM)
endfunction()

function(headway_add_firmware_tests name)
  cmake_parse_arguments(ARG "" "TIMEOUT" "" ${ARGN})
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 300)
  endif()
  add_test(NAME ${name} COMMAND ${name})
  set_tests_properties(${name} PROPERTIES TIMEOUT ${ARG_TIMEOUT})
  add_test(NAME "${name}: no allocator"
    COMMAND ${CMAKE_COMMAND} -DNM=${HEADWAY_ARM_NM} -DFILES=$<TARGET_FILE:${name}>
            -P ${HEADWAY_CORTEX_M_DIR}/check_no_allocator.cmake)
endfunction()
