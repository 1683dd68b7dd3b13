"""headway.transformers: tiny random-weight transformers models (Llama, Qwen2 with GQA, Mistral
with a sliding window, Gemma 2 with softcap and alternating windows, gpt-oss with sinks, Qwen3,
Gemma 3, SmolLM3) run with attn_implementation="headway" against the same models with "eager"
(float32 logits within 1e-5, left-padded batches too), greedy generation, and bad input raising
errors that name the argument. Skipped where torch or transformers is missing."""

import copy

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import headway  # noqa: E402
import headway.transformers as hwt  # noqa: E402

hwt.register()

VOCAB = 96
TOL = 1e-5


def _common(**extra):
    base = dict(vocab_size=VOCAB, hidden_size=32, intermediate_size=48, num_hidden_layers=2, num_attention_heads=4,
                num_key_value_heads=2, max_position_embeddings=128, pad_token_id=0, tie_word_embeddings=False,
                initializer_range=0.25)
    base.update(extra)
    return base


def _llama():
    return transformers.LlamaConfig(**_common(num_key_value_heads=4))


def _qwen2():
    return transformers.Qwen2Config(**_common(num_attention_heads=8, num_key_value_heads=2))


def _mistral():
    return transformers.MistralConfig(**_common(sliding_window=5))


def _gemma2():
    return transformers.Gemma2Config(**_common(head_dim=16, sliding_window=5, attn_logit_softcapping=3.0,
                                               final_logit_softcapping=30.0, query_pre_attn_scalar=20))


def _gpt_oss():
    if not hasattr(transformers, "GptOssConfig"):
        pytest.skip("this transformers has no GptOss")
    return transformers.GptOssConfig(**_common(head_dim=8, num_local_experts=4, num_experts_per_tok=2,
                                               sliding_window=5, intermediate_size=32))


def _qwen3():
    return transformers.Qwen3Config(**_common(head_dim=16))


def _gemma3():
    return transformers.Gemma3TextConfig(**_common(head_dim=16, sliding_window=5, query_pre_attn_scalar=16,
                                                   num_hidden_layers=3,
                                                   layer_types=["sliding_attention"] * 2 + ["full_attention"]))


def _smollm3():  # NoPE every 4th layer
    return transformers.SmolLM3Config(**_common(num_hidden_layers=4, bos_token_id=None, eos_token_id=None))


FAMILIES = {"llama": _llama, "qwen2_gqa": _qwen2, "mistral_sliding": _mistral, "gemma2_softcap_window": _gemma2,
            "gpt_oss_sinks": _gpt_oss, "qwen3_qk_norm": _qwen3, "gemma3_local_global": _gemma3,
            "smollm3_nope": _smollm3}


def _models(family):
    config = FAMILIES[family]()
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config, attn_implementation="eager", dtype=torch.float32)
    model.eval()
    if family == "gpt_oss_sinks":  # random sinks: the default init leaves them at zero
        with torch.no_grad():
            for layer in model.model.layers:
                layer.self_attn.sinks.normal_()
    other = transformers.AutoModelForCausalLM.from_config(copy.deepcopy(config), attn_implementation="headway",
                                                          dtype=torch.float32)
    other.load_state_dict(model.state_dict())
    other.eval()
    assert model.config._attn_implementation == "eager" and other.config._attn_implementation == "headway"
    return model, other


def _ids(batch, length, seed=1):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(1, VOCAB, (batch, length), generator=g)


@pytest.mark.parametrize("family", list(FAMILIES))
def test_logits_match_eager(family):
    eager, hw = _models(family)
    ids = _ids(2, 12)
    with torch.no_grad():
        want = eager(ids).logits
        got = hw(ids).logits
    assert torch.isfinite(got).all()
    err = (got - want).abs().max().item()
    assert err <= TOL, f"{family}: max |headway - eager| = {err}"


@pytest.mark.parametrize("family", list(FAMILIES))
def test_left_padded_batch_matches_eager(family):
    eager, hw = _models(family)
    ids = _ids(3, 11, seed=2)
    mask = torch.ones_like(ids)
    mask[1, :4] = 0
    mask[2, :7] = 0
    ids[mask == 0] = 0
    with torch.no_grad():
        want = eager(ids, attention_mask=mask).logits
        got = hw(ids, attention_mask=mask).logits
    real = mask.bool()
    err = (got[real] - want[real]).abs().max().item()
    assert err <= TOL, f"{family}: max |headway - eager| = {err}"


@pytest.mark.parametrize("family,padded", [("llama", True), ("mistral_sliding", False), ("gemma2_softcap_window", True),
                                           ("gpt_oss_sinks", False)])
def test_greedy_generate_matches_eager(family, padded):
    eager, hw = _models(family)
    ids = _ids(2, 6, seed=3)
    mask = torch.ones_like(ids)
    if padded:
        mask[0, :2] = 0
    kwargs = dict(attention_mask=mask, max_new_tokens=12, do_sample=False, pad_token_id=0)
    with torch.no_grad():
        want = eager.generate(ids, **kwargs)
        got = hw.generate(ids, **kwargs)
    assert torch.equal(got, want)


def test_float64_model_matches_eager():
    config = _qwen2()
    torch.manual_seed(0)
    eager = transformers.AutoModelForCausalLM.from_config(config, attn_implementation="eager", dtype=torch.float64)
    hw = transformers.AutoModelForCausalLM.from_config(copy.deepcopy(config), attn_implementation="headway",
                                                       dtype=torch.float64)
    hw.load_state_dict(eager.state_dict())
    ids = _ids(1, 9)
    with torch.no_grad():
        got, want = hw(ids).logits, eager(ids).logits
    assert got.dtype == torch.float64
    assert (got - want).abs().max().item() < 1e-5  # headway computes in float32


def test_set_attn_implementation():
    eager, _ = _models("llama")
    ids = _ids(1, 7)
    with torch.no_grad():
        want = eager(ids).logits
        eager.set_attn_implementation("headway")
        got = eager(ids).logits
    assert (got - want).abs().max().item() <= TOL


def test_decode_query_is_read_in_place():
    # Q = 1: [B, H, 1, D] is contiguous as [B, 1, H, D]; H_kv = 1 K/V likewise: no copy is made.
    q = torch.randn(1, 4, 1, 8)
    k = torch.randn(1, 1, 5, 8)
    got, _ = hwt.attention_forward(None, q, k, k, None, scaling=0.5)
    ref = torch.nn.functional.scaled_dot_product_attention(q, k.expand(1, 4, 5, 8), k.expand(1, 4, 5, 8), scale=0.5)
    assert (got - ref.transpose(1, 2)).abs().max().item() < 1e-6
    assert hwt._as_numpy(q.transpose(1, 2), False).ctypes.data == q.data_ptr()
    assert hwt._as_numpy(k.transpose(1, 2), True).ctypes.data == k.data_ptr()


Q = torch.zeros(1, 4, 3, 8)
K = torch.zeros(1, 2, 5, 8)


@pytest.mark.parametrize(
    "args,kwargs,cls,message",
    [
        ((Q.long(), K, K, None), {}, headway.Unsupported, "query: dtype torch.int64 is not supported"),
        ((Q, K.to(torch.int8), K, None), {}, headway.Unsupported, "key: dtype torch.int8"),
        ((Q[0], K, K, None), {}, headway.InvalidArgument, r"query: shape \(4, 3, 8\) has 3 dims, expected 4"),
        ((Q, K[..., :4], K[..., :4], None), {}, headway.InvalidArgument, "key: shape"),
        ((Q, K, K[:, :1], None), {}, headway.InvalidArgument, "value: shape"),
        ((Q[:, :3], K, K, None), {}, headway.InvalidArgument, "2 kv heads do not divide query's 3 heads"),
        ((Q, K, K, torch.ones(1, 1, 2, 5, dtype=torch.bool)), {}, headway.InvalidArgument, "attention_mask: shape"),
        ((Q, K, K, None), {"s_aux": torch.zeros(3)}, headway.InvalidArgument, "s_aux"),
        ((Q, K, K, None), {"softcap": -1.0}, headway.InvalidArgument, "softcap"),
        ((Q, [1.0], K, None), {}, headway.InvalidArgument, "key: expected a torch.Tensor"),
    ],
)
def test_bad_input_raises(args, kwargs, cls, message):
    with pytest.raises(cls, match=message):
        hwt.attention_forward(None, *args, **kwargs)


def test_package_imports_without_torch_module():
    # headway itself does not import headway.transformers (it needs torch).
    import subprocess
    import sys

    code = "import sys, headway; assert 'torch' not in sys.modules and 'headway.transformers' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)
