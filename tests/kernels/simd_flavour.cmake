# cmake -DEXPECT_TARGET=SVE -DEMULATOR=qemu-aarch64;-L;SYSROOT -DPROBE=simd_targets
#       [-DKERNEL_TEST=attention_kernel_test [-DKERNEL_TEST_ARGS=--first=1;--last=13]]
#       -P simd_flavour.cmake      (QEMU_CPU in the environment)
# One SIMD flavour of a cross build, on the CPU that QEMU_CPU emulates: the kernels must dispatch
# to EXPECT_TARGET (simd_targets prints the choice), and with KERNEL_TEST the kernel suite (the
# cases KERNEL_TEST_ARGS picks) must pass there (under qemu it tests the target dispatch picks:
# tests/kernels/target_scope.hpp). When EXPECT_TARGET is not compiled into the kernels at all, the
# test reports itself skipped (ctest SKIP_REGULAR_EXPRESSION "SKIPPED:") rather than passed.
set(cpu "QEMU_CPU=$ENV{QEMU_CPU}")
execute_process(COMMAND ${EMULATOR} ${PROBE} RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT code EQUAL 0)
  message(FATAL_ERROR "${cpu}: ${PROBE} exited ${code}\n${out}${err}")
endif()
if(NOT out MATCHES "attention target: ([A-Za-z0-9_]+)\ncpu:([^\n]*)\ncompiled:([^\n]*)")
  message(FATAL_ERROR "${cpu}: unexpected output of ${PROBE}:\n${out}${err}")
endif()
set(chosen "${CMAKE_MATCH_1}")
set(detected "${CMAKE_MATCH_2}")
set(compiled "${CMAKE_MATCH_3}")
message(STATUS "${cpu}: attention kernels dispatch to ${chosen} (libhwy detects:${detected}; compiled:${compiled})")
if(NOT compiled MATCHES " ${EXPECT_TARGET}( |$)")
  # Nothing of this flavour to test (the discovered suite already ran the compiled targets).
  message(STATUS "SKIPPED: ${EXPECT_TARGET} is not compiled into the kernels (compiled:${compiled}; "
                 "Highway's HWY_TARGETS for this compiler, less any -DHWY_DISABLED_TARGETS in the flags)")
  return()
endif()
if(NOT chosen STREQUAL EXPECT_TARGET)
  message(FATAL_ERROR "${cpu}: the kernels dispatch to ${chosen}, expected ${EXPECT_TARGET} "
                      "(libhwy detects:${detected}; compiled:${compiled})")
endif()
if(NOT KERNEL_TEST)
  return()
endif()

execute_process(COMMAND ${EMULATOR} ${KERNEL_TEST} ${KERNEL_TEST_ARGS} RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT code EQUAL 0)
  message(FATAL_ERROR "${cpu} (${chosen}): ${KERNEL_TEST} exited ${code}\n${out}${err}")
endif()
string(REGEX MATCH "test cases:[^\n]*" cases "${out}")
message(STATUS "${cpu} (${chosen}): ${cases}")
