#!/usr/bin/env python3
"""`headway layer --weights model.gguf` on a Gemma 4 GGUF against Gemma4TextAttention.

The GGUF is written as llama.cpp's Gemma4Model converter writes one (conversion/gemma.py): the
full layers' head in attention.key_length and the sliding layers' in key_length_swa,
sliding_window_pattern one bool a layer, head_count_kv one a layer where the config names
num_global_key_value_heads, attention.shared_kv_layers, rope.dimension_count the whole full head
and rope.dimension_count_swa the sliding one, rope.freq_base / freq_base_swa, and a rope_freqs
tensor that masks the full layers' proportional RoPE to its first partial_rotary_factor · head / 2
pairs (factor 1, then 1e30). Tensors by llama.cpp's names; no attn_v where V is K's projection
(attention_k_eq_v); the q/k norm weights as they are (Gemma4Model's norm_shift is 0). headway
reads the Config from the file alone (WeightFile::gguf_config). hf_attention_check.py's runner and
tolerance, unchanged; the cases are its Gemma 4 ones.

usage: gemma4_gguf_check.py --headway path/to/headway [--keep DIR]
"""
import json
import os
import struct
import sys

import torch

import hf_attention_check as hac
import hf_blocks
from gguf_file import GGML_TYPES, GGUF_NAMES, gguf_string, tensor_bytes

GGUF_U32, GGUF_F32, GGUF_BOOL, GGUF_STRING, GGUF_ARRAY = 4, 6, 7, 8, 9

CASES = [
    hac.case("gemma4 gguf sliding layer 0, window 5", "gemma4_text", 256, 4, 2, layer=0, head_dim=64,
             global_head_dim=128, num_hidden_layers=2, sliding_window=5,
             layer_types=["sliding_attention", "full_attention"], **hac.GEMMA4),
    hac.case("gemma4 gguf full layer 1: 1 kv head of 128, V from K, proportional RoPE", "gemma4_text", 256, 4, 2,
             head_dim=64, global_head_dim=128, num_global_key_value_heads=1, attention_k_eq_v=True,
             num_hidden_layers=2, sliding_window=5, layer_types=["sliding_attention", "full_attention"],
             decode=True, **hac.GEMMA4),
    hac.case("gemma4 gguf full layer 1 of 3, head 512 with its own V, 1 shared, f16", "gemma4_text", 512, 4, 2,
             head_dim=64, global_head_dim=512, num_hidden_layers=3, num_kv_shared_layers=1, sliding_window=5,
             dtype="F16", layer_types=["sliding_attention", "full_attention", "full_attention"], decode=True,
             **hac.GEMMA4),
    # Layer 2 has no K/V tensors in the file (attention.shared_kv_layers 1): it reads layer 1's cache.
    hac.case("gemma4 gguf full layer 2 of 3 reads layer 1's K/V, head 512", "gemma4_text", 512, 4, 2, layer=2,
             head_dim=64, global_head_dim=512, num_hidden_layers=3, num_kv_shared_layers=1, sliding_window=5,
             layer_types=["sliding_attention", "full_attention", "full_attention"], decode=True, **hac.GEMMA4),
    # Half the full head rotated: the metadata says nothing of it, the rope_freqs tensor does.
    hac.case("gemma4 gguf full layer 1: rope_freqs rotating half the pairs", "gemma4_text", 256, 4, 2, head_dim=64,
             global_head_dim=128, num_hidden_layers=2, sliding_window=5,
             layer_types=["sliding_attention", "full_attention"],
             **{**hac.GEMMA4, "rope_parameters": {
                 "full_attention": {"rope_type": "proportional", "partial_rotary_factor": 0.5, "rope_theta": 1e6},
                 "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}}}),
]


def kv(key, typ, value):
    out = gguf_string(key) + struct.pack("<I", typ)
    if typ == GGUF_STRING:
        return out + gguf_string(value)
    if typ == GGUF_ARRAY and isinstance(value[0], bool):
        return out + struct.pack("<IQ", GGUF_BOOL, len(value)) + bytes(int(v) for v in value)
    if typ == GGUF_ARRAY:
        return out + struct.pack("<IQ", GGUF_U32, len(value)) + b"".join(struct.pack("<I", v) for v in value)
    return out + struct.pack("<I" if typ == GGUF_U32 else "<f", value)


def write_gemma4_gguf(path, cfg, layers, alignment=32):
    """As Gemma4Model.set_gguf_parameters and generate_extra_tensors write them."""
    a = "gemma4"
    swa = [t == "sliding_attention" for t in cfg["layer_types"]]
    full, head = cfg["global_head_dim"], cfg["head_dim"]
    rope = cfg["rope_parameters"]
    kvs = [kv("general.architecture", GGUF_STRING, a),
           kv(f"{a}.context_length", GGUF_U32, cfg["max_position_embeddings"]),
           kv(f"{a}.embedding_length", GGUF_U32, cfg["hidden_size"]),
           kv(f"{a}.block_count", GGUF_U32, len(layers)),
           kv(f"{a}.attention.head_count", GGUF_U32, cfg["num_attention_heads"]),
           kv(f"{a}.attention.layer_norm_rms_epsilon", GGUF_F32, cfg["rms_norm_eps"]),
           kv(f"{a}.attention.key_length", GGUF_U32, full), kv(f"{a}.attention.value_length", GGUF_U32, full),
           kv(f"{a}.attention.key_length_swa", GGUF_U32, head),
           kv(f"{a}.attention.value_length_swa", GGUF_U32, head),
           kv(f"{a}.rope.freq_base", GGUF_F32, rope["full_attention"]["rope_theta"]),
           kv(f"{a}.rope.freq_base_swa", GGUF_F32, rope["sliding_attention"]["rope_theta"]),
           kv(f"{a}.attention.sliding_window", GGUF_U32, cfg["sliding_window"]),
           kv(f"{a}.attention.shared_kv_layers", GGUF_U32, cfg.get("num_kv_shared_layers", 0)),
           kv(f"{a}.attention.sliding_window_pattern", GGUF_ARRAY, swa),
           kv(f"{a}.rope.dimension_count", GGUF_U32, full),
           kv(f"{a}.rope.dimension_count_swa", GGUF_U32, head)]
    global_kv = cfg.get("num_global_key_value_heads")
    if global_kv is not None:
        kvs.append(kv(f"{a}.attention.head_count_kv", GGUF_ARRAY,
                      [cfg["num_key_value_heads"] if s else global_kv for s in swa]))
    else:
        kvs.append(kv(f"{a}.attention.head_count_kv", GGUF_U32, cfg["num_key_value_heads"]))
    tensors = [(f"blk.{i}.{GGUF_NAMES[name.split('.')[0]]}.{name.split('.')[1]}", t)
               for i, w in enumerate(layers) for name, t in w.items()]
    rotated = int(full * rope["full_attention"]["partial_rotary_factor"] / 2)
    tensors.append(("rope_freqs.weight", torch.tensor([1.0] * rotated + [1e30] * (full // 2 - rotated))))
    out = bytearray(b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kvs))) + b"".join(kvs)
    data = bytearray()
    for name, t in tensors:
        data += b"\0" * (-len(data) % alignment)
        ne = list(reversed(t.shape))
        out += gguf_string(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", n) for n in ne)
        out += struct.pack("<IQ", GGML_TYPES[t.dtype], len(data))
        data += tensor_bytes(t)
    out += b"\0" * (-len(out) % alignment)
    with open(path, "wb") as f:
        f.write(out + data)


def write_gguf_model(c, workdir, gen):
    """The module from config.json, its weights in a GGUF; headway reads only the GGUF."""
    os.makedirs(workdir, exist_ok=True)
    with open(os.path.join(workdir, "config.json"), "w") as f:
        json.dump(c["config"], f, indent=2)
    config = hf_blocks.load_config(workdir)
    layers = [hf_blocks.make_layer(config, i, gen, hac.DTYPES[c["dtype"]]) for i in range(config.num_hidden_layers)]
    weights = os.path.join(workdir, "model.gguf")
    write_gemma4_gguf(weights, c["config"], [stored for _, stored in layers])
    producer = hf_blocks.kv_producer(config, c["layer"])
    return config, layers[c["layer"]][0], None if producer is None else layers[producer][0], ["--weights", weights]


if __name__ == "__main__":
    sys.exit(hac.check(CASES, 3000, "Gemma4TextAttention from GGUFs", write_gguf_model))
