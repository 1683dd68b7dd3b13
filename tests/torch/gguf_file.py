"""A GGUF file written the way llama.cpp's converter writes one, for the attention tensors only.

Metadata under `{arch}.*` from a Hugging Face config.json dict; tensors `blk.N.attn_*` in ggml's
dimension order (fastest-varying first), with the Q/K rows of "llama" permuted as
convert_hf_to_gguf.py does so that ggml's adjacent-pair RoPE computes Hugging Face's rotate-half.
Qwen3.5 (`qwen35`) as its converter writes it: which layers are linear attention
(attention.recurrent_layers from layer_types, full_attention_interval) and their shape (ssm.*),
the rotated dims, and the q/k norm weights with their 1 + w added.
"""
import struct

import torch

GGUF_U32, GGUF_F32, GGUF_BOOL, GGUF_STRING, GGUF_ARRAY = 4, 6, 7, 8, 9
ARCHS = {"qwen3_5_text": "qwen35"}  # config.json's model_type -> llama.cpp's architecture
GGML_TYPES = {torch.float32: 0, torch.float16: 1, torch.bfloat16: 30}
GGUF_NAMES = {"q_proj": "attn_q", "k_proj": "attn_k", "v_proj": "attn_v", "o_proj": "attn_output",
              "q_norm": "attn_q_norm", "k_norm": "attn_k_norm"}


def tensor_bytes(t):
    if t.dtype == torch.bfloat16:  # numpy has no bfloat16: its bits as int16
        return t.contiguous().view(torch.int16).numpy().tobytes()
    return t.contiguous().numpy().tobytes()


def gguf_string(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def llama_permute(w, n_head):
    """convert_hf_to_gguf.py's LlamaModel.permute: rows of each head reordered so that ggml's
    adjacent-pair RoPE computes what HF's rotate-half does."""
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def metadata(cfg, n_layers):
    arch = ARCHS.get(cfg["model_type"], cfg["model_type"])
    kvs = [("general.architecture", GGUF_STRING, arch), ("general.name", GGUF_STRING, "check"),
           (f"{arch}.context_length", GGUF_U32, cfg["max_position_embeddings"]),
           (f"{arch}.embedding_length", GGUF_U32, cfg["hidden_size"]),
           (f"{arch}.block_count", GGUF_U32, n_layers),
           (f"{arch}.attention.head_count", GGUF_U32, cfg["num_attention_heads"]),
           (f"{arch}.attention.head_count_kv", GGUF_U32, cfg["num_key_value_heads"]),
           (f"{arch}.rope.freq_base", GGUF_F32, cfg.get("rope_theta", 10000.0)),
           (f"{arch}.attention.layer_norm_rms_epsilon", GGUF_F32, cfg["rms_norm_eps"])]
    if "head_dim" in cfg:
        kvs += [(f"{arch}.attention.key_length", GGUF_U32, cfg["head_dim"]),
                (f"{arch}.attention.value_length", GGUF_U32, cfg["head_dim"])]
    if arch == "qwen35":
        head_dim = cfg.get("head_dim", 256)
        kvs.append((f"{arch}.rope.dimension_count", GGUF_U32, int(head_dim * cfg.get("partial_rotary_factor", 0.25))))
        kvs.append((f"{arch}.full_attention_interval", GGUF_U32, cfg.get("full_attention_interval", 4)))
        if "layer_types" in cfg:
            kvs.append((f"{arch}.attention.recurrent_layers", GGUF_ARRAY,
                        [t == "linear_attention" for t in cfg["layer_types"]]))
        # The Gated DeltaNet layers' shape (Qwen3_5TextConfig's defaults where the config is silent).
        value_heads = cfg.get("linear_num_value_heads", 32)
        kvs += [(f"{arch}.ssm.conv_kernel", GGUF_U32, cfg.get("linear_conv_kernel_dim", 4)),
                (f"{arch}.ssm.state_size", GGUF_U32, cfg.get("linear_key_head_dim", 128)),
                (f"{arch}.ssm.group_count", GGUF_U32, cfg.get("linear_num_key_heads", 16)),
                (f"{arch}.ssm.time_step_rank", GGUF_U32, value_heads),
                (f"{arch}.ssm.inner_size", GGUF_U32, value_heads * cfg.get("linear_value_head_dim", 128))]
    return kvs


def kv_value(typ, value):
    if typ == GGUF_STRING:
        return gguf_string(value)
    if typ == GGUF_ARRAY:  # of bools
        return struct.pack("<IQ", GGUF_BOOL, len(value)) + bytes(int(v) for v in value)
    return struct.pack("<I" if typ == GGUF_U32 else "<f", value)


def write_gguf(path, cfg, layers, alignment=32):
    """cfg: the config.json dict; layers: per layer, {"q_proj.weight": tensor, ...}."""
    arch = ARCHS.get(cfg["model_type"], cfg["model_type"])
    kvs = metadata(cfg, len(layers))
    out = bytearray(b"GGUF" + struct.pack("<IQQ", 3, 0, len(kvs)))
    for key, typ, value in kvs:
        out += gguf_string(key) + struct.pack("<I", typ)
        out += kv_value(typ, value)
    tensors = []
    for i, w in enumerate(layers):
        for name, t in w.items():
            proj, kind = name.split(".")
            if arch == "llama" and proj == "q_proj":
                t = llama_permute(t, cfg["num_attention_heads"])
            if arch == "llama" and proj == "k_proj":
                t = llama_permute(t, cfg["num_key_value_heads"])
            if arch == "qwen35" and proj in ("q_norm", "k_norm"):  # 1-D tensors stay f32, as the converter keeps them
                t = (t.to(torch.float64) + 1).to(torch.float32)
            tensors.append((f"blk.{i}.{GGUF_NAMES[proj]}.{kind}", t))
    struct.pack_into("<Q", out, 8, len(tensors))
    data, infos = bytearray(), bytearray()
    for name, t in tensors:
        data += b"\0" * (-len(data) % alignment)
        ne = list(reversed(t.shape))  # ggml: fastest-varying dim first
        infos += gguf_string(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", n) for n in ne)
        infos += struct.pack("<IQ", GGML_TYPES[t.dtype], len(data))
        data += tensor_bytes(t)
    out += infos
    out += b"\0" * (-len(out) % alignment)
    with open(path, "wb") as f:
        f.write(out + data)
