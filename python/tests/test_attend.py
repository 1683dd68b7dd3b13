"""headway.attend() against the float64 formula (conftest.reference) and PyTorch's
scaled_dot_product_attention: every kv_dtype, GQA, causal bottom-right, window, softcap, sinks,
ALiBi, masks, packed batches, the lengths around tile edges and the head sizes with and without
specialized kernels."""

import threading
import time

import numpy as np
import pytest

import headway
from conftest import reference, stored

# (t_q, t_kv): decode, prefill around the 16- and 64-row tiles, fewer queries than keys.
LENGTHS = [(1, 1), (1, 65), (15, 15), (16, 16), (17, 17), (63, 63), (64, 64), (65, 65), (17, 64), (5, 63)]
HEAD_DIMS = [64, 128, 50, 80]
KV_DTYPES = ["f32", "f16", "bf16", "q8_0", "q4_0"]


def qkv(rng, t_q, t_kv, n_heads, n_kv, d):
    q = rng.standard_normal((t_q, n_heads, d), dtype=np.float32)
    k = rng.standard_normal((t_kv, n_kv, d), dtype=np.float32)
    v = rng.standard_normal((t_kv, n_kv, d), dtype=np.float32)
    return q, k, v


@pytest.mark.parametrize("t_q,t_kv", LENGTHS)
@pytest.mark.parametrize("d", HEAD_DIMS)
def test_lengths_and_head_dims(rng, t_q, t_kv, d):
    q, k, v = qkv(rng, t_q, t_kv, 8, 2, d)
    for causal in (False, True):
        o = headway.attend(q, k, v, causal=causal)
        assert o.dtype == np.float32 and o.shape == (t_q, 8, d)
        np.testing.assert_allclose(o, reference(q, k, v, causal=causal), atol=1e-4, rtol=0)


@pytest.mark.parametrize("kv_dtype", KV_DTYPES)
@pytest.mark.parametrize("d", [64, 80])
def test_kv_dtypes(rng, kv_dtype, d):
    q, k, v = qkv(rng, 17, 65, 8, 2, d)
    o = headway.attend(q, k, v, causal=True, kv_dtype=kv_dtype, threads=2)
    want = reference(q, stored(k, kv_dtype), stored(v, kv_dtype), causal=True)
    np.testing.assert_allclose(o, want, atol=2e-4, rtol=0)


def test_float16_inputs_stay_float16(rng):
    q, k, v = qkv(rng, 9, 40, 4, 4, 64)
    k16, v16 = k.astype(np.float16), v.astype(np.float16)
    want = reference(q, k16.astype(np.float32), v16.astype(np.float32))
    np.testing.assert_allclose(headway.attend(q, k16, v16), want, atol=1e-4, rtol=0)
    # f16 → bf16: widened, then rounded once
    o = headway.attend(q, k16, v16, kv_dtype="bf16")
    want = reference(q, stored(k16.astype(np.float32), "bf16"), stored(v16.astype(np.float32), "bf16"))
    np.testing.assert_allclose(o, want, atol=1e-4, rtol=0)


@pytest.mark.parametrize("n_heads,n_kv", [(8, 8), (8, 2), (8, 1), (12, 4)])
def test_window_softcap_scale_gqa(rng, n_heads, n_kv):
    q, k, v = qkv(rng, 20, 90, n_heads, n_kv, 64)
    o = headway.attend(q, k, v, causal=True, window=12, softcap=5.0, scale=0.2)
    want = reference(q, k, v, causal=True, window=12, softcap=5.0, scale=0.2)
    np.testing.assert_allclose(o, want, atol=1e-4, rtol=0)


def test_sinks_alibi_and_masks(rng):
    q, k, v = qkv(rng, 33, 33, 12, 4, 64)
    sinks = rng.standard_normal(12).astype(np.float32)
    np.testing.assert_allclose(
        headway.attend(q, k, v, causal=True, sinks=sinks), reference(q, k, v, causal=True, sinks=sinks), atol=1e-4
    )
    np.testing.assert_allclose(
        headway.attend(q, k, v, causal=True, alibi=True), reference(q, k, v, causal=True, alibi=True), atol=1e-4
    )
    visible = rng.random((33, 33)) < 0.6
    np.testing.assert_allclose(headway.attend(q, k, v, mask=visible), reference(q, k, v, mask=visible), atol=1e-4)
    additive = np.where(visible, rng.standard_normal((33, 33)), -np.inf).astype(np.float32)
    np.testing.assert_allclose(headway.attend(q, k, v, mask=additive), reference(q, k, v, mask=additive), atol=1e-4)


def test_packed_batch_is_each_sequence_alone(rng):
    lens, kv_lens = [15, 16, 17, 1], [20, 16, 30, 5]
    q, _, _ = qkv(rng, sum(lens), 1, 8, 2, 64)
    _, k, v = qkv(rng, 1, sum(kv_lens), 8, 2, 64)
    o = headway.attend(q, k, v, causal=True, seq_lens=lens, kv_seq_lens=kv_lens, threads=2)
    cq, ck = np.cumsum([0] + lens), np.cumsum([0] + kv_lens)
    for b in range(len(lens)):
        alone = headway.attend(q[cq[b] : cq[b + 1]], k[ck[b] : ck[b + 1]], v[ck[b] : ck[b + 1]], causal=True)
        np.testing.assert_array_equal(o[cq[b] : cq[b + 1]], alone)  # bitwise, as attention.hpp says


def test_threads_are_bitwise_equal(rng):
    q, k, v = qkv(rng, 65, 65, 8, 2, 128)
    np.testing.assert_array_equal(headway.attend(q, k, v, threads=1), headway.attend(q, k, v, threads=3))


@pytest.mark.parametrize("t_q,t_kv,n_heads,n_kv,d", [(16, 16, 8, 8, 64), (17, 65, 8, 2, 128), (1, 63, 4, 1, 80)])
@pytest.mark.parametrize("mode", ["plain", "causal", "window", "mask"])
def test_against_torch(rng, t_q, t_kv, n_heads, n_kv, d, mode):
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    q, k, v = qkv(rng, t_q, t_kv, n_heads, n_kv, d)
    # bottom-right aligned: query i at position i + (t_kv − t_q)
    pos = np.arange(t_q)[:, None] + (t_kv - t_q)
    j = np.arange(t_kv)[None, :]
    kwargs, mask = {}, None
    if mode == "causal":
        kwargs, mask = {"causal": True}, j <= pos
    elif mode == "window":
        kwargs, mask = {"causal": True, "window": 7}, (j <= pos) & (j > pos - 7)
    elif mode == "mask":
        mask = rng.random((t_q, t_kv)) < 0.7
        mask[:, 0] = True  # every row sees a key (torch gives NaN for a row that sees none)
        kwargs = {"mask": mask}
    o = headway.attend(q, k, v, **kwargs)
    to = lambda a: torch.from_numpy(a).transpose(0, 1).unsqueeze(0)  # [1, heads, T, d]
    attn_mask = None if mask is None else torch.from_numpy(mask)
    want = F.scaled_dot_product_attention(to(q), to(k), to(v), attn_mask=attn_mask, enable_gqa=True)
    np.testing.assert_allclose(o, want[0].transpose(0, 1).numpy(), atol=1e-4, rtol=0)


def test_no_copy_of_contiguous_input(rng):
    q, k, _ = qkv(rng, 4, 4, 2, 2, 64)
    assert headway._headway._input_address(q) == q.ctypes.data
    k16 = k.astype(np.float16)
    assert headway._headway._input_address(k16) == k16.ctypes.data
    readonly = np.frombuffer(q.tobytes(), dtype=np.float32).reshape(q.shape)  # read-only memory
    assert headway._headway._input_address(readonly) == readonly.ctypes.data
    np.testing.assert_array_equal(headway.attend(readonly, k, k), headway.attend(q, k, k))


def test_gil_released_during_attend(rng):
    q, k, v = qkv(rng, 512, 2048, 8, 8, 128)
    start = time.perf_counter()
    headway.attend(q, k, v)
    duration = time.perf_counter() - start
    done, gaps = threading.Event(), []

    def work():
        headway.attend(q, k, v)
        done.set()

    worker = threading.Thread(target=work)
    last = time.perf_counter()
    worker.start()
    while not done.is_set():  # this thread keeps running while attend() computes, or it stalls
        now = time.perf_counter()
        gaps.append(now - last)
        last = now
    worker.join()
    assert len(gaps) > 100
    assert max(gaps) < duration / 2, f"longest stall {max(gaps):.3f} s of a {duration:.3f} s call"


def test_gpu_backend_or_clear_error(rng):
    q, k, v = qkv(rng, 9, 40, 4, 2, 64)
    if not headway.gpu_compiled():
        with pytest.raises(headway.Unsupported, match="GPU|gpu|Vulkan"):
            headway.attend(q, k, v, backend="gpu")
        return
    try:
        o = headway.attend(q, k, v, causal=True, backend="gpu")
    except headway.Unsupported as e:  # built with Vulkan, no usable device here
        pytest.skip(str(e))
    np.testing.assert_allclose(o, reference(q, k, v, causal=True), atol=1e-3, rtol=0)
