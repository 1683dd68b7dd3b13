"""`headway logits` against transformers' own decoders, built from small configs with random
weights and run in float64: LlamaForCausalLM (GQA, separate and tied heads), Qwen2ForCausalLM
(q/k/v biases), Qwen3ForCausalLM (q/k norms, head_dim apart from hidden / heads),
MistralForCausalLM, SmolLM3 (NoPE layers), Phi-3 (fused q/k/v and gate/up), OLMo 2 (q/k norms
across heads, norms on block outputs), and Gemma, Gemma 2 and Gemma 3 (GeGLU, scaled embeddings,
1 + w norms, four norms a layer, sliding layers, softcaps). Each model is written as a GGUF the way llama.cpp's converter writes its
family (the llama architecture's Q/K rows permuted for interleaved RoPE), in f32, f16, q8_0, q4_0,
q4_1, q5_0 and q5_1 through gguf-py, and saved by save_pretrained as a Hugging Face directory
(config.json and model.safetensors, f32); the reference runs on exactly the weights the file holds
(the quantized ones dequantized by gguf-py, which headway reads in place). Every position's logits
must agree within MAX_ABS, from one prefill and (GGUF) from decode steps one token at a time
(`logits --step`). Decode steps over quantized weights may run in integers with x in 8-bit codes
per block of 32, as ggml's do (simd/matmul/matmul_int8-inl.h): the reference then also runs with every
projection's input so rounded (int8_inputs), which the integer path matches to about 1e-6 but for
the odd code that rounds the other way, and the steps must be within STEP_MAX_ABS of it or of the
exact logits (Gemma's scaled embeddings, norms on block outputs and softcaps make it the more
sensitive to x's rounding: 0.24 to 0.88 from the exact logits here). Where the kernels run
AVX3_DL, a model holds these types' matrices in row groups and multiplies them with x at 16 bits,
prefill and decode alike (row_groups.py): its logits, of one prefill and of the steps, must then be
within ROW_GROUPS_MAX_ABS of the exact ones.
"""
import argparse
import math
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch

from row_groups import ROW_GROUPS_MAX_ABS, runs_row_groups

MAX_ABS = 1e-3  # the bound for f32 weights; measured about 3e-6 here, logits up to about 4 (f32 against float64)
# x's rounding to 8-bit codes: half a code step (max|x| / 254 per block) on every product, about
# 0.5% of a dot product's typical size, through two layers; measured 6e-2 to 1.2e-1 here (logits up
# to about 4). A wrong scale, offset or layout errs by whole units.
STEP_MAX_ABS = 0.25
T = None
# Families whose RoPE tables depend on the call (LongRoPE, dynamic NTK): decode steps differ from one
# prefill, and are held to transformers run one token a call over its cache (step_logits).
PER_CALL = {"phi3-longrope", "llama-dynamic"}


def permute(w, n_head):  # convert_hf_to_gguf.py's LlamaModel.permute: rotate-half rows to interleaved
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def families():
    from transformers import (LlamaConfig, LlamaForCausalLM, MistralConfig, MistralForCausalLM, Qwen2Config,
                              Qwen2ForCausalLM, Qwen3Config, Qwen3ForCausalLM)
    common = dict(vocab_size=160, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64, rms_norm_eps=1e-6)
    yield "llama", "llama", LlamaForCausalLM(LlamaConfig(**common, rope_theta=10000.0, tie_word_embeddings=False))
    yield "llama-tied", "llama", LlamaForCausalLM(LlamaConfig(**common, rope_theta=500000.0, tie_word_embeddings=True))
    yield "mistral", "llama", MistralForCausalLM(MistralConfig(**common, rope_theta=1e6, sliding_window=None))
    yield "qwen2", "qwen2", Qwen2ForCausalLM(Qwen2Config(**common, rope_theta=1e6, tie_word_embeddings=True))
    yield "qwen3", "qwen3", Qwen3ForCausalLM(Qwen3Config(**common, head_dim=32, rope_theta=1e6,
                                                         tie_word_embeddings=False))
    from transformers import (Olmo2Config, Olmo2ForCausalLM, Phi3Config, Phi3ForCausalLM, SmolLM3Config,
                              SmolLM3ForCausalLM)
    # SmolLM3: every fourth layer without RoPE (four layers, so one); Phi-3: q/k/v in one tensor,
    # gate and up in another; OLMo 2: q/k norms across all heads, norms on each block's output only.
    yield "smollm3", "smollm3", SmolLM3ForCausalLM(SmolLM3Config(**dict(common, num_hidden_layers=4),
                                                                 rope_theta=2e6, tie_word_embeddings=True, pad_token_id=0))
    yield "phi3", "phi3", Phi3ForCausalLM(Phi3Config(**common, rope_theta=1e4, pad_token_id=0))
    yield "olmo2", "olmo2", Olmo2ForCausalLM(Olmo2Config(**common, rope_theta=5e5, pad_token_id=0))
    # Phi-3.5's LongRoPE over an original context of 16: a 21-token prefill takes the long factors
    # throughout, its decode steps the short ones up to position 15 and the long ones after.
    pairs = common["hidden_size"] // common["num_attention_heads"] // 2
    longrope = {"rope_type": "longrope", "rope_theta": 1e4, "short_factor": [1 + 0.1 * i for i in range(pairs)],
                "long_factor": [1 + 0.7 * i for i in range(pairs)]}
    yield "phi3-longrope", "phi3", Phi3ForCausalLM(Phi3Config(**common, original_max_position_embeddings=16,
                                                              rope_scaling=longrope, pad_token_id=0))
    # Dynamic NTK over a context of 16, which a 21-token prompt passes: no GGUF (llama.cpp has none).
    yield "llama-dynamic", None, LlamaForCausalLM(LlamaConfig(**dict(common, max_position_embeddings=16),
                                                              rope_scaling={"rope_type": "dynamic", "factor": 2.0,
                                                                            "rope_theta": 1e4}))
    from transformers import (Gemma2Config, Gemma2ForCausalLM, Gemma3ForCausalLM, Gemma3TextConfig, GemmaConfig,
                              GemmaForCausalLM)
    # Gemma: head_dim apart from hidden / heads, queries scaled by query_pre_attn_scalar (= head_dim,
    # as Gemma 2/3 2B-12B); Gemma 2 slides on its even layers and caps attention and final logits;
    # Gemma 3 slides on five of six layers (both of these) with q/k norms. Eager attention: the
    # softcap is not in torch's SDPA.
    gemma = dict(common, head_dim=32, hidden_activation="gelu_pytorch_tanh")
    for name, arch, config in (
            ("gemma", "gemma", GemmaConfig(**gemma)),
            ("gemma2", "gemma2", Gemma2Config(**gemma, query_pre_attn_scalar=32, sliding_window=8,
                                              attn_logit_softcapping=50.0, final_logit_softcapping=30.0)),
            ("gemma3", "gemma3", Gemma3TextConfig(**gemma, query_pre_attn_scalar=32, sliding_window=8))):
        config._attn_implementation = "eager"
        model_class = {"gemma": GemmaForCausalLM, "gemma2": Gemma2ForCausalLM, "gemma3": Gemma3ForCausalLM}[name]
        yield name, arch, model_class(config)


def randomize(model):
    """Every weight drawn anew, so that none is left as initialized (zero biases, unit norms):
    norm weights about 1, biases about 0.1, matrices scaled by their width (embed_check.py too)."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name.lower() and name.endswith("weight"):
                p.copy_(1.0 + 0.1 * torch.randn_like(p))
            elif name.endswith("bias"):
                p.copy_(0.1 * torch.randn_like(p))
            else:
                p.copy_(torch.randn_like(p) / p.shape[-1] ** 0.5)
    return model


def stored(x, qtype):
    """What the file holds for x in qtype, and the values it stands for (gguf-py's dequantize)."""
    import gguf
    x = np.ascontiguousarray(x.astype(np.float32))
    if qtype == gguf.GGMLQuantizationType.F32:
        return x, x.astype(np.float64)
    if qtype == gguf.GGMLQuantizationType.F16:
        h = x.astype(np.float16)
        return h, h.astype(np.float64)
    if x.ndim == 1 or x.shape[-1] % 32:  # norms and biases stay f32, as llama.cpp keeps them
        return x, x.astype(np.float64)
    q = gguf.quants.quantize(x, qtype)
    return q, np.asarray(gguf.quants.dequantize(q, qtype), dtype=np.float64).reshape(x.shape)


def write_gguf(path, arch, model, qtype):
    """The model as a GGUF of `arch`; the model's weights become the values the file holds."""
    import gguf
    cfg = model.config
    heads, kv_heads = cfg.num_attention_heads, cfg.num_key_value_heads
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // heads
    w = gguf.GGUFWriter(path, arch)
    w.add_uint32(f"{arch}.context_length", cfg.max_position_embeddings)
    w.add_uint32(f"{arch}.embedding_length", cfg.hidden_size)
    w.add_uint32(f"{arch}.block_count", cfg.num_hidden_layers)
    w.add_uint32(f"{arch}.feed_forward_length", cfg.intermediate_size)
    w.add_uint32(f"{arch}.attention.head_count", heads)
    w.add_uint32(f"{arch}.attention.head_count_kv", kv_heads)
    w.add_uint32(f"{arch}.attention.key_length", head_dim)
    w.add_uint32(f"{arch}.attention.value_length", head_dim)
    w.add_uint32(f"{arch}.rope.dimension_count", head_dim)
    rope = getattr(cfg, "rope_parameters", None) or {}
    theta = getattr(cfg, "rope_theta", None) or rope.get("rope_theta") or rope["full_attention"]["rope_theta"]
    w.add_float32(f"{arch}.rope.freq_base", float(theta))
    w.add_float32(f"{arch}.attention.layer_norm_rms_epsilon", cfg.rms_norm_eps)
    if arch in ("gemma2", "gemma3"):
        w.add_uint32(f"{arch}.attention.sliding_window", cfg.sliding_window)
    if rope.get("rope_type") == "longrope":  # as llama.cpp's Phi3MiniModel writes it
        scale = cfg.max_position_embeddings / rope["original_max_position_embeddings"]
        w.add_float32(f"{arch}.rope.scaling.attn_factor",
                      math.sqrt(1 + math.log(scale) / math.log(rope["original_max_position_embeddings"])))
        w.add_uint32(f"{arch}.rope.scaling.original_context_length", rope["original_max_position_embeddings"])
        w.add_tensor("rope_factors_long.weight", np.array(rope["long_factor"], dtype=np.float32))
        w.add_tensor("rope_factors_short.weight", np.array(rope["short_factor"], dtype=np.float32))
    if arch == "gemma2":
        w.add_float32("gemma2.attn_logit_softcapping", cfg.attn_logit_softcapping)
        w.add_float32("gemma2.final_logit_softcapping", cfg.final_logit_softcapping)
    names = {"model.embed_tokens.weight": "token_embd.weight", "model.norm.weight": "output_norm.weight",
             "lm_head.weight": "output.weight"}
    per_layer = {"self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v",
                 "self_attn.o_proj": "attn_output", "self_attn.q_norm": "attn_q_norm",
                 "self_attn.k_norm": "attn_k_norm", "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up",
                 "mlp.down_proj": "ffn_down", "input_layernorm": "attn_norm",
                 "post_attention_layernorm": "ffn_norm", "self_attn.qkv_proj": "attn_qkv", "mlp.gate_up_proj": "ffn_up"}
    if arch == "olmo2":  # norms on the blocks' outputs alone
        per_layer.update({"post_attention_layernorm": "post_attention_norm",
                          "post_feedforward_layernorm": "post_ffw_norm"})
    if arch in ("gemma2", "gemma3"):  # four norms a layer: llama.cpp's names
        per_layer.update({"post_attention_layernorm": "post_attention_norm", "pre_feedforward_layernorm": "ffn_norm",
                          "post_feedforward_layernorm": "post_ffw_norm"})
    # llama.cpp's converter stores Gemma's norm weights with their 1 + w added.
    shift_norms = 1.0 if arch.startswith("gemma") else 0.0
    state = model.state_dict()
    new_state = {}
    for name, tensor in state.items():
        if name == "lm_head.weight" and cfg.tie_word_embeddings:
            continue
        if name in names:
            gname = names[name]
        else:
            parts = name.split(".")  # model.layers.{i}.{module}.{weight|bias}
            gname = f"blk.{parts[2]}.{per_layer['.'.join(parts[3:-1])]}.{parts[-1]}"
        x = tensor.detach().to(torch.float64).numpy()
        permuted = arch in ("llama", "smollm3") and gname.endswith(("attn_q.weight", "attn_k.weight"))
        n = heads if gname.endswith("attn_q.weight") else kv_heads
        shift = shift_norms if gname.endswith("norm.weight") else 0.0
        data, values = stored((permute(x, n) if permuted else x) + shift, qtype)
        values = values - shift
        if permuted:  # back to Hugging Face's rows: the inverse permutation
            values = values.reshape(n, values.shape[0] // n // 2, 2, -1).swapaxes(1, 2).reshape(x.shape)
        w.add_tensor(gname, data, raw_dtype=None if data.dtype in (np.float32, np.float16) else qtype)
        new_state[name] = torch.from_numpy(values)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    model.load_state_dict(new_state, strict=False)
    if cfg.tie_word_embeddings:
        model.tie_weights()


def step_logits(model, ids):
    """Each position's logits from decode steps, one token a call over transformers' cache: what
    `logits --step` computes where the calls differ from one prefill (LongRoPE's table is chosen
    per call)."""
    from transformers import DynamicCache
    cache = DynamicCache(config=model.config)
    with torch.no_grad():
        return np.stack([model(torch.tensor([[i]]), past_key_values=cache, use_cache=True).logits[0, -1].numpy()
                         for i in ids])


def int8_inputs(model):
    """Hooks that give every projection but the LM head its input as the integer decode sees it:
    rounded per block of 32 to 8-bit codes of step max|x| / 127 (ggml's q8_0 / q8_1 for x)."""
    def quantize(module, args):
        x = args[0]
        if x.shape[-1] % 32:
            return None
        b = x.reshape(*x.shape[:-1], -1, 32)
        step = b.abs().amax(-1, keepdim=True) / 127
        q = torch.where(step > 0, torch.round(b / torch.where(step > 0, step, 1)), torch.zeros_like(b))
        return ((q * step).reshape(x.shape),)
    return [m.register_forward_pre_hook(quantize) for name, m in model.named_modules()
            if isinstance(m, torch.nn.Linear) and not name.endswith("lm_head")]


def check_generate(headway, folder, model, prompt):
    """`headway generate --prompt-ids` over the folder, which has no tokenizer: transformers' greedy
    ids, both stopping at the eos_token_id of the folder's generation_config.json (set here to the
    fourth token the model makes unstopped, so that the stop is exercised). True when equal."""
    import json
    gc = model.generation_config
    gc.eos_token_id, gc.pad_token_id = None, 0
    with torch.no_grad():
        made = model.generate(torch.tensor([prompt]), max_new_tokens=8, do_sample=False)[0, len(prompt):].tolist()
        gc.eos_token_id = made[3]
        gc.save_pretrained(folder)
        want = model.generate(torch.tensor([prompt]), max_new_tokens=8, do_sample=False)[0, len(prompt):].tolist()
    run = subprocess.run([headway, "generate", "--model-dir", folder, "--prompt-ids", ",".join(map(str, prompt)),
                          "--tokens", "8", "--temp", "0", "--kv-dtype", "f32", "--json"],
                         check=True, capture_output=True, text=True)
    got = json.loads(run.stdout)["ids"]
    print(f"  generate --prompt-ids, no tokenizer: {got}, transformers {want} ({'ok' if got == want else 'FAIL'})")
    return got == want


def main():
    import gguf
    ap = argparse.ArgumentParser()
    ap.add_argument("--headway", required=True)
    args = ap.parse_args()
    row_groups = runs_row_groups(args.headway)
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    Q = gguf.GGMLQuantizationType
    failures = checks = 0
    with tempfile.TemporaryDirectory() as tmp:
        for family, arch, model in families():
            model = randomize(model).to(torch.float32)
            ids = rng.integers(0, model.config.vocab_size, 21).tolist()
            folder = os.path.join(tmp, family)
            model.save_pretrained(folder, safe_serialization=True)
            model = model.to(torch.float64).eval()
            with torch.no_grad():
                ref = model(torch.tensor([ids])).logits[0].numpy()
            out = os.path.join(tmp, "logits.npy")
            subprocess.run([args.headway, "logits", "--model-dir", folder, "--prompt-ids", ",".join(map(str, ids)),
                            "--out", out, "--kv-dtype", "f32"], check=True)
            err = float(np.abs(np.load(out).astype(np.float64) - ref).max())
            checks += 1
            failures += 0 if err <= MAX_ABS else 1
            print(f"{family} safetensors: max |err| {err:.2e} ({'ok' if err <= MAX_ABS else 'FAIL'})")
            checks += 1
            failures += 0 if check_generate(args.headway, folder, model, ids[:6]) else 1
            if arch is None:  # no GGUF: decode steps from the folder
                subprocess.run([args.headway, "logits", "--model-dir", folder, "--prompt-ids",
                                ",".join(map(str, ids)), "--out", out, "--kv-dtype", "f32", "--step"], check=True)
                err = float(np.abs(np.load(out).astype(np.float64) - step_logits(model, ids)).max())
                checks += 1
                failures += 0 if err <= MAX_ABS else 1
                print(f"{family} safetensors decode steps: max |err| {err:.2e} ({'ok' if err <= MAX_ABS else 'FAIL'})")
                continue
            for qtype in (Q.F32, Q.F16, Q.Q8_0, Q.Q4_0, Q.Q4_1, Q.Q5_0, Q.Q5_1):
                model = model.to(torch.float64).eval()
                path = os.path.join(tmp, f"{family}-{qtype.name}.gguf")
                write_gguf(path, arch, model, qtype)
                ids = rng.integers(0, model.config.vocab_size, 21).tolist()
                with torch.no_grad():
                    ref = model(torch.tensor([ids])).logits[0].numpy()
                out = os.path.join(tmp, "logits.npy")
                subprocess.run([args.headway, "logits", "--gguf", path, "--prompt-ids", ",".join(map(str, ids)),
                                "--out", out, "--kv-dtype", "f32"], check=True)
                err = float(np.abs(np.load(out).astype(np.float64) - ref).max())
                ok = err <= (ROW_GROUPS_MAX_ABS if row_groups and qtype not in (Q.F32, Q.F16) else MAX_ABS)
                checks += 1
                failures += 0 if ok else 1
                print(f"{family} {qtype.name}: max |err| {err:.2e} of logits up to {np.abs(ref).max():.1f} "
                      f"({'ok' if ok else 'FAIL'})")
                subprocess.run([args.headway, "logits", "--gguf", path, "--prompt-ids", ",".join(map(str, ids)),
                                "--out", out, "--kv-dtype", "f32", "--step"], check=True)
                got = np.load(out).astype(np.float64)
                per_call = family in PER_CALL
                step_ref = step_logits(model, ids) if per_call else ref
                err = float(np.abs(got - step_ref).max())
                hooks = int8_inputs(model)
                with torch.no_grad():
                    ref_int8 = step_logits(model, ids) if per_call else model(torch.tensor([ids])).logits[0].numpy()
                for h in hooks:
                    h.remove()
                err_int8 = float(np.abs(got - ref_int8).max())
                # f32 and f16 weights decode in f32: the logits; quantized ones in row groups (x at
                # 16 bits) near them; elsewhere may decode in integers (AVX-VNNI, SDOT): the logits
                # of 8-bit x, or (another CPU) the exact ones.
                if qtype in (Q.F32, Q.F16):
                    ok = err <= MAX_ABS
                elif row_groups:
                    ok = err <= ROW_GROUPS_MAX_ABS
                else:
                    ok = min(err, err_int8) <= STEP_MAX_ABS
                checks += 1
                failures += 0 if ok else 1
                print(f"{family} {qtype.name} decode steps: max |err| {err:.2e}, against 8-bit x {err_int8:.2e} "
                      f"({'ok' if ok else 'FAIL'})")
    print(f"{checks - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
