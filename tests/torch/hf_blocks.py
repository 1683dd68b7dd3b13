"""Hugging Face's own attention module of one layer, built from a config.json, as the reference.

The module class (`{Prefix}Attention`) and its rotary embedding class (`{Prefix}RotaryEmbedding`)
come from the family's modeling file in transformers; FAMILIES maps a model_type to that prefix,
so a new family is one entry there. The module runs in float64 on the stored weights; what it
computes in float32 by its own code stays so (the RoPE angles in the rotary class, the softmax
of eager attention), exactly as in the model.
"""
import importlib
import inspect
import math

import torch
import transformers
from transformers import masking_utils

# model_type -> the class prefix in transformers/models/<model_type>/modeling_<model_type>.py
FAMILIES = {
    "llama": "Llama",
    "qwen2": "Qwen2",
    "qwen3": "Qwen3",
    "mistral": "Mistral",
    "mixtral": "Mixtral",
    "gemma": "Gemma",
    "gemma2": "Gemma2",
    "gemma3_text": "Gemma3",
    "smollm3": "SmolLM3",
    "stablelm": "StableLm",
    "olmo": "Olmo",
    "gpt_oss": "GptOss",
    "modernbert": "ModernBert",
    "qwen3_5_text": "Qwen3_5",
    "qwen3_next": "Qwen3Next",
    "gemma3n_text": "Gemma3n",
    "gemma4_text": "Gemma4",
    "deepseek_v2": "DeepseekV2",
    "deepseek_v3": "DeepseekV3",
    "minicpm3": "MiniCPM3",
    "youtu": "Youtu",
}


# model_types whose modeling file is another's (the text model of a multimodal family)
MODULES = {"gemma3_text": "gemma3", "qwen3_5_text": "qwen3_5", "gemma3n_text": "gemma3n", "gemma4_text": "gemma4"}
# classes not named {Prefix}Attention and {Prefix}RotaryEmbedding
ATTENTION = {"gemma3n_text": "Gemma3nTextAttention", "gemma4_text": "Gemma4TextAttention"}
ROTARY = {"qwen3_5_text": "Qwen3_5TextRotaryEmbedding", "gemma4_text": "Gemma4TextRotaryEmbedding"}


def family_classes(model_type):
    name = MODULES.get(model_type, model_type)
    module = importlib.import_module(f"transformers.models.{name}.modeling_{name}")
    prefix = FAMILIES[model_type]
    return (getattr(module, ATTENTION.get(model_type, prefix + "Attention")),
            getattr(module, ROTARY.get(model_type, prefix + "RotaryEmbedding")))


def load_config(model_dir):
    """The config the model itself would read from model_dir/config.json, with eager attention
    (the reference implementation: scale, softcap, mask and softmax written out)."""
    config = transformers.AutoConfig.from_pretrained(model_dir)
    config._attn_implementation = "eager"
    return config


def randomize(module, gen, dtype):
    """Random weights in place, rounded to the stored dtype: projections ~ N(0, 1/fan_in), biases
    ~ N(0, 1/4), norm weights ~ 1 + N(0, 0.04), sink logits (gpt-oss) ~ N(0, 4), about the size of
    the scores, so that each takes a visible share of its rows' softmax. Returns {parameter name:
    stored tensor}."""
    stored = {}
    with torch.no_grad():
        for name, p in module.named_parameters():
            if "norm" in name:
                v = 1.0 + 0.2 * torch.randn(p.shape, generator=gen, dtype=torch.float64)
            elif name == "sinks":
                v = 2.0 * torch.randn(p.shape, generator=gen, dtype=torch.float64)
            elif name.endswith("weight"):
                v = torch.randn(p.shape, generator=gen, dtype=torch.float64) / math.sqrt(p.shape[1])
            else:
                v = 0.5 * torch.randn(p.shape, generator=gen, dtype=torch.float64)
            stored[name] = v.to(dtype)
            p.copy_(stored[name].to(p.dtype))
    return stored


def make_layer(config, layer_idx, gen, dtype):
    """The layer's attention module in float64 with random weights, and those weights as stored."""
    attention_class, _ = family_classes(config.model_type)
    module = attention_class(config, layer_idx=layer_idx).to(torch.float64).eval()
    return module, randomize(module, gen, dtype)


def layer_window(module, config):
    """The window the family's model masks this layer with: the module's own sliding_window where
    the family decides per layer (Qwen2/3, Gemma 2), else the config's (Mistral, Mixtral)."""
    if hasattr(module, "sliding_window"):
        return module.sliding_window
    return getattr(config, "sliding_window", None)


def mask_function(module, config):
    """masking_utils' function of the mask the family's model builds for this layer: causal, with its
    sliding window; or, for a bidirectional encoder (ModernBERT), every key, or |i - j| <= the
    config's half-window on its sliding layers (create_bidirectional_sliding_window_mask)."""
    if getattr(module, "is_causal", True) is False:
        if config.layer_types[module.layer_idx] == "sliding_attention":
            return masking_utils.sliding_window_bidirectional_mask_function(config.sliding_window)
        return masking_utils.bidirectional_mask_function
    window = layer_window(module, config)
    return masking_utils.sliding_window_causal_mask_function(window) if window else masking_utils.causal_mask_function


def additive_mask(t, fn):
    """[1, 1, t, t] for t tokens at the start of a fresh cache (keys are the same t tokens), from a
    masking_utils mask function, as eager_mask lays it out (0 where a key is seen, the dtype's
    lowest value where not)."""
    q = torch.arange(t).view(-1, 1)
    kv = torch.arange(t).view(1, -1)
    seen = fn(0, 0, q, kv)
    mask = torch.zeros(t, t, dtype=torch.float64).masked_fill(~seen, torch.finfo(torch.float64).min)
    return mask.view(1, 1, t, t)


def kv_producer(config, layer_idx):
    """The layer whose K/V a Gemma 3n / 4 layer past the first num_kv_shared_layers reads (the last
    earlier layer of its type before them), or None for a layer that computes its own."""
    shared = getattr(config, "num_kv_shared_layers", 0) or 0
    first_shared = config.num_hidden_layers - shared
    if not shared or layer_idx < first_shared:
        return None
    kinds = config.layer_types
    return max(j for j in range(first_shared) if kinds[j] == kinds[layer_idx])


@torch.no_grad()
def reference(config, module, x, start, producer=None):
    """y [T, d_model] float64 of the attention block over x [T, d_model] at positions start.. A layer
    that reads another's K/V (Gemma 3n / 4) gets producer's, run over the same x first."""
    _, rotary_class = family_classes(config.model_type)
    rotary = rotary_class(config)
    h = torch.from_numpy(x).to(torch.float64).unsqueeze(0)
    t = h.shape[1]
    position_ids = torch.arange(start, start + t).unsqueeze(0)
    if "layer_type" in inspect.signature(rotary.forward).parameters:  # RoPE per layer type (Gemma 3)
        embeddings = rotary(h, position_ids, layer_type=config.layer_types[module.layer_idx])
    else:
        embeddings = rotary(h, position_ids)  # (cos, sin), or DeepSeek-V2's complex freqs_cis
    kwargs = {}
    if "shared_kv_states" in inspect.signature(module.forward).parameters:  # Gemma 3n / 4
        kwargs["shared_kv_states"] = {}
    mask = additive_mask(t, mask_function(module, config))
    if producer is not None:  # it stores its K and V in shared_kv_states
        producer(h, position_embeddings=embeddings, attention_mask=mask, **kwargs)
    y, _ = module(h, position_embeddings=embeddings, attention_mask=mask, **kwargs)
    return y[0].numpy()
