#!/usr/bin/env python3
"""ALiBi and sink tokens (StreamingLLM) in headway against transformers' own ALiBi and torch.

Three groups of cases, one line each, exit 1 on any mismatch:

- `headway attend --alibi [--alibi-max-bias B]` against attention in torch float64 whose bias is
  built by transformers' functions: BLOOM's build_alibi_tensor (slopes of 8) and MPT's
  build_mpt_alibi_tensor (alibi_bias_max 8 and others). On causal rows both give slope · (key
  index), which differs from headway's −m·(p − j) by a constant per row, so the comparison is of
  the attention output, never of the bias. Bidirectional rows take −m·|p − j| with the slopes those
  functions give. Head counts powers of two and not, GQA and MQA, prefill and chunks, f32 and f16
  K/V, head_dim 64, 128 and generic ones, a softcap (the bias comes after it).
- `headway attend --causal --window W --sink-tokens S` against torch float64 with a boolean mask
  built from the rule: query at position p sees key j iff j <= p and (j > p − W or j < S); rows
  past the window, S 1 and 4, W just above S, chunks after many tokens, GQA, and together with
  learned sink logits (--sinks) and with ALiBi.
- `headway layer` on a small model's config.json against the family's attention module built
  by transformers with random weights (BloomAttention, MptAttention, FalconAttention with alibi):
  the fused query_key_value / Wqkv weight is split into headway's q/k/v_proj names and saved as
  safetensors; the module gets the ALiBi tensor from its family's own builder over positions
  P..P+T-1 and runs in float64. headway runs with a fresh cache at P; ALiBi depends on distances
  only, so y does not depend on P.

Tolerance as in hf_attention_check.py: max abs err over max(1, max |ref|) <= 1e-4; with f16 K/V
the reference takes K and V rounded to f16.

usage: alibi_sink_check.py --headway path/to/headway [--keep DIR] [--case TEXT]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # configs are local files; nothing is downloaded

import numpy as np  # noqa: E402
import torch  # noqa: E402
from safetensors.torch import save_file  # noqa: E402
from transformers.models.bloom import modeling_bloom  # noqa: E402
from transformers.models.falcon import modeling_falcon  # noqa: E402
from transformers.models.mpt import modeling_mpt  # noqa: E402

import hf_blocks  # noqa: E402

TOLERANCE = 1e-4
MAX_SEQ = 2048


# ---- ALiBi as transformers builds it ------------------------------------------------------------

def bloom_alibi(n_heads, t_kv):
    """[n_heads, 1, t_kv]: BLOOM's slope_h · j, j the key index (build_alibi_tensor)."""
    ones = torch.ones(1, t_kv, dtype=torch.long)
    return modeling_bloom.build_alibi_tensor(ones, n_heads, torch.float64)


def mpt_alibi(n_heads, t_kv, bias_max):
    """[n_heads, 1, t_kv]: MPT's slope_h · (j − (t_kv − 1)) (build_mpt_alibi_tensor)."""
    return modeling_mpt.build_mpt_alibi_tensor(n_heads, t_kv, alibi_bias_max=bias_max).to(torch.float64)


def family_alibi(alibi, n_heads, t_kv):
    """The family's ALiBi tensor [n_heads, 1, t_kv]; alibi is "bloom" or ("mpt", bias_max)."""
    if alibi == "bloom":
        return bloom_alibi(n_heads, t_kv)
    return mpt_alibi(n_heads, t_kv, alibi[1])


def family_slopes(alibi, n_heads):
    """m_h [n_heads] read off the family's tensor: the bias of key 1 minus that of key 0."""
    t = family_alibi(alibi, n_heads, 2)
    return t[:, 0, 1] - t[:, 0, 0]


def alibi_bias(alibi, n_heads, t_q, t_kv, causal, with_sinks=False):
    """[n_heads, t_q, t_kv] float64 added to the logits. Causal: the family's tensor as the model
    adds it (a row vector over the keys); bidirectional: −m_h·|p − j| from its slopes. A learned
    sink logit carries no bias, so the per-row constant matters beside it: with sinks, a causal
    row's tensor is shifted to 0 at its own position p (−m_h·(p − j), headway's form)."""
    if causal:
        bias = family_alibi(alibi, n_heads, t_kv).expand(n_heads, t_q, t_kv)
        if with_sinks:
            p = torch.arange(t_q) + (t_kv - t_q)
            bias = bias - bias[:, torch.arange(t_q), p].unsqueeze(2)
        return bias
    p = torch.arange(t_q, dtype=torch.float64).view(-1, 1) + (t_kv - t_q)
    j = torch.arange(t_kv, dtype=torch.float64).view(1, -1)
    return -family_slopes(alibi, n_heads).view(-1, 1, 1) * (p - j).abs()


# ---- the reference attention --------------------------------------------------------------------

def visible(t_q, t_kv, causal, window, sink_tokens):
    """[t_q, t_kv] bool: query i at position p = i + t_kv − t_q sees key j iff (not causal or
    j <= p) and (no window or j > p − W or j < S)."""
    p = torch.arange(t_q).view(-1, 1) + (t_kv - t_q)
    j = torch.arange(t_kv).view(1, -1)
    seen = torch.ones(t_q, t_kv, dtype=torch.bool)
    if causal:
        seen &= j <= p
    if window:
        seen &= (j > p - window) | (j < sink_tokens)
    return seen


def reference(q, k, v, seen, bias=None, sinks=None, softcap=0.0):
    """O [t_q, n_heads, d] float64 = softmax(softcap(scale·q·kᵀ) + bias, masked by seen, with a
    sink logit per head) · v. q [t_q, H, d], k and v [t_kv, G, d]; head h reads kv head h // (H/G)."""
    q, k, v = (torch.from_numpy(np.asarray(a, dtype=np.float64)) for a in (q, k, v))
    n_heads, group = q.shape[1], q.shape[1] // k.shape[1]
    k = k.repeat_interleave(group, dim=1)
    v = v.repeat_interleave(group, dim=1)
    logits = torch.einsum("ihd,jhd->hij", q, k) / float(q.shape[2]) ** 0.5
    if softcap:
        logits = softcap * torch.tanh(logits / softcap)
    if bias is not None:
        logits = logits + bias
    logits = logits.masked_fill(~seen, float("-inf"))
    if sinks is not None:
        sink = torch.from_numpy(sinks.astype(np.float64)).view(n_heads, 1, 1).expand(n_heads, logits.shape[1], 1)
        logits = torch.cat([logits, sink], dim=2)
    m = logits.amax(dim=2, keepdim=True).clamp_min(-1e300)  # a row that sees nothing: all weights 0
    w = torch.exp(logits - m)
    o = torch.einsum("hij,jhd->ihd", w[:, :, :k.shape[0]], v) / w.sum(dim=2).clamp_min(1e-300).T.unsqueeze(2)
    return o.numpy()


# ---- headway attend cases -----------------------------------------------------------------------

def attend(name, heads, kv_heads, d, t_q, t_kv=None, kv="f32", causal=True, alibi=None, window=0, sink_tokens=0,
           sinks=False, softcap=0.0):
    """alibi: None, "bloom" (--alibi) or ("mpt", B) (--alibi-max-bias B); t_kv defaults to t_q."""
    return dict(name=name, heads=heads, kv_heads=kv_heads, d=d, t_q=t_q, t_kv=t_kv or t_q, kv=kv, causal=causal,
                alibi=alibi, window=window, sink_tokens=sink_tokens, sinks=sinks, softcap=softcap)


ATTEND_CASES = [
    # ALiBi, BLOOM's slopes: 2^(−8(h+1)/n), and for n not a power of two the odd ones of 2·n0 heads.
    attend("alibi bloom causal prefill 4/4 d64", 4, 4, 64, 37, alibi="bloom"),
    attend("alibi bloom causal prefill 16/16 d128, 300 tokens", 16, 16, 128, 300, alibi="bloom"),
    attend("alibi bloom causal chunk 6/2 d128 f16", 6, 2, 128, 5, 70, kv="f16", alibi="bloom"),
    attend("alibi bloom causal prefill 12/4 d80", 12, 4, 80, 41, alibi="bloom"),
    attend("alibi bloom causal prefill 20/5 d33 f16", 20, 5, 33, 50, kv="f16", alibi="bloom"),
    attend("alibi bloom causal decode 16/1 d64 (MQA), 700 keys", 16, 1, 64, 1, 700, alibi="bloom"),
    attend("alibi bloom causal chunk 20/4 d64, 9 after 591", 20, 4, 64, 9, 600, alibi="bloom"),
    attend("alibi bloom bidirectional prefill 12/4 d80", 12, 4, 80, 33, causal=False, alibi="bloom"),
    attend("alibi bloom bidirectional chunk 6/3 d64 f16", 6, 3, 64, 7, 40, kv="f16", causal=False, alibi="bloom"),
    attend("alibi bloom bidirectional prefill 16/8 d128, 200 tokens", 16, 8, 128, 200, causal=False, alibi="bloom"),
    attend("alibi bloom causal softcap 2 (bias after the cap)", 8, 2, 64, 30, alibi="bloom", softcap=2.0),
    # ALiBi, MPT's slopes with alibi_bias_max B: 2^(−B(h+1)/n) and 2^(−B(2i+1)/(2·n0)).
    attend("alibi mpt B8 causal prefill 16/16 d128", 16, 16, 128, 45, alibi=("mpt", 8.0)),
    attend("alibi mpt B8 causal chunk 6/6 d64", 6, 6, 64, 8, 90, alibi=("mpt", 8.0)),
    attend("alibi mpt B16 causal chunk 6/2 d80", 6, 2, 80, 8, 90, alibi=("mpt", 16.0)),
    attend("alibi mpt B4 causal prefill 12/6 d33 f16", 12, 6, 33, 40, kv="f16", alibi=("mpt", 4.0)),
    attend("alibi mpt B12 causal prefill 20/10 d64", 20, 10, 64, 64, alibi=("mpt", 12.0)),
    attend("alibi mpt B16 bidirectional prefill 4/2 d128", 4, 2, 128, 30, causal=False, alibi=("mpt", 16.0)),
    attend("alibi mpt B2 bidirectional chunk 20/5 d80 f16", 20, 5, 80, 6, 50, kv="f16", causal=False,
           alibi=("mpt", 2.0)),
    # Sink tokens: keys j < S stay visible to every row past the window.
    attend("sink tokens S1 W2 prefill 4/2 d64", 4, 2, 64, 40, window=2, sink_tokens=1),
    attend("sink tokens S4 W5 prefill 8/8 d128 f16", 8, 8, 128, 64, kv="f16", window=5, sink_tokens=4),
    attend("sink tokens S4 W16 chunk 6/3 d80, 7 after 493", 6, 3, 80, 7, 500, window=16, sink_tokens=4),
    attend("sink tokens S1 W8 decode 4/1 d64, 1000 keys", 4, 1, 64, 1, 1000, window=8, sink_tokens=1),
    attend("sink tokens S4 W32 prefill 4/2 d33, 300 tokens", 4, 2, 33, 300, window=32, sink_tokens=4),
    attend("sink tokens S4 W6 chunk within the window 4/2 d64", 4, 2, 64, 3, 5, window=6, sink_tokens=4),
    attend("sink tokens S1 W5 chunk 12/4 d128 f16, 20 after 180", 12, 4, 128, 20, 200, kv="f16", window=5,
           sink_tokens=1),
    attend("sink tokens S4 W10 + learned sinks, chunk 8/2 d64", 8, 2, 64, 12, 150, window=10, sink_tokens=4,
           sinks=True),
    attend("sink tokens S1 W3 + learned sinks, prefill 6/6 d80", 6, 6, 80, 24, window=3, sink_tokens=1, sinks=True),
    attend("sink tokens S4 W12 + alibi bloom, chunk 16/4 d64", 16, 4, 64, 10, 300, window=12, sink_tokens=4,
           alibi="bloom"),
    attend("sink tokens S4 W5 + alibi bloom, prefill 20/4 d33 f16", 20, 4, 33, 80, kv="f16", window=5, sink_tokens=4,
           alibi="bloom"),
    attend("sink tokens S1 W9 + alibi mpt B16, prefill 12/12 d128", 12, 12, 128, 60, window=9, sink_tokens=1,
           alibi=("mpt", 16.0)),
    attend("sink tokens S4 W8 + alibi mpt B16 + learned sinks f16", 6, 2, 64, 16, 400, kv="f16", window=8,
           sink_tokens=4, alibi=("mpt", 16.0), sinks=True),
    # ALiBi beside learned sink logits: the sink has no bias, so each row's keys must carry exactly
    # −m·(p − j) (on causal rows BLOOM's slope·j would be off by m·p).
    attend("alibi bloom + learned sinks, causal prefill 8/4 d64", 8, 4, 64, 48, alibi="bloom", sinks=True),
    attend("alibi mpt B8 + learned sinks, bidirectional chunk 6/2 d80", 6, 2, 80, 9, 60, causal=False,
           alibi=("mpt", 8.0), sinks=True),
    # A window with no sink tokens, with ALiBi: the ordinary window rule still holds.
    attend("window 7 + alibi bloom, no sink tokens, 6/2 d64", 6, 2, 64, 30, window=7, alibi="bloom"),
]


def alibi_flags(alibi):
    if alibi is None:
        return []
    if alibi == "bloom":
        return ["--alibi"]
    return ["--alibi", "--alibi-max-bias", f"{alibi[1]:g}"]


def run_attend(headway, c, workdir, seed):
    gen = torch.Generator().manual_seed(seed)
    os.makedirs(workdir, exist_ok=True)
    q = torch.randn(c["t_q"], c["heads"], c["d"], generator=gen, dtype=torch.float64).float().numpy()
    kv_dtype = np.float16 if c["kv"] == "f16" else np.float32
    k, v = (torch.randn(c["t_kv"], c["kv_heads"], c["d"], generator=gen, dtype=torch.float64).numpy().astype(kv_dtype)
            for _ in range(2))
    paths = {n: os.path.join(workdir, n + ".npy") for n in ("q", "k", "v", "o", "sinks")}
    for n, a in (("q", q), ("k", k), ("v", v)):
        np.save(paths[n], a)
    cmd = [headway, "attend", "--q", paths["q"], "--k", paths["k"], "--v", paths["v"], "--out", paths["o"],
           "--threads", "2", *alibi_flags(c["alibi"])]
    if c["causal"]:
        cmd.append("--causal")
    if c["window"]:
        cmd += ["--window", str(c["window"])]
    if c["sink_tokens"]:
        cmd += ["--sink-tokens", str(c["sink_tokens"])]
    if c["softcap"]:
        cmd += ["--softcap", f"{c['softcap']:g}"]
    sinks = None
    if c["sinks"]:
        sinks = (2.0 * torch.randn(c["heads"], generator=gen, dtype=torch.float64)).float().numpy()
        np.save(paths["sinks"], sinks)
        cmd += ["--sinks", paths["sinks"]]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        return f"exit {r.returncode}: {r.stderr.strip()}", 0.0
    o = np.load(paths["o"])
    seen = visible(c["t_q"], c["t_kv"], c["causal"], c["window"], c["sink_tokens"])
    bias = alibi_bias(c["alibi"], c["heads"], c["t_q"], c["t_kv"], c["causal"], c["sinks"]) if c["alibi"] else None
    ref = reference(q, k, v, seen, bias, sinks, c["softcap"])
    return compare(o, ref)


def compare(y, ref):
    """(None or a failure text, rel err)."""
    if y.shape != ref.shape:
        return f"output is {y.shape}, expected {ref.shape}", 0.0
    abs_err = float(np.max(np.abs(y.astype(np.float64) - ref)))
    rel_err = abs_err / max(1.0, float(np.max(np.abs(ref))))
    if not rel_err <= TOLERANCE:  # NaN fails too
        return f"max abs err {abs_err:.3g}, rel err {rel_err:.3g} > {TOLERANCE:g}", rel_err
    return None, rel_err


# ---- headway layer against the families' modules ------------------------------------------------

def layer(name, family, d_model, heads, layer_idx=1, tokens=9, starts=(0, 37, 1000), **keys):
    """A small config.json of `family` (bloom, mpt, falcon) as its real files spell it; keys: more."""
    if family == "bloom":
        # No context length: BloomConfig has none (ALiBi needs none), nor do bloom's config.json files.
        cfg = {"model_type": "bloom", "hidden_size": d_model, "n_head": heads, "n_layer": 2,
               "layer_norm_epsilon": 1e-5, "vocab_size": 1000, "pretraining_tp": 1, "slow_but_exact": False,
               "hidden_dropout": 0.0, "attention_dropout": 0.0}
    elif family == "mpt":
        cfg = {"model_type": "mpt", "d_model": d_model, "n_heads": heads, "n_layers": 2, "max_seq_len": MAX_SEQ,
               "vocab_size": 1000, "no_bias": True, "attn_config": {"alibi": True, "alibi_bias_max": 8}}
    else:  # Falcon-RW: MHA with a fused [heads, 3, head_dim] qkv, biases, ALiBi
        cfg = {"model_type": "falcon", "hidden_size": d_model, "num_attention_heads": heads, "num_hidden_layers": 2,
               "alibi": True, "multi_query": False, "new_decoder_architecture": False, "parallel_attn": False,
               "bias": True, "max_position_embeddings": MAX_SEQ, "vocab_size": 1000}
    cfg.update(keys)
    return dict(name=name, family=family, config=cfg, layer=layer_idx, tokens=tokens, starts=starts)


LAYER_CASES = [
    layer("bloom 4 heads d64", "bloom", 256, 4),
    layer("bloom 6 heads d80 layer 0", "bloom", 480, 6, layer_idx=0),
    layer("bloom 12 heads d64", "bloom", 768, 12),
    layer("bloom 4 heads d128, 600 tokens (2 chunks)", "bloom", 512, 4, tokens=600, starts=(0, 100)),
    layer("mpt 4 heads d128, alibi_bias_max 8", "mpt", 512, 4),
    # MptModel itself calls build_mpt_alibi_tensor without alibi_bias_max (always 8); MosaicML's
    # MPT code and headway take attn_config's value, which the builder is given here.
    layer("mpt 6 heads d64, alibi_bias_max 16, softmax_scale 0.1", "mpt", 384, 6,
          attn_config={"alibi": True, "alibi_bias_max": 16, "softmax_scale": 0.1}),
    # Falcon's builder rounds slope · index to bf16: exact for these power-of-two slopes while the
    # index is below 256, so the starts stay there.
    layer("falcon-rw alibi 4 heads d64 (slopes times 1/sqrt(d))", "falcon", 256, 4, starts=(0, 37, 200)),
    layer("falcon-rw alibi 8 heads d32", "falcon", 256, 8, layer_idx=0, starts=(0, 120)),
]


def split_fused(family, stored, heads, head_dim):
    """{headway name: tensor} for one layer from the module's stored parameters."""
    out = {}
    if family == "mpt":
        for part, w in zip("qkv", stored["Wqkv.weight"].chunk(3, dim=0)):
            out[f"{part}_proj.weight"] = w
        out["o_proj.weight"] = stored["out_proj.weight"]
        return out
    # BLOOM and Falcon (MHA): rows laid out [heads, 3, head_dim]
    w = stored["query_key_value.weight"].view(heads, 3, head_dim, -1)
    b = stored["query_key_value.bias"].view(heads, 3, head_dim)
    for i, part in enumerate("qkv"):
        out[f"{part}_proj.weight"] = w[:, i].reshape(heads * head_dim, -1)
        out[f"{part}_proj.bias"] = b[:, i].reshape(heads * head_dim)
    out["o_proj.weight"] = stored["dense.weight"]
    out["o_proj.bias"] = stored["dense.bias"]
    return out


MODULES = {"bloom": (modeling_bloom, "BloomAttention"), "mpt": (modeling_mpt, "MptAttention"),
           "falcon": (modeling_falcon, "FalconAttention")}


def write_layer_model(c, workdir, gen):
    os.makedirs(workdir, exist_ok=True)
    with open(os.path.join(workdir, "config.json"), "w") as f:
        json.dump(c["config"], f, indent=2)
    config = hf_blocks.load_config(workdir)
    family_module, class_name = MODULES[c["family"]]
    heads = config.num_attention_heads if c["family"] != "mpt" else config.n_heads
    head_dim = config.hidden_size // heads
    tensors, modules = {}, []
    for i in range(2):
        module = getattr(family_module, class_name)(config, layer_idx=i).to(torch.float64).eval()
        stored = hf_blocks.randomize(module, gen, torch.float32)
        for k, v in split_fused(c["family"], stored, heads, head_dim).items():
            tensors[f"model.layers.{i}.self_attn.{k}"] = v.contiguous()
        modules.append(module)
    weights = os.path.join(workdir, "model.safetensors")
    save_file(tensors, weights, metadata={"format": "pt"})
    return config, modules[c["layer"]], heads, weights


@torch.no_grad()
def layer_reference(c, config, module, heads, x, start):
    """y [T, d_model] float64: the module over x, its ALiBi from its family's builder over key
    positions start..start+T-1, causal."""
    h = torch.from_numpy(x).to(torch.float64).unsqueeze(0)
    t = h.shape[1]
    if c["family"] == "mpt":
        # [heads, 1, start + t]; MptAttention takes the last t keys' columns
        bias = mpt_alibi(heads, start + t, config.attn_config.alibi_bias_max)
        masked = ~torch.ones(t, t, dtype=torch.bool).tril().view(1, 1, t, t)
        y, _ = module(h, position_bias=bias, attention_mask=masked)
        return y[0].numpy()
    builder = modeling_bloom if c["family"] == "bloom" else modeling_falcon
    ones = torch.ones(1, start + t, dtype=torch.long)
    alibi = builder.build_alibi_tensor(ones, heads, torch.float64)[:, :, start:].contiguous()
    mask = hf_blocks.additive_mask(t, hf_blocks.masking_utils.causal_mask_function)
    if c["family"] == "bloom":
        y, _ = module(h, residual=torch.zeros_like(h), alibi=alibi, attention_mask=mask)
    else:
        # FalconAttention adds alibi to q·k and scales the sum; the mask carries no alibi here
        # (FalconModel's eager path adds alibi/sqrt(d) to the mask as well, a second time).
        y, _ = module(h, alibi=alibi, attention_mask=mask)
    return y[0].numpy()


def run_layer(headway, c, workdir, seed):
    gen = torch.Generator().manual_seed(seed)
    config, module, heads, weights = write_layer_model(c, workdir, gen)
    x = torch.randn(c["tokens"], config.hidden_size, generator=gen, dtype=torch.float64).float().numpy()
    x_path, y_path = os.path.join(workdir, "x.npy"), os.path.join(workdir, "y.npy")
    np.save(x_path, x)
    worst, engines = 0.0, []
    for start in c["starts"]:
        ref = layer_reference(c, config, module, heads, x, start)
        for projection in ("highway", "xnnpack"):
            cmd = [headway, "layer", "--config", os.path.join(workdir, "config.json"), "--weights", weights,
                   "--layer", str(c["layer"]), "--x", x_path, "--out", y_path, "--start-pos", str(start),
                   "--threads", "2", "--projection", projection]
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode != 0 and projection == "xnnpack" and "HEADWAY_XNNPACK=OFF" in r.stderr:
                continue  # a build without XNNPACK: the Highway projections alone
            if r.returncode != 0:
                return f"{projection} P={start}: exit {r.returncode}: {r.stderr.strip()}", worst, engines
            if projection not in engines:
                engines.append(projection)
            failure, rel = compare(np.load(y_path), ref)
            worst = max(worst, rel)
            if failure:
                return f"{projection} P={start}: {failure}", worst, engines
    return None, worst, engines


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--headway", required=True, help="the built headway binary")
    parser.add_argument("--keep", help="write the cases' files here and keep them")
    parser.add_argument("--case", help="run only cases whose name contains this")
    args = parser.parse_args()
    torch.set_num_threads(1)
    picked = lambda cases: [c for c in cases if not args.case or args.case in c["name"]]  # noqa: E731
    attend_cases, layer_cases = picked(ATTEND_CASES), picked(LAYER_CASES)
    if not attend_cases and not layer_cases:
        print(f"no case matches '{args.case}'")
        return 2
    failed, worst, total = 0, 0.0, 0
    with tempfile.TemporaryDirectory(prefix="headway_alibi_") as tmp:
        root = args.keep or tmp
        for i, c in enumerate(attend_cases):
            failure, rel = run_attend(args.headway, c, os.path.join(root, f"attend{i}"), 2000 + i)
            total, worst = total + 1, max(worst, rel)
            if failure:
                failed += 1
                print(f"FAIL  attend {c['name']}: {failure}")
            else:
                print(f"ok    attend {c['name']:58s} T_q={c['t_q']} T_kv={c['t_kv']} max rel err {rel:.2e}")
        for i, c in enumerate(layer_cases):
            failure, rel, engines = run_layer(args.headway, c, os.path.join(root, f"layer{i}"), 3000 + i)
            total, worst = total + 1, max(worst, rel)
            if failure:
                failed += 1
                print(f"FAIL  layer  {c['name']}: {failure}")
            else:
                print(f"ok    layer  {c['name']:58s} layer {c['layer']} T={c['tokens']} "
                      f"P={','.join(map(str, c['starts']))} {'+'.join(engines)} max rel err {rel:.2e}")
    print(f"{total - failed} of {total} ALiBi / sink-token cases match transformers "
          f"{hf_blocks.transformers.__version__} (torch {torch.__version__}; tolerance {TOLERANCE:g}, "
          f"worst {worst:.2e})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
