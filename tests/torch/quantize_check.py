"""headway's q8_0 / q4_0 row functions against llama.cpp's own Python quantizers (gguf-py's
numpy ports of ggml's reference quantize/dequantize): the quantized bytes and the dequantized
f32 bits must be identical.

Rows of lengths that are multiples of 32 go to gguf-py as they are; rows of other lengths
(head_dim 80, 50, ...) go zero-padded to the next multiple of 32, which is how headway defines a
short last block (include/headway/quantize.hpp), and only the row's own dequantized values are
compared.

    python quantize_check.py --tool build/release/tests/quantize_rows
"""

import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import gguf

TYPES = {"q8_0": gguf.GGMLQuantizationType.Q8_0, "q4_0": gguf.GGMLQuantizationType.Q4_0}


def rows_for(rng, n, count):
    """Unit-normal rows, rows with outliers, rows on an integer grid (ties at .5 after scaling),
    tiny and large magnitudes, constant rows and zero blocks."""
    normal = rng.standard_normal((count, n)).astype(np.float32)
    outliers = normal.copy()
    outliers[np.arange(count), rng.integers(0, n, count)] *= 50.0
    outliers[:, rng.integers(0, n)] = 200.0  # one outlier channel
    grid = (rng.integers(-254, 255, (count, n)) / 2.0).astype(np.float32)
    tiny = (normal * 1e-6).astype(np.float32)
    large = (normal * 3e4).astype(np.float32)
    const = np.full((count, n), -1.25, dtype=np.float32)
    zeros = normal.copy()
    zeros[:, : min(n, 32)] = 0.0
    return np.concatenate([normal, outliers, grid, tiny, large, const, zeros])


def check(tool, type_name, n, x, tmp):
    inp, qout, dout = (os.path.join(tmp, f) for f in ("x.f32", "q.bin", "y.f32"))
    x.astype("<f4").tofile(inp)
    subprocess.run([tool, type_name, str(n), inp, qout, dout], check=True)
    ours_q = np.fromfile(qout, dtype=np.uint8)
    ours_y = np.fromfile(dout, dtype="<f4").reshape(x.shape)

    padded_n = -(-n // 32) * 32
    padded = np.zeros((x.shape[0], padded_n), dtype=np.float32)
    padded[:, :n] = x
    theirs_q = gguf.quants.quantize(padded, TYPES[type_name])
    theirs_y = gguf.quants.dequantize(theirs_q, TYPES[type_name])[:, :n].astype(np.float32)

    problems = []
    if ours_q.size != theirs_q.size:
        problems.append(f"{ours_q.size} bytes, gguf-py {theirs_q.size}")
    elif not np.array_equal(ours_q, theirs_q.reshape(-1)):
        diff = np.flatnonzero(ours_q != theirs_q.reshape(-1))
        problems.append(f"{diff.size} bytes differ, the first at byte {diff[0]}")
    if not np.array_equal(ours_y.view(np.uint32), theirs_y.view(np.uint32)):
        diff = np.flatnonzero(ours_y.view(np.uint32) != theirs_y.view(np.uint32))
        problems.append(f"{diff.size} dequantized values differ in their bits")
    return ours_q.size, problems


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tool", required=True, help="the quantize_rows executable")
    parser.add_argument("--seed", type=int, default=20)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    failed = 0
    total_rows = total_bytes = 0
    with tempfile.TemporaryDirectory() as tmp:
        for type_name in TYPES:
            for n in (32, 64, 96, 128, 256, 4096, 1, 16, 18, 50, 80):
                x = rows_for(rng, n, 64)
                nbytes, problems = check(args.tool, type_name, n, x, tmp)
                total_rows += x.shape[0]
                total_bytes += nbytes
                status = "ok" if not problems else "FAIL: " + "; ".join(problems)
                print(f"{type_name} n={n:5d}: {x.shape[0]} rows, {nbytes} bytes: {status}")
                failed += bool(problems)
    print(f"{total_rows} rows, {total_bytes} quantized bytes compared; {failed} cases failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
