"""headway.transformers.Cache: a transformers Cache whose layers keep K and V in headway's own
KV caches (headway.KvCache, one per layer and batch row), stored as kv_dtype ("q8_0", "q4_0",
"f16", "bf16" or "f32"), and attend over them with headway's fused kernels.

    cache = headway.transformers.Cache(model.config, kv_dtype="q8_0")
    model.generate(ids, past_key_values=cache, ...)

The model must run with attn_implementation="headway": a layer's update() keeps the new K/V
aside and hands them on tagged with the layer; the attention function finds the layer through
that tag, appends the new tokens to the layer's caches and attends. The first call of a layer
(the prompt) attends densely over the prompt's K/V rounded to kv_dtype, under transformers'
mask, and then stores only the tokens some query sees: left padding never enters a cache, so a
padded batch decodes without a mask. Each row's cache is planned for max_cache_len tokens
(default: the config's max_position_embeddings) when the layer first runs; its memory is
allocated then, once. crop(-n) drops the last n tokens (headway.KvCache.truncate: no copy, no
allocation; a sliding layer's ring only while it still holds the window a later token sees).
Beam-search reordering and batch reshuffling raise Unsupported.
"""

from typing import Any, Optional

import numpy as np
import torch
from transformers import cache_utils

from . import FailedPrecondition, InvalidArgument, KvCache, OutOfRange, Unsupported, attend

KV_DTYPES = ("q8_0", "q4_0", "f16", "bf16", "f32")


def _fallback() -> str:
    return "use transformers' DynamicCache (past_key_values=None) instead"


def _f32(t: torch.Tensor) -> np.ndarray:
    return t.detach().to(torch.float32).contiguous().numpy()


def _seen_prefix(mask: np.ndarray, n_new: int) -> int:
    """How many leading keys of the new tokens no query sees (left padding); keys hidden
    anywhere else cannot be dropped from a cache and raise."""
    new = mask[:, -n_new:]
    seen = (new if new.dtype == np.bool_ else new > -1e30).any(axis=0)
    first = int(np.argmax(seen)) if seen.any() else n_new
    if not seen[first:].all():
        raise Unsupported("attention_mask hides keys after the first visible one (not left padding); "
                          f"headway.transformers.Cache stores left-padded batches only ({_fallback()})")
    return first


class HeadwayLayer(cache_utils.CacheLayerMixin):
    """One decoder layer's cache: a headway.KvCache per batch row, made at the layer's first
    attention call (when its scale, softcap and window are known)."""

    is_sliding = False
    is_compileable = False

    def __init__(self, kv_dtype: str = "q8_0", max_cache_len: int = 4096, threads: int = 1, ring_chunk: int = 64,
                 **kwargs: Any):
        super().__init__()
        self.ring_chunk = int(ring_chunk)  # the most new tokens a sliding layer takes per call after the prompt
        self.kv_dtype = kv_dtype
        self.max_cache_len = int(max_cache_len)
        self.threads = int(threads)
        self.caches: Optional[list] = None
        self.window = 0
        self.cumulative_length = 0
        self.batch_size = -1
        self.pending = False  # K/V handed on by update() and not yet attended

    def lazy_initialization(self, key_states: torch.Tensor, value_states: torch.Tensor) -> None:
        self.device = key_states.device
        self.dtype = key_states.dtype
        self.batch_size = key_states.shape[0]
        self.is_initialized = True

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any,
               **kwargs: Any) -> tuple[torch.Tensor, torch.Tensor]:
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        if key_states.dim() != 4 or key_states.shape[0] != self.batch_size:
            raise InvalidArgument(f"key_states: shape {tuple(key_states.shape)}, expected ({self.batch_size}, H_kv, "
                                  "T, D) [B, H_kv, T, D] with the batch the cache started with")
        if self.pending:
            raise FailedPrecondition("headway.transformers.Cache: the last K/V this layer handed on never reached "
                                     "headway's attention function; run the model with attn_implementation=\"headway\"")
        self.pending = True
        self.cumulative_length += key_states.shape[-2]
        key_states._headway_layer = self  # the attention function's way to this layer
        return key_states, value_states

    def _make_caches(self, heads: int, kv_heads: int, head_dim: int, window: int, softcap: float,
                     scale: Optional[float]) -> None:
        spec = (f"d_model={heads * head_dim} heads={heads} kv_heads={kv_heads} head_dim={head_dim} "
                f"ctx={self.max_cache_len} layers=1 rope=none kv_dtype={self.kv_dtype}")
        # A sliding layer is a ring of window + ring_chunk - 1 rows (headway's plan for calls of
        # at most ring_chunk tokens); a full layer holds max_cache_len rows.
        self.window = window if window and window < self.max_cache_len else 0
        max_tokens = 0
        if self.window:
            spec += f" window={self.window} layer_types=s"
            max_tokens = min(self.ring_chunk, self.max_cache_len)
        if softcap:
            spec += f" softcap={softcap!r}"
        if scale is not None:
            spec += f" scale={scale!r}"
        self.spec = spec
        self.caches = [KvCache(spec=spec, threads=self.threads, max_tokens=max_tokens) for _ in range(self.batch_size)]

    def _store_prompt(self, cache: Any, k: np.ndarray, v: np.ndarray) -> None:
        """The prompt's visible K/V [n, H_kv, D] into an empty cache: a ring takes the last
        window - 1 (all a later token can see), ring_chunk at a time."""
        n = k.shape[0]
        keep = min(n, self.window - 1) if self.window else n
        if self.window and n > self.max_cache_len:
            raise InvalidArgument(f"prompt of {n} tokens: past max_cache_len {self.max_cache_len}")
        cache.reset(n - keep)  # positions only order the tokens (no RoPE here)
        step = self.ring_chunk if self.window else max(keep, 1)
        for at in range(n - keep, n, step):
            cache.append(k[at : at + step], v[at : at + step])

    def attend(self, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, mask: Optional[torch.Tensor], *,
               window: int, softcap: float, scale: Optional[float], sinks: Optional[np.ndarray]) -> torch.Tensor:
        """Appends the new K/V [B, H_kv, T, D] to each row's cache and attends query [B, H, T, D]
        over it; returns [B, T, H, D] in query's dtype."""
        self.pending = False
        batch, heads, q_len, head_dim = query.shape
        kv_heads, n_new = key.shape[1], key.shape[2]
        if n_new != q_len:
            raise InvalidArgument(f"key: {n_new} new tokens for {q_len} queries; headway.transformers.Cache "
                                  "expects one key per query")
        if self.caches is None:
            self._make_caches(heads, kv_heads, head_dim, window, softcap, scale)
        q = _f32(query.transpose(1, 2))  # [B, T, H, D]
        k = _f32(key.transpose(1, 2))  # [B, T, H_kv, D]
        v = _f32(value.transpose(1, 2))
        out = torch.empty((batch, q_len, heads, head_dim), dtype=torch.float32)
        with torch.no_grad():
            for b, cache in enumerate(self.caches):
                m = None
                if mask is not None:
                    m = mask[b if mask.shape[0] > 1 else 0, 0]
                    m = m.contiguous().numpy() if m.dtype == torch.bool else _f32(m)
                if self.cumulative_length == n_new:
                    # The prompt: dense over its own K/V (rounded as the cache will hold them),
                    # then only the keys some query sees enter the cache.
                    o = attend(q[b], k[b], v[b], causal=m is None, window=window, softcap=softcap, scale=scale,
                               sinks=sinks, kv_dtype=self.kv_dtype, mask=None if m is None else m[:, -n_new:],
                               threads=self.threads)
                    first = 0 if m is None else _seen_prefix(m, n_new)
                    self._store_prompt(cache, k[b, first:], v[b, first:])
                else:
                    cache.append(k[b], v[b])
                    o = cache.attend(q[b], sinks=sinks)
                out[b] = torch.from_numpy(o)
        return out.to(query.dtype)

    def get_mask_sizes(self, query_length: int) -> tuple[int, int]:
        return self.cumulative_length + query_length, 0

    def get_seq_length(self) -> int:
        return self.cumulative_length

    def get_max_length(self) -> int:
        return self.max_cache_len

    @property
    def is_croppable(self) -> bool:
        """Whether any crop can put this layer back as it was: a full layer always; a sliding layer's
        ring while it holds every token since the prompt (never wrapped, no prompt token left out)."""
        return not self.window or all(c.start_position == 0 and c.size <= c.rows for c in self.caches or [])

    def _crop_to(self, tokens_to_remove: int) -> int:
        """The length crop(tokens_to_remove) leaves: -n drops the last n tokens, 0 none, a positive
        value is the length to keep (the older transformers' crop(max_length))."""
        n = int(tokens_to_remove)
        length = self.cumulative_length
        keep = length + n if n <= 0 else n
        if keep < 0 or keep > length:
            raise OutOfRange(f"crop({n}): the cache holds {length} tokens; crop(-n) removes n <= {length} of them, "
                             f"crop(k) keeps the first k <= {length}")
        return keep

    def _check_crop(self, keep: int) -> None:
        """Raises (changing nothing) where a row's cache cannot drop cumulative_length - keep tokens."""
        removed = self.cumulative_length - keep
        if removed == 0 or keep == 0 or self.caches is None:
            return
        if self.pending:
            raise FailedPrecondition("crop: this layer handed on K/V that never reached headway's attention function")
        for b, cache in enumerate(self.caches):
            size, start, rows = cache.size, cache.start_position, cache.rows
            if removed > size:
                raise Unsupported(f"crop: batch row {b} holds {size} tokens after its left padding; removing "
                                  f"{removed} would reach into the padding ({_fallback()})")
            if not self.window:
                continue
            # A ring holds the tokens from start + max(0, size - rows) (the prompt's first start tokens
            # were never stored); the next token sees the window - 1 before it.
            held_from = start + max(0, size - rows)
            needed_from = max(0, start + size - removed - (self.window - 1))
            if needed_from < held_from:
                most = max(0, min(size, start + size - (self.window - 1) - held_from))
                raise Unsupported(f"crop: a sliding layer (window {self.window}) keeps its last {rows} tokens in a "
                                  f"ring and no longer holds token {needed_from} that the next token would see "
                                  f"after removing {removed} of {self.cumulative_length} (batch row {b} can remove "
                                  f"at most {most} now); nothing changed ({_fallback()})")

    def crop(self, tokens_to_remove: int) -> None:
        """Drops the last -tokens_to_remove tokens (transformers' crop(-n)); a positive value is the
        length to keep. Raises OutOfRange past the length and Unsupported where a ring no longer holds
        what the next token would see, changing nothing."""
        keep = self._crop_to(tokens_to_remove)
        self._check_crop(keep)
        if keep == self.cumulative_length:
            return
        if keep == 0:
            self.reset()
            return
        removed = self.cumulative_length - keep
        for cache in self.caches or []:
            cache.truncate(cache.size - removed)
        self.cumulative_length = keep

    def reset(self) -> None:
        for cache in self.caches or []:
            cache.reset()
        self.cumulative_length = 0
        self.pending = False

    def offload(self) -> None:
        pass

    def prefetch(self) -> None:
        pass

    def reorder_cache(self, beam_idx: torch.LongTensor) -> None:
        raise Unsupported(f"reorder_cache: headway.transformers.Cache does not take beam search ({_fallback()})")

    def batch_repeat_interleave(self, repeats: int) -> None:
        if repeats != 1:
            raise Unsupported(f"batch_repeat_interleave: headway.transformers.Cache keeps its batch ({_fallback()})")

    def batch_select_indices(self, indices: torch.Tensor) -> None:
        raise Unsupported(f"batch_select_indices: headway.transformers.Cache keeps its batch ({_fallback()})")


class Cache(cache_utils.Cache):
    """transformers Cache over headway's KV caches: Cache(config, kv_dtype="q8_0",
    max_cache_len=None, threads=1, ring_chunk=64); config is the model's (its text config is
    used). A sliding layer is a ring of window + ring_chunk - 1 rows and takes at most ring_chunk
    new tokens per call after the prompt."""

    def __init__(self, config: Any, kv_dtype: str = "q8_0", max_cache_len: Optional[int] = None, threads: int = 1,
                 ring_chunk: int = 64):
        if kv_dtype not in KV_DTYPES:
            raise InvalidArgument(f"kv_dtype {kv_dtype!r}: expected one of {', '.join(KV_DTYPES)}")
        text = config.get_text_config() if hasattr(config, "get_text_config") else config
        impl = getattr(text, "_attn_implementation", None)
        if impl not in (None, "headway"):
            raise Unsupported(f"config: attn_implementation is {impl!r}; headway.transformers.Cache needs the model "
                              "loaded with attn_implementation=\"headway\" (after headway.transformers.register())")
        n_layers = getattr(text, "num_hidden_layers", None)
        if not isinstance(n_layers, int) or n_layers < 1:
            raise InvalidArgument(f"config: num_hidden_layers {n_layers!r} is not a positive layer count")
        if max_cache_len is None:
            max_cache_len = getattr(text, "max_position_embeddings", None) or 4096
        if int(max_cache_len) < 1:
            raise InvalidArgument(f"max_cache_len = {max_cache_len}: must be at least 1")
        if int(threads) < 1:
            raise InvalidArgument(f"threads = {threads}: must be at least 1")
        if int(ring_chunk) < 1:
            raise InvalidArgument(f"ring_chunk = {ring_chunk}: must be at least 1")
        self.kv_dtype = kv_dtype
        layers = [HeadwayLayer(kv_dtype, int(max_cache_len), int(threads), int(ring_chunk)) for _ in range(n_layers)]
        super().__init__(layers=layers)

    def crop(self, tokens_to_remove: int) -> None:
        """Drops the last -tokens_to_remove tokens of every layer (transformers' crop(-n), e.g. after
        assisted decoding rejects candidates); a positive value is the length to keep. Every layer is
        checked before any changes: on an error (OutOfRange past the length, Unsupported where a
        sliding layer's ring no longer holds what the next token would see) nothing changed."""
        keeps = [layer._crop_to(tokens_to_remove) for layer in self.layers]
        for layer, keep in zip(self.layers, keeps):
            layer._check_crop(keep)
        for layer in self.layers:
            layer.crop(tokens_to_remove)

    def kv_bytes(self) -> int:
        """Bytes the layers' K/V storage takes (what the caches made so far hold allocated)."""
        total = 0
        for layer in self.layers:
            for cache in layer.caches or []:
                total += int(cache.plan["kv_cache_bytes"])
        return total
