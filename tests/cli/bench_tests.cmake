# `headway bench`: included from tests/cli/CMakeLists.txt (headway_cli_test, ${data}).
# The JSON smoke test: one decode and one prefill case, 2 repetitions, 2 threads; --llc-mib 8
# keeps the K/V pool and bandwidth buffer at their 64 MiB floor (under a second to touch).
add_test(NAME "cli: bench-json"
  COMMAND ${CMAKE_COMMAND} -DEXPECT_LINES=2 "-DEMULATOR=${CMAKE_CROSSCOMPILING_EMULATOR}"
          "-DCOMMAND=$<TARGET_FILE:headway_cli>;bench;--case;decode-t512-h32x8-d64-f16;--case;prefill-t512-h32x8-d64-f16;--reps;2;--threads;2;--llc-mib;8;--json"
          -DEXPECT_LAYOUT=cache -P ${CMAKE_CURRENT_SOURCE_DIR}/bench_json.cmake)
set_tests_properties("cli: bench-json" PROPERTIES TIMEOUT 60)
# The other K/V layout (attend() on token-major tensors): named in every line.
add_test(NAME "cli: bench-json-dense"
  COMMAND ${CMAKE_COMMAND} -DEXPECT_LINES=1 -DEXPECT_LAYOUT=dense "-DEMULATOR=${CMAKE_CROSSCOMPILING_EMULATOR}"
          "-DCOMMAND=$<TARGET_FILE:headway_cli>;bench;--case;decode-t512-h32x8-d64-f16;--layout;dense;--reps;2;--llc-mib;8;--json"
          -P ${CMAKE_CURRENT_SOURCE_DIR}/bench_json.cmake)
set_tests_properties("cli: bench-json-dense" PROPERTIES TIMEOUT 60)
# The encoder batches (packed, padded, packed at head_dim 64): one attend() over token-major K/V
# whatever the layout, so every line says dense.
add_test(NAME "cli: bench-json-encoder"
  COMMAND ${CMAKE_COMMAND} -DEXPECT_LINES=3 -DEXPECT_LAYOUT=dense "-DEMULATOR=${CMAKE_CROSSCOMPILING_EMULATOR}"
          "-DCOMMAND=$<TARGET_FILE:headway_cli>;bench;--case;minilm-packed32-t2533-h12x12-d32-f32;--case;minilm-padded32-t4096-h12x12-d32-f32;--case;encoder-packed32-t2533-h6x6-d64-f32;--reps;2;--threads;2;--llc-mib;8;--json"
          -P ${CMAKE_CURRENT_SOURCE_DIR}/bench_json.cmake)
set_tests_properties("cli: bench-json-encoder" PROPERTIES TIMEOUT 60)
# The Gated DeltaNet cases (a prefill and a decode step): their own shape and state keys.
add_test(NAME "cli: bench-json-gdn"
  COMMAND ${CMAKE_COMMAND} -DEXPECT_LINES=2 "-DEMULATOR=${CMAKE_CROSSCOMPILING_EMULATOR}"
          "-DCOMMAND=$<TARGET_FILE:headway_cli>;bench;--case;qwen3.5-0.8b-gdn-prefill-t512-h16x16-d128;--case;qwen3.5-gdn-decode-h32x16-d128;--reps;2;--threads;2;--llc-mib;8;--json"
          -P ${CMAKE_CURRENT_SOURCE_DIR}/bench_json.cmake)
set_tests_properties("cli: bench-json-gdn" PROPERTIES TIMEOUT 60)
# --target pins the kernels, projections and roofs to one SIMD target: the portable SCALAR code
# (bare metal's), which every host build compiles and every CPU runs. (Cross builds: 32-bit ARM's
# run-time detection knows no target to pin.)
if(NOT CMAKE_CROSSCOMPILING)
  add_test(NAME "cli: bench-json-target"
    COMMAND ${CMAKE_COMMAND} -DEXPECT_LINES=1 -DEXPECT_TARGET=SCALAR
            "-DCOMMAND=$<TARGET_FILE:headway_cli>;bench;--case;decode-t2048-h32x8-d64-q8_0;--target;SCALAR;--reps;2;--llc-mib;8;--json"
            -P ${CMAKE_CURRENT_SOURCE_DIR}/bench_json.cmake)
  set_tests_properties("cli: bench-json-target" PROPERTIES TIMEOUT 60)
endif()
headway_cli_test(bench-bad-target 2 "--target NOPE( is not one of [A-Z0-9_, ]+ \\(the SIMD targets|: this CPU reports no SIMD target)"
                 bench --target NOPE)
headway_cli_test(bench-target-gpu 2 "--target SCALAR: a CPU SIMD target, and --backend gpu times the GPU"
                 bench --target SCALAR --backend gpu)
headway_cli_test(bench-list 0 "decode-t8192-h32x8-d128-f16 +decode" bench --list)
headway_cli_test(bench-list-encoder 0 "minilm-padded32-t4096-h12x12-d32-f32 +encoder" bench --list)
headway_cli_test(bench-list-gdn 0 "qwen3.5-0.8b-gdn-decode-h16x16-d128 +gdn-decode" bench --list)
headway_cli_test(bench-gdn-gpu 2 "--case qwen3.5-gdn-decode-h32x16-d128: a Gated DeltaNet case runs on the CPU only"
                 bench --backend gpu --case qwen3.5-gdn-decode-h32x16-d128)
headway_cli_test(bench-encoder-gpu 2 "--case minilm-packed32-t2533-h12x12-d32-f32: an encoder batch runs on the CPU only"
                 bench --backend gpu --case minilm-packed32-t2533-h12x12-d32-f32)
headway_cli_test(bench-unknown-case 2 "--case prefill-t9-nope: no case of that name" bench --case prefill-t9-nope)
headway_cli_test(bench-bad-backend 2 "--backend tpu is not one of cpu, gpu" bench --backend tpu)
headway_cli_test(bench-bad-reps 2 "--reps 0 is not a whole number" bench --reps 0)
headway_cli_test(bench-bad-layout 2 "--layout rows is not one of cache, dense" bench --layout rows)
if(NOT HEADWAY_GPU)
  headway_cli_test(bench-gpu-not-built 2 "built without the GPU backend" bench --backend gpu --case decode-t512-h32x8-d64-f16)
elseif(HEADWAY_LAVAPIPE_ICD)
  # The GPU path end to end on lavapipe (a CPU Vulkan device): one small decode case.
  add_test(NAME "cli: bench-gpu-json"
    COMMAND ${CMAKE_COMMAND} -DEXPECT_LINES=1 "-DEMULATOR=${CMAKE_CROSSCOMPILING_EMULATOR}"
            "-DCOMMAND=$<TARGET_FILE:headway_cli>;bench;--backend;gpu;--case;decode-t512-h32x8-d64-f16;--reps;2;--json"
            -DGPU=1 -P ${CMAKE_CURRENT_SOURCE_DIR}/bench_json.cmake)
  set_tests_properties("cli: bench-gpu-json" PROPERTIES TIMEOUT 120)
  headway_cli_gpu_environment("cli: bench-gpu-json")
endif()
