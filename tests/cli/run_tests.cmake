# headway run: a small stack end to end (no heap while running), and the refusals.
headway_cli_test(run-smollm-json 0 "\"prompt_tokens\":16,\"decode_tokens\":4,.*\"heap_allocations\":0"
  run --preset smollm2-135m --layers 2 --prompt 16 --tokens 4 --threads 2 --json)
headway_cli_test(run-table 0 "heap +0 allocations during prefill and decode"
  run --spec "d_model=64 heads=4 kv_heads=2 ctx=64 layers=3 rope_theta=10000 qkv_bias=1 qk_norm=1" --prompt 9 --tokens 3
  --max-tokens 4 --weight-dtype bf16)
# Gemma 4 in small: full layers of their own head shape (V from K), the last three layers reading
# the caches of layers 1 and 2 (random weights in each layer's own shape, none for K/V there).
headway_cli_test(run-shared-kv-two-shapes 0 "heap +0 allocations during prefill and decode"
  run --spec "d_model=64 heads=4 kv_heads=2 head_dim=16 ctx=64 layers=6 window=8 layer_types=sfssfs kv_shared_layers=3 full_head_dim=32 full_kv_heads=1 full_k_eq_v=1 qk_norm=1 v_norm=1 scale=1 rope_theta=10000"
  --prompt 20 --tokens 4 --max-tokens 8)
headway_cli_test(plan-shared-kv-two-shapes 0 "layers 3, 5: sliding 8, RoPE neox 10000, no K/V projections: reads layer 2's 15 kv rows"
  plan --spec "d_model=64 heads=4 kv_heads=2 head_dim=16 ctx=64 layers=6 window=8 layer_types=sfssfs kv_shared_layers=3 full_head_dim=32 full_kv_heads=1 full_k_eq_v=1 qk_norm=1 v_norm=1 scale=1 rope_theta=10000"
  --max-tokens 8)
headway_cli_test(run-highway-f32 0 "projections on highway"
  run --preset gpt2 --layers 1 --prompt 8 --tokens 2 --weight-dtype f32 --projection highway)
headway_cli_test(run-max-arena 2 "the plan needs an arena of [0-9]+ bytes \\([0-9.]+ GiB\\), above --max-arena 4294967296 bytes"
  run --preset llama-2-7b --prompt 16 --tokens 4)
headway_cli_test(run-past-context 2 "--prompt 2000 \\+ --tokens 32 = 2032 tokens, more than the model's context of 1024"
  run --preset gpt2 --prompt 2000)
headway_cli_test(run-bad-projection 2 "--projection 'gpu': expected auto, highway or xnnpack"
  run --preset gpt2 --projection gpu)
headway_cli_test(run-bad-max-arena 2 "--max-arena '4 GB' is not a byte count" run --preset gpt2 --max-arena "4 GB")
headway_cli_test(run-bad-backend 2 "--backend tpu is not one of cpu, gpu" run --preset gpt2 --backend tpu)
if(NOT HEADWAY_GPU)
  headway_cli_test(run-gpu-not-built 2 "--backend gpu is not available in this build" run --preset gpt2 --backend gpu)
elseif(HEADWAY_LAVAPIPE_ICD)
  # The stack's KV caches and attention on lavapipe (a CPU Vulkan device): the Session's GPU
  # results against the CPU are tests/gpu/gpu_session_test.cc; here the tool end to end.
  headway_cli_test(run-gpu-json 0 "\"backend\":\"gpu: .*\"prompt_tokens\":16,\"decode_tokens\":4"
    run --preset smollm2-135m --layers 2 --prompt 16 --tokens 4 --backend gpu --json)
  set_tests_properties("cli: run-gpu-json" PROPERTIES TIMEOUT 120)
  headway_cli_gpu_environment("cli: run-gpu-json")
  # Multi-head latent attention there too: DeepSeek's 576-value latent row, one buffer bound as K
  # and V (its results against the CPU: tests/gpu/gpu_layer_kinds_test.cc).
  headway_cli_test(run-mla-gpu 0 "kernel attn_q8_0_[^\n]*K/V q8_0 \\(MLA: V is the K row\\)"
    run --spec "d_model=256 heads=4 layers=1 ctx=64 rope=gptj kv_lora_rank=512 qk_nope_head_dim=32 qk_rope_head_dim=64 v_head_dim=32 kv_dtype=q8_0"
    --prompt 16 --tokens 4 --backend gpu)
  set_property(TEST "cli: run-mla-gpu" APPEND PROPERTY LABELS gpu)
  set_tests_properties("cli: run-mla-gpu" PROPERTIES TIMEOUT 120)
  headway_cli_gpu_environment("cli: run-mla-gpu")
endif()
# An encoder config runs a batch of sentences in one call, no decode, no heap: all-MiniLM-like BERT
# (no RoPE) and ModernBERT (a global and a local layer, symmetric window, two RoPE bases).
headway_cli_test(run-encoder-bert-json 0 "\"mode\":\"encode\",\"sentences\":6,\"batch_tokens\":[0-9]+,.*\"heap_allocations\":0"
  run --config ${data}/hf/bert-base-uncased.json --layers 1 --sentences 6 --seq-min 3 --seq-max 40 --threads 2 --json)
headway_cli_test(run-encoder-modernbert 0 "encode +5 sentences of 3\\.\\.90 tokens \\(150 in all, one call\\).*heap +0 allocations during the timed batches"
  run --config ${data}/hf/modernbert-base.json --layers 2 --seq-lens 3,90,20,30,7 --threads 2)
headway_cli_test(run-encoder-prompt 2 "--prompt: bert is a bidirectional \\(encoder\\) model, which runs a batch of sentences"
  run --config ${data}/hf/bert-base-uncased.json --prompt 8)
headway_cli_test(run-decoder-sentences 2 "--sentences: gpt2 is a causal model, which runs a prompt and decodes"
  run --preset gpt2 --sentences 4)
headway_cli_test(run-encoder-seq-range 2 "--seq-min 50 is more than --seq-max 10"
  run --config ${data}/hf/bert-base-uncased.json --seq-min 50 --seq-max 10)
headway_cli_test(run-encoder-seq-lens-zero 2 "--seq-lens 4,0: item 1 is 0"
  run --config ${data}/hf/bert-base-uncased.json --seq-lens 4,0)
headway_cli_test(run-encoder-past-context 2 "a sentence of 600 tokens is longer than the model's context of 512"
  run --config ${data}/hf/bert-base-uncased.json --seq-lens 600)
headway_cli_test(run-encoder-max-tokens 2 "--max-tokens 8 is less than the batch's 12 tokens, which run in one call"
  run --config ${data}/hf/bert-base-uncased.json --seq-lens 6,6 --max-tokens 8)
# Layers that differ (sliding and full, a NoPE layer, a local RoPE base): run with no heap.
headway_cli_test(run-layer-kinds 0 "heap +0 allocations during prefill and decode"
  run --spec "d_model=64 heads=4 kv_heads=2 ctx=256 layers=4 rope_theta=1e6 window=16 sliding_pattern=2 nope_interval=4 rope_local_theta=100"
  --prompt 100 --tokens 8 --max-tokens 8)
# Learned sink logits run too: a spec with sinks, and gpt-oss-20b's own config.json (its first
# two attention layers, one sliding over 128 keys and one full, YaRN, biases) past its window.
headway_cli_test(run-sinks 0 "heap +0 allocations during prefill and decode"
  run --spec "d_model=64 heads=4 ctx=64 layers=2 rope_theta=10000 sinks=1" --prompt 8 --tokens 2)
# StreamingLLM: sink tokens on the sliding layers of a mixed stack, 300 tokens through a window of
# 16 (the rings wrap many times), with ALiBi on every layer; and Gemma 3 1B's own config.json with
# --sink-tokens: no heap either way. BLOOM's config.json runs ALiBi without RoPE.
headway_cli_test(run-sink-tokens-alibi 0 "heap +0 allocations during prefill and decode"
  run --spec "d_model=64 heads=4 kv_heads=2 ctx=512 layers=4 window=16 sliding_pattern=2 sink_tokens=4 alibi=1"
  --prompt 300 --tokens 8 --max-tokens 8)
headway_cli_test(run-gemma3-sink-tokens 0 "heap +0 allocations during prefill and decode"
  run --config ${data}/hf/gemma-3-1b.json --layers 6 --sink-tokens 4 --prompt 600 --tokens 4 --max-tokens 64 --threads 2)
headway_cli_test(run-bloom-alibi 0 "heap +0 allocations during prefill and decode"
  run --config ${data}/hf/bloom-560m.json --layers 2 --prompt 16 --tokens 4)
headway_cli_test(run-sink-tokens-at-window 2 "sink_tokens 512 must be less than sliding_window 512"
  run --config ${data}/hf/gemma-3-1b.json --layers 6 --sink-tokens 512 --prompt 600 --tokens 2)
headway_cli_test(run-gpt-oss-json 0 "\"sinks\":\\{\"planned\":512,.*\"heap_allocations\":0"
  run --config ${data}/hf/gpt-oss-20b.json --layers 2 --prompt 200 --tokens 4 --max-tokens 64 --threads 2 --json)
