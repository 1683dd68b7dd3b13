"""KvCache and Session round trips: a cache holds what attend() over the whole K/V sees, a
rejected call changes nothing, decode continues prefill, encode treats each sentence alone, and
given weights run the block the session's header describes (y = x + attn(x))."""

import numpy as np
import pytest

import headway
from conftest import reference

SPEC = "d_model=64 heads=4 kv_heads=2 ctx=64 layers=2 rope_theta=10000"


def test_kv_cache_matches_attend(rng):
    # no RoPE; the plan's kv_dtype (the config's default, f16) is the storage attend() gets too
    cache = headway.KvCache(spec="d_model=64 heads=4 kv_heads=2 ctx=64 layers=1")
    kv_dtype = cache.plan["kv_dtype"]
    assert (cache.size, cache.position, cache.rows) == (0, 0, 64)
    k = rng.standard_normal((20, 2, 16), dtype=np.float32)
    v = rng.standard_normal((20, 2, 16), dtype=np.float32)
    cache.append(k[:12], v[:12])
    cache.append(k[12:], v[12:])
    assert (cache.size, cache.position) == (20, 20)
    q = rng.standard_normal((5, 4, 16), dtype=np.float32)
    np.testing.assert_allclose(cache.attend(q), headway.attend(q, k, v, causal=True, kv_dtype=kv_dtype), atol=1e-6)
    # past the context: OutOfRange, and the cache is as it was
    with pytest.raises(headway.OutOfRange):
        cache.append(np.zeros((45, 2, 16), np.float32), np.zeros((45, 2, 16), np.float32))
    assert cache.size == 20
    np.testing.assert_allclose(cache.attend(q), headway.attend(q, k, v, causal=True, kv_dtype=kv_dtype), atol=1e-6)
    with pytest.raises(headway.InvalidArgument, match=r"k: shape \(3, 4, 16\), expected \(n, 2, 16\)"):
        cache.append(np.zeros((3, 4, 16), np.float32), np.zeros((3, 4, 16), np.float32))
    cache.reset(start=7)
    assert (cache.size, cache.position) == (0, 7)
    assert cache.plan["n_kv_heads"] == 2


def test_kv_cache_truncate(rng):
    # truncate(n) keeps the first n tokens since the reset: attention is then that of a cache that
    # never had the others. Past the size, or a ring that overwrote what it would need: an error,
    # the cache unchanged.
    spec = "d_model=64 heads=4 kv_heads=2 ctx=64 layers=1 rope_theta=10000 kv_dtype=f32"
    k = rng.standard_normal((30, 2, 16), dtype=np.float32)
    v = rng.standard_normal((30, 2, 16), dtype=np.float32)
    q = rng.standard_normal((1, 4, 16), dtype=np.float32)
    cache, fresh = headway.KvCache(spec=spec), headway.KvCache(spec=spec)
    cache.reset(start=3)
    fresh.reset(start=3)
    cache.append(k[:20], v[:20])
    cache.truncate(12)
    assert (cache.size, cache.position, cache.start_position) == (12, 15, 3)
    cache.append(k[20:21], v[20:21])
    fresh.append(np.concatenate([k[:12], k[20:21]]), np.concatenate([v[:12], v[20:21]]))
    np.testing.assert_allclose(cache.attend(cache.rotate_queries(q)), fresh.attend(fresh.rotate_queries(q)), atol=1e-6)
    with pytest.raises(headway.OutOfRange, match="truncate to 14 tokens, but the cache holds 13"):
        cache.truncate(14)
    with pytest.raises(headway.InvalidArgument, match="tokens"):
        cache.truncate(-1)
    ring = headway.KvCache(spec=spec + " window=8 layer_types=s", max_tokens=4)  # 11 rows
    for at in range(0, 16, 4):
        ring.append(k[at : at + 4], v[at : at + 4])
    with pytest.raises(headway.FailedPrecondition, match=r"ring of 11 rows \(window 8\).*at most 4 tokens"):
        ring.truncate(11)
    assert ring.size == 16
    ring.truncate(12)
    assert ring.position == 12


def rope_neox(x, positions, theta):
    """NeoX rotate-half RoPE from its definition, in float64: x [t, heads, d] at positions [t]."""
    x = np.asarray(x, dtype=np.float64)
    d = x.shape[-1]
    angles = positions[:, None] * theta ** (-2.0 * np.arange(d // 2) / d)  # [t, d/2]
    c, s = np.cos(angles)[:, None, :], np.sin(angles)[:, None, :]
    x1, x2 = x[..., : d // 2], x[..., d // 2 :]
    return np.concatenate([x1 * c - x2 * s, x2 * c + x1 * s], axis=-1)


def test_kv_cache_rotates_queries_as_its_keys(rng):
    # RoPE: the cache rotates K on append; rotate_queries gives the queries of the last tokens the
    # same rotation, and attention over the cache is the float64 attention of both rotated.
    cache = headway.KvCache(spec="d_model=64 heads=4 kv_heads=2 ctx=64 layers=1 rope_theta=10000 kv_dtype=f32")
    cache.reset(start=5)
    k = rng.standard_normal((10, 2, 16), dtype=np.float32)
    v = rng.standard_normal((10, 2, 16), dtype=np.float32)
    q = rng.standard_normal((4, 4, 16), dtype=np.float32)
    cache.append(k, v)
    q_rot = cache.rotate_queries(q)
    assert q_rot.shape == q.shape and not np.shares_memory(q_rot, q)
    np.testing.assert_allclose(q_rot, rope_neox(q, np.arange(11, 15), 10000.0), atol=2e-6)
    want = reference(rope_neox(q, np.arange(11, 15), 10000.0), rope_neox(k, np.arange(5, 15), 10000.0), v, causal=True)
    np.testing.assert_allclose(cache.attend(q_rot), want, atol=2e-5)
    with pytest.raises(headway.InvalidArgument, match="rotate_queries of 11 tokens"):
        cache.rotate_queries(np.zeros((11, 4, 16), np.float32))


def hadamard(x):
    """The normalized Sylvester-Hadamard matrix of the last axis's size (a power of two), in float64."""
    n = x.shape[-1]
    h = np.ones((1, 1))
    while h.shape[0] < n:
        h = np.block([[h, h], [h, -h]])
    return np.asarray(x, dtype=np.float64) @ (h / np.sqrt(n))


def test_kv_cache_with_kv_rotation(rng):
    # kv_rotation="hadamard": rotate_queries applies RoPE, then the Hadamard rotation K got on
    # append; attend() gives the output in the model's basis again, near the unrotated cache's.
    spec = "d_model=128 heads=4 kv_heads=2 ctx=64 layers=1 rope_theta=10000"
    rotated = headway.KvCache(spec=spec, kv_dtype="q8_0", kv_rotation="hadamard")
    plain = headway.KvCache(spec=spec, kv_dtype="f32")
    assert rotated.plan["kv_rotation"] == "hadamard" and plain.plan["kv_rotation"] == "none"
    k = rng.standard_normal((10, 2, 32), dtype=np.float32)
    v = rng.standard_normal((10, 2, 32), dtype=np.float32)
    q = rng.standard_normal((4, 4, 32), dtype=np.float32)
    for cache in (rotated, plain):
        cache.append(k, v)
    q_rot = rotated.rotate_queries(q)
    np.testing.assert_allclose(q_rot, hadamard(plain.rotate_queries(q)), atol=2e-6)
    np.testing.assert_allclose(rotated.attend(q_rot), plain.attend(plain.rotate_queries(q)), atol=3e-2)


def test_gpu_kv_cache_rotates_and_attends_as_the_cpu_one(rng):
    spec = "d_model=64 heads=4 kv_heads=2 ctx=64 layers=1 rope_theta=10000 kv_dtype=f32"
    try:
        gpu = headway.KvCache(spec=spec, backend="gpu")
    except headway.Unsupported as e:  # no Vulkan in this build, or no usable device
        pytest.skip(str(e))
    cpu = headway.KvCache(spec=spec)
    k = rng.standard_normal((9, 2, 16), dtype=np.float32)
    v = rng.standard_normal((9, 2, 16), dtype=np.float32)
    q = rng.standard_normal((3, 4, 16), dtype=np.float32)
    for cache in (cpu, gpu):
        cache.reset(start=20)
        cache.append(k, v)
    q_rot = cpu.rotate_queries(q)
    np.testing.assert_array_equal(gpu.rotate_queries(q), q_rot)
    np.testing.assert_allclose(gpu.attend(q_rot), cpu.attend(q_rot), atol=1e-4)


def test_prefill_then_decode_equals_one_prefill(rng):
    x = rng.standard_normal((12, 64), dtype=np.float32)
    whole = headway.Session(spec=SPEC, seed=3, threads=2).prefill(x)
    s = headway.Session(spec=SPEC, seed=3, threads=2)
    parts = [s.prefill(x[:9])] + [s.decode(x[i])[None] for i in range(9, 12)]
    assert s.position == 12 and s.n_layers == 2
    np.testing.assert_allclose(np.concatenate(parts), whole, atol=1e-5)
    s.reset()
    assert s.position == 0
    np.testing.assert_allclose(s.prefill(x), whole, atol=1e-5)
    # past the context (64): OutOfRange and nothing changes
    with pytest.raises(headway.OutOfRange):
        s.prefill(np.zeros((60, 64), np.float32))
    assert s.position == 12


# Layer kinds whose own shape differs from the plan's first: MLA's latent rows, gated queries,
# Gemma 4's full layers of their own head shape and layers reading earlier layers' caches. f32 K/V:
# over an f16 cache decode and prefill round apart (the kernel suites hold f16 to 2e-3).
KIND_SPECS = [
    "d_model=64 heads=4 ctx=64 layers=2 kv_lora_rank=48 q_lora_rank=32 qk_nope_head_dim=16 qk_rope_head_dim=16 "
    "v_head_dim=16 kv_dtype=f32",
    "d_model=64 heads=4 kv_heads=2 head_dim=16 ctx=64 layers=2 output_gate=1 qk_norm=1 rope_theta=10000 kv_dtype=f32",
    "d_model=64 heads=4 kv_heads=2 head_dim=16 ctx=64 layers=6 window=5 layer_types=sfssfs kv_shared_layers=3 "
    "full_head_dim=32 full_kv_heads=1 full_k_eq_v=1 qk_norm=1 v_norm=1 scale=1 rope_theta=10000 kv_dtype=f32",
]


@pytest.mark.parametrize("spec", KIND_SPECS, ids=["mla", "gated", "gemma4-like"])
def test_layer_kinds_prefill_in_chunks_equals_decode(rng, spec):
    x = rng.standard_normal((14, 64), dtype=np.float32)
    chunks = headway.Session(spec=spec, seed=4, max_tokens=6).prefill(x)  # calls of 6, 6 and 2 tokens
    s = headway.Session(spec=spec, seed=4, max_tokens=6)
    steps = np.stack([s.decode(row) for row in x])
    assert np.abs(steps - chunks).max() <= 1e-5 * max(1.0, np.abs(chunks).max())


def test_encode_is_each_sentence_alone(rng):
    spec = "d_model=64 heads=4 ctx=32 layers=2 causal=0 rope_theta=10000"
    s = headway.Session(spec=spec, seed=5)
    x = rng.standard_normal((3 + 7 + 5, 64), dtype=np.float32)
    y = s.encode(x, [3, 7, 5])
    assert s.position == 0
    at = 0
    for n in (3, 7, 5):
        s.reset()
        np.testing.assert_allclose(y[at : at + n], s.prefill(x[at : at + n]), atol=1e-5)
        at += n
    with pytest.raises(headway.InvalidArgument, match="seq_lens sum to 14, x has 15 rows"):
        s.encode(x, [3, 7, 4])


def test_given_weights_are_the_block(rng):
    spec = "d_model=32 heads=4 kv_heads=2 ctx=16 layers=1 qkv_bias=1"
    w = {
        "wq": rng.standard_normal((32, 32), dtype=np.float32) * 0.2,
        "wk": rng.standard_normal((16, 32), dtype=np.float32) * 0.2,
        "wv": rng.standard_normal((16, 32), dtype=np.float32) * 0.2,
        "wo": rng.standard_normal((32, 32), dtype=np.float32) * 0.2,
        "bq": rng.standard_normal(32, dtype=np.float32) * 0.1,
        "bk": rng.standard_normal(16, dtype=np.float32) * 0.1,
        "bv": rng.standard_normal(16, dtype=np.float32) * 0.1,
    }
    x = rng.standard_normal((6, 32), dtype=np.float32)
    y = headway.Session(spec=spec, weights=[w], kv_dtype="f32").prefill(x)
    q = (x @ w["wq"].T + w["bq"]).reshape(6, 4, 8)
    k = (x @ w["wk"].T + w["bk"]).reshape(6, 2, 8)
    v = (x @ w["wv"].T + w["bv"]).reshape(6, 2, 8)
    want = x + reference(q, k, v, causal=True).reshape(6, 32) @ w["wo"].T
    np.testing.assert_allclose(y, want, atol=1e-4)
    with pytest.raises(headway.InvalidArgument, match="bq"):  # the library's check names the tensor
        headway.Session(spec=spec, weights=[{n: a for n, a in w.items() if n != "bq"}])
    with pytest.raises(headway.InvalidArgument, match="unknown key 'w_q'"):
        headway.Session(spec=spec, weights=[{"w_q": w["wq"]}])
    with pytest.raises(headway.InvalidArgument, match="give exactly one of weights="):
        headway.Session(spec=spec)
