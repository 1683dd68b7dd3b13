"""Two small Qwen3.5-shaped GGUFs for side-by-side runs (bench/model_vs_llama.sh -m): a hybrid of six
Gated DeltaNet layers and two gated attention layers (Qwen3.5's order: every fourth layer full),
and its twin with all eight layers attention, the same widths otherwise. Random weights
(transformers' Qwen3_5ForCausalLM, seeded), written as llama.cpp's converter writes qwen35
(tests/torch/qwen35_gguf.py) in q8_0 with placeholder tokens, into the bench's cache folder. Prints
the two paths, comma-separated.

    bench/model_vs_llama.sh LLAMA_BIN_DIR -m $(.venv/bin/python bench/qwen35_gguf.py) -d 0,8192 -p 512 -n 64

The shapes: hidden 512, MLP 1536, 8 attention heads of 64 over 2 kv heads (partial RoPE, output
gate), Gated DeltaNet 4 key heads and 4 value heads of 128 (the head size of every Qwen3.5), a
convolution of 4 taps, 8192 ids, tied embeddings: about 34 M weights.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "torch"))


def main():
    import gguf
    import torch
    from transformers import Qwen3_5ForCausalLM, Qwen3_5TextConfig

    from qwen35_gguf import write_qwen35_gguf

    cache = os.path.join(os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "headway-bench")
    os.makedirs(cache, exist_ok=True)
    paths = []
    for name, full_every in (("hybrid", 4), ("attention", 1)):
        path = os.path.join(cache, f"qwen3.5-small-{name}.Q8_0.gguf")
        paths.append(path)
        if os.path.exists(path):
            continue
        layer_types = ["full_attention" if (i + 1) % full_every == 0 else "linear_attention" for i in range(8)]
        cfg = Qwen3_5TextConfig(vocab_size=8192, hidden_size=512, intermediate_size=1536, num_hidden_layers=8,
                                num_attention_heads=8, num_key_value_heads=2, head_dim=64,
                                max_position_embeddings=16384, linear_num_key_heads=4, linear_num_value_heads=4,
                                linear_key_head_dim=128, linear_value_head_dim=128, linear_conv_kernel_dim=4,
                                layer_types=layer_types, tie_word_embeddings=True)
        torch.manual_seed(0)
        model = Qwen3_5ForCausalLM(cfg).to(torch.float64)
        write_qwen35_gguf(path + ".part", model, gguf.GGMLQuantizationType.Q8_0, vocab=True)
        os.replace(path + ".part", path)
    print(",".join(paths))


if __name__ == "__main__":
    main()
