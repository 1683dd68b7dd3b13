"""headway as ExecuTorch kernels (needs torch and the executorch wheel).

    import headway.executorch as hx
    hx.replace_attention(model)            # a transformers Llama-style model: attention on headway's ops
    ep = torch.export.export(hx.ExportableLM(model), (tokens, torch.tensor([0])))
    program = executorch.exir.to_edge(ep).to_executorch()
    hx.load_kernels()                       # libheadway_executorch.so into executorch.runtime's registry

The operators, in headway's own namespace (ExecuTorch's llama:: ones stay theirs: a second
registration of one name stops its runtime), each with a meta kernel for torch.export, an eager
CPU kernel over headway.attend, and an .out variant that to_executorch() picks and that
libheadway_executorch.so implements:

    headway::sdpa_with_kv_cache(query, key, value, key_cache, value_cache, start_pos, seq_len,
                                attn_mask=None, drpout_p=0.0, is_causal=False, scale=None)
        ExecuTorch's llama::sdpa_with_kv_cache: query [B, S, H, D], key and value [B, S, H_kv, D],
        caches [B, cache_rows, H_kv, D], all float32. Writes key and value at rows start_pos..
        of the caches, then attends the queries over the first start_pos + S rows (causal:
        query i sees rows j <= start_pos + i), or with attn_mask (additive float32 [S,
        cache_rows], never with is_causal) over every row. scale None: 1/sqrt(D). GQA: H_kv
        divides H. Returns [B, S, H, D].
    headway::sdpa_with_quantized_kv_cache(...the same...)
        the caches uint8 [B, cache_rows, H_kv, row_bytes] holding q8_0 or q4_0 rows of D values
        (row_bytes 34 or 18 per block of 32: quantized_cache(...) makes one), as headway's KV
        caches and headway.attend(kv_dtype=...) hold them; the kernels read the blocks in place.
    headway::update_cache(value, cache, start_pos)
        llama::update_cache: value [B, S, H_kv, D] float32 into rows start_pos.. of a float32 or
        q8_0 / q4_0 cache; returns a 1-element placeholder.

What headway cannot take raises headway.Unsupported, InvalidArgument or OutOfRange naming the
argument and its value, in eager mode, at export (the meta kernels check every static shape) and
in the ExecuTorch runtime (the kernel fails: execute(method, inputs) raises it with headway's
message, last_error() has it). The fallback is
ExecuTorch's own llama::sdpa_with_kv_cache (executorch.extension.llm.custom_ops).
"""

import ctypes
import os
from typing import Any, Optional

import numpy as np
import torch

from . import InvalidArgument, OutOfRange, Unsupported, _headway, attend

__all__ = [
    "ExportableLM",
    "HeadwayAttention",
    "HeadwaySDPA",
    "execute",
    "kernels_path",
    "last_error",
    "load_kernels",
    "quantized_cache",
    "replace_attention",
]

_FALLBACK = ("to run it without headway, export with ExecuTorch's llama::sdpa_with_kv_cache "
             "(executorch.extension.llm.custom_ops) instead")
_KERNELS = "libheadway_executorch.so"
_BLOCK = 32
_BLOCK_BYTES = {"q8_0": 34, "q4_0": 18}

_SDPA_ARGS = ("Tensor query, Tensor key, Tensor value, Tensor(a!) key_cache, Tensor(b!) value_cache, "
              "SymInt start_pos, SymInt seq_len, Tensor? attn_mask=None, float drpout_p=0.0, "
              "bool is_causal=False, float? scale=None")
_lib = torch.library.Library("headway", "DEF")
for _name in ("sdpa_with_kv_cache", "sdpa_with_quantized_kv_cache"):
    _lib.define(f"{_name}({_SDPA_ARGS}) -> Tensor")
    _lib.define(f"{_name}.out({_SDPA_ARGS}, *, Tensor(c!) out) -> Tensor(c!)")
_lib.define("update_cache(Tensor value, Tensor(a!) cache, SymInt start_pos) -> Tensor")
_lib.define("update_cache.out(Tensor value, Tensor(a!) cache, SymInt start_pos, *, Tensor(b!) out) -> Tensor(b!)")


def quantized_row_bytes(head_dim: int, kv_dtype: str) -> int:
    """Bytes of one q8_0 / q4_0 row of head_dim values (ceil(head_dim / 32) blocks)."""
    if kv_dtype not in _BLOCK_BYTES:
        raise InvalidArgument(f"kv_dtype '{kv_dtype}': give q8_0 or q4_0")
    return -(-int(head_dim) // _BLOCK) * _BLOCK_BYTES[kv_dtype]


def quantized_cache(batch: int, cache_rows: int, kv_heads: int, head_dim: int, kv_dtype: str = "q8_0") -> torch.Tensor:
    """A zeroed uint8 cache [batch, cache_rows, kv_heads, row_bytes] of q8_0 / q4_0 rows."""
    return torch.zeros((batch, cache_rows, kv_heads, quantized_row_bytes(head_dim, kv_dtype)), dtype=torch.uint8)


def _static(v: Any) -> Optional[int]:
    """v as an int when it is known (not a symbol of torch.export), else None."""
    if isinstance(v, torch.SymInt):  # int() would specialize a dynamic dimension
        return v.node.maybe_as_int()
    return int(v)


def _check_tensor(op: str, name: str, t: Any, dtype: torch.dtype, dtype_text: str, layout: str, dims: int = 4) -> None:
    if not isinstance(t, torch.Tensor):
        raise InvalidArgument(f"{op}: {name} is a {type(t).__name__}, expected a tensor {layout}")
    if t.dim() != dims:
        raise InvalidArgument(f"{op}: {name} has {t.dim()} dims, expected {dims} {layout}")
    if t.dtype != dtype:
        raise Unsupported(f"{op}: {name} has dtype {str(t.dtype).replace('torch.', '')}; headway takes {dtype_text} "
                          f"here ({_FALLBACK})")
    if t.device.type not in ("cpu", "meta"):
        raise Unsupported(f"{op}: {name} is on {t.device}; headway's ExecuTorch kernels run on the CPU ({_FALLBACK})")


def _cache_dtype(op: str, quantized: bool, row: int, head_dim: int) -> str:
    """The cache's storage from its rows: f32 (row = head_dim floats), q8_0 or q4_0 (row bytes)."""
    if not quantized:
        if row != head_dim:
            raise InvalidArgument(f"{op}: key_cache rows hold {row} values; head_dim is {head_dim}")
        return "f32"
    for kv_dtype in ("q8_0", "q4_0"):
        if row == quantized_row_bytes(head_dim, kv_dtype):
            return kv_dtype
    q8, q4 = quantized_row_bytes(head_dim, "q8_0"), quantized_row_bytes(head_dim, "q4_0")
    raise InvalidArgument(f"{op}: key_cache rows of {row} bytes are neither q8_0 ({q8} bytes) nor q4_0 ({q4} bytes) "
                          f"rows of head_dim {head_dim}")


def _check_start(op: str, start_pos: Any, seq_len: int, cache_rows: int, cache: str = "key_cache") -> None:
    start = _static(start_pos)
    if start is None:
        return
    if start < 0:
        raise OutOfRange(f"{op}: start_pos {start} is negative")
    if start + seq_len > cache_rows:
        raise OutOfRange(f"{op}: start_pos {start} + seq_len {seq_len} = {start + seq_len} goes past the cache's "
                         f"{cache_rows} rows ({cache}.size(1))")


def _check_sdpa(op: str, quantized: bool, query, key, value, key_cache, value_cache, start_pos, seq_len, attn_mask,
                drpout_p, is_causal, scale) -> str:
    """The checks of the C++ kernels (kernels.cc, sdpa_kv_cache.cc), with their messages; returns
    the cache's storage ("f32", "q8_0" or "q4_0")."""
    _check_tensor(op, "query", query, torch.float32, "float32", "[B, seq_len, n_heads, head_dim]")
    _check_tensor(op, "key", key, torch.float32, "float32", "[B, seq_len, n_kv_heads, head_dim]")
    _check_tensor(op, "value", value, torch.float32, "float32", "[B, seq_len, n_kv_heads, head_dim]")
    if quantized:
        cache_type = torch.uint8
        cache_text = "uint8 (q8_0 or q4_0 rows; float32 caches go to headway::sdpa_with_kv_cache)"
    else:
        cache_type = torch.float32
        cache_text = "float32 (q8_0 / q4_0 caches go to headway::sdpa_with_quantized_kv_cache)"
    _check_tensor(op, "key_cache", key_cache, cache_type, cache_text, "[B, cache_rows, n_kv_heads, row]")
    _check_tensor(op, "value_cache", value_cache, cache_type, cache_text, "[B, cache_rows, n_kv_heads, row]")
    batch, q_len, heads, head_dim = query.shape
    if key.shape != value.shape or key_cache.shape != value_cache.shape:
        raise InvalidArgument(f"{op}: key and value (and their caches) must have one shape")
    if key.shape[0] != batch or key.shape[1] != q_len or key.shape[3] != head_dim:
        raise InvalidArgument(f"{op}: key {list(key.shape)} does not match query {list(query.shape)} in batch, seq_len "
                              "or head_dim")
    kv_heads = key.shape[2]
    if key_cache.shape[0] != batch or key_cache.shape[2] != kv_heads:
        raise InvalidArgument(f"{op}: key_cache {list(key_cache.shape)} does not match key's batch {batch} and "
                              f"{kv_heads} kv heads")
    storage = _cache_dtype(op, quantized, key_cache.shape[3], head_dim)
    if _static(seq_len) is not None and _static(q_len) is not None and int(seq_len) != int(q_len):
        raise InvalidArgument(f"{op}: seq_len {int(seq_len)} differs from query.size(1) = {int(q_len)}")
    if drpout_p:
        raise Unsupported(f"{op}: drpout_p {drpout_p:g}: headway runs inference only ({_FALLBACK})")
    if kv_heads == 0 or heads % kv_heads != 0:
        raise InvalidArgument(f"{op}: query has {heads} heads and key {kv_heads} kv heads: {heads} is not divisible by "
                              f"{kv_heads} (GQA needs n_kv_heads to divide n_heads)")
    if head_dim == 0 or head_dim > 512:
        raise Unsupported(f"{op}: head_dim {head_dim} is not in 1..512 ({_FALLBACK})")
    cache_rows = key_cache.shape[1]
    if _static(q_len) is not None:
        _check_start(op, start_pos, int(q_len), int(cache_rows))
    if attn_mask is not None:
        if attn_mask.dim() != 2 or attn_mask.shape[0] != q_len or attn_mask.shape[1] != cache_rows:
            raise InvalidArgument(f"{op}: attn_mask must be [seq_len {q_len}, cache_rows {cache_rows}]")
        _check_tensor(op, "attn_mask", attn_mask, torch.float32, "float32 (additive)", "[seq_len, cache_rows]", dims=2)
        if is_causal:
            raise InvalidArgument(f"{op}: attn_mask and is_causal = True together; give one (as "
                                  "llama::sdpa_with_kv_cache)")
    if scale is not None and not (0.0 < scale < float("inf")):
        raise InvalidArgument(f"{op}: scale {scale:g} is not a finite positive number")
    return storage


def _write_rows(rows: torch.Tensor, cache: torch.Tensor, start: int, storage: str) -> None:
    """rows [B, S, H_kv, D] float32 into cache rows start.. (quantized for q8_0 / q4_0)."""
    seq = rows.shape[1]
    if storage == "f32":
        cache[:, start:start + seq].copy_(rows)
        return
    head_dim = rows.shape[3]
    flat = rows.detach().contiguous().numpy().reshape(-1, head_dim)
    packed = np.frombuffer(_headway._quantize_rows(flat, storage), dtype=np.uint8)
    cache[:, start:start + seq].copy_(torch.from_numpy(packed.copy()).view(cache[:, start:start + seq].shape))


def _cache_rows_f32(cache: torch.Tensor, rows: int, storage: str, head_dim: int) -> np.ndarray:
    """cache[:rows] ([rows, H_kv, row]) as a float32 [rows, H_kv, head_dim] array (dequantized)."""
    part = cache[:rows].contiguous()
    if storage == "f32":
        return part.numpy()
    kv_heads = part.shape[1]
    flat = _headway._dequantize_rows(part.numpy().reshape(rows * kv_heads, -1), storage, head_dim)
    return flat.reshape(rows, kv_heads, head_dim)


def _sdpa_eager(op: str, quantized: bool, query, key, value, key_cache, value_cache, start_pos, seq_len, attn_mask,
                drpout_p, is_causal, scale) -> torch.Tensor:
    storage = _check_sdpa(op, quantized, query, key, value, key_cache, value_cache, start_pos, seq_len, attn_mask,
                          drpout_p, is_causal, scale)
    start = int(start_pos)
    batch, q_len, heads, head_dim = query.shape
    with torch.no_grad():
        _write_rows(key, key_cache, start, storage)
        _write_rows(value, value_cache, start, storage)
        out = torch.empty_like(query)
        if batch == 0 or q_len == 0:
            return out
        rows = key_cache.shape[1] if attn_mask is not None else start + q_len
        mask = None if attn_mask is None else attn_mask.detach().contiguous().numpy()
        q = query.detach().contiguous().numpy()
        for b in range(batch):
            k = _cache_rows_f32(key_cache[b], rows, storage, head_dim)
            v = _cache_rows_f32(value_cache[b], rows, storage, head_dim)
            out[b] = torch.from_numpy(attend(q[b], k, v, causal=bool(is_causal), scale=scale, mask=mask))
    return out


def _sdpa_meta(op: str, quantized: bool, *args) -> torch.Tensor:
    _check_sdpa(op, quantized, *args)
    return torch.empty_like(args[0])


def _register_sdpa(name: str, quantized: bool) -> None:
    op = f"headway::{name}"

    def eager(query, key, value, key_cache, value_cache, start_pos, seq_len, attn_mask=None, drpout_p=0.0,
              is_causal=False, scale=None):
        return _sdpa_eager(op, quantized, query, key, value, key_cache, value_cache, start_pos, seq_len, attn_mask,
                           drpout_p, is_causal, scale)

    def fake(query, key, value, key_cache, value_cache, start_pos, seq_len, attn_mask=None, drpout_p=0.0,
             is_causal=False, scale=None):
        return _sdpa_meta(op, quantized, query, key, value, key_cache, value_cache, start_pos, seq_len, attn_mask,
                          drpout_p, is_causal, scale)

    def eager_out(query, key, value, key_cache, value_cache, start_pos, seq_len, attn_mask=None, drpout_p=0.0,
                  is_causal=False, scale=None, *, out):
        out.copy_(eager(query, key, value, key_cache, value_cache, start_pos, seq_len, attn_mask, drpout_p,
                        is_causal, scale))
        return out

    def fake_out(query, key, value, key_cache, value_cache, start_pos, seq_len, attn_mask=None, drpout_p=0.0,
                 is_causal=False, scale=None, *, out):
        fake(query, key, value, key_cache, value_cache, start_pos, seq_len, attn_mask, drpout_p, is_causal, scale)
        return out

    torch.library.impl(_lib, name, "CompositeExplicitAutograd")(eager)
    torch.library.register_fake(op, fake, lib=_lib)
    torch.library.impl(_lib, f"{name}.out", "CompositeExplicitAutograd")(eager_out)
    torch.library.register_fake(f"{op}.out", fake_out, lib=_lib)


_register_sdpa("sdpa_with_kv_cache", False)
_register_sdpa("sdpa_with_quantized_kv_cache", True)


def _check_update(value, cache, start_pos) -> str:
    op = "headway::update_cache"
    _check_tensor(op, "value", value, torch.float32, "float32", "[B, seq_len, n_kv_heads, head_dim]")
    if not isinstance(cache, torch.Tensor) or cache.dtype not in (torch.float32, torch.uint8):
        dtype = cache.dtype if isinstance(cache, torch.Tensor) else type(cache).__name__
        raise Unsupported(f"{op}: cache has dtype {str(dtype).replace('torch.', '')}; headway takes float32 or uint8 "
                          f"(q8_0 / q4_0 rows) ({_FALLBACK})")
    _check_tensor(op, "cache", cache, cache.dtype, "", "[B, cache_rows, n_kv_heads, row]")
    if cache.shape[0] != value.shape[0] or cache.shape[2] != value.shape[2]:
        raise InvalidArgument(f"{op}: cache {list(cache.shape)} does not match value's batch {value.shape[0]} and "
                              f"{value.shape[2]} kv heads")
    storage = _cache_dtype(op, cache.dtype == torch.uint8, cache.shape[3], value.shape[3])
    _check_start(op, start_pos, int(value.shape[1]), int(cache.shape[1]), "cache")
    return storage


@torch.library.impl(_lib, "update_cache", "CompositeExplicitAutograd")
def _update_cache(value, cache, start_pos):
    storage = _check_update(value, cache, start_pos)
    with torch.no_grad():
        _write_rows(value, cache, int(start_pos), storage)
    return torch.empty((1,), dtype=value.dtype)


@torch.library.register_fake("headway::update_cache", lib=_lib)
def _update_cache_fake(value, cache, start_pos):
    _check_update(value, cache, start_pos)
    return value.new_empty((1,))


@torch.library.impl(_lib, "update_cache.out", "CompositeExplicitAutograd")
def _update_cache_out(value, cache, start_pos, *, out):
    _update_cache(value, cache, start_pos)
    return out


@torch.library.register_fake("headway::update_cache.out", lib=_lib)
def _update_cache_out_fake(value, cache, start_pos, *, out):
    _check_update(value, cache, start_pos)
    return out


# The kernel library: next to this file (the in-tree build puts it there), or HEADWAY_EXECUTORCH_KERNELS.
_kernels: Optional[ctypes.CDLL] = None


def kernels_path() -> str:
    """Where libheadway_executorch.so is: $HEADWAY_EXECUTORCH_KERNELS, else next to this file."""
    return os.environ.get("HEADWAY_EXECUTORCH_KERNELS") or os.path.join(os.path.dirname(__file__), _KERNELS)


def load_kernels() -> str:
    """Loads libheadway_executorch.so (RTLD_GLOBAL, once), registering headway's kernels with the
    runtime executorch.runtime runs programs on. Returns its path; raises headway.Unsupported
    when the build made no such library (it needs the executorch wheel at build time)."""
    global _kernels
    path = kernels_path()
    if _kernels is None:
        if not os.path.exists(path):
            raise Unsupported(f"{path} does not exist: the build makes it when its python can import executorch "
                              "(HEADWAY_EXECUTORCH; pip install -r requirements.txt)")
        # The runtime's library first, global, so that the kernels register with the one registry
        # the wheel's python extension uses.
        from executorch.extension.pybindings import portable_lib  # noqa: F401
        lib = ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
        lib.headway_executorch_last_error.restype = ctypes.c_char_p
        lib.headway_executorch_last_code.restype = ctypes.c_int
        _kernels = lib
    return path


def last_error() -> str:
    """The message of the last call the kernels refused in this thread ("" if none)."""
    if _kernels is None:
        return ""
    return _kernels.headway_executorch_last_error().decode()


# headway::Code (include/headway/status.hpp) → the exception the package raises for it.
_ERRORS = {1: InvalidArgument, 2: OutOfRange, 3: Unsupported}


def execute(method: Any, inputs: Any) -> Any:
    """method.execute(inputs) for an executorch.runtime Method, raising a refusal of headway's
    kernels as the headway.Error its code names, with headway's message (ExecuTorch's own
    RuntimeError carries only its error code)."""
    if _kernels is not None:
        _kernels.headway_executorch_clear_error()
    try:
        return method.execute(inputs)
    except RuntimeError as e:
        code = _kernels.headway_executorch_last_code() if _kernels is not None else 0
        if code:
            raise _ERRORS.get(code, RuntimeError)(last_error()) from e
        raise


# A transformers Llama-style attention over the ops and a static cache.
class HeadwayAttention(torch.nn.Module):
    """Replaces a transformers attention module with q/k/v/o projections (Llama, Mistral, Qwen2,
    SmolLM2 and their kin, with Qwen3's q_norm / k_norm where present): the same weights, RoPE
    from the position embeddings the decoder layer passes, and headway::sdpa_with_kv_cache (or
    the quantized variant) over key/value caches held as buffers of max_cache_len rows. The
    position of the first new token comes from position_ids (one sequence per batch row, no
    padding); attention_mask is not read (the ops are causal)."""

    def __init__(self, attn: torch.nn.Module, config: Any, max_cache_len: int, batch: int = 1,
                 kv_dtype: str = "f32") -> None:
        super().__init__()
        for name in ("q_proj", "k_proj", "v_proj", "o_proj"):
            if not isinstance(getattr(attn, name, None), torch.nn.Module):
                raise Unsupported(f"replace_attention: {type(attn).__name__} has no {name}; headway replaces "
                                  "Llama-style attention only (export the model as it is to run it without headway)")
        if getattr(config, "sliding_window", None) and getattr(config, "use_sliding_window", True) \
                and config.sliding_window < max_cache_len:
            raise Unsupported(f"replace_attention: sliding_window {config.sliding_window} is shorter than "
                              f"max_cache_len {max_cache_len}; headway's ExecuTorch ops attend over the whole cache "
                              "(set max_cache_len <= sliding_window, or export without headway)")
        self.q_proj, self.k_proj, self.v_proj, self.o_proj = attn.q_proj, attn.k_proj, attn.v_proj, attn.o_proj
        self.q_norm = getattr(attn, "q_norm", None)
        self.k_norm = getattr(attn, "k_norm", None)
        self.layer_idx = getattr(attn, "layer_idx", None)
        self.head_dim = int(attn.head_dim)
        self.heads = int(config.num_attention_heads)
        self.kv_heads = int(getattr(config, "num_key_value_heads", None) or self.heads)
        self.scaling = float(getattr(attn, "scaling", self.head_dim ** -0.5))
        self.kv_dtype = kv_dtype
        self.max_cache_len = int(max_cache_len)
        if kv_dtype == "f32":
            shape = (batch, max_cache_len, self.kv_heads, self.head_dim)
            self.register_buffer("k_cache", torch.zeros(shape), persistent=False)
            self.register_buffer("v_cache", torch.zeros(shape), persistent=False)
            self._op = torch.ops.headway.sdpa_with_kv_cache
        elif kv_dtype in _BLOCK_BYTES:
            self.register_buffer("k_cache", quantized_cache(batch, max_cache_len, self.kv_heads, self.head_dim,
                                                            kv_dtype), persistent=False)
            self.register_buffer("v_cache", quantized_cache(batch, max_cache_len, self.kv_heads, self.head_dim,
                                                            kv_dtype), persistent=False)
            self._op = torch.ops.headway.sdpa_with_quantized_kv_cache
        else:
            raise InvalidArgument(f"replace_attention: kv_dtype '{kv_dtype}' is not one of f32, q8_0, q4_0")

    def forward(self, hidden_states: torch.Tensor, position_embeddings: Any = None, attention_mask: Any = None,
                **kwargs: Any) -> tuple[torch.Tensor, None]:
        batch, seq, _ = hidden_states.shape
        q = self.q_proj(hidden_states).view(batch, seq, self.heads, self.head_dim)
        k = self.k_proj(hidden_states).view(batch, seq, self.kv_heads, self.head_dim)
        v = self.v_proj(hidden_states).view(batch, seq, self.kv_heads, self.head_dim)
        if self.q_norm is not None:
            q, k = self.q_norm(q), self.k_norm(k)
        cos, sin = position_embeddings  # [B, S, D]
        cos, sin = cos.unsqueeze(2), sin.unsqueeze(2)
        q = q * cos + _rotate_half(q) * sin
        k = k * cos + _rotate_half(k) * sin
        position_ids = kwargs.get("position_ids")
        if position_ids is None:
            raise InvalidArgument("HeadwayAttention: needs position_ids (the decoder layer passes them)")
        start = position_ids[0, 0].item()
        torch._check(start >= 0)
        torch._check(start + seq <= self.max_cache_len)
        out = self._op(q.contiguous(), k.contiguous(), v.contiguous(), self.k_cache, self.v_cache, start, seq,
                       None, 0.0, True, self.scaling)
        return self.o_proj(out.reshape(batch, seq, self.heads * self.head_dim)), None


def _rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class HeadwaySDPA(torch.nn.Module):
    """ExecuTorch's Llama (executorch.examples.models.llama: AttentionMHA with use_kv_cache) on
    headway's op: this replaces the layer's SDPA and owns its caches ([batch, max_context_len,
    n_kv_heads, head_dim], f32 or q8_0 / q4_0 rows), and _NewRows replaces its kv_cache, whose
    update() then hands on the new K/V rows alone (the op writes them into the caches itself, as
    llama::sdpa_with_kv_cache does). forward(input_pos, q, k, v, bsz, seqlen, mask): q [B, H, S,
    D], k and v [B, H_kv, S, D] (RoPE applied); causal from input_pos[0], mask not read."""

    def __init__(self, heads: int, kv_heads: int, head_dim: int, max_context_len: int, batch: int,
                 kv_dtype: str) -> None:
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, head_dim
        self.max_context_len = max_context_len
        if kv_dtype == "f32":
            shape = (batch, max_context_len, kv_heads, head_dim)
            self.register_buffer("k_cache", torch.zeros(shape), persistent=False)
            self.register_buffer("v_cache", torch.zeros(shape), persistent=False)
            self._op = torch.ops.headway.sdpa_with_kv_cache
        elif kv_dtype in _BLOCK_BYTES:
            self.register_buffer("k_cache", quantized_cache(batch, max_context_len, kv_heads, head_dim, kv_dtype),
                                 persistent=False)
            self.register_buffer("v_cache", quantized_cache(batch, max_context_len, kv_heads, head_dim, kv_dtype),
                                 persistent=False)
            self._op = torch.ops.headway.sdpa_with_quantized_kv_cache
        else:
            raise InvalidArgument(f"replace_attention: kv_dtype '{kv_dtype}' is not one of f32, q8_0, q4_0")

    def forward(self, input_pos: torch.Tensor, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, bsz: int,
                seqlen: int, mask: Any = None) -> torch.Tensor:
        start = input_pos[0].item()
        torch._check(start >= 0)
        torch._check(start + seqlen <= self.max_context_len)
        out = self._op(q.transpose(1, 2).contiguous(), k.transpose(1, 2).contiguous(),
                       v.transpose(1, 2).contiguous(), self.k_cache, self.v_cache, start, seqlen, None, 0.0, True,
                       None)
        return out.reshape(bsz, seqlen, self.heads * self.head_dim)


class _NewRows(torch.nn.Module):
    """An AttentionMHA's kv_cache under HeadwaySDPA: update() returns the new rows as they are."""

    def update(self, input_pos: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return k, v


def _replace_executorch_llama(model: torch.nn.Module, max_cache_len: Optional[int], batch: int,
                              kv_dtype: str) -> int:
    """ExecuTorch's own Llama (AttentionMHA layers): their SDPA and kv_cache, as HeadwaySDPA says."""
    replaced = 0
    for module in model.modules():
        if type(module).__name__ != "AttentionMHA" or not hasattr(module, "SDPA"):
            continue
        what = None
        if not getattr(module, "use_kv_cache", False):
            what = "use_kv_cache is off (headway's ops hold the cache)"
        elif getattr(module.kv_cache, "is_ring_buffer", False):
            what = "its cache is a ring buffer (sliding window)"
        elif getattr(module, "num_kv_shared_layers", 0):
            what = "its layers share K/V (num_kv_shared_layers)"
        elif getattr(module, "use_attn_o_norm", False) or getattr(module, "use_attn_o_gate", False) \
                or getattr(module, "use_q_gate", False):
            what = "it gates or norms the attention output"
        if what is not None:
            raise Unsupported(f"replace_attention: an AttentionMHA where {what}; export it with ExecuTorch's own "
                              "SDPA to run it without headway")
        rows = int(max_cache_len or module.max_context_len)
        module.SDPA = HeadwaySDPA(int(module.n_local_heads), int(module.n_local_kv_heads), int(module.head_dim), rows,
                                  batch, kv_dtype)
        module.kv_cache = _NewRows()
        replaced += 1
    return replaced


def replace_attention(model: torch.nn.Module, max_cache_len: Optional[int] = None, batch: int = 1,
                      kv_dtype: str = "f32") -> torch.nn.Module:
    """Swaps the attention of a Llama-style model for headway's ops over static caches of
    max_cache_len rows stored as kv_dtype ("f32", "q8_0" or "q4_0"), in place; returns the model.
    Call it before torch.export.
      - a transformers model (LlamaForCausalLM and kin): every decoder layer's self_attn becomes a
        HeadwayAttention (max_cache_len default: the config's max_position_embeddings); run it
        with position_ids (ExportableLM does).
      - ExecuTorch's Llama (executorch.examples.models.llama, use_kv_cache=True): each
        AttentionMHA's SDPA becomes a HeadwaySDPA and its kv_cache a pass-through (max_cache_len
        default: its max_context_len); run it as before, with input_pos."""
    if _replace_executorch_llama(model, max_cache_len, batch, kv_dtype):
        return model
    config = getattr(model, "config", None)
    if config is None or not hasattr(config, "num_attention_heads"):
        raise Unsupported(f"replace_attention: {type(model).__name__} has no decoder layers with a self_attn and a "
                          "transformers config (export the model as it is to run it without headway)")
    max_cache_len = int(max_cache_len or config.max_position_embeddings)
    replaced = 0
    for module in model.modules():
        attn = getattr(module, "self_attn", None)
        if isinstance(attn, torch.nn.Module) and not isinstance(attn, HeadwayAttention):
            module.self_attn = HeadwayAttention(attn, config, max_cache_len, batch, kv_dtype)
            replaced += 1
    if replaced == 0:
        raise Unsupported(f"replace_attention: {type(model).__name__} has no decoder layers with a self_attn "
                          "(export the model as it is to run it without headway)")
    return model


class ExportableLM(torch.nn.Module):
    """forward(tokens [B, S] int64, start_pos [1] int64) -> logits [B, S, vocab] of a causal LM
    whose attention replace_attention swapped: positions start_pos .. start_pos + S - 1, the
    caches carry the earlier tokens. The shape torch.export and ExecuTorch's runners take."""

    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, tokens: torch.Tensor, start_pos: torch.Tensor) -> torch.Tensor:
        positions = (start_pos[0] + torch.arange(tokens.shape[1], dtype=torch.long)).unsqueeze(0)
        return self.model(input_ids=tokens, position_ids=positions.expand(tokens.shape[0], -1), use_cache=False).logits
