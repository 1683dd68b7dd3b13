"""`headway logits` on sharded safetensors checkpoints against transformers in float64.

save_pretrained(max_shard_size=...) writes model.safetensors.index.json and the shards its
weight_map names (here a dozen or more, a tensor or two each). A LlamaForCausalLM in f32 and a
Qwen2ForCausalLM (q/k/v biases, tied head) in bf16 run through `--model-dir` and through
`--config config.json --weights model.safetensors.index.json`; the reference is transformers
loading the same shards in float64. Every position's logits within MAX_ABS.
"""
import argparse
import glob
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch
from model_families_check import randomize

MAX_ABS = 1e-3  # the bound for f32 weights (model_families_check.py); measured about 3e-6


def models():
    from transformers import LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM
    common = dict(vocab_size=160, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64, rms_norm_eps=1e-6)
    yield "llama f32", torch.float32, LlamaForCausalLM(LlamaConfig(**common, tie_word_embeddings=False))
    yield "qwen2 bf16", torch.bfloat16, Qwen2ForCausalLM(Qwen2Config(**common, rope_theta=1e6,
                                                                    tie_word_embeddings=True))


def logits(headway, source, ids, out):
    subprocess.run([headway, "logits", *source, "--prompt-ids", ",".join(map(str, ids)), "--out", out,
                    "--kv-dtype", "f32"], check=True)
    return np.load(out).astype(np.float64)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--headway", required=True)
    args = ap.parse_args()
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    failures = checks = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name, dtype, model in models():
            model = randomize(model).to(dtype)
            folder = os.path.join(tmp, name.replace(" ", "-"))
            model.save_pretrained(folder, safe_serialization=True, max_shard_size="20KB")
            index = os.path.join(folder, "model.safetensors.index.json")
            shards = glob.glob(os.path.join(folder, "model-*-of-*.safetensors"))
            if not os.path.exists(index) or len(shards) < 2 or os.path.exists(os.path.join(folder, "model.safetensors")):
                print(f"{name}: save_pretrained wrote no shards ({len(shards)} files): FAIL")
                failures += 1
                continue
            ids = rng.integers(0, model.config.vocab_size, 17).tolist()
            # transformers' own loading of the shards, in float64 (a model cast to bf16 and back
            # would also have rounded its RoPE frequencies, which no file holds).
            model = type(model).from_pretrained(folder, dtype=torch.float64).eval()
            with torch.no_grad():
                ref = model(torch.tensor([ids])).logits[0].numpy()
            out = os.path.join(tmp, "logits.npy")
            for how, source in (("--model-dir", ["--model-dir", folder]),
                                ("--weights index", ["--config", os.path.join(folder, "config.json"),
                                                     "--weights", index])):
                err = float(np.abs(logits(args.headway, source, ids, out) - ref).max())
                ok = err <= MAX_ABS
                checks += 1
                failures += 0 if ok else 1
                print(f"{name}, {len(shards)} shards, {how}: max |err| {err:.2e} of logits up to "
                      f"{np.abs(ref).max():.1f} ({'ok' if ok else 'FAIL'})")
    print(f"{checks - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
