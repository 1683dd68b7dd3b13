#!/usr/bin/env python3
"""`headway layer` against Hugging Face's own attention modules, family by family.

For each case: a config.json of a small model (two layers), the family's attention module of the
chosen layer built by transformers from it (hf_blocks.py: `{Family}Attention` with its rotary
embedding class, no norm, residual or MLP) with random weights, saved with Hugging Face's tensor
names as model.safetensors (f32, f16 or bf16), or as a GGUF written the way llama.cpp's
converter writes one (gguf_file.py); x.npy [T, d_model]. `headway layer` runs the same block at
positions P..P+T-1 with a fresh cache, for each P in START_POSITIONS and each projection engine;
the module runs in float64 on the stored weights. One line per case, exit 1 on any mismatch.

usage: hf_attention_check.py --headway path/to/headway [--keep DIR] [--case TEXT]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # configs are local files; nothing is downloaded

import numpy as np  # noqa: E402
import torch  # noqa: E402
from safetensors.torch import save_file  # noqa: E402

import hf_blocks  # noqa: E402
from gguf_file import write_gguf  # noqa: E402

# Max abs error over max(1, max |y|): headway's f32 kernels against the float64 module, whose RoPE
# angles are float32 as in the model (at P = 1000 they are off by up to ~3e-5 rad).
TOLERANCE = 1e-4
T = 9  # tokens per run
# RoPE scores depend on i - j only, so with a fresh cache y does not depend on P in exact
# arithmetic: P > 0 checks the position bookkeeping and the angles' precision at large positions.
START_POSITIONS = (0, 37, 1000)
PROJECTIONS = ("highway", "xnnpack")  # xnnpack is skipped in builds without it
MAX_SEQ = 2048
DTYPES = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16}


def case(name, model_type, d_model, heads, kv_heads, layer=1, tokens=T, dtype="F32", fmt="safetensors", decode=False,
         **keys):
    """keys: more config.json keys, as the family's real config.json writes them."""
    cfg = {"model_type": model_type, "hidden_size": d_model, "num_attention_heads": heads,
           "num_key_value_heads": kv_heads, "num_hidden_layers": 2, "max_position_embeddings": MAX_SEQ,
           "rope_theta": 10000.0, "rms_norm_eps": 1e-6, "intermediate_size": 4 * d_model, "vocab_size": 1000,
           "bos_token_id": 0, "eos_token_id": 0, "torch_dtype": "float32"}
    cfg.update(keys)
    cfg = {k: v for k, v in cfg.items() if v is not None}  # None: a key the file leaves out
    decode = decode or name.startswith(DECODE_TOO)
    return dict(name=name, config=cfg, layer=layer, tokens=tokens, dtype=dtype, fmt=fmt, decode=decode)


# The families whose cases also run token by token (their layers' own projections and caches: MLA's latent
# rows, the gates, Gemma 4's shapes).
DECODE_TOO = ("deepseek", "minicpm3", "youtu", "qwen3.5", "gemma4", "gemma3n")


LLAMA3_SCALING = {"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                  "original_max_position_embeddings": 8192}
# Gemma 2: even layers slide, odd ones see everything. `headway layer` plans a context of P + T
# and refuses a window longer than that, so the full layer's case has a window of exactly T
# (every key within it); the sliding layer's is shorter than T. The cap is 2, not the model's 50,
# so that it bends these random weights' logits (|score| of a few units) measurably.
GEMMA2 = dict(head_dim=64, query_pre_attn_scalar=144, attn_logit_softcapping=2.0, final_logit_softcapping=30.0,
              max_position_embeddings=8192, hidden_activation="gelu_pytorch_tanh")

# gpt-oss: even layers slide, odd ones are full; q/k/v/o biases, learned sink logits on every
# layer (GptOssAttention's sinks, saved as self_attn.sinks), YaRN as gpt-oss-20b's config.json
# writes it (factor 32, beta 32 / 1, no truncation). Its original context is 4096 in the model;
# 64 in the cases whose positions (up to 1008, 1600 with 600 tokens) should run far past it. The
# sinks take a large share of each row's softmax: a layer that dropped them fails every case.
def gpt_oss_yarn(original):
    return {"rope_type": "yarn", "factor": 32.0, "beta_fast": 32.0, "beta_slow": 1.0,
            "original_max_position_embeddings": original, "truncate": False}


GPT_OSS = dict(head_dim=64, attention_bias=True, rope_theta=150000.0,
               layer_types=["sliding_attention", "full_attention"], num_local_experts=4, num_experts_per_tok=2)

# Gemma 4 and Gemma 3n text configs: rope_parameters per layer type as their configs write them (Gemma 4's
# full layers proportional over a quarter of the head), the per-layer-input and MLP keys their attention
# ignores.
GEMMA4 = dict(rope_theta=None, hidden_size_per_layer_input=0, vocab_size_per_layer_input=1000,
              rope_parameters={"full_attention": {"rope_type": "proportional", "partial_rotary_factor": 0.25,
                                                  "rope_theta": 1000000.0},
                               "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}})
GEMMA3N = dict(hidden_size_per_layer_input=16, vocab_size_per_layer_input=1000, laurel_rank=8, altup_num_inputs=2,
               intermediate_size=[1024] * 5, activation_sparsity_pattern=[0.0] * 5)

# DeepSeek-V2/V3 and Youtu at a small size (their MoE keys present for the configs; the attention ignores them).
DEEPSEEK = dict(kv_lora_rank=64, qk_nope_head_dim=32, qk_rope_head_dim=16, v_head_dim=24, n_routed_experts=4,
                num_experts_per_tok=2, n_shared_experts=1, moe_intermediate_size=64, first_k_dense_replace=1)
DEEPSEEK_YARN = {"type": "yarn", "factor": 32.0, "original_max_position_embeddings": 64, "beta_fast": 32,
                 "beta_slow": 1, "mscale": 0.707, "mscale_all_dim": 0.707}

# ModernBERT: bidirectional; every third layer global (base 160000 here 80000), the others local,
# |i - j| <= local_attention / 2 (headway: a symmetric window of local_attention / 2 + 1) at their
# own base; Q, K and V in one Wqkv tensor, saved as model.layers.N.attn.Wqkv. Layer 0 is global,
# layer 1 local. 600 tokens run as one call (a bidirectional layer cannot be cut in chunks).
MODERNBERT = dict(rope_theta=None, num_key_value_heads=None, global_rope_theta=80000.0, local_rope_theta=5000.0,
                  norm_eps=1e-5, attention_bias=False)

CASES = [
    case("llama GQA 8/2 d64", "llama", 512, 8, 2, rope_theta=500000.0),
    case("llama 3.2 rope_scaling llama3", "llama", 256, 4, 2, rope_theta=500000.0, rope_scaling=LLAMA3_SCALING,
         max_position_embeddings=131072),
    # YaRN: positions up to 1008 against an original context of 64 to 512, so the ramp and the
    # attention factor (cos and sin scaled by it) both show.
    case("qwen2 yarn factor 4", "qwen2", 256, 4, 2, rope_theta=1000000.0, use_sliding_window=False,
         rope_scaling={"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 512}),
    case("llama yarn as gpt-oss: factor 32, no truncation", "llama", 256, 4, 2, rope_theta=150000.0,
         rope_scaling={"rope_type": "yarn", "factor": 32.0, "beta_fast": 32.0, "beta_slow": 1.0,
                       "original_max_position_embeddings": 64, "truncate": False}),
    # config.json as transformers 5 saves it: the RoPE only in rope_parameters, per layer type.
    case("qwen2 yarn in rope_parameters (transformers 5)", "qwen2", 256, 4, 2, rope_theta=None,
         use_sliding_window=False, rope_parameters={"rope_type": "yarn", "rope_theta": 1000000.0, "factor": 4.0,
                                                    "original_max_position_embeddings": 512}),
    case("gemma3 full layer 5, rope_parameters per layer type", "gemma3_text", 256, 4, 2, layer=5, head_dim=64,
         num_hidden_layers=6, sliding_window=T, rope_theta=None, query_pre_attn_scalar=64,
         rope_parameters={"full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1000000.0},
                          "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}}),
    case("gemma3 sliding layer 0, rope_parameters per layer type", "gemma3_text", 256, 4, 1, layer=0, head_dim=64,
         num_hidden_layers=6, sliding_window=5, rope_theta=None, query_pre_attn_scalar=64,
         rope_parameters={"full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1000000.0},
                          "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}}),
    case("llama yarn with mscale / mscale_all_dim", "llama", 256, 4, 2,
         rope_scaling={"rope_type": "yarn", "factor": 40.0, "mscale": 1.0, "mscale_all_dim": 0.707,
                       "original_max_position_embeddings": 256}),
    case("llama MHA 4/4 d64 attention_bias", "llama", 256, 4, 4, attention_bias=True),
    case("llama d80 (generic head size)", "llama", 320, 4, 2),
    case("llama 600 tokens (prefill in 2 chunks)", "llama", 128, 2, 1, tokens=600),
    case("llama f16 weights", "llama", 256, 4, 2, dtype="F16"),
    case("llama bf16 weights", "llama", 256, 4, 2, dtype="BF16"),
    case("smollm2 9/3 d64", "llama", 576, 9, 3, rope_theta=100000.0),
    case("qwen2 14/2 d64 q/k/v bias", "qwen2", 896, 14, 2, rope_theta=1000000.0, use_sliding_window=False,
         sliding_window=32768),
    case("qwen2 sliding window 6 on every layer", "qwen2", 256, 4, 2, use_sliding_window=True, sliding_window=6,
         max_window_layers=0),
    case("qwen3 4/2 head_dim 128 q/k norm", "qwen3", 256, 4, 2, head_dim=128, rope_theta=1000000.0),
    case("mistral sliding window 5, MQA", "mistral", 256, 4, 1, sliding_window=5),
    case("mixtral sliding window 7", "mixtral", 256, 8, 2, sliding_window=7, num_local_experts=2),
    case("gemma MQA head_dim 256", "gemma", 256, 4, 1, head_dim=256),
    case("gemma2 full layer 1 within the window, softcap", "gemma2", 256, 4, 2, sliding_window=T, **GEMMA2),
    case("gemma2 sliding layer 0, window 5, softcap", "gemma2", 256, 4, 2, layer=0, sliding_window=5, **GEMMA2),
    # Gemma 3: five of six layers slide at base 10000 with no rope_scaling, every sixth is full at
    # base 1e6 with it; q/k RMS norms scale by 1 + weight. Layer 0 slides over 5 keys; layer 5 is
    # full with a linear factor 8 (Gemma 3 4B's) that the sliding layers must not apply.
    case("gemma3 sliding layer 0, local base, window 5", "gemma3_text", 256, 4, 1, layer=0, head_dim=64,
         num_hidden_layers=6, sliding_window=5, rope_theta=1000000.0, rope_local_base_freq=10000.0,
         query_pre_attn_scalar=64, rope_scaling={"rope_type": "linear", "factor": 8.0}),
    case("gemma3 full layer 5, linear factor 8, q/k norm", "gemma3_text", 256, 4, 2, layer=5, head_dim=64,
         num_hidden_layers=6, sliding_window=T, rope_theta=1000000.0, rope_local_base_freq=10000.0,
         query_pre_attn_scalar=64, rope_scaling={"rope_type": "linear", "factor": 8.0}),
    # SmolLM3: every fourth layer has no RoPE (no_rope_layers, 0 = NoPE); layer 3 is one of them.
    case("smollm3 NoPE layer 3", "smollm3", 256, 4, 2, layer=3, num_hidden_layers=4, rope_theta=5000000.0,
         no_rope_layers=[1, 1, 1, 0], use_sliding_window=False),
    case("smollm3 RoPE layer 2", "smollm3", 256, 4, 2, layer=2, num_hidden_layers=4, rope_theta=5000000.0,
         no_rope_layers=[1, 1, 1, 0], use_sliding_window=False),
    # SmolLM3 with use_sliding_window: only its NoPE layers slide (layer 3 over 5 keys; layer 2 full).
    case("smollm3 use_sliding_window: NoPE layer 3 slides", "smollm3", 256, 4, 2, layer=3, num_hidden_layers=4,
         rope_theta=5000000.0, no_rope_layers=[1, 1, 1, 0], use_sliding_window=True, sliding_window=5),
    case("smollm3 use_sliding_window: RoPE layer 2 is full", "smollm3", 256, 4, 2, layer=2, num_hidden_layers=4,
         rope_theta=5000000.0, no_rope_layers=[1, 1, 1, 0], use_sliding_window=True, sliding_window=5),
    # Qwen2Config's use_sliding_window defaults to false: a sliding_window alone windows nothing.
    case("qwen2 sliding_window without use_sliding_window", "qwen2", 256, 4, 2, sliding_window=5),
    # Gemma 3 without rope_theta or rope_local_base_freq: Gemma3TextConfig's 1e6 full, 10000 sliding.
    case("gemma3 default bases: sliding layer 0", "gemma3_text", 256, 4, 1, layer=0, head_dim=64,
         num_hidden_layers=6, sliding_window=5, rope_theta=None, query_pre_attn_scalar=64),
    case("gemma3 default bases: full layer 5", "gemma3_text", 256, 4, 2, layer=5, head_dim=64,
         num_hidden_layers=6, sliding_window=T, rope_theta=None, query_pre_attn_scalar=64),
    # Qwen2: layers at or past max_window_layers slide; layer 1 of 2 slides over 5 keys, layer 0 is full.
    case("qwen2 max_window_layers 1: layer 1 slides", "qwen2", 256, 4, 2, use_sliding_window=True,
         sliding_window=5, max_window_layers=1),
    case("qwen2 max_window_layers 1: layer 0 is full", "qwen2", 256, 4, 2, layer=0, use_sliding_window=True,
         sliding_window=5, max_window_layers=1),
    case("stablelm partial rotary 0.25", "stablelm", 256, 4, 4, partial_rotary_factor=0.25, use_qkv_bias=False,
         qk_layernorm=False, layer_norm_eps=1e-5),
    case("olmo 4/4", "olmo", 256, 4, 4, clip_qkv=None),
    case("gpt-oss sliding layer 0 window 5, YaRN as 20b", "gpt_oss", 256, 4, 2, layer=0,
         sliding_window=5, rope_scaling=gpt_oss_yarn(4096), max_position_embeddings=131072, **GPT_OSS),
    case("gpt-oss full layer 1, YaRN past an original 64", "gpt_oss", 256, 4, 2, layer=1, sliding_window=T,
         rope_scaling=gpt_oss_yarn(64), **GPT_OSS),
    case("gpt-oss sliding layer 0 window 128, 600 tokens", "gpt_oss", 256, 4, 2, layer=0, tokens=600,
         sliding_window=128, rope_scaling=gpt_oss_yarn(64), **GPT_OSS),
    case("gpt-oss full layer 1, bf16 weights", "gpt_oss", 256, 4, 2, layer=1, dtype="BF16", sliding_window=T,
         rope_scaling=gpt_oss_yarn(4096), max_position_embeddings=131072, **GPT_OSS),
    case("modernbert global layer 0", "modernbert", 256, 4, 4, layer=0, local_attention=8, **MODERNBERT),
    case("modernbert local layer 1, |i-j| <= 4", "modernbert", 256, 4, 4, layer=1, local_attention=8, **MODERNBERT),
    case("modernbert local layer 1, 200 tokens, local_attention 128", "modernbert", 256, 4, 4, layer=1,
         tokens=200, local_attention=128, **MODERNBERT),
    case("modernbert global layer 0, 600 tokens in one call", "modernbert", 128, 2, 2, layer=0, tokens=600,
         local_attention=128, **MODERNBERT),
    case("modernbert attention_bias, bf16, head_dim 32", "modernbert", 128, 4, 4, layer=1, dtype="BF16",
         local_attention=6, **{**MODERNBERT, "attention_bias": True}),
    case("modernbert as transformers 5 saves it: layer_types, rope_parameters", "modernbert", 256, 4, 4, layer=2,
         num_hidden_layers=3, local_attention=8, rope_theta=None, num_key_value_heads=None,
         layer_types=["full_attention", "sliding_attention", "sliding_attention"],
         rope_parameters={"full_attention": {"rope_type": "default", "rope_theta": 80000.0},
                          "sliding_attention": {"rope_type": "default", "rope_theta": 5000.0}}),
    # Qwen3.5 / Qwen3-Next: gated attention on the full_attention layers (each head's query and gate rows in
    # q_proj, attention · sigmoid(gate) before o_proj, q/k norms times 1 + w, a quarter of head_dim rotated by
    # default); the linear_attention layers between them are refused, so the cases run a full layer.
    case("qwen3.5 full layer 3 of 4 by default, rotary 0.25 by default", "qwen3_5_text", 256, 4, 2, layer=3,
         num_hidden_layers=4, head_dim=64),
    case("qwen3.5 as its config.json: layer_types, mrope rope_parameters, head_dim 256", "qwen3_5_text", 512, 4, 1,
         rope_theta=None, layer_types=["linear_attention", "full_attention"],
         rope_parameters={"rope_type": "default", "rope_theta": 10000000.0, "partial_rotary_factor": 0.25,
                          "mrope_section": [11, 11, 10], "mrope_interleaved": True}),
    case("qwen3.5 attention_bias, bf16, rotary 0.5", "qwen3_5_text", 256, 4, 2, dtype="BF16", head_dim=64,
         attention_bias=True, partial_rotary_factor=0.5, layer_types=["linear_attention", "full_attention"]),
    case("qwen3-next full layer 3 of 4", "qwen3_next", 256, 4, 2, layer=3, num_hidden_layers=4, head_dim=64),
    # Gemma 3n / Gemma 4: q/k norms times w, v normed without a weight, scale 1; Gemma 4's full layers with
    # their own head_dim and kv heads, V from K (attention_k_eq_v) and proportional RoPE over a quarter of the
    # head. The layers that own their cache run (the last num_kv_shared_layers read earlier ones').
    case("gemma4 sliding layer 0, window 5", "gemma4_text", 256, 4, 2, layer=0, head_dim=64, global_head_dim=128,
         num_hidden_layers=2, sliding_window=5, layer_types=["sliding_attention", "full_attention"],
         **GEMMA4),
    case("gemma4 full layer 1: head_dim 128, 1 kv head, V from K, proportional RoPE", "gemma4_text", 256, 4, 2,
         head_dim=64, global_head_dim=128, num_global_key_value_heads=1, attention_k_eq_v=True,
         num_hidden_layers=2, sliding_window=5, layer_types=["sliding_attention", "full_attention"], **GEMMA4),
    case("gemma4 full layer 1: head_dim 512 with its own V", "gemma4_text", 512, 4, 2, head_dim=64,
         global_head_dim=512, num_hidden_layers=3, num_kv_shared_layers=1, sliding_window=5,
         layer_types=["sliding_attention", "full_attention", "full_attention"], **GEMMA4),
    case("gemma3n full layer 4 of 5, 2 shared", "gemma3n_text", 256, 4, 2, layer=2, head_dim=64, num_hidden_layers=5,
         num_kv_shared_layers=2, sliding_window=5, rope_theta=None,
         layer_types=["sliding_attention", "sliding_attention", "full_attention", "sliding_attention",
                      "full_attention"],
         rope_parameters={"full_attention": {"rope_type": "default", "rope_theta": 1000000.0},
                          "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}},
         **GEMMA3N),
    # The last num_kv_shared_layers layers have no K/V projections: each reads the K and V of the last earlier
    # layer of its type, which `headway layer` runs over the same x first (the module: its shared_kv_states).
    case("gemma3n full layer 4 reads layer 2's K/V", "gemma3n_text", 256, 4, 2, layer=4, head_dim=64,
         num_hidden_layers=5, num_kv_shared_layers=2, sliding_window=5, rope_theta=None,
         layer_types=["sliding_attention", "sliding_attention", "full_attention", "sliding_attention",
                      "full_attention"],
         rope_parameters={"full_attention": {"rope_type": "default", "rope_theta": 1000000.0},
                          "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}},
         **GEMMA3N),
    case("gemma3n sliding layer 3 reads layer 1's K/V, window 5", "gemma3n_text", 256, 4, 2, layer=3, head_dim=64,
         num_hidden_layers=5, num_kv_shared_layers=2, sliding_window=5, rope_theta=None,
         layer_types=["sliding_attention", "sliding_attention", "full_attention", "sliding_attention",
                      "full_attention"],
         rope_parameters={"full_attention": {"rope_type": "default", "rope_theta": 1000000.0},
                          "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}},
         **GEMMA3N),
    case("gemma4 full layer 4 reads layer 1's K/V: head_dim 128, V from K", "gemma4_text", 256, 4, 2, layer=4,
         head_dim=64, global_head_dim=128, num_global_key_value_heads=1, attention_k_eq_v=True,
         num_hidden_layers=5, num_kv_shared_layers=2, sliding_window=5,
         layer_types=["sliding_attention", "full_attention", "sliding_attention", "sliding_attention",
                      "full_attention"], **GEMMA4),
    case("gemma4 sliding layer 3 reads layer 2's K/V, window 5", "gemma4_text", 256, 4, 2, layer=3,
         head_dim=64, global_head_dim=128, num_hidden_layers=5, num_kv_shared_layers=2, sliding_window=5,
         layer_types=["sliding_attention", "full_attention", "sliding_attention", "sliding_attention",
                      "full_attention"], **GEMMA4),
    case("gemma3n sliding layer 1 of 5", "gemma3n_text", 256, 4, 2, layer=1, head_dim=64, num_hidden_layers=5,
         num_kv_shared_layers=2, sliding_window=5, rope_theta=None,
         layer_types=["sliding_attention", "sliding_attention", "full_attention", "sliding_attention",
                      "full_attention"],
         rope_parameters={"full_attention": {"rope_type": "default", "rope_theta": 1000000.0},
                          "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}},
         **GEMMA3N),
    # MLA, absorbed: the latent row [rope | kv_lora] cached once per token, K and V at once; each head's query
    # through W_UK into the latent space, its output's latent part through W_UV. DeepSeek pairs RoPE dims
    # adjacently (V2's complex rotation, V3's and Youtu's rope_interleave), MiniCPM3 by halves.
    case("deepseek_v2 q_lora 96, kv_lora 64, nope 32 rope 16 v 24", "deepseek_v2", 256, 4, 4, q_lora_rank=96,
         **DEEPSEEK),
    case("deepseek_v2 full-rank q (V2-Lite), YaRN with mscale_all_dim", "deepseek_v2", 256, 4, 4, q_lora_rank=None,
         rope_scaling=DEEPSEEK_YARN, **DEEPSEEK),
    case("deepseek_v3 q_lora 96, rope_interleave", "deepseek_v3", 256, 4, 4, q_lora_rank=96, **DEEPSEEK),
    case("deepseek_v3 rope by halves (rope_interleave false), bf16", "deepseek_v3", 256, 4, 4, q_lora_rank=96,
         dtype="BF16", rope_interleave=False, **DEEPSEEK),
    case("minicpm3 kv_lora 64 + rope 16 (288-style), q_lora 96", "minicpm3", 256, 4, 4, q_lora_rank=96,
         kv_lora_rank=64, qk_nope_head_dim=32, qk_rope_head_dim=16, v_head_dim=24, scale_emb=1, dim_model_base=256),
    case("youtu q_lora 96", "youtu", 256, 4, 4, q_lora_rank=96, **DEEPSEEK),
    case("deepseek_v2 at V2-Lite's head sizes: 576-value rows, 70 tokens", "deepseek_v2", 512, 4, 4, tokens=70,
         q_lora_rank=None, **{**DEEPSEEK, "kv_lora_rank": 512, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,
                              "v_head_dim": 128}),
    case("gguf llama 8/2 (permuted Q/K, GPT-J pairing)", "llama", 512, 8, 2, rope_theta=500000.0, fmt="gguf"),
    case("gguf qwen2 q/k/v bias", "qwen2", 256, 4, 2, rope_theta=1000000.0, use_sliding_window=False, fmt="gguf"),
    case("gguf qwen3 q/k norm, head_dim 64", "qwen3", 128, 4, 2, head_dim=64, fmt="gguf"),
    case("gguf llama f16", "llama", 256, 4, 2, dtype="F16", fmt="gguf"),
    case("gguf qwen35 layer 1 of recurrent_layers, q/k norms with 1 added", "qwen3_5_text", 256, 4, 2, head_dim=64,
         layer_types=["linear_attention", "full_attention"], fmt="gguf"),
    case("gguf qwen35 layer 3 by full_attention_interval, f16", "qwen3_5_text", 256, 4, 2, layer=3, dtype="F16",
         num_hidden_layers=4, head_dim=64, fmt="gguf"),
]


def write_model(c, workdir, gen):
    """config.json, the weights file; returns (config, the run layer's module, the module of the layer whose
    K/V it reads or None, headway's file args)."""
    os.makedirs(workdir, exist_ok=True)
    with open(os.path.join(workdir, "config.json"), "w") as f:
        json.dump(c["config"], f, indent=2)
    config = hf_blocks.load_config(workdir)
    layers = [hf_blocks.make_layer(config, i, gen, DTYPES[c["dtype"]]) for i in range(config.num_hidden_layers)]
    if c["fmt"] == "gguf":
        weights = os.path.join(workdir, "model.gguf")
        write_gguf(weights, c["config"], [stored for _, stored in layers])
        args = ["--weights", weights]
    else:
        weights = os.path.join(workdir, "model.safetensors")
        block = "attn" if c["config"]["model_type"] == "modernbert" else "self_attn"
        save_file({f"model.layers.{i}.{block}.{k}": v.contiguous() for i, (_, stored) in enumerate(layers)
                   for k, v in stored.items()}, weights, metadata={"format": "pt"})
        args = ["--weights", weights, "--config", os.path.join(workdir, "config.json")]
    producer = hf_blocks.kv_producer(config, c["layer"])
    return config, layers[c["layer"]][0], None if producer is None else layers[producer][0], args


def run_case(headway, c, workdir, seed, writer=None):
    """writer(c, workdir, gen): the files, as write_model makes them (the default)."""
    gen = torch.Generator().manual_seed(seed)
    config, module, producer, file_args = (writer or write_model)(c, workdir, gen)
    x = torch.randn(c["tokens"], config.hidden_size, generator=gen, dtype=torch.float64).float().numpy()
    x_path, y_path = os.path.join(workdir, "x.npy"), os.path.join(workdir, "y.npy")
    np.save(x_path, x)
    worst, ok, engines = 0.0, True, []
    # decode: also token by token (--chunk 1), the decode kernels over the cache the earlier tokens filled
    runs = [(p, []) for p in PROJECTIONS] + ([("highway", ["--chunk", "1"])] if c["decode"] else [])
    for start in START_POSITIONS:
        ref = hf_blocks.reference(config, module, x, start, producer)
        for projection, extra in runs:
            cmd = [headway, "layer", *file_args, "--layer", str(c["layer"]), "--x", x_path, "--out", y_path,
                   "--start-pos", str(start), "--threads", "2", "--projection", projection, *extra]
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode != 0 and projection == "xnnpack" and ("HEADWAY_XNNPACK=OFF" in r.stderr or
                                                                  "runs on the Highway projections" in r.stderr):
                continue  # a build without XNNPACK, or MLA (Highway's projections alone)
            if r.returncode != 0:
                print(f"FAIL  {c['name']}: {projection} P={start}: exit {r.returncode}: {r.stderr.strip()}")
                return False, worst
            engine = projection + (" decode" if extra else "")
            if engine not in engines:
                engines.append(engine)
            y = np.load(y_path)
            if y.shape != ref.shape:
                print(f"FAIL  {c['name']}: {projection} P={start}: y is {y.shape}, expected {ref.shape}")
                return False, worst
            abs_err = float(np.max(np.abs(y.astype(np.float64) - ref)))
            rel_err = abs_err / max(1.0, float(np.max(np.abs(ref))))
            worst = max(worst, rel_err)
            if not rel_err <= TOLERANCE:
                ok = False
                print(f"FAIL  {c['name']}: {projection} P={start}: max abs err {abs_err:.3g}, rel err {rel_err:.3g} "
                      f"> {TOLERANCE:g}")
    if ok:
        print(f"ok    {c['name']:52s} layer {c['layer']} T={c['tokens']} P={','.join(map(str, START_POSITIONS))} "
              f"{'+'.join(engines):16s} max rel err {worst:.2e}")
    return ok, worst


def check(cases, seed, what, writer=None):
    """The command line every check of this kind takes (--headway, --keep, --case), cases run from
    seed on in their own folders; one line each and a summary naming `what` they were held to.
    Returns the exit status."""
    parser = argparse.ArgumentParser(description=sys.modules["__main__"].__doc__.splitlines()[0])
    parser.add_argument("--headway", required=True, help="the built headway binary")
    parser.add_argument("--keep", help="write the cases' files here and keep them")
    parser.add_argument("--case", help="run only cases whose name contains this")
    args = parser.parse_args()
    torch.set_num_threads(1)
    cases = [c for c in cases if not args.case or args.case in c["name"]]
    if not cases:
        print(f"no case matches '{args.case}'")
        return 2
    with tempfile.TemporaryDirectory(prefix="headway_hf_") as tmp:
        root = args.keep or tmp
        results = [run_case(args.headway, c, os.path.join(root, f"case{i}"), seed + i, writer)
                   for i, c in enumerate(cases)]
    failed = [ok for ok, _ in results].count(False)
    worst = max(w for _, w in results)
    print(f"{len(results) - failed} of {len(results)} cases match {what} (transformers "
          f"{hf_blocks.transformers.__version__}, torch {torch.__version__}; tolerance {TOLERANCE:g}, "
          f"worst {worst:.2e})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(check(CASES, 1000, "the families' modules"))
