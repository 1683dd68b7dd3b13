#!/usr/bin/env python3
"""Old against new `headway bench`, alternating in one run.

    python3 bench/compare.py OLD_HEADWAY NEW_HEADWAY [--rounds N] [--threads N] [--case NAME]...

Each round runs `OLD bench --json` then `NEW bench --json` (the order swaps every round, so
neither side always runs first on a warm or cold machine), with the same cases and threads. For
each case it prints both sides' median time over the rounds, the new/old ratio of those medians,
and the spread of the per-round ratios; each side's fraction of the attainable roof it measured
in its own run (min(FMA roof, read roof x the case's FLOP/byte), docs/PERFORMANCE.md), so a
neighbour's burst in one round shows as a low roof rather than a slow kernel. A ratio below 1 is
faster.
"""
import argparse
import json
import statistics
import subprocess
import sys


def run(binary, args):
    out = subprocess.run([binary, "bench", "--json", *args], check=True, capture_output=True, text=True).stdout
    cases = {}
    for line in out.splitlines():
        if line.startswith("{"):
            c = json.loads(line)
            cases[c["case"]] = c
    return cases


def frac_attainable(c):
    """gflops / min(peak_gflops, peak_gbps * intensity): a binary that prints attainable_gflops
    gives it as frac_peak; an older one (frac_peak of the FMA roof for prefill, of the read roof
    for decode whatever the intensity) has its roofs and intensity in the same line."""
    if "attainable_gflops" in c:
        return c["frac_peak"]
    intensity = c.get("intensity", c["gflops"] / c["kv_gbps"])
    return c["gflops"] / min(c["peak_gflops"], c["peak_gbps"] * intensity)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("old")
    p.add_argument("new")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--case", action="append", default=[])
    a = p.parse_args()
    if a.rounds < 1:
        sys.exit("compare.py: --rounds must be at least 1")
    args = ["--threads", str(a.threads)]
    for c in a.case:
        args += ["--case", c]

    rounds = []  # (old cases, new cases) per round
    for r in range(a.rounds):
        if r % 2 == 0:
            old = run(a.old, args)
            new = run(a.new, args)
        else:
            new = run(a.new, args)
            old = run(a.old, args)
        rounds.append((old, new))
        print(f"round {r + 1}/{a.rounds} done", file=sys.stderr)

    names = [n for n in rounds[0][0] if all(n in o and n in w for o, w in rounds)]
    print(f"{a.rounds} rounds alternating, {a.threads} thread(s); times are medians over the rounds of each "
          f"run's median; frac = share of the attainable roof that run measured")
    print(f"{'case':44s} {'old ms':>9s} {'new ms':>9s} {'new/old':>8s} {'per-round ratio':>17s} "
          f"{'old frac':>8s} {'new frac':>8s}")
    worst = 0.0
    for n in names:
        old_ms = [o[n]["median_ms"] for o, _ in rounds]
        new_ms = [w[n]["median_ms"] for _, w in rounds]
        ratios = [w / o for o, w in zip(old_ms, new_ms)]
        ratio = statistics.median(new_ms) / statistics.median(old_ms)
        worst = max(worst, ratio)
        old_frac = statistics.median(frac_attainable(o[n]) for o, _ in rounds)
        new_frac = statistics.median(frac_attainable(w[n]) for _, w in rounds)
        print(f"{n:44s} {statistics.median(old_ms):9.3f} {statistics.median(new_ms):9.3f} {ratio:8.3f} "
              f"{min(ratios):8.3f}-{max(ratios):<8.3f} {old_frac:8.2f} {new_frac:8.2f}")
    print(f"largest new/old ratio of medians: {worst:.3f}")


if __name__ == "__main__":
    main()
