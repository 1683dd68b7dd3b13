"""headway.transformers.Cache: tiny random-weight transformers models decoding over headway's KV
caches against the same models with "eager" and transformers' DynamicCache. f32 and f16 caches
give the same greedy tokens; q8_0 stays within a measured logit error; crop(-n) then decoding
gives what DynamicCache (or a full recompute, for a sliding ring) gives. Skipped where torch or
transformers is missing."""

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import headway  # noqa: E402
import headway.transformers as hwt  # noqa: E402
from test_transformers import FAMILIES, TOL, _common, _ids, _models  # noqa: E402

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


def _greedy(model, cache, ids, steps):
    """Feeds ids [1, T] then `steps` greedy tokens one at a time; returns (the last call's logits
    for ids, the greedy tokens)."""
    first = model(ids, cache=cache).logits
    tokens = [int(first[0, -1].argmax())]
    for _ in range(steps - 1):
        tokens.append(int(model(torch.tensor([[tokens[-1]]]), cache=cache).logits[0, -1].argmax()))
    return first, tokens


def test_crop_then_generate_equals_dynamic_cache():
    # Assisted decoding's pattern: decode, roll back the rejected tokens with crop(-n), feed a
    # chunk of candidates at once, roll back again, go on.
    eager, hw = _models("llama")
    prompt = _ids(1, 8, seed=6)
    with torch.no_grad():
        dynamic = transformers.DynamicCache(config=eager.config)
        cache = hwt.Cache(hw.config, kv_dtype="f32", max_cache_len=64)
        assert cache.is_croppable
        runs = {}
        for name, model, c in (("dynamic", eager, dynamic), ("headway", hw, cache)):
            _, gen = _greedy(model, c, prompt, 6)  # 8 + 5 tokens fed
            c.crop(-4)
            lengths = (c.get_seq_length(), c.get_mask_sizes(3, 0))
            chunk, gen2 = _greedy(model, c, torch.tensor([[5, 17, 42]]), 5)
            c.crop(-2)
            _, gen3 = _greedy(model, c, torch.tensor([[gen2[0]]]), 6)
            runs[name] = (gen, lengths, chunk, gen2, gen3, c.get_seq_length())
    want, got = runs["dynamic"], runs["headway"]
    assert got[1] == want[1] == (9, (12, 0))
    assert (got[2] - want[2]).abs().max().item() <= TOL
    assert got[0] == want[0] and got[3] == want[3] and got[4] == want[4]
    assert got[5] == want[5]
    cache.crop(10)  # a positive value: the length to keep (older transformers' crop(max_length))
    assert cache.get_seq_length() == 10 and cache.get_mask_sizes(1, 0) == (11, 0)


def _recompute_greedy(model, seq, steps):
    """Greedy tokens by running the whole sequence each step (no cache)."""
    seq, out = list(seq), []
    for _ in range(steps):
        out.append(int(model(torch.tensor([seq])).logits[0, -1].argmax()))
        seq.append(out[-1])
    return out


def test_crop_of_a_sliding_ring():
    # Mistral, window 5; ring_chunk 3: rings of 7 rows. The prompt leaves its last 4 tokens, then
    # 6 decode steps wrap the ring: 3 tokens can go (the next token still finds the 4 before it),
    # a fourth would need a token the ring overwrote.
    eager, hw = _models("mistral_sliding")
    prompt = _ids(1, 9, seed=7)
    with torch.no_grad():
        cache = hwt.Cache(hw.config, kv_dtype="f32", max_cache_len=64, ring_chunk=3)
        _, gen = _greedy(hw, cache, prompt, 7)  # 9 + 6 tokens fed
        assert not cache.is_croppable
        with pytest.raises(headway.Unsupported, match=r"sliding layer \(window 5\) keeps its last 7 tokens .* "
                                                      r"removing 4 of 15 .* can remove at most 3 now"):
            cache.crop(-4)
        assert cache.get_seq_length() == 15 and all(c.size == 10 for layer in cache.layers for c in layer.caches)
        cache.crop(-3)
        assert cache.get_seq_length() == 12 and cache.get_mask_sizes(1, 0) == (13, 0)
        _, got = _greedy(hw, cache, torch.tensor([[11]]), 8)
        want = _recompute_greedy(eager, prompt[0].tolist() + gen[:3] + [11], 8)
    assert got == want


def test_crop_bad_input():
    _, hw = _models("llama")
    cache = hwt.Cache(hw.config, kv_dtype="q8_0", max_cache_len=32)
    ids = _ids(1, 6)
    with torch.no_grad():
        first = hw(ids, cache=cache).logits
        with pytest.raises(headway.OutOfRange, match=r"crop\(-7\): the cache holds 6 tokens"):
            cache.crop(-7)
        with pytest.raises(headway.OutOfRange, match=r"crop\(7\): the cache holds 6 tokens"):
            cache.crop(7)
        cache.crop(0)
        cache.crop(6)
        assert cache.get_seq_length() == 6
        cache.crop(-6)  # everything: as reset()
        assert cache.get_seq_length() == 0 and cache.get_mask_sizes(6, 0) == (6, 0)
        assert torch.equal(hw(ids, cache=cache).logits, first)
        # A left-padded row holds fewer tokens than the cache's length: a crop into its padding is refused.
        padded = hwt.Cache(hw.config, kv_dtype="f32", max_cache_len=32)
        mask = torch.ones(2, 6, dtype=torch.long)
        mask[0, :3] = 0
        hw(_ids(2, 6), attention_mask=mask, cache=padded)
        with pytest.raises(headway.Unsupported, match="batch row 0 holds 3 tokens"):
            padded.crop(-4)
        assert padded.get_seq_length() == 6
        padded.crop(-3)
        assert [c.size for c in padded.layers[0].caches] == [0, 3]


def test_assisted_generation_crops_and_equals_greedy(monkeypatch):
    # transformers' assisted decoding: a different random model drafts candidates, the headway
    # model verifies them in one call and crop(-n) rolls back the rejected ones.
    eager, hw = _models("llama")
    torch.manual_seed(1)
    assistant = transformers.AutoModelForCausalLM.from_config(
        transformers.LlamaConfig(**{**_common(num_key_value_heads=4), "num_hidden_layers": 1}),
        dtype=torch.float32).eval()
    crops = []
    crop = hwt.Cache.crop
    monkeypatch.setattr(hwt.Cache, "crop", lambda self, n: (crops.append(n), crop(self, n))[1])
    ids = _ids(1, 8, seed=3)
    kwargs = dict(max_new_tokens=24, do_sample=False, pad_token_id=0)
    with torch.no_grad():
        want = eager.generate(ids, **kwargs)
        cache = hwt.Cache(hw.config, kv_dtype="f32", max_cache_len=64)
        got = hw.generate(ids, cache=cache, assistant_model=assistant, **kwargs)
    assert torch.equal(got, want)
    assert any(n < 0 for n in crops)
    assert cache.get_seq_length() == want.shape[1] - 1
