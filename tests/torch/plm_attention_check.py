#!/usr/bin/env python3
"""`headway layer` on a PLM config.json (model_type "plm") against DeepseekV3Attention.

PLMAttention (PLM-1.8B's modeling_plm.py, and llama.cpp's plm graph) is DeepSeek's multi-head
latent attention with a full-rank q_proj (q_lora_rank None), RoPE on the last qk_rope_head_dim
values of each query head and on the shared rope key in adjacent pairs (rope_interleave, true by
default), a logit scale of (qk_nope_head_dim + qk_rope_head_dim)^-1/2 and no YaRN mscale, with
the same tensor names (q_proj, kv_a_proj_with_mqa, kv_a_layernorm, kv_b_proj, o_proj). The
transformers this project pins has no plm module, so the reference is DeepseekV3Attention built
from the same keys as a deepseek_v3 config (q_lora_rank None, rope_interleave, no rope_scaling):
headway reads the plm config.json, the module the deepseek_v3 one, both the same weights.
hf_attention_check.py's case list, runner and tolerance, unchanged.

usage: plm_attention_check.py --headway path/to/headway [--keep DIR]
"""
import json
import os
import sys

from safetensors.torch import save_file

import hf_attention_check as hac
import hf_blocks

# PLMConfig's attention keys at a small size; PLM-1.8B's own head sizes in the second case.
PLM = dict(kv_lora_rank=64, q_lora_rank=None, qk_nope_head_dim=32, qk_rope_head_dim=16, v_head_dim=24,
           rope_theta=100000.0, hidden_act="relu2", tie_word_embeddings=True)
CASES = [
    hac.case("plm full-rank q, kv_lora 64, nope 32 rope 16 v 24", "plm", 256, 4, 4, decode=True, **PLM),
    hac.case("plm at PLM-1.8B's head sizes: 576-value rows, 70 tokens", "plm", 512, 4, 4, tokens=70, decode=True,
             **{**PLM, "kv_lora_rank": 512, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128}),
    hac.case("plm bf16 weights", "plm", 256, 4, 4, dtype="BF16", decode=True, **PLM),
]


def write_plm_model(c, workdir, gen):
    """headway's config.json (plm) and the reference's (deepseek_v3, the same keys), one weights file."""
    os.makedirs(os.path.join(workdir, "reference"), exist_ok=True)
    with open(os.path.join(workdir, "config.json"), "w") as f:
        json.dump(c["config"], f, indent=2)
    reference = {**c["config"], "model_type": "deepseek_v3", "rope_interleave": True, "q_lora_rank": None,
                 "n_routed_experts": 4, "num_experts_per_tok": 2, "first_k_dense_replace": 2}
    with open(os.path.join(workdir, "reference", "config.json"), "w") as f:
        json.dump(reference, f, indent=2)
    config = hf_blocks.load_config(os.path.join(workdir, "reference"))
    layers = [hf_blocks.make_layer(config, i, gen, hac.DTYPES[c["dtype"]]) for i in range(config.num_hidden_layers)]
    weights = os.path.join(workdir, "model.safetensors")
    save_file({f"model.layers.{i}.self_attn.{k}": v.contiguous() for i, (_, stored) in enumerate(layers)
               for k, v in stored.items()}, weights, metadata={"format": "pt"})
    return config, layers[c["layer"]][0], None, ["--weights", weights, "--config", os.path.join(workdir, "config.json")]


if __name__ == "__main__":
    sys.exit(hac.check(CASES, 2000, "DeepseekV3Attention as PLM", write_plm_model))
