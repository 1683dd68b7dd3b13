#!/usr/bin/env python3
"""`headway layer` against an independent PyTorch attention block, family by family.

For each case: random f32 (or f16/bf16) weights in a config.json + model.safetensors with real
Hugging Face tensor names (two layers; layer 1 is run), or a GGUF written the way llama.cpp's
converter writes one (Q/K rows permuted for "llama"), and x.npy [T, d_model]. The reference is
the Hugging Face Llama-family attention block written out in float64: q/k/v projections (+bias),
per-head RMS norm of q and k (Qwen3), NeoX rotate-half RoPE over the rotary dims as in
apply_rotary_pos_emb (llama3 frequency scaling, partial rotary as StableLM splits it),
repeat_kv for GQA, causal (and sliding-window) softmax attention, o projection. No norm,
residual or MLP around it. `headway layer` runs the same block at positions P..P+T-1 with a
fresh cache for P = 0 and P > 0; one line per case, exit 1 on any mismatch.

usage: llama_block_check.py --headway path/to/headway [--keep DIR]
"""
import argparse
import json
import math
import os
import struct
import subprocess
import sys
import tempfile

import numpy as np
import torch

# Max abs error over max(1, max |y|): f32 kernels against a float64 reference.
TOLERANCE = 1e-4
T = 9  # tokens per run
# RoPE scores depend on i - j only, so with a fresh cache y does not depend on P in exact
# arithmetic: P > 0 checks the position bookkeeping and the angles' precision at large positions.
START_POSITIONS = (0, 37, 1000)
PROJECTIONS = ("highway", "xnnpack")  # xnnpack is skipped in builds without it


# ------------------------------------------------------------------ cases

def case(name, model_type, d_model, heads, kv_heads, head_dim=None, theta=10000.0, qkv_bias=False,
         o_bias=False, qk_norm=False, rotary_factor=1.0, window=0, rope_scaling=None, dtype="F32",
         fmt="safetensors", tokens=T, extra=None):
    return dict(name=name, model_type=model_type, d_model=d_model, heads=heads, kv_heads=kv_heads,
                head_dim=head_dim, theta=theta, qkv_bias=qkv_bias, o_bias=o_bias, qk_norm=qk_norm,
                rotary_factor=rotary_factor, window=window, rope_scaling=rope_scaling, dtype=dtype,
                fmt=fmt, tokens=tokens, extra=extra or {})


LLAMA3_SCALING = {"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                  "original_max_position_embeddings": 8192}

CASES = [
    case("llama GQA 8/2 d64", "llama", 512, 8, 2, theta=500000.0),
    case("llama 3.2 rope_scaling llama3", "llama", 256, 4, 2, theta=500000.0, rope_scaling=LLAMA3_SCALING),
    case("llama MHA 4/4 d64 attention_bias", "llama", 256, 4, 4, qkv_bias=True, o_bias=True,
         extra={"attention_bias": True}),
    case("qwen2 14/2 d64 q/k/v bias", "qwen2", 896, 14, 2, theta=1000000.0, qkv_bias=True,
         extra={"use_sliding_window": False, "sliding_window": 32768}),
    case("qwen3 4/2 head_dim 128 q/k norm", "qwen3", 256, 4, 2, head_dim=128, theta=1000000.0, qk_norm=True),
    case("smollm2 9/3 d64", "llama", 576, 9, 3, theta=100000.0),
    case("mistral sliding window 5", "mistral", 256, 4, 1, window=5),
    case("stablelm partial rotary 0.25", "stablelm", 256, 4, 4, rotary_factor=0.25,
         extra={"use_qkv_bias": False, "qk_layernorm": False}),
    case("llama d80 (generic head size)", "llama", 320, 4, 2),
    case("llama 600 tokens (prefill in 2 chunks)", "llama", 128, 2, 1, tokens=600),
    case("llama f16 weights", "llama", 256, 4, 2, dtype="F16"),
    case("llama bf16 weights", "llama", 256, 4, 2, dtype="BF16"),
    case("gguf llama 8/2 (permuted Q/K, GPT-J pairing)", "llama", 512, 8, 2, theta=500000.0, fmt="gguf"),
    case("gguf qwen2 q/k/v bias", "qwen2", 256, 4, 2, theta=1000000.0, qkv_bias=True, fmt="gguf"),
    case("gguf qwen3 q/k norm, head_dim 64", "qwen3", 128, 4, 2, head_dim=64, qk_norm=True, fmt="gguf"),
    case("gguf llama f16", "llama", 256, 4, 2, dtype="F16", fmt="gguf"),
]


# ------------------------------------------------------------------ weights

def head_dim_of(c):
    return c["head_dim"] or c["d_model"] // c["heads"]


def random_layer(c, gen):
    d, hd = c["d_model"], head_dim_of(c)
    qw, kvw = c["heads"] * hd, c["kv_heads"] * hd
    s = 1.0 / math.sqrt(d)

    def t(*shape, scale=s):
        return (torch.randn(*shape, generator=gen, dtype=torch.float64) * scale).float()

    w = {"q_proj.weight": t(qw, d), "k_proj.weight": t(kvw, d), "v_proj.weight": t(kvw, d),
         "o_proj.weight": t(d, qw, scale=1.0 / math.sqrt(qw))}
    if c["qkv_bias"]:
        w["q_proj.bias"], w["k_proj.bias"], w["v_proj.bias"] = t(qw, scale=0.5), t(kvw, scale=0.5), t(kvw, scale=0.5)
    if c["o_bias"]:
        w["o_proj.bias"] = t(d, scale=0.5)
    if c["qk_norm"]:
        w["q_norm.weight"] = 1.0 + t(hd, scale=0.2)
        w["k_norm.weight"] = 1.0 + t(hd, scale=0.2)
    # Stored in the case's dtype; the reference uses exactly the stored values.
    torch_dtype = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16}[c["dtype"]]
    return {k: v.to(torch_dtype) for k, v in w.items()}


def tensor_bytes(t):
    if t.dtype == torch.bfloat16:  # numpy has no bfloat16: its bits as int16
        return t.contiguous().view(torch.int16).numpy().tobytes()
    return t.contiguous().numpy().tobytes()


def write_safetensors(path, tensors):
    """tensors: name -> torch tensor. Written by hand (no safetensors package): u64 header length,
    the JSON header padded with spaces to 8 bytes, the data back to back."""
    header, blobs, offset = {"__metadata__": {"format": "pt"}}, [], 0
    names = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16"}
    for name, t in tensors.items():
        b = tensor_bytes(t)
        header[name] = {"dtype": names[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + len(b)]}
        blobs.append(b)
        offset += len(b)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)


def hf_config(c, n_layers, max_seq):
    cfg = {"model_type": c["model_type"], "hidden_size": c["d_model"], "num_attention_heads": c["heads"],
           "num_key_value_heads": c["kv_heads"], "max_position_embeddings": max_seq,
           "num_hidden_layers": n_layers, "rope_theta": c["theta"], "rms_norm_eps": 1e-6,
           "intermediate_size": 4 * c["d_model"], "vocab_size": 1000, "torch_dtype": "float32"}
    if c["head_dim"]:
        cfg["head_dim"] = c["head_dim"]
    if c["rotary_factor"] != 1.0:
        cfg["partial_rotary_factor"] = c["rotary_factor"]
    if c["window"]:
        cfg["sliding_window"] = c["window"]
    if c["rope_scaling"]:
        cfg["rope_scaling"] = c["rope_scaling"]
    cfg.update(c["extra"])
    return cfg


# ------------------------------------------------------------------ GGUF

GGUF_U32, GGUF_F32, GGUF_STRING = 4, 6, 8
GGML_TYPES = {torch.float32: 0, torch.float16: 1, torch.bfloat16: 30}
GGUF_NAMES = {"q_proj": "attn_q", "k_proj": "attn_k", "v_proj": "attn_v", "o_proj": "attn_output",
              "q_norm": "attn_q_norm", "k_norm": "attn_k_norm"}


def gguf_string(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def llama_permute(w, n_head):
    """convert_hf_to_gguf.py's LlamaModel.permute: rows of each head reordered so that ggml's
    adjacent-pair RoPE computes what HF's rotate-half does."""
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def write_gguf(path, c, layers, max_seq, alignment=32):
    arch = c["model_type"]
    kvs = [("general.architecture", GGUF_STRING, arch), ("general.name", GGUF_STRING, "check"),
           (f"{arch}.context_length", GGUF_U32, max_seq), (f"{arch}.embedding_length", GGUF_U32, c["d_model"]),
           (f"{arch}.block_count", GGUF_U32, len(layers)), (f"{arch}.attention.head_count", GGUF_U32, c["heads"]),
           (f"{arch}.attention.head_count_kv", GGUF_U32, c["kv_heads"]),
           (f"{arch}.rope.freq_base", GGUF_F32, c["theta"]),
           (f"{arch}.attention.layer_norm_rms_epsilon", GGUF_F32, 1e-6)]
    if c["head_dim"]:
        kvs += [(f"{arch}.attention.key_length", GGUF_U32, c["head_dim"]),
                (f"{arch}.attention.value_length", GGUF_U32, c["head_dim"])]
    out = bytearray(b"GGUF" + struct.pack("<IQQ", 3, 0, len(kvs)))
    for key, typ, value in kvs:
        out += gguf_string(key) + struct.pack("<I", typ)
        out += gguf_string(value) if typ == GGUF_STRING else struct.pack("<I" if typ == GGUF_U32 else "<f", value)
    tensors = []
    for i, w in enumerate(layers):
        for name, t in w.items():
            proj, kind = name.split(".")
            if arch == "llama" and proj == "q_proj":
                t = llama_permute(t, c["heads"])
            if arch == "llama" and proj == "k_proj":
                t = llama_permute(t, c["kv_heads"])
            tensors.append((f"blk.{i}.{GGUF_NAMES[proj]}.{kind}", t))
    struct.pack_into("<Q", out, 8, len(tensors))
    data, infos = bytearray(), bytearray()
    for name, t in tensors:
        data += b"\0" * (-len(data) % alignment)
        ne = list(reversed(t.shape))  # ggml: fastest-varying dim first
        infos += gguf_string(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", n) for n in ne)
        infos += struct.pack("<IQ", GGML_TYPES[t.dtype], len(data))
        data += tensor_bytes(t)
    out += infos
    out += b"\0" * (-len(out) % alignment)
    with open(path, "wb") as f:
        f.write(out + data)


# ------------------------------------------------------------------ reference

def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def inv_freq_of(c, rotary_dims):
    inv = 1.0 / (c["theta"] ** (torch.arange(0, rotary_dims, 2, dtype=torch.float64) / rotary_dims))
    s = c["rope_scaling"]
    if s and s["rope_type"] == "llama3":  # transformers' _compute_llama3_parameters
        factor, low, high, old = s["factor"], s["low_freq_factor"], s["high_freq_factor"], \
            s["original_max_position_embeddings"]
        low_wavelen, high_wavelen = old / low, old / high
        wavelen = 2 * math.pi / inv
        scaled = torch.where(wavelen > low_wavelen, inv / factor, inv)
        smooth = (old / wavelen - low) / (high - low)
        smoothed = (1 - smooth) * scaled / factor + smooth * scaled
        medium = ~(wavelen < high_wavelen) & ~(wavelen > low_wavelen)
        inv = torch.where(medium, smoothed, scaled)
    return inv


def reference_block(c, w, x, start):
    w = {k: v.double() for k, v in w.items()}
    x = torch.from_numpy(x).double()
    t, hd, h, kvh = x.shape[0], head_dim_of(c), c["heads"], c["kv_heads"]
    q = x @ w["q_proj.weight"].T + (w["q_proj.bias"] if c["qkv_bias"] else 0)
    k = x @ w["k_proj.weight"].T + (w["k_proj.bias"] if c["qkv_bias"] else 0)
    v = x @ w["v_proj.weight"].T + (w["v_proj.bias"] if c["qkv_bias"] else 0)
    q = q.view(t, h, hd).transpose(0, 1)  # [h, t, hd]
    k = k.view(t, kvh, hd).transpose(0, 1)
    v = v.view(t, kvh, hd).transpose(0, 1)
    if c["qk_norm"]:  # Qwen3RMSNorm over head_dim, before RoPE
        q = q * torch.rsqrt(q.pow(2).mean(-1, keepdim=True) + 1e-6) * w["q_norm.weight"]
        k = k * torch.rsqrt(k.pow(2).mean(-1, keepdim=True) + 1e-6) * w["k_norm.weight"]
    rd = int(hd * c["rotary_factor"])
    pos = torch.arange(start, start + t, dtype=torch.float64)
    freqs = torch.outer(pos, inv_freq_of(c, rd))
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos(), emb.sin()
    q = torch.cat((q[..., :rd] * cos + rotate_half(q[..., :rd]) * sin, q[..., rd:]), dim=-1)
    k = torch.cat((k[..., :rd] * cos + rotate_half(k[..., :rd]) * sin, k[..., rd:]), dim=-1)
    k = k.repeat_interleave(h // kvh, dim=0)  # repeat_kv
    v = v.repeat_interleave(h // kvh, dim=0)
    scores = (q @ k.transpose(-1, -2)) / math.sqrt(hd)
    i = torch.arange(t).view(-1, 1)
    j = torch.arange(t).view(1, -1)
    visible = j <= i
    if c["window"]:
        visible &= j > i - c["window"]
    scores = scores.masked_fill(~visible, float("-inf"))
    o = torch.softmax(scores, dim=-1) @ v  # [h, t, hd]
    o = o.transpose(0, 1).reshape(t, h * hd)
    y = o @ w["o_proj.weight"].T + (w["o_proj.bias"] if c["o_bias"] else 0)
    return y.numpy()


# ------------------------------------------------------------------ run

def run_case(headway, c, workdir, seed):
    gen = torch.Generator().manual_seed(seed)
    layers = [random_layer(c, gen), random_layer(c, gen)]
    max_seq = 2048
    os.makedirs(workdir, exist_ok=True)
    if c["fmt"] == "gguf":
        weights = os.path.join(workdir, "model.gguf")
        write_gguf(weights, c, layers, max_seq)
        config_args = []
    else:
        weights = os.path.join(workdir, "model.safetensors")
        write_safetensors(weights, {f"model.layers.{i}.self_attn.{k}": v for i, w in enumerate(layers)
                                    for k, v in w.items()})
        config = os.path.join(workdir, "config.json")
        with open(config, "w") as f:
            json.dump(hf_config(c, len(layers), max_seq), f, indent=2)
        config_args = ["--config", config]
    x = torch.randn(c["tokens"], c["d_model"], generator=gen, dtype=torch.float64).float().numpy()
    x_path, y_path = os.path.join(workdir, "x.npy"), os.path.join(workdir, "y.npy")
    np.save(x_path, x)
    worst, ok, engines = 0.0, True, []
    for projection, start in [(p, s) for p in PROJECTIONS for s in START_POSITIONS]:
        cmd = [headway, "layer", "--weights", weights, *config_args, "--layer", "1", "--x", x_path, "--out", y_path,
               "--start-pos", str(start), "--threads", "2", "--projection", projection]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0 and projection == "xnnpack" and "HEADWAY_XNNPACK=OFF" in r.stderr:
            continue  # a build without XNNPACK: the Highway projections alone
        if r.returncode != 0:
            print(f"FAIL  {c['name']}: {projection} P={start}: exit {r.returncode}: {r.stderr.strip()}")
            return False
        if projection not in engines:
            engines.append(projection)
        y = np.load(y_path)
        ref = reference_block(c, layers[1], x, start)
        if y.shape != ref.shape:
            print(f"FAIL  {c['name']}: {projection} P={start}: y is {y.shape}, expected {ref.shape}")
            return False
        abs_err = float(np.max(np.abs(y.astype(np.float64) - ref)))
        rel_err = abs_err / max(1.0, float(np.max(np.abs(ref))))
        worst = max(worst, rel_err)
        if not rel_err <= TOLERANCE:
            ok = False
            print(f"FAIL  {c['name']}: {projection} P={start}: max abs err {abs_err:.3g}, rel err {rel_err:.3g} > "
                  f"{TOLERANCE:g}")
    if ok:
        print(f"ok    {c['name']:46s} T={c['tokens']} P={','.join(map(str, START_POSITIONS))} {'+'.join(engines):16s} "
              f"max rel err {worst:.2e}")
    return ok


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--headway", required=True, help="the built headway binary")
    parser.add_argument("--keep", help="write the cases' files here and keep them")
    parser.add_argument("--case", help="run only cases whose name contains this")
    args = parser.parse_args()
    torch.set_num_threads(1)
    cases = [c for c in CASES if not args.case or args.case in c["name"]]
    if not cases:
        print(f"no case matches '{args.case}'")
        return 2
    with tempfile.TemporaryDirectory(prefix="headway_torch_") as tmp:
        root = args.keep or tmp
        results = [run_case(args.headway, c, os.path.join(root, f"case{i}"), 1000 + i) for i, c in enumerate(cases)]
    failed = results.count(False)
    print(f"{len(results) - failed} of {len(results)} cases match PyTorch (tolerance {TOLERANCE:g})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
