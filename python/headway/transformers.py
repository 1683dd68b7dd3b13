"""headway as an attention backend of Hugging Face transformers (needs torch and transformers).

    import headway.transformers
    headway.transformers.register()
    model = AutoModelForCausalLM.from_pretrained(name, attn_implementation="headway")

register() adds "headway" to transformers' AttentionInterface, so every attention layer of a
model loaded (or switched with model.set_attn_implementation("headway")) with that name runs
headway.attend(), and to AttentionMaskInterface with transformers' own boolean mask builder
(sdpa_mask): a batch without padding reaches the attention function with no mask at all
(causal and the sliding window are then headway's own parameters), a padded one with a boolean
[B, 1, Q, KV] mask that headway reads in place.

The attention function takes what transformers passes: query [B, H, Q, D], key and value
[B, H_kv, KV, D] (GQA: H_kv divides H; K/V are never expanded), and returns [B, Q, H, D] in the
query's dtype. Keyword arguments: scaling, sliding_window, softcap, s_aux (gpt-oss sink logits,
one per query head), is_causal (else the module's is_causal, else True). float32 tensors on the
CPU whose [B, Q, H, D] / [B, KV, H_kv, D] views are contiguous are read in place; other layouts
and float64 / bfloat16 are copied once to float32, float16 K/V are read as float16. The GIL is
released while headway computes. What headway cannot take (another device, an integer dtype,
shapes that disagree, dropout while training) raises headway.InvalidArgument or
headway.Unsupported naming the argument; attn_implementation="sdpa" is the fallback.

Cache(config, kv_dtype="q8_0") is a transformers Cache over headway's own KV caches (see
headway._transformers_cache): model.generate(ids, cache=Cache(model.config)) decodes over q8_0,
q4_0, f16, bf16 or f32 blocks with headway's fused attention. Its layers tag the K/V they hand
on, and this function attends through the tagged layer.
"""

from typing import Any, Optional

import numpy as np
import torch

from . import InvalidArgument, Unsupported, attend
from ._transformers_cache import Cache, HeadwayLayer

__all__ = ["Cache", "HeadwayLayer", "attention_forward", "register", "set_threads"]

NAME = "headway"
_FALLBACK = 'load the model with attn_implementation="sdpa" to run it without headway'
_FLOAT_DTYPES = (torch.float32, torch.float64, torch.float16, torch.bfloat16)
_threads = 1


def set_threads(threads: int) -> None:
    """Threads each attention call uses (1 by default)."""
    global _threads
    if int(threads) < 1:
        raise InvalidArgument(f"threads = {threads}: must be at least 1")
    _threads = int(threads)


def _check_tensor(t: Any, name: str, layout: str) -> None:
    if not isinstance(t, torch.Tensor):
        raise InvalidArgument(f"{name}: expected a torch.Tensor {layout}, got {type(t).__name__}")
    if t.device.type != "cpu":
        raise Unsupported(f"{name}: a tensor on {t.device}; headway's transformers backend reads CPU tensors "
                          f"({_FALLBACK})")
    if t.dtype not in _FLOAT_DTYPES:
        raise Unsupported(f"{name}: dtype {t.dtype} is not supported (float32, float64, float16 or bfloat16; "
                          f"{_FALLBACK})")
    if t.dim() != 4:
        raise InvalidArgument(f"{name}: shape {tuple(t.shape)} has {t.dim()} dims, expected 4 {layout}")


def _as_numpy(t: torch.Tensor, allow_f16: bool) -> np.ndarray:
    """t as a C-contiguous float32 (or float16 when allowed) array, sharing t's memory when t
    already is one."""
    if t.dtype == torch.float32 or (allow_f16 and t.dtype == torch.float16):
        return t.contiguous().numpy()
    return t.to(torch.float32).contiguous().numpy()


def _mask_rows(mask: torch.Tensor, b: int, q_len: int, kv_len: int) -> np.ndarray:
    """Batch row b of a [B or 1, 1, Q, >= KV] mask as a [Q, KV] bool or float32 array."""
    m = mask[b if mask.shape[0] > 1 else 0, 0, :, :kv_len]
    if m.dtype == torch.bool:
        return m.contiguous().numpy()
    return m.to(torch.float32).contiguous().numpy()


def _check_mask(mask: Any, batch: int, q_len: int, kv_len: int) -> None:
    if not isinstance(mask, torch.Tensor):
        raise Unsupported(f"attention_mask: a {type(mask).__name__}; headway takes None or a boolean or additive "
                          f"[B, 1, Q, KV] tensor ({_FALLBACK})")
    if mask.dim() != 4 or mask.shape[0] not in (1, batch) or mask.shape[1] != 1 or mask.shape[2] != q_len \
            or mask.shape[3] < kv_len:
        raise InvalidArgument(f"attention_mask: shape {tuple(mask.shape)}, expected ({batch}, 1, {q_len}, {kv_len}) "
                              "[B, 1, Q, KV]")
    if mask.device.type != "cpu":
        raise Unsupported(f"attention_mask: a tensor on {mask.device} ({_FALLBACK})")
    if mask.dtype != torch.bool and mask.dtype not in _FLOAT_DTYPES:
        raise Unsupported(f"attention_mask: dtype {mask.dtype}; headway takes bool or a float additive mask")


def attention_forward(
    module: torch.nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: Optional[torch.Tensor],
    dropout: float = 0.0,
    scaling: Optional[float] = None,
    sliding_window: Optional[int] = None,
    softcap: Optional[float] = None,
    s_aux: Optional[torch.Tensor] = None,
    is_causal: Optional[bool] = None,
    **kwargs: Any,
) -> tuple[torch.Tensor, None]:
    """transformers' attention function contract: returns (output [B, Q, H, D], None)."""
    _check_tensor(query, "query", "[B, H, Q, D]")
    _check_tensor(key, "key", "[B, H_kv, KV, D]")
    _check_tensor(value, "value", "[B, H_kv, KV, D]")
    batch, heads, q_len, head_dim = query.shape
    kv_heads, kv_len = key.shape[1], key.shape[2]
    if key.shape[0] != batch or key.shape[3] != head_dim:
        raise InvalidArgument(f"key: shape {tuple(key.shape)}, expected ({batch}, H_kv, KV, {head_dim}) "
                              f"[B, H_kv, KV, D] with B and D of query {tuple(query.shape)}")
    if value.shape != key.shape:
        raise InvalidArgument(f"value: shape {tuple(value.shape)} differs from key's {tuple(key.shape)}")
    if kv_heads == 0 or heads % kv_heads != 0:
        raise InvalidArgument(f"key: {kv_heads} kv heads do not divide query's {heads} heads")
    if dropout and module is not None and module.training:
        raise Unsupported(f"dropout = {dropout} while training: headway runs inference only ({_FALLBACK})")
    if attention_mask is not None:
        _check_mask(attention_mask, batch, q_len, kv_len)
    if batch == 0 or q_len == 0:
        return query.new_zeros((batch, q_len, heads, head_dim)), None

    if is_causal is None:
        is_causal = getattr(module, "is_causal", True)
    # A mask from sdpa_mask already holds causal, the window and the padding.
    causal = bool(is_causal) and q_len > 1 and attention_mask is None
    window = int(sliding_window) if sliding_window and attention_mask is None else 0
    sinks = None
    if s_aux is not None:
        if not isinstance(s_aux, torch.Tensor) or s_aux.shape != (heads,):
            shape = tuple(s_aux.shape) if isinstance(s_aux, torch.Tensor) else type(s_aux).__name__
            raise InvalidArgument(f"s_aux: {shape}, expected a tensor ({heads},): one sink logit per query head")
        sinks = s_aux.detach().to(device="cpu", dtype=torch.float32).contiguous().numpy()
    options = dict(causal=causal, window=window, softcap=float(softcap or 0.0),
                   scale=None if scaling is None else float(scaling), sinks=sinks, threads=_threads)

    layer = getattr(key, "_headway_layer", None)
    if layer is not None:
        if not is_causal:
            raise Unsupported(f"is_causal = False: headway.transformers.Cache holds decoder caches ({_FALLBACK})")
        return layer.attend(query, key, value, attention_mask, window=int(sliding_window or 0),
                            softcap=options["softcap"], scale=options["scale"], sinks=sinks), None

    with torch.no_grad():
        q = _as_numpy(query.detach().transpose(1, 2), allow_f16=False)  # [B, Q, H, D]
        k = _as_numpy(key.detach().transpose(1, 2), allow_f16=True)  # [B, KV, H_kv, D]
        v = _as_numpy(value.detach().transpose(1, 2), allow_f16=True)
        if k.dtype != v.dtype:
            k, v = k.astype(np.float32), v.astype(np.float32)
        if attention_mask is None and batch > 1:
            # One packed call: every sequence attends within itself.
            o = attend(q.reshape(batch * q_len, heads, head_dim), k.reshape(batch * kv_len, kv_heads, head_dim),
                       v.reshape(batch * kv_len, kv_heads, head_dim), seq_lens=[q_len] * batch,
                       kv_seq_lens=[kv_len] * batch, **options)
            out = torch.from_numpy(o).view(batch, q_len, heads, head_dim)
        elif batch == 1:
            mask = None if attention_mask is None else _mask_rows(attention_mask, 0, q_len, kv_len)
            out = torch.from_numpy(attend(q[0], k[0], v[0], mask=mask, **options)).unsqueeze(0)
        else:
            out = torch.empty((batch, q_len, heads, head_dim), dtype=torch.float32)
            for b in range(batch):
                mask = _mask_rows(attention_mask, b, q_len, kv_len)
                out[b] = torch.from_numpy(attend(q[b], k[b], v[b], mask=mask, **options))
    return out.to(query.dtype), None


def register() -> None:
    """Adds "headway" to transformers' AttentionInterface and AttentionMaskInterface (idempotent)."""
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

    AttentionInterface.register(NAME, attention_forward)
    AttentionMaskInterface.register(NAME, sdpa_mask)
