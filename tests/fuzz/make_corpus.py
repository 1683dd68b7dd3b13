#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets into tests/fuzz/corpus/<target>/: small real
inputs (spec strings, a few config.json files from tests/data/hf, tiny GGUF, .npy and
safetensors files, attention shapes). Deterministic; rerun after changing it. The regress-*
files beside them are inputs the fuzzers found (a hang in validate(), a tolerance too tight for
large logit scales): run.sh replays them every time; this script leaves them alone."""
import json
import os
import shutil
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "data", "hf")
OUT = os.path.join(HERE, "corpus")


def put(target, name, data):
    d = os.path.join(OUT, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data.encode() if isinstance(data, str) else data)


# Spec strings: the README's, every key, and a few that validate() rejects.
specs = [
    "d_model=4096 heads=32 kv_heads=8 head_dim=128 ctx=4096 layers=32 rope_theta=10000 window=4096 softcap=50",
    "d_model=800 heads=12 ctx=2048",
    "d_model=768,heads=12,ctx=1024,layers=12,qkv_bias=1,o_bias=1,rope=none",
    "name=tiny d_model=64 heads=4 kv_heads=2 ctx=16 rope=gptj rope_dim=8 kv_dtype=bf16 causal=0",
    "d_model=3072 heads=16 head_dim=256 ctx=8192 query_pre_attn_scalar=256 scale=0.0625 qk_norm=1 kv_dtype=f32",
    "d_model=4096 heads=32 kv_heads=5 ctx=128",
    "d_model=1152 heads=4 kv_heads=1 head_dim=256 ctx=32768 layers=26 rope_theta=1e6 window=512 sliding_pattern=6 "
    "rope_local_theta=10000",
    "d_model=2048 heads=16 kv_heads=4 ctx=65536 layers=36 rope_theta=5e6 nope_interval=4",
    "d_model=256 heads=4 ctx=2048 layers=4 window=64 rope=gptj layer_types=sffs rope_layers=1101 sinks=1",
    "d_model=256 heads=4 ctx=2048 layers=4 layer_types=sfsf",
    "d_model=256 heads=4 ctx=2048 layers=4 window=64 sliding_pattern=0",
    "d_model=256 heads=4 ctx=2048 layers=4 window=64 sliding_pattern=2 sink_tokens=4 alibi=1",
    "d_model=256 heads=12 ctx=2048 alibi=1 alibi_max_bias=16 alibi_times_scale=1",
    "d_model=256 heads=4 ctx=2048 window=4 sink_tokens=4",
    "d_model=256 heads=4 ctx=2048 sink_tokens=1",
    "d_model=256 heads=4 ctx=2048 alibi=1 alibi_max_bias=0",
    "d_model=256 heads=4 ctx=2048 causal=0 window=65 window_symmetric=1 layer_types=fss rope_local_theta=10000",
    "d_model=256 heads=4 ctx=2048 window=65 window_symmetric=1",
    "d_model=1024 heads=8 kv_heads=2 head_dim=256 ctx=4096 rope_dim=64 rope_theta=1e7 qk_norm=1 output_gate=1",
    "d_model=1536 heads=8 kv_heads=1 head_dim=512 ctx=4096 rope_theta=1e6 qk_norm=1 v_norm=1 k_eq_v=1 scale=1",
    "d_model=1024 heads=8 kv_heads=2 head_dim=256 ctx=4096 layers=4 linear_layers=1110 linear_key_heads=16 "
    "linear_value_heads=32 linear_key_head_dim=128 linear_value_head_dim=128 linear_conv_kernel=4 output_gate=1",
    "d_model=1536 heads=8 kv_heads=1 head_dim=256 ctx=4096 layers=10 window=512 layer_types=ssssfssssf "
    "kv_shared_layers=4 full_head_dim=512 full_kv_heads=1 full_k_eq_v=1 qk_norm=1 v_norm=1 scale=1 rope_theta=1e6",
]
for i, s in enumerate(specs):
    put("spec", "spec%d" % i, s)

# config.json: a few real ones, small.
for name in ["llama-3-8b", "gemma-2-2b", "falcon-7b", "phi-2", "gpt2", "deepseek-v2-lite", "llama-3.2-1b",
             "qwen2.5-0.5b", "gemma-3-1b", "gemma-3-270m", "smollm3-3b", "gpt-oss-20b", "qwen2-0.5b-sliding",
             "bloom-560m", "mpt-7b", "falcon-rw-1b", "modernbert-base", "modernbert-transformers5",
             "phi3-longrope-small", "qwen3.5-0.8b", "plm-1.8b"]:
    with open(os.path.join(DATA, name + ".json"), "rb") as f:
        put("hf_config", name, f.read())


def gguf(kvs, tensors=()):
    """kv pairs (key, type, value), then tensors (name, ne, ggml type, bytes) laid out as llama.cpp
    does: infos, padding to 32, each tensor's bytes at the next multiple of 32."""
    def s(x):
        b = x.encode()
        return struct.pack("<Q", len(b)) + b
    out = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kvs))
    for key, typ, val in kvs:
        out += s(key) + struct.pack("<I", typ)
        if typ == 8:
            out += s(val)
        elif typ == 4:
            out += struct.pack("<I", val)
        elif typ == 6:
            out += struct.pack("<f", val)
        elif typ == 9 and all(isinstance(v, bool) for v in val):  # array of bools
            out += struct.pack("<IQ", 7, len(val)) + bytes(int(v) for v in val)
        elif typ == 9:  # array of u32
            out += struct.pack("<IQ", 4, len(val)) + b"".join(struct.pack("<I", v) for v in val)
    data = b""
    for name, ne, typ, payload in tensors:
        data += b"\0" * (-len(data) % 32)
        out += s(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", d) for d in ne)
        out += struct.pack("<IQ", typ, len(data))
        data += payload
    return out + b"\0" * (-len(out) % 32) + data if tensors else out


put("gguf", "llama", gguf([
    ("general.architecture", 8, "llama"), ("general.name", 8, "tiny"),
    ("llama.context_length", 4, 256), ("llama.embedding_length", 4, 64), ("llama.block_count", 4, 2),
    ("llama.attention.head_count", 4, 4), ("llama.attention.head_count_kv", 4, 2),
    ("llama.rope.freq_base", 6, 10000.0)]))
put("gguf", "gemma2", gguf([
    ("gemma2.context_length", 4, 8192), ("gemma2.embedding_length", 4, 2304), ("gemma2.block_count", 4, 26),
    ("gemma2.attention.head_count", 4, 8), ("gemma2.attention.head_count_kv", 9, [4] * 26),
    ("gemma2.attention.key_length", 4, 256), ("gemma2.attention.value_length", 4, 256),
    ("gemma2.attn_logit_softcapping", 6, 50.0), ("gemma2.attention.sliding_window", 4, 4096),
    ("general.architecture", 8, "gemma2")]))

put("gguf", "gemma3", gguf([
    ("general.architecture", 8, "gemma3"), ("gemma3.context_length", 4, 32768),
    ("gemma3.embedding_length", 4, 1152), ("gemma3.block_count", 4, 26), ("gemma3.attention.head_count", 4, 4),
    ("gemma3.attention.head_count_kv", 4, 1), ("gemma3.attention.key_length", 4, 256),
    ("gemma3.attention.value_length", 4, 256), ("gemma3.rope.freq_base", 6, 1000000.0),
    ("gemma3.rope.freq_base_swa", 6, 10000.0), ("gemma3.attention.sliding_window", 4, 512),
    ("gemma3.attention.sliding_window_pattern", 4, 6)]))
put("gguf", "gpt-oss", gguf([
    ("general.architecture", 8, "gpt-oss"), ("gpt-oss.context_length", 4, 131072),
    ("gpt-oss.embedding_length", 4, 2880), ("gpt-oss.block_count", 4, 24), ("gpt-oss.attention.head_count", 4, 64),
    ("gpt-oss.attention.head_count_kv", 4, 8), ("gpt-oss.attention.key_length", 4, 64),
    ("gpt-oss.attention.value_length", 4, 64), ("gpt-oss.rope.freq_base", 6, 150000.0),
    ("gpt-oss.attention.sliding_window", 4, 128), ("gpt-oss.rope.scaling.type", 8, "yarn"),
    ("gpt-oss.rope.scaling.factor", 6, 32.0), ("gpt-oss.rope.scaling.original_context_length", 4, 4096)]))
put("gguf", "qwen3-yarn", gguf([
    ("general.architecture", 8, "qwen3"), ("qwen3.context_length", 4, 131072), ("qwen3.embedding_length", 4, 1024),
    ("qwen3.block_count", 4, 28), ("qwen3.attention.head_count", 4, 16), ("qwen3.attention.head_count_kv", 4, 8),
    ("qwen3.rope.freq_base", 6, 1000000.0), ("qwen3.rope.scaling.type", 8, "yarn"),
    ("qwen3.rope.scaling.factor", 6, 4.0), ("qwen3.rope.scaling.original_context_length", 4, 32768),
    ("qwen3.rope.scaling.yarn_beta_fast", 6, 32.0), ("qwen3.rope.scaling.yarn_beta_slow", 6, 1.0)]))
put("gguf", "llama-linear", gguf([
    ("general.architecture", 8, "llama"), ("llama.context_length", 4, 8192), ("llama.embedding_length", 4, 64),
    ("llama.attention.head_count", 4, 4), ("llama.rope.scale_linear", 6, 2.0)]))
put("gguf", "mpt", gguf([
    ("general.architecture", 8, "mpt"), ("mpt.context_length", 4, 2048), ("mpt.embedding_length", 4, 4096),
    ("mpt.block_count", 4, 32), ("mpt.attention.head_count", 4, 32), ("mpt.attention.max_alibi_bias", 6, 8.0)]))
put("gguf", "bloom", gguf([
    ("general.architecture", 8, "bloom"), ("bloom.context_length", 4, 2048), ("bloom.embedding_length", 4, 1024),
    ("bloom.block_count", 4, 24), ("bloom.attention.head_count", 4, 16)]))
put("gguf", "cohere2", gguf([
    ("general.architecture", 8, "cohere2"), ("cohere2.context_length", 4, 8192),
    ("cohere2.embedding_length", 4, 4096), ("cohere2.block_count", 4, 8), ("cohere2.attention.head_count", 4, 32),
    ("cohere2.attention.head_count_kv", 4, 8), ("cohere2.rope.freq_base", 6, 50000.0),
    ("cohere2.attention.sliding_window", 4, 4096)]))

put("gguf", "qwen35", gguf([
    ("general.architecture", 8, "qwen35"), ("qwen35.context_length", 4, 262144), ("qwen35.embedding_length", 4, 1024),
    ("qwen35.block_count", 4, 9), ("qwen35.nextn_predict_layers", 4, 1), ("qwen35.attention.head_count", 4, 8),
    ("qwen35.attention.head_count_kv", 4, 2), ("qwen35.attention.key_length", 4, 256),
    ("qwen35.attention.value_length", 4, 256), ("qwen35.rope.dimension_count", 4, 64),
    ("qwen35.rope.freq_base", 6, 10000000.0), ("qwen35.full_attention_interval", 4, 4),
    ("qwen35.attention.recurrent_layers", 9, [(i + 1) % 4 != 0 and i < 8 for i in range(9)])]))

# Gemma 4 E2B's attention keys as its converter writes them: two head sizes, a per-layer pattern,
# shared caches; and a 31B-like per-layer head_count_kv. PLM-1.8B's MLA.
put("gguf", "gemma4", gguf([
    ("general.architecture", 8, "gemma4"), ("gemma4.context_length", 4, 131072), ("gemma4.embedding_length", 4, 1536),
    ("gemma4.block_count", 4, 35), ("gemma4.attention.head_count", 4, 8), ("gemma4.attention.head_count_kv", 4, 1),
    ("gemma4.attention.key_length", 4, 512), ("gemma4.attention.value_length", 4, 512),
    ("gemma4.attention.key_length_swa", 4, 256), ("gemma4.attention.value_length_swa", 4, 256),
    ("gemma4.rope.freq_base", 6, 1000000.0), ("gemma4.rope.freq_base_swa", 6, 10000.0),
    ("gemma4.attention.sliding_window", 4, 512), ("gemma4.attention.shared_kv_layers", 4, 20),
    ("gemma4.attention.sliding_window_pattern", 9, [i % 5 != 4 for i in range(35)]),
    ("gemma4.rope.dimension_count", 4, 512), ("gemma4.rope.dimension_count_swa", 4, 256)]))
put("gguf", "gemma4-kv-heads", gguf([
    ("general.architecture", 8, "gemma4"), ("gemma4.context_length", 4, 262144), ("gemma4.embedding_length", 4, 1024),
    ("gemma4.block_count", 4, 12), ("gemma4.attention.head_count", 4, 16),
    ("gemma4.attention.head_count_kv", 9, [8 if i % 6 != 5 else 2 for i in range(12)]),
    ("gemma4.attention.key_length", 4, 128), ("gemma4.attention.key_length_swa", 4, 64),
    ("gemma4.attention.sliding_window", 4, 1024),
    ("gemma4.attention.sliding_window_pattern", 9, [i % 6 != 5 for i in range(12)])]))
put("gguf", "plm", gguf([
    ("general.architecture", 8, "plm"), ("plm.context_length", 4, 4096), ("plm.embedding_length", 4, 2048),
    ("plm.block_count", 4, 32), ("plm.attention.head_count", 4, 16), ("plm.attention.head_count_kv", 4, 16),
    ("plm.attention.kv_lora_rank", 4, 512), ("plm.attention.key_length", 4, 192),
    ("plm.attention.value_length", 4, 128), ("plm.rope.dimension_count", 4, 64), ("plm.rope.freq_base", 6, 100000.0)]))

# Tensors of ggml's block types (sizes from ggml-common.h), with a deterministic byte pattern whose
# f16 scales come out finite: q4_0 and q8_0 rows, a 3-D q4_1, and one super-block of each K-quant.
def blocks(n_bytes, seed):
    return bytes((seed + 37 * i) % 251 & 0x3F if i % 2 else (seed + 11 * i) % 256 for i in range(n_bytes))


put("gguf", "tensors-quantized", gguf([("general.architecture", 8, "llama")], [
    ("token_embd.weight", [32, 3], 8, blocks(3 * 34, 1)), ("blk.0.attn_q.weight", [64, 2], 2, blocks(2 * 36, 2)),
    ("blk.0.ffn_up.weight", [32, 2, 2], 3, blocks(4 * 20, 3)), ("blk.0.attn_k.weight", [32], 6, blocks(22, 4)),
    ("blk.0.attn_v.weight", [32], 7, blocks(24, 5)), ("output_norm.weight", [4], 0, struct.pack("<4f", 1, 2, 3, 4)),
    ("f16", [2], 1, struct.pack("<2H", 0x3C00, 0xC000)), ("bf16", [2], 30, struct.pack("<2H", 0x3F80, 0x4000))]))
put("gguf", "tensors-k-quants", gguf([("general.architecture", 8, "llama")], [
    ("q2_K", [256], 10, blocks(84, 6)), ("q3_K", [256], 11, blocks(110, 7)), ("q4_K", [256], 12, blocks(144, 8)),
    ("q5_K", [256], 13, blocks(176, 9)), ("q6_K", [256, 2], 14, blocks(420, 10)),
    ("iq2_xxs", [256], 16, blocks(66, 11))]))

def npy(descr, shape, payload, version=1):
    header = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (
        descr, "(%s)" % (", ".join(map(str, shape)) + ("," if len(shape) == 1 else "")))
    pre = 6 + 2 + (2 if version == 1 else 4)
    pad = (64 - (pre + len(header) + 1) % 64) % 64
    header = header + " " * pad + "\n"
    size = struct.pack("<H", len(header)) if version == 1 else struct.pack("<I", len(header))
    return b"\x93NUMPY" + bytes([version, 0]) + size + header.encode() + payload


put("npy", "f32_2x3", npy("<f4", (2, 3), struct.pack("<6f", 1, 2, 3, 4, 5, 6)))
put("npy", "f16_4", npy("<f2", (4,), struct.pack("<4H", 0x3C00, 0x4000, 0x7E00, 0x8000)))
put("npy", "scalar_v2", npy("<f4", (), struct.pack("<f", 1.5), version=2))
put("npy", "empty_0x3", npy("<f4", (0, 3), b""))


def safetensors(tensors):
    header, data = {"__metadata__": {"format": "pt"}}, b""
    for name, dtype, shape, payload in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(payload)]}
        data += payload
    h = json.dumps(header).encode()
    return struct.pack("<Q", len(h)) + h + data


put("safetensors", "two", safetensors([
    ("model.layers.0.self_attn.q_proj.weight", "F32", [2, 2], struct.pack("<4f", 1, 2, 3, 4)),
    ("model.layers.0.self_attn.k_proj.weight", "F16", [1, 2], struct.pack("<2H", 0x3C00, 0x4000))]))


def encoder_layer(prefix, layer, distil=False):
    """An MHA encoder layer of d_model 8 (tests/fuzz/safetensors.cc's encoder config), in BERT's or
    DistilBERT's names under `prefix`."""
    base = f"{prefix}{'transformer' if distil else 'encoder'}.layer.{layer}.attention."
    names = ["q_lin", "k_lin", "v_lin", "out_lin"] if distil else \
        ["self.query", "self.key", "self.value", "output.dense"]
    out = [(base + n + ".weight", "F32", [8, 8], struct.pack("<64f", *range(64))) for n in names]
    return out + [(base + n + ".bias", "F16", [8], struct.pack("<8H", *([0x3C00] * 8))) for n in names]


put("safetensors", "bert_prefixed", safetensors(encoder_layer("bert.", 0) + encoder_layer("bert.", 1)))
put("safetensors", "distilbert", safetensors(encoder_layer("", 0, distil=True)))
put("safetensors", "two_models", safetensors(encoder_layer("text.", 0) + encoder_layer("vision.", 0)))
put("safetensors", "bf16_bias", safetensors([("b", "BF16", [3], struct.pack("<3H", 0x3F80, 0, 0x4000)),
                                             ("i", "I64", [1], struct.pack("<q", 7))]))

# Attention: 12 bytes of shape and flags (see attention.cc), then seed bytes.
shapes = [
    bytes([4, 13, 0, 2, 2, 64, 0, 1, 0, 0, 0, 0]),        # GQA 4/2, d64, causal
    bytes([1, 0x34, 0x04, 2, 4, 128, 0, 0, 0, 0, 0, 0]),  # decode over 1076 keys: split-KV
    bytes([7, 30, 0, 1, 3, 80, 0, 0x4F, 9, 200, 40, 1]),  # window, softcap, scale, threads, NaN in Q
    bytes([3, 5, 0, 3, 1, 0x01, 2, 0x10, 0, 0, 0, 2]),    # head_dim 257, f16, NaN in V
    bytes([2, 9, 0, 1, 1, 0x14, 2, 0x20, 0, 0, 0, 0]),    # head_dim 532 % 530 = 2, bf16
    # Sink logits (special bit 3), head h's from byte 12 + h (also seed bytes):
    bytes([4, 13, 0, 2, 2, 64, 0, 0x17, 6, 0x94, 0, 8]) + bytes([0x90, 0x70, 0xC4, 0x44]),  # GQA, window, softcap
    bytes([1, 0x34, 0x04, 2, 4, 128, 0, 0x40, 0, 0, 0, 8]) +
    bytes([0x88, 0x64, 0xFC, 0x10, 0x84, 0x7C, 0xA4, 0x90]),                                # split-KV, threads
    bytes([5, 3, 0, 1, 2, 16, 0, 1, 0, 0, 0, 12]) + bytes([0x90, 0x20]),                      # a NaN sink, AttentionOp
    # Sink tokens (bit 4: byte 8 / 16 of them) and ALiBi (bit 5: head h's slope from byte 12 + h):
    bytes([16, 40, 0, 2, 2, 64, 0, 0x03, 0x48, 0, 0, 0x10]),                                # 4 sink tokens, window 72
    bytes([1, 0xDC, 0x05, 1, 4, 64, 0, 0x43, 0x90, 0, 0, 0x30]) + bytes([0x10, 0x20, 0x30, 0x40]),  # split-KV, both
    bytes([9, 33, 0, 2, 3, 0x50, 0, 0x00, 0, 0, 0, 0x20]) + bytes([0x04, 0x08, 0x0C, 0x40, 0x80, 0xC0]),  # ALiBi
    bytes([6, 20, 0, 1, 2, 32, 0, 0x03, 0x20, 0, 0, 0x30]) + bytes([0x00, 0x11]),             # NaN slope, 2 tokens
    # q8_0 and q4_0 K/V (special bit 6 with the f16 / bf16 codes): head_dim 80 (a short block), split-KV
    bytes([5, 40, 0, 2, 2, 80, 0, 0x11, 0, 0, 0, 0x40]),                                    # q8_0, causal
    bytes([1, 0x34, 0x04, 2, 4, 128, 0, 0x60, 0, 0, 0, 0x42]),                              # q4_0, NaN in V
]
for i, b in enumerate(shapes):
    put("attention", "shape%d" % i, b + b"seed%d" % i)

# Packed batches (special bit 7), their lengths from the last byte: 1 + b % 4 sequences, bit 4 keys'
# own lengths, bit 7 one boundary moved.
packed = [
    (bytes([16, 16, 0, 2, 2, 32, 0, 0x00, 0, 0, 0, 0x80]), 0x03),  # 4 sequences, bidirectional
    (bytes([12, 12, 0, 1, 4, 64, 0, 0x43, 5, 0, 0, 0x84]), 0x12),  # causal window 5, own key lengths, op
    (bytes([3, 0x20, 0x04, 2, 2, 128, 0, 0x10, 0, 0, 0, 0x80]), 0x01),  # 2 sequences over 1056 keys, f16
    (bytes([9, 9, 0, 2, 1, 80, 0, 0x01, 0, 0, 0, 0x80]), 0x83),  # a moved boundary
]
for i, (b, last) in enumerate(packed):
    put("attention", "packed%d" % i, b + b"seed" + bytes([last]))
# A prefix (the second-last byte's top bit, its low 7 bits): causal prefill, and a packed batch.
put("attention", "prefix0", bytes([16, 16, 0, 2, 2, 64, 0, 0x01, 0, 0, 0, 0x00]) + b"seed" + bytes([0x89, 0x00]))
# A symmetric window (the third-last byte's top two bits): bidirectional, window 9.
put("attention", "symmetric0", bytes([20, 20, 0, 2, 2, 64, 0, 0x02, 9, 0, 0, 0x00]) + b"seed" + bytes([0xC0, 0, 0]))
put("attention", "prefix1", bytes([12, 12, 0, 1, 4, 32, 0, 0x01, 0, 0, 0, 0x80]) + b"seed" + bytes([0x83, 0x02]))
# A general mask (the fourth-last byte: bit 0 bool, bit 1 additive, both rejected; bit 2 rows one
# entry short, rejected; bit 3 rows two entries long): bidirectional bool, a causal split-KV decode
# with an additive mask in long rows, both kinds, and a packed batch under an additive mask.
put("attention", "mask0", bytes([16, 16, 0, 2, 2, 64, 0, 0x00, 0, 0, 0, 0x00]) + b"seed" + bytes([0x01, 0, 0, 0]))
put("attention", "mask1", bytes([1, 0x34, 0x04, 2, 4, 128, 0, 0x01, 0, 0, 0, 0x00]) + b"seed" + bytes([0x0A, 0, 0, 0]))
put("attention", "mask2", bytes([4, 9, 0, 1, 2, 32, 0, 0x01, 0, 0, 0, 0x00]) + b"seed" + bytes([0x03, 0, 0, 0]))
put("attention", "mask3", bytes([16, 16, 0, 2, 2, 32, 0, 0x00, 0, 0, 0, 0x80]) + b"seed" + bytes([0x02, 0, 0, 0x03]))

# Tokenizers: the first byte's low bits pick encode with the BPE (0) or WordPiece (1), decode with
# special tokens kept (2) or the stream decoder (3), SentencePiece encode (4) or stream (5); the rest is
# the text or pairs of id bytes.
put("tokenizer", "bpe_text", b"\x00hello world  \t\n\xc3\xa9\xe4\xbd\xa0 I'm 12345<|end|> \xf0\x9f\x91\x8d")
put("tokenizer", "bpe_invalid", b"\x00cut \xe2\x82 and \xff bytes \xed\xa0\x80")
put("tokenizer", "wordpiece_text", b"\x01Hello, UNAFFABLE worlds! \xc3\x9c \xe4\xbd\xa0 [SEP] a" + b"a" * 120)
put("tokenizer", "decode_ids", b"\x02" + bytes([0x03, 0x01, 0xc3, 0x00, 0xa9, 0x00, 0x02, 0x01]))
put("tokenizer", "spm_text", b"\x04hello  hello\xe4\xb8\xad<s>hello</s> \xff")
put("tokenizer", "spm_stream", b"\x05" + bytes([0x01, 0x00, 0x0c, 0x01, 0xe7, 0x00, 0xbb, 0x00, 0xb0, 0x00]))
put("tokenizer", "stream_ids", b"\x03" + bytes([0xf0, 0x00, 0x9f, 0x00, 0x91, 0x00, 0x8d, 0x00, 0xe2, 0x00, 0x41, 0x00]))

if __name__ == "__main__":
    print("corpora written to", OUT)
