"""Gated DeltaNet (Qwen3.5's linear_attention layers) against transformers' own modules, in float64
with random weights: `headway layer` on one Qwen3_5GatedDeltaNet layer (prefill of 1, 63, 64, 65
and 300 tokens, and the same tokens in calls of 1 and of 7, as decode and chunked prefill run them),
and `headway logits` on a whole Qwen3_5ForCausalLM of three linear layers and one gated attention
layer (one prefill, decode steps, a prompt longer than a chunk), `headway generate` greedy ids
against transformers' generate, and a prefill saved as a state and restored continuing as the
unbroken run does. The same model written as a GGUF the way llama.cpp's converter writes qwen35
(A as −exp(A_log), norms with their 1 added, value heads reordered to tile the key heads), in f32
and q8_0, through `headway logits --gguf`.

The module computes its delta rule in float32 whatever its dtype (torch_chunk_gated_delta_rule casts
q, k, v, g and β to float32): the reference is float64 around a float32 core, and headway's layer
runs in f32 throughout, so the bound is float32's: LAYER_REL of the output's largest value.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch
from safetensors.torch import save_file

from qwen35_gguf import write_qwen35_gguf
from row_groups import ROW_GROUPS_MAX_ABS, runs_row_groups

LAYER_REL = 1e-4  # the bound for f32 weights against the float64 module; measured below 1e-5
MODEL_MAX_ABS = 1e-3  # logits of about 1-4: the model families' bound (model_families_check.py)
LENGTHS = (1, 63, 64, 65, 300)


def text_config(**kw):
    from transformers import Qwen3_5TextConfig
    base = dict(vocab_size=160, hidden_size=64, intermediate_size=96, num_hidden_layers=4, num_attention_heads=4,
                num_key_value_heads=2, head_dim=16, max_position_embeddings=512, rms_norm_eps=1e-6,
                linear_num_key_heads=2, linear_num_value_heads=4, linear_key_head_dim=16, linear_value_head_dim=24,
                linear_conv_kernel_dim=4, tie_word_embeddings=False, pad_token_id=0)
    base.update(kw)
    return Qwen3_5TextConfig(**base)


def randomize(module):
    """Every weight drawn anew: norms about 1, A_log and dt_bias as the model's init draws them,
    matrices and the convolution scaled by their width."""
    with torch.no_grad():
        for name, p in module.named_parameters():
            if name.endswith("A_log"):
                p.copy_(torch.empty_like(p).uniform_(0.01, 16).log())
            elif name.endswith("dt_bias"):
                p.copy_(1.0 + 0.3 * torch.randn_like(p))
            elif "norm" in name.lower() and name.endswith("weight"):
                p.copy_((0.0 if name.startswith("model.") and "linear_attn" not in name else 1.0)
                        + 0.1 * torch.randn_like(p))
            else:
                p.copy_(torch.randn_like(p) / p.shape[-1] ** 0.5)
    return module


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stderr}")
    return r.stdout


def check_logits(headway, tmp, what, source, model, ids, *extra, max_abs=MODEL_MAX_ABS):
    """`headway logits` of ids (source: --model-dir DIR or --gguf FILE) against the model's own,
    within max_abs; prints the line and returns 0 (ok) or 1."""
    with torch.no_grad():
        ref = model(torch.tensor([ids])).logits[0].numpy()
    out = os.path.join(tmp, "logits.npy")
    run([headway, "logits", *source, "--prompt-ids", ",".join(map(str, ids)), "--out", out, "--kv-dtype", "f32",
         *extra])
    err = float(np.abs(np.load(out).astype(np.float64) - ref).max())
    ok = err <= max_abs
    print(f"  {what}: max |err| {err:.2e} of logits up to {np.abs(ref).max():.1f} ({'ok' if ok else 'FAIL'})")
    return 0 if ok else 1


def check_layer(headway, tmp, name, cfg, layer, rng):
    """`headway layer` on linear layer `layer` of a config, against Qwen3_5GatedDeltaNet."""
    from transformers.models.qwen3_5.modeling_qwen3_5 import Qwen3_5GatedDeltaNet
    module = randomize(Qwen3_5GatedDeltaNet(cfg, layer)).to(torch.float64).eval()
    folder = os.path.join(tmp, name)
    os.makedirs(folder, exist_ok=True)
    weights = os.path.join(folder, "model.safetensors")
    save_file({f"model.layers.{layer}.linear_attn.{k}": v.to(torch.float32).contiguous()
               for k, v in module.state_dict().items()}, weights)
    config = os.path.join(folder, "config.json")
    cfg.to_json_file(config)
    module.load_state_dict({k: v.to(torch.float32).to(torch.float64) for k, v in module.state_dict().items()})
    failures = 0
    for t in LENGTHS:
        x = rng.standard_normal((t, cfg.hidden_size))
        with torch.no_grad():
            ref = module(torch.from_numpy(x)[None])[0].numpy()
        xp, yp = os.path.join(folder, "x.npy"), os.path.join(folder, "y.npy")
        np.save(xp, x.astype(np.float32))
        for chunk in (None, 1, 7):
            if chunk is not None and t == 1:
                continue
            cmd = [headway, "layer", "--weights", weights, "--config", config, "--layer", str(layer), "--x", xp,
                   "--out", yp, "--threads", "2"]
            if chunk is not None:
                cmd += ["--chunk", str(chunk)]
            run(cmd)
            got = np.load(yp).astype(np.float64)
            rel = float(np.abs(got - ref).max() / np.abs(ref).max())
            ok = rel <= LAYER_REL
            failures += 0 if ok else 1
            how = "one call" if chunk is None else f"calls of {chunk}"
            print(f"  {name} layer {layer}, {t} tokens, {how}: max |err| / max |y| {rel:.1e} "
                  f"({'ok' if ok else 'FAIL'})")
    return failures


def check_model(headway, tmp, rng):
    """A whole Qwen3.5 text model: three Gated DeltaNet layers, then gated attention."""
    from transformers import Qwen3_5ForCausalLM
    cfg = text_config(layer_types=["linear_attention"] * 3 + ["full_attention"])
    model = randomize(Qwen3_5ForCausalLM(cfg)).to(torch.float32)
    folder = os.path.join(tmp, "qwen3_5-model")
    model.save_pretrained(folder, safe_serialization=True)
    model = model.to(torch.float64).eval()
    failures = 0
    for n, step in ((21, False), (21, True), (150, False)):
        ids = rng.integers(0, cfg.vocab_size, n).tolist()
        failures += check_logits(headway, tmp, f"whole model, {n} tokens{', decode steps' if step else ''}",
                                 ["--model-dir", folder], model, ids, *(["--step"] if step else []))
    prompt = rng.integers(0, cfg.vocab_size, 9).tolist()
    gc = model.generation_config
    gc.eos_token_id, gc.pad_token_id = None, 0
    with torch.no_grad():
        want = model.generate(torch.tensor([prompt]), max_new_tokens=8, do_sample=False)[0, len(prompt):].tolist()
    def generate(ids, *extra):
        return json.loads(run([headway, "generate", "--model-dir", folder, "--prompt-ids", ",".join(map(str, ids)),
                               "--tokens", "8", "--temp", "0", "--kv-dtype", "f32", "--json", *extra]))["ids"]
    got = generate(prompt)
    ok = got == want
    failures += 0 if ok else 1
    print(f"  generate greedy: {got}, transformers {want} ({'ok' if ok else 'FAIL'})")
    # The first six tokens' state (the linear layers' states and windows, the attention layer's
    # rows) saved, then restored under the whole prompt: the same ids as the unbroken run.
    cache = os.path.join(tmp, "prompt.state")
    generate(prompt[:6], "--prompt-cache", cache)
    resumed = generate(prompt, "--prompt-cache", cache)
    ok = resumed == got
    failures += 0 if ok else 1
    print(f"  generate from a saved state of 6 tokens: {resumed} ({'ok' if ok else 'FAIL'})")
    failures += check_multimodal_checkpoint(headway, tmp, model, rng)
    return failures


def check_multimodal_checkpoint(headway, tmp, model, rng):
    """The same weights as Qwen3.5's released checkpoints hold them (Qwen3_5ForConditionalGeneration):
    the decoder under model.language_model., a vision tower beside it, config.json's text model in
    text_config of a "qwen3_5" config."""
    folder = os.path.join(tmp, "qwen3_5-multimodal")
    os.makedirs(folder, exist_ok=True)
    tensors = {("model.language_model." + k[len("model."):] if k.startswith("model.") else k):
               v.to(torch.float32).contiguous() for k, v in model.state_dict().items()}
    tensors["model.visual.patch_embed.proj.weight"] = torch.zeros(8, 3, 2, 2, 2)
    save_file(tensors, os.path.join(folder, "model.safetensors"))
    text = model.config.to_dict()
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump({"architectures": ["Qwen3_5ForConditionalGeneration"], "model_type": "qwen3_5",
                   "text_config": text, "tie_word_embeddings": text["tie_word_embeddings"]}, f)
    ids = rng.integers(0, model.config.vocab_size, 21).tolist()
    return check_logits(headway, tmp, "multimodal checkpoint (model.language_model.*), 21 tokens",
                        ["--model-dir", folder], model, ids)


def check_gguf(headway, tmp, rng):
    """The hybrid model as qwen35 GGUFs: three value heads per key head, so that the converter's
    tiled order (value head h reads key head h mod 2) differs from a grouping of two, and half of
    each attention head rotated (the file's rope.dimension_count)."""
    import gguf
    from transformers import Qwen3_5ForCausalLM
    cfg = text_config(layer_types=["linear_attention"] * 3 + ["full_attention"], linear_num_value_heads=6,
                      rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.5})
    failures = 0
    for qtype in (gguf.GGMLQuantizationType.F32, gguf.GGMLQuantizationType.Q8_0):
        model = randomize(Qwen3_5ForCausalLM(cfg)).to(torch.float64).eval()
        path = os.path.join(tmp, f"qwen35-{qtype.name}.gguf")
        write_qwen35_gguf(path, model, qtype)
        ids = rng.integers(0, cfg.vocab_size, 70).tolist()
        # q8_0 in row groups: x at 16 bits (row_groups.py)
        quantized = qtype != gguf.GGMLQuantizationType.F32 and runs_row_groups(headway)
        failures += check_logits(headway, tmp, f"qwen35 GGUF {qtype.name}, 70 tokens", ["--gguf", path], model, ids,
                                 max_abs=ROW_GROUPS_MAX_ABS if quantized else MODEL_MAX_ABS)
    return failures


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--headway", required=True)
    args = ap.parse_args()
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        # value heads twice the key heads, dk 16 and dv 24; as many of each, dk = dv; Qwen3.5's own
        # head sizes (128) at two heads; a convolution of 2 taps.
        layers = (("grouped", text_config(), 0),
                  ("square", text_config(linear_num_value_heads=2, linear_value_head_dim=16), 1),
                  ("qwen3.5 heads", text_config(linear_num_key_heads=1, linear_num_value_heads=2,
                                                linear_key_head_dim=128, linear_value_head_dim=128), 2),
                  ("conv 2", text_config(linear_conv_kernel_dim=2), 0))
        for name, cfg, layer in layers:
            failures += check_layer(args.headway, tmp, name, cfg, layer, rng)
        failures += check_model(args.headway, tmp, rng)
        failures += check_gguf(args.headway, tmp, rng)
    print("ok" if failures == 0 else f"{failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
