"""headway.transformers.Cache: tiny random-weight transformers models decoding over headway's KV
caches against the same models with "eager" and transformers' DynamicCache. f32 and f16 caches
give the same greedy tokens; q8_0 stays within a measured logit error. Skipped where torch or
transformers is missing."""

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import headway  # noqa: E402
import headway.transformers as hwt  # noqa: E402
from test_transformers import FAMILIES, _ids, _models  # noqa: E402

hwt.register()


@pytest.mark.parametrize(
    "family,kv_dtype",
    [(f, "f32") for f in FAMILIES] + [(f, "f16") for f in ("llama", "qwen2_gqa", "gemma2_softcap_window")],
)
def test_greedy_generate_equals_dynamic_cache(family, kv_dtype):
    eager, hw = _models(family)
    ids = _ids(2, 6, seed=3)
    mask = torch.ones_like(ids)
    mask[0, :2] = 0  # left padding: never enters headway's caches
    kwargs = dict(attention_mask=mask, max_new_tokens=32, do_sample=False, pad_token_id=0)
    with torch.no_grad():
        want = eager.generate(ids, **kwargs)
        cache = hwt.Cache(hw.config, kv_dtype=kv_dtype, max_cache_len=64)
        got = hw.generate(ids, cache=cache, **kwargs)
    assert torch.equal(got, want)
    assert cache.get_seq_length() == want.shape[1] - 1  # the last token is never fed back


# Measured max |logit error| / max |logit| of 8 decode steps over a cache after an 8-token prompt
# (the models of test_transformers.py, weights N(0, 0.25^2)): f32 <= 1.4e-6, f16 <= 1.2e-3,
# q8_0 <= 3.9e-2, q4_0 <= 0.38 (SmolLM3's NoPE layers the largest).
BOUNDS = {"f32": 5e-6, "f16": 3e-3, "q8_0": 8e-2, "q4_0": 0.6}


@pytest.mark.parametrize("family", list(FAMILIES))
@pytest.mark.parametrize("kv_dtype", list(BOUNDS))
def test_decode_logits_close(family, kv_dtype):
    eager, hw = _models(family)
    ids = _ids(1, 16, seed=4)
    with torch.no_grad():
        want = eager(ids).logits[0, 8:]
        cache = hwt.Cache(hw.config, kv_dtype=kv_dtype, max_cache_len=32)
        hw(ids[:, :8], cache=cache)
        got = torch.cat([hw(ids[:, i : i + 1], cache=cache).logits[0] for i in range(8, 16)])
    err = (got - want).abs().max().item() / want.abs().max().item()
    assert err <= BOUNDS[kv_dtype], f"{family} {kv_dtype}: relative logit error {err:.2e}"


def test_lengths_reset_and_memory():
    _, hw = _models("qwen2_gqa")
    cache = hwt.Cache(hw.config, kv_dtype="q8_0", max_cache_len=32)
    assert cache.get_seq_length() == 0 and cache.get_mask_sizes(5, 0) == (5, 0)
    ids = _ids(1, 10)
    with torch.no_grad():
        first = hw(ids, cache=cache).logits
        assert cache.get_seq_length() == 10 and cache.get_mask_sizes(1, 1) == (11, 0)
        assert cache.get_max_length() == 32
        # 2 layers x (K and V) x 32 rows x 2 kv heads x one 34-byte q8_0 block (head_dim 4 pads to 32)
        assert cache.kv_bytes() == 2 * 2 * 32 * 2 * 34
        cache.reset()
        assert cache.get_seq_length() == 0
        again = hw(ids, cache=cache).logits
    assert torch.equal(first, again)


def test_cache_errors():
    _, hw = _models("llama")
    with pytest.raises(headway.InvalidArgument, match="kv_dtype 'q3_k'"):
        hwt.Cache(hw.config, kv_dtype="q3_k")
    with pytest.raises(headway.InvalidArgument, match="max_cache_len = 0"):
        hwt.Cache(hw.config, max_cache_len=0)
    eager, _ = _models("llama")
    with pytest.raises(headway.Unsupported, match="attn_implementation is 'eager'"):
        hwt.Cache(eager.config)
    cache = hwt.Cache(hw.config, kv_dtype="f16", max_cache_len=8)
    with torch.no_grad():
        hw(_ids(1, 6), cache=cache)
        with pytest.raises(headway.OutOfRange, match="goes past the context of 8 tokens"):
            hw(_ids(1, 4), cache=cache)
    with pytest.raises(headway.Unsupported, match="crop"):
        cache.crop(2)
    hw.set_attn_implementation("eager")  # the layers' K/V would never reach headway
    cache = hwt.Cache(_models("llama")[1].config, kv_dtype="f16", max_cache_len=8)
    with torch.no_grad(), pytest.raises(headway.FailedPrecondition, match="never reached headway"):
        hw(_ids(1, 2), cache=cache)
        hw(_ids(1, 1), cache=cache)


@pytest.mark.parametrize("family", ["mistral_sliding", "gemma2_softcap_window", "gpt_oss_sinks", "gemma3_local_global"])
def test_sliding_layers_are_rings(family):
    # window 5, ring_chunk 3: a sliding layer's ring holds 5 + 3 - 1 = 7 rows and wraps many
    # times over 32 new tokens; the full layers (Gemma 2, gpt-oss) keep max_cache_len rows.
    eager, hw = _models(family)
    ids = _ids(2, 9, seed=5)
    mask = torch.ones_like(ids)
    mask[1, :3] = 0
    kwargs = dict(attention_mask=mask, max_new_tokens=32, do_sample=False, pad_token_id=0)
    with torch.no_grad():
        want = eager.generate(ids, **kwargs)
        cache = hwt.Cache(hw.config, kv_dtype="f32", max_cache_len=64, ring_chunk=3)
        got = hw.generate(ids, cache=cache, **kwargs)
    assert torch.equal(got, want)
    rows = [layer.caches[0].rows for layer in cache.layers]
    types = getattr(hw.config, "layer_types", None) or ["sliding_attention"] * len(rows)  # Mistral: every layer
    sliding = [t == "sliding_attention" for t in types]
    assert rows == [7 if s else 64 for s in sliding]
