"""Shared helpers: the float64 NumPy formula of attention (the design's semantics), storage
rounding of K/V, and where the headway CLI is."""

import math
import os
import pathlib

import numpy as np
import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]


def alibi_slopes(n):
    """The standard ALiBi slopes (BLOOM's build_alibi_tensor)."""
    n0 = 2 ** int(math.floor(math.log2(n)))
    slopes = [2.0 ** (-8.0 * (h + 1) / n0) for h in range(n0)]
    slopes += [2.0 ** (-4.0 * (2 * i + 1) / n0) for i in range(n - n0)]
    return np.array(slopes, dtype=np.float64)


def reference(q, k, v, *, causal=False, window=0, softcap=0.0, scale=None, sinks=None, alibi=False, mask=None):
    """O = softmax(scale·QKᵀ + mask) V in float64, one sequence: causal bottom-right aligned, a
    window W keeps keys j > p − W, softcap c·tanh(l/c), sinks one more logit with no value, ALiBi
    −m_h·|p − j|, mask bool (True = visible) or additive; a row that sees no key is zero."""
    q, k, v = (np.asarray(a, dtype=np.float64) for a in (q, k, v))
    t_q, n_heads, d = q.shape
    t_kv, n_kv, _ = k.shape
    group = n_heads // n_kv
    scale = 1.0 / math.sqrt(d) if scale is None else scale
    pos = np.arange(t_q)[:, None] + (t_kv - t_q)
    j = np.arange(t_kv)[None, :]
    visible = np.ones((t_q, t_kv), dtype=bool)
    if causal:
        visible &= j <= pos
    if window:
        visible &= j > pos - window
    additive = np.zeros((t_q, t_kv))
    if mask is not None:
        if mask.dtype == np.bool_:
            visible &= mask
        else:
            additive = mask.astype(np.float64)
            visible &= np.isfinite(additive)
            additive = np.where(visible, additive, 0.0)
    slopes = alibi_slopes(n_heads) if alibi else None
    o = np.zeros((t_q, n_heads, d))
    for h in range(n_heads):
        kh, vh = k[:, h // group], v[:, h // group]
        logits = scale * q[:, h] @ kh.T
        if softcap:
            logits = softcap * np.tanh(logits / softcap)
        if slopes is not None:
            logits = logits - slopes[h] * np.abs(pos - j)
        logits = np.where(visible, logits + additive, -np.inf)
        m = logits.max(axis=1, keepdims=True)
        if sinks is not None:
            m = np.maximum(m, sinks[h])
        m = np.where(np.isfinite(m), m, 0.0)
        e = np.where(visible, np.exp(logits - m), 0.0)
        denom = e.sum(axis=1, keepdims=True)
        if sinks is not None:
            denom = denom + np.exp(sinks[h] - m)
        o[:, h] = np.divide(e @ vh, denom, out=np.zeros((t_q, d)), where=denom > 0)
    return o


def round_bf16(x):
    """float32 → bfloat16 → float32, round to nearest even (headway/dtype_convert.hpp)."""
    bits = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    bits = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
    return bits.astype(np.uint32).view(np.float32)


def stored(x, kv_dtype):
    """K or V as the kernels read them back from kv_dtype storage (float32 input)."""
    if kv_dtype == "f32":
        return x
    if kv_dtype == "f16":
        return x.astype(np.float16).astype(np.float32)
    if kv_dtype == "bf16":
        return round_bf16(x)
    gguf = pytest.importorskip("gguf")  # llama.cpp's own quantizers: the bit-exact truth
    qt = {"q8_0": gguf.GGMLQuantizationType.Q8_0, "q4_0": gguf.GGMLQuantizationType.Q4_0}[kv_dtype]
    d = x.shape[-1]
    rows = x.reshape(-1, d)
    pad = (-d) % 32
    padded = np.pad(rows, ((0, 0), (0, pad)))
    return gguf.dequantize(gguf.quantize(padded, qt), qt)[:, :d].reshape(x.shape).astype(np.float32)


def headway_cli():
    cli = os.environ.get("HEADWAY_CLI") or str(REPO / "build" / "release" / "bin" / "headway")
    if not os.path.exists(cli):
        pytest.skip(f"the headway CLI is not built ({cli}); set HEADWAY_CLI")
    return cli


@pytest.fixture
def rng():
    return np.random.default_rng(1234)
