"""headway's sampler against Hugging Face transformers: the filtered distribution that
Sampler::probabilities gives (the sampler_probs test tool) against transformers'
RepetitionPenaltyLogitsProcessor, TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper
and MinPLogitsWarper applied in generate()'s order, in float64, then a softmax. The presence
penalty, which transformers lacks, is llama.cpp's: subtracted once from every id in the window.
Temperature 0 is greedy: the argmax of the penalized logits, lowest id on ties.

headway computes in f32: probabilities must agree to rtol 1e-5. Where a filter's decision lies
within 1e-5 of its threshold (f32 and f64 may decide differently), the row is reported and
skipped; at most a few such rows are accepted.

    python sampler_check.py --tool build/release/tests/sampler_probs
"""

import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch
from transformers.generation.logits_process import (MinPLogitsWarper, RepetitionPenaltyLogitsProcessor,
                                                    TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper)

VOCAB = 1000
ROWS = 6
# temperature, top_k, top_p, min_p, repetition penalty, presence penalty, window
CASES = [
    (1.0, 0, 1.0, 0.0, 1.0, 0.0, 64),
    (0.7, 0, 1.0, 0.0, 1.0, 0.0, 64),
    (1.5, 0, 1.0, 0.0, 1.0, 0.0, 64),
    (1.0, 1, 1.0, 0.0, 1.0, 0.0, 64),
    (1.0, 10, 1.0, 0.0, 1.0, 0.0, 64),
    (0.9, 50, 1.0, 0.0, 1.0, 0.0, 64),
    (1.0, 0, 0.5, 0.0, 1.0, 0.0, 64),
    (1.0, 0, 0.9, 0.0, 1.0, 0.0, 64),
    (1.0, 0, 1.0, 0.05, 1.0, 0.0, 64),
    (1.2, 0, 1.0, 0.2, 1.0, 0.0, 64),
    (1.0, 0, 1.0, 0.0, 1.3, 0.0, 64),
    (1.0, 0, 1.0, 0.0, 0.8, 0.0, 16),
    (1.0, 0, 1.0, 0.0, 1.0, 0.4, 32),
    (0.8, 40, 0.9, 0.05, 1.2, 0.3, 64),
    (0.6, 100, 0.8, 0.1, 1.1, -0.2, 100),
    (0.0, 0, 1.0, 0.0, 1.0, 0.0, 64),
    (0.0, 0, 1.0, 0.0, 1.5, 0.5, 64),
]
MARGIN = 1e-5


def reference(logits, recent, case):
    """(probabilities, ambiguous): transformers' processors in float64; ambiguous when a top-p or
    min-p decision lies within MARGIN of its threshold."""
    temperature, top_k, top_p, min_p, rep, presence, window = case
    ids = recent[-window:] if window else recent[:0]
    scores = torch.tensor(logits, dtype=torch.float64)[None]
    input_ids = torch.tensor(ids, dtype=torch.long)[None]
    if rep != 1.0 and ids.size:
        scores = RepetitionPenaltyLogitsProcessor(rep)(input_ids, scores)
    if presence != 0.0 and ids.size:
        scores[0, np.unique(ids)] -= presence
    if temperature == 0.0:
        s = scores[0].numpy()
        p = np.zeros_like(s)
        p[np.flatnonzero(s == s.max())[0]] = 1.0
        return p, False
    ambiguous = False
    if temperature != 1.0:
        scores = TemperatureLogitsWarper(temperature)(input_ids, scores)
    if top_k:
        scores = TopKLogitsWarper(top_k)(input_ids, scores)
    if top_p < 1.0:
        p = torch.softmax(scores, -1)[0].numpy()
        before = np.cumsum(np.sort(p)[::-1]) - np.sort(p)[::-1]
        ambiguous |= bool(np.any(np.abs(before - top_p) < MARGIN))
        scores = TopPLogitsWarper(top_p)(input_ids, scores)
    if min_p > 0.0:
        p = torch.softmax(scores, -1)[0].numpy()
        ambiguous |= bool(np.any(np.abs(p / p.max() - min_p) < MARGIN))
        scores = MinPLogitsWarper(min_p)(input_ids, scores)
    return torch.softmax(scores, -1)[0].numpy(), ambiguous


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tool", required=True, help="the sampler_probs executable")
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    failed = skipped = 0
    with tempfile.TemporaryDirectory() as tmp:
        paths = [os.path.join(tmp, f) for f in ("logits.f32", "recent.i32", "probs.f32")]
        for case in CASES:
            logits = (rng.standard_normal((ROWS, VOCAB)) * rng.uniform(1, 4, (ROWS, 1))).astype(np.float32)
            recent = rng.integers(0, VOCAB, 120).astype(np.int32)
            recent[-10:] = recent[-20:-10]  # repeats inside the window
            logits[:, recent[-5:]] += 3.0  # penalized ids among the likely ones
            logits.astype("<f4").tofile(paths[0])
            recent.astype("<i4").tofile(paths[1])
            subprocess.run([args.tool, str(VOCAB)] + [repr(float(v)) if isinstance(v, float) else str(v) for v in case]
                           + paths, check=True)
            ours = np.fromfile(paths[2], dtype="<f4").reshape(ROWS, VOCAB).astype(np.float64)
            problems = []
            for r in range(ROWS):
                ref, ambiguous = reference(logits[r], recent, case)
                if ambiguous:
                    skipped += 1
                    continue
                if not np.array_equal(ours[r] > 0, ref > 0):
                    diff = np.flatnonzero((ours[r] > 0) != (ref > 0))
                    problems.append(f"row {r}: ids {diff[:5].tolist()} kept by one side only "
                                    f"({int((ours[r] > 0).sum())} kept, transformers {int((ref > 0).sum())})")
                elif not np.allclose(ours[r], ref, rtol=1e-5, atol=1e-9):
                    i = int(np.argmax(np.abs(ours[r] - ref)))
                    problems.append(f"row {r}: probability of id {i} is {ours[r][i]:.9g}, transformers {ref[i]:.9g}")
            kept = int((ours > 0).sum()) / ROWS
            print(f"T={case[0]} top_k={case[1]} top_p={case[2]} min_p={case[3]} rep={case[4]} presence={case[5]} "
                  f"window={case[6]}: {kept:.0f} ids kept per row: {'ok' if not problems else 'FAIL'}")
            for p in problems:
                print("   ", p)
            failed += bool(problems)
    print(f"{len(CASES)} cases, {failed} failed; {skipped} of {len(CASES) * ROWS} rows skipped as within {MARGIN} "
          "of a threshold")
    return 1 if failed or skipped > len(CASES) * ROWS // 10 else 0


if __name__ == "__main__":
    sys.exit(main())
