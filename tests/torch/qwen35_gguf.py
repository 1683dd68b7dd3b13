"""A Qwen3.5 text model (transformers' Qwen3_5ForCausalLM) written as a GGUF the way llama.cpp's
converter (conversion/qwen.py: Qwen3_5TextModel) writes qwen35: metadata under `qwen35.*` (the
Gated DeltaNet shape in ssm.*, recurrent_layers, the MRoPE sections llama.cpp requires), A as
−exp(A_log), dt_bias as ssm_dt.bias, conv1d squeezed, the norms but the gated one with their 1
added, and the value heads reordered to tile the key heads (_reorder_v_heads). Matrices in f32,
f16 or a ggml block type (gguf-py's quantize); the module's weights become the values the file
holds, so that transformers runs on them. With `vocab`, a tokenizer section of placeholder tokens
too, which llama.cpp needs to load the file (headway's logits and bench read ids alone).
"""
import numpy as np
import torch


def reorder_v_heads(x, dim, n_k, per_k, head_dim):
    """convert_hf_to_gguf.py's _reorder_v_heads: value heads grouped by key head (h = kh·per_k + j)
    become tiled (j·n_k + kh), along `dim`."""
    shape = list(x.shape)
    x = x.reshape(*shape[:dim], n_k, per_k, head_dim, *shape[dim + 1:])
    return x.transpose(dim, dim + 1).reshape(shape)


def write_qwen35_gguf(path, model, qtype, vocab=False):
    """The model as a qwen35 GGUF (module docstring); its weights become what the file holds."""
    import gguf
    cfg = model.config
    arch = "qwen35"
    w = gguf.GGUFWriter(path, arch)
    w.add_uint32(f"{arch}.context_length", cfg.max_position_embeddings)
    w.add_uint32(f"{arch}.embedding_length", cfg.hidden_size)
    w.add_uint32(f"{arch}.block_count", cfg.num_hidden_layers)
    w.add_uint32(f"{arch}.feed_forward_length", cfg.intermediate_size)
    w.add_uint32(f"{arch}.attention.head_count", cfg.num_attention_heads)
    w.add_uint32(f"{arch}.attention.head_count_kv", cfg.num_key_value_heads)
    w.add_uint32(f"{arch}.attention.key_length", cfg.head_dim)
    w.add_uint32(f"{arch}.attention.value_length", cfg.head_dim)
    w.add_uint32(f"{arch}.rope.dimension_count",
                 int(cfg.head_dim * cfg.rope_parameters.get("partial_rotary_factor", 0.25)))
    w.add_float32(f"{arch}.rope.freq_base", float(cfg.rope_parameters["rope_theta"]))
    w.add_float32(f"{arch}.attention.layer_norm_rms_epsilon", cfg.rms_norm_eps)
    w.add_array(f"{arch}.attention.recurrent_layers", [t == "linear_attention" for t in cfg.layer_types])
    w.add_uint32(f"{arch}.full_attention_interval", 4)
    w.add_uint32(f"{arch}.ssm.conv_kernel", cfg.linear_conv_kernel_dim)
    w.add_uint32(f"{arch}.ssm.state_size", cfg.linear_key_head_dim)
    w.add_uint32(f"{arch}.ssm.group_count", cfg.linear_num_key_heads)
    w.add_uint32(f"{arch}.ssm.time_step_rank", cfg.linear_num_value_heads)
    w.add_uint32(f"{arch}.ssm.inner_size", cfg.linear_value_head_dim * cfg.linear_num_value_heads)
    w.add_array(f"{arch}.rope.dimension_sections", [11, 11, 10, 0])  # the converter's default for text
    if vocab:
        w.add_tokenizer_model("llama")
        w.add_token_list([f"<t{i}>" for i in range(cfg.vocab_size)])
        w.add_token_scores([0.0] * cfg.vocab_size)
        w.add_token_types([1] * cfg.vocab_size)
    n_k, n_v = cfg.linear_num_key_heads, cfg.linear_num_value_heads
    per_k, dk, dv = n_v // n_k, cfg.linear_key_head_dim, cfg.linear_value_head_dim
    names = {"model.embed_tokens.weight": "token_embd.weight", "model.norm.weight": "output_norm.weight",
             "lm_head.weight": "output.weight"}
    per_layer = {"self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v",
                 "self_attn.o_proj": "attn_output", "self_attn.q_norm": "attn_q_norm",
                 "self_attn.k_norm": "attn_k_norm", "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up",
                 "mlp.down_proj": "ffn_down", "input_layernorm": "attn_norm",
                 "post_attention_layernorm": "post_attention_norm", "linear_attn.in_proj_qkv": "attn_qkv",
                 "linear_attn.in_proj_z": "attn_gate", "linear_attn.in_proj_b": "ssm_beta",
                 "linear_attn.in_proj_a": "ssm_alpha", "linear_attn.out_proj": "ssm_out",
                 "linear_attn.norm": "ssm_norm", "linear_attn.conv1d": "ssm_conv1d"}
    new_state = {}
    for name, tensor in model.state_dict().items():
        x = tensor.detach().to(torch.float64)
        shift = 0.0
        if name in names:
            gname = names[name]
            shift = 1.0 if name == "model.norm.weight" else 0.0
        elif name.endswith(".A_log") or name.endswith(".dt_bias"):
            i = name.split(".")[2]
            gname = f"blk.{i}.ssm_a" if name.endswith(".A_log") else f"blk.{i}.ssm_dt.bias"
        else:
            parts = name.split(".")  # model.layers.{i}.{module}.weight
            gname = f"blk.{parts[2]}.{per_layer['.'.join(parts[3:-1])]}.{parts[-1]}"
            shift = 1.0 if name.endswith("norm.weight") and "linear_attn" not in name else 0.0
        y = x.squeeze(1) if "conv1d" in name else x
        reordered = per_k > 1 and "linear_attn." in name

        def tile(t, inverse=False):  # the converter's value-head order, or back from it
            a, b = (per_k, n_k) if inverse else (n_k, per_k)
            if "in_proj_qkv" in name or "conv1d" in name:
                return torch.cat([t[:2 * n_k * dk], reorder_v_heads(t[2 * n_k * dk:], 0, a, b, dv)])
            if "in_proj_z" in name:
                return reorder_v_heads(t, 0, a, b, dv)
            if "in_proj_b" in name or "in_proj_a" in name or name.endswith((".A_log", ".dt_bias")):
                return reorder_v_heads(t.reshape(n_v, -1), 0, a, b, 1).reshape(t.shape)
            if "out_proj" in name:
                return reorder_v_heads(t, 1, a, b, dv)
            return t
        if reordered:
            y = tile(y)
        if name.endswith(".A_log"):
            y = -torch.exp(y)
        data = (y + shift).to(torch.float32).numpy()
        if "conv1d" in name:  # llama.cpp's ssm_conv reads f32 taps alone (the converter keeps them so)
            w.add_tensor(gname, data)
        elif qtype == gguf.GGMLQuantizationType.F16 and data.ndim == 2:
            w.add_tensor(gname, data.astype(np.float16))
            data = data.astype(np.float16).astype(np.float32)
        elif qtype != gguf.GGMLQuantizationType.F32 and data.ndim == 2 and data.shape[-1] % 32 == 0:
            q = gguf.quants.quantize(data, qtype)
            w.add_tensor(gname, q, raw_dtype=qtype)
            data = np.asarray(gguf.quants.dequantize(q, qtype), dtype=np.float32).reshape(data.shape)
        else:
            w.add_tensor(gname, data)
        # What the file holds, back in the module's layout.
        stored = torch.from_numpy(data.astype(np.float64)) - shift
        if name.endswith(".A_log"):
            stored = torch.log(-stored)
        if reordered:
            stored = tile(stored, inverse=True)
        new_state[name] = stored.reshape(tensor.shape)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    model.load_state_dict(new_state, strict=False)
