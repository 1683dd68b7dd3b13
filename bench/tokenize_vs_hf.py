"""headway's tokenizer beside Hugging Face's `tokenizers` (Rust), same text, same run, one thread each.

    .venv/bin/python bench/tokenize_vs_hf.py [--headway build/release/bin/headway] [--reps N] FILE...

FILE: a GGUF (Hugging Face's side: transformers' tokenizer from the same file), a tokenizer.json,
or a model folder with one. The text is what `headway bench --tokenize` encodes by default: a
megabyte of bench/data/tokenize_text.txt repeated, cut before a UTF-8 continuation byte; it goes to
headway through --text-file. Both sides encode it whole, once untimed, then --reps times; the
medians in MB/s (10^6 bytes per second) and their ratio are printed, and the ids must agree.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

os.environ["RAYON_NUM_THREADS"] = "1"  # before tokenizers loads: its thread pool, one thread
os.environ["TOKENIZERS_PARALLELISM"] = "false"
os.environ.setdefault("HF_HUB_OFFLINE", "1")

HERE = os.path.dirname(os.path.abspath(__file__))
MEGABYTE = 1 << 20


def megabyte_of_text():
    with open(os.path.join(HERE, "data", "tokenize_text.txt"), "rb") as f:
        sample = f.read()
    text = sample * (MEGABYTE // len(sample) + 1)
    cut = MEGABYTE
    while cut > 0 and (text[cut] & 0xC0) == 0x80:
        cut -= 1
    return text[:cut]


def hf_tokenizer(path):
    from tokenizers import Tokenizer
    if path.endswith(".gguf"):
        from transformers import AutoTokenizer
        return AutoTokenizer.from_pretrained(os.path.dirname(path) or ".",
                                             gguf_file=os.path.basename(path)).backend_tokenizer
    if os.path.isdir(path):
        path = os.path.join(path, "tokenizer.json")
    tok = Tokenizer.from_file(path)
    tok.no_padding()
    tok.no_truncation()
    return tok


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("files", nargs="+")
    ap.add_argument("--headway", default=os.path.join(HERE, "..", "build", "release", "bin", "headway"))
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()
    raw = megabyte_of_text()
    text = raw.decode("utf-8")
    status = 0
    with tempfile.NamedTemporaryFile(suffix=".txt") as f:
        f.write(raw)
        f.flush()
        print(f"{'tokenizer':<44} {'tokens':>8} {'headway MB/s':>13} {'tokenizers MB/s':>16} {'ratio':>6}")
        for path in args.files:
            r = subprocess.run([args.headway, "bench", "--tokenize", path, "--text-file", f.name, "--reps",
                                str(args.reps), "--json"], capture_output=True, text=True)
            if r.returncode != 0:
                print(f"{path}: headway bench exited {r.returncode}: {r.stderr.strip()}", file=sys.stderr)
                return 1
            ours = json.loads(r.stdout)
            tok = hf_tokenizer(path)
            ids = tok.encode(text).ids  # untimed, as headway's first encode
            times = []
            for _ in range(args.reps):
                t0 = time.perf_counter()
                tok.encode(text)
                times.append(time.perf_counter() - t0)
            theirs = len(raw) / 1e6 / statistics.median(times)
            if len(ids) != ours["tokens"]:
                print(f"{path}: headway made {ours['tokens']} tokens, tokenizers {len(ids)}", file=sys.stderr)
                status = 1
            name = os.path.basename(path.rstrip("/"))
            print(f"{name:<44} {len(ids):>8} {ours['mb_per_s']:>13.2f} {theirs:>16.2f} "
                  f"{ours['mb_per_s'] / theirs:>6.2f}")
    return status


if __name__ == "__main__":
    sys.exit(main())
