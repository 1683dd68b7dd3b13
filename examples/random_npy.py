#!/usr/bin/env python3
"""Writes a C-ordered .npy of unit-normal values (f32 or f16), standard library only.

    random_npy.py OUT.npy DIM [DIM ...] [--f16] [--seed N]
"""
import argparse
import random
import struct


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("out")
    p.add_argument("dims", type=int, nargs="+")
    p.add_argument("--f16", action="store_true")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    rng = random.Random(a.seed)
    count = 1
    for d in a.dims:
        count *= d
    descr, fmt = ("<f2", "e") if a.f16 else ("<f4", "f")
    shape = "(" + ", ".join(str(d) for d in a.dims) + ("," if len(a.dims) == 1 else "") + ")"
    header = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, shape)
    pad = 64 - (10 + len(header) + 1) % 64
    header = header + " " * (pad % 64) + "\n"
    with open(a.out, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode("latin1"))
        f.write(struct.pack("<%d%s" % (count, fmt), *(rng.gauss(0.0, 1.0) for _ in range(count))))


if __name__ == "__main__":
    main()
