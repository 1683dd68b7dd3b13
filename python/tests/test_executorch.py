"""headway.executorch: the headway:: operators in eager mode against a float64 reference (prefill,
decode, GQA, start_pos > 0, a mask, q8_0 / q4_0 caches), the same programs exported with
torch.export and run by executorch.runtime on libheadway_executorch.so's kernels against eager,
a tiny random-weight Llama through replace_attention + export + ExecuTorch against transformers'
logits, and bad input raising headway's message with the fallback, in eager mode, at export and
in the runtime. Skipped where the executorch wheel is missing."""

import copy
import math
import pathlib
import re

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("executorch.exir", reason="the executorch wheel is not installed (requirements.txt pins it)")
transformers = pytest.importorskip("transformers")

import headway  # noqa: E402
import headway.executorch as hx  # noqa: E402
from executorch.exir import to_edge  # noqa: E402
from executorch.runtime import Runtime  # noqa: E402

hx.load_kernels()
CACHE = 16


def _reference(q, k_rows, v_rows, start, causal=True, scale=None, mask=None):
    """float64 softmax(scale Q K^T + mask) V of one batch row: q [S, H, D], k/v rows [T, H_kv, D]."""
    q, k, v = (np.asarray(a, dtype=np.float64) for a in (q, k_rows, v_rows))
    seq, heads, dim = q.shape
    group = heads // k.shape[1]
    scale = 1.0 / math.sqrt(dim) if scale is None else scale
    out = np.zeros_like(q)
    for h in range(heads):
        logits = scale * q[:, h] @ k[:, h // group].T  # [S, T]
        if mask is not None:
            logits = logits + mask
        if causal:
            logits = np.where(np.arange(k.shape[0])[None, :] <= start + np.arange(seq)[:, None], logits, -np.inf)
        w = np.exp(logits - logits.max(axis=1, keepdims=True))
        out[:, h] = (w / w.sum(axis=1, keepdims=True)) @ v[:, h // group]
    return out


def _dequantized(cache, kv_dtype, rows, head_dim):
    """The first rows of a uint8 cache [rows, H_kv, row_bytes] as float32 [rows, H_kv, head_dim]."""
    part = cache[:rows].contiguous().numpy()
    return headway._headway._dequantize_rows(part.reshape(-1, part.shape[-1]), kv_dtype, head_dim).reshape(
        rows, part.shape[1], head_dim)


def _caches(batch, kv_heads, dim, kv_dtype):
    if kv_dtype == "f32":
        return torch.zeros(batch, CACHE, kv_heads, dim), torch.zeros(batch, CACHE, kv_heads, dim)
    return (hx.quantized_cache(batch, CACHE, kv_heads, dim, kv_dtype),
            hx.quantized_cache(batch, CACHE, kv_heads, dim, kv_dtype))


def _op(kv_dtype):
    return torch.ops.headway.sdpa_with_kv_cache if kv_dtype == "f32" else torch.ops.headway.sdpa_with_quantized_kv_cache


@pytest.mark.parametrize("kv_dtype", ["f32", "q8_0", "q4_0"])
@pytest.mark.parametrize("heads,kv_heads,dim", [(4, 4, 64), (8, 2, 32), (6, 3, 40)])
def test_eager_matches_float64(kv_dtype, heads, kv_heads, dim):
    """Prefill of 5, a chunk of 3 at start_pos 5, then decode steps: each call's output equals the
    float64 formula over the cache's rows (as stored: dequantized for q8_0 / q4_0) within 1e-4."""
    torch.manual_seed(heads + dim)
    batch = 2
    kc, vc = _caches(batch, kv_heads, dim, kv_dtype)
    start = 0
    for seq in (5, 3, 1, 1):
        q = torch.randn(batch, seq, heads, dim)
        k, v = torch.randn(batch, seq, kv_heads, dim), torch.randn(batch, seq, kv_heads, dim)
        out = _op(kv_dtype)(q, k, v, kc, vc, start, seq, None, 0.0, True, None)
        for b in range(batch):
            if kv_dtype == "f32":
                k_rows, v_rows = kc[b, :start + seq].numpy(), vc[b, :start + seq].numpy()
                np.testing.assert_array_equal(k_rows[start:], k[b].numpy())  # written at start_pos
            else:
                k_rows = _dequantized(kc[b], kv_dtype, start + seq, dim)
                v_rows = _dequantized(vc[b], kv_dtype, start + seq, dim)
                err = np.abs(k_rows[start:] - k[b].numpy()).max()
                assert err < (0.05 if kv_dtype == "q8_0" else 0.6), err  # the rows are k, quantized
            want = _reference(q[b].numpy(), k_rows, v_rows, start)
            assert np.abs(out[b].numpy() - want).max() <= 1e-4, (seq, start)
        start += seq


def test_eager_scale_mask_and_not_causal():
    """A given scale, no causality, and an additive mask over every cache row (ExecuTorch's rule)."""
    torch.manual_seed(1)
    kc, vc = _caches(1, 2, 64, "f32")
    q, k, v = torch.randn(1, 4, 4, 64), torch.randn(1, 4, 2, 64), torch.randn(1, 4, 2, 64)
    out = torch.ops.headway.sdpa_with_kv_cache(q, k, v, kc, vc, 0, 4, None, 0.0, False, 0.3)
    want = _reference(q[0].numpy(), kc[0, :4].numpy(), vc[0, :4].numpy(), 0, causal=False, scale=0.3)
    assert np.abs(out[0].numpy() - want).max() <= 1e-4
    mask = torch.full((2, CACHE), float("-inf"))
    mask[:, :5] = torch.randn(2, 5)
    q2, k2, v2 = torch.randn(1, 2, 4, 64), torch.randn(1, 2, 2, 64), torch.randn(1, 2, 2, 64)
    out = torch.ops.headway.sdpa_with_kv_cache(q2, k2, v2, kc, vc, 4, 2, mask, 0.0, False, None)
    want = _reference(q2[0].numpy(), kc[0].numpy(), vc[0].numpy(), 4, causal=False, mask=mask.numpy())
    assert np.abs(out[0].numpy() - want).max() <= 1e-4


def test_update_cache():
    torch.manual_seed(2)
    cache, qcache = torch.zeros(1, CACHE, 2, 64), hx.quantized_cache(1, CACHE, 2, 64, "q8_0")
    value = torch.randn(1, 3, 2, 64)
    torch.ops.headway.update_cache(value, cache, 4)
    torch.ops.headway.update_cache(value, qcache, 4)
    assert torch.equal(cache[:, 4:7], value) and not cache[:, :4].any() and not cache[:, 7:].any()
    assert np.abs(_dequantized(qcache[0], "q8_0", 7, 64)[4:] - value[0].numpy()).max() < 0.05


class _Sdpa(torch.nn.Module):
    """The op over caches held as buffers, the way a model holds them."""

    def __init__(self, heads, kv_heads, dim, kv_dtype):
        super().__init__()
        kc, vc = _caches(1, kv_heads, dim, kv_dtype)
        self.register_buffer("kc", kc)
        self.register_buffer("vc", vc)
        self.op = _op(kv_dtype)

    def forward(self, q, k, v, start_pos):
        start = start_pos[0].item()
        torch._check(start >= 0)
        torch._check(start + q.shape[1] <= CACHE)
        return self.op(q, k, v, self.kc, self.vc, start, q.shape[1], None, 0.0, True, None)


_programs = []  # a Method does not keep its Program alive: they must outlive the test's calls


def _program(module, example, dynamic_shapes):
    with torch.no_grad():
        ep = torch.export.export(module, example, dynamic_shapes=dynamic_shapes)
    _programs.append(Runtime.get().load_program(to_edge(ep).to_executorch().buffer))
    return _programs[-1].load_method("forward")


@pytest.mark.parametrize("kv_dtype", ["f32", "q8_0", "q4_0"])
def test_executorch_matches_eager(kv_dtype):
    """The exported program (headway::...out on libheadway_executorch.so) gives eager's outputs:
    prefill, then decode steps over the caches the program keeps."""
    torch.manual_seed(3)
    heads, kv_heads, dim = 8, 2, 64
    seq = torch.export.Dim("seq", min=1, max=CACHE)
    steps = [(0, 5), (5, 1), (6, 2)]
    inputs = [(torch.randn(1, s, heads, dim), torch.randn(1, s, kv_heads, dim), torch.randn(1, s, kv_heads, dim),
               torch.tensor([p])) for p, s in steps]
    method = _program(_Sdpa(heads, kv_heads, dim, kv_dtype), inputs[0], ({1: seq}, {1: seq}, {1: seq}, None))
    eager = _Sdpa(heads, kv_heads, dim, kv_dtype)
    for args in inputs:
        got = hx.execute(method, list(args))[0]
        assert (got - eager(*args)).abs().max().item() <= 1e-5


def _tiny_llama(kv_heads=2):
    torch.manual_seed(4)
    config = transformers.LlamaConfig(vocab_size=96, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                                      num_attention_heads=4, num_key_value_heads=kv_heads, max_position_embeddings=64,
                                      attn_implementation="eager", initializer_range=0.25)
    return transformers.LlamaForCausalLM(config).eval()


@pytest.mark.parametrize("kv_dtype", ["f32", "q8_0"])  # q4_0 runs the same path (test_executorch_matches_eager)
def test_llama_through_executorch(kv_dtype):
    """A tiny random-weight Llama (GQA) with replace_attention, exported and run by ExecuTorch, a
    prompt of 5 then two decode steps: the same model in eager mode within 1e-4, and transformers'
    logits within 1e-3 with an f32 cache (q8_0: within 5% of the largest logit, the cost of
    quantized K/V)."""
    model = _tiny_llama()
    ids = torch.randint(0, 96, (1, 7))
    with torch.no_grad():
        want = model(ids).logits
    lm = hx.ExportableLM(hx.replace_attention(copy.deepcopy(model), max_cache_len=CACHE, kv_dtype=kv_dtype))
    seq = torch.export.Dim("seq", min=1, max=CACHE)
    method = _program(lm, (ids[:, :5], torch.tensor([0])), ({1: seq}, None))
    eager = hx.ExportableLM(hx.replace_attention(copy.deepcopy(model), max_cache_len=CACHE, kv_dtype=kv_dtype))
    tol = 1e-3 if kv_dtype == "f32" else 0.05 * want.abs().max().item()
    for start, end in ((0, 5), (5, 6), (6, 7)):
        got = hx.execute(method, [ids[:, start:end], torch.tensor([start])])[0]
        with torch.no_grad():
            assert (got - eager(ids[:, start:end], torch.tensor([start]))).abs().max().item() <= 1e-4
        assert (got - want[:, start:end]).abs().max().item() <= tol, (start, end)


def test_llama_eager_matches_transformers():
    model = _tiny_llama(kv_heads=4)
    ids = torch.randint(0, 96, (1, 6))
    with torch.no_grad():
        want = model(ids).logits
        lm = hx.ExportableLM(hx.replace_attention(copy.deepcopy(model), max_cache_len=CACHE))
        got = torch.cat([lm(ids[:, :4], torch.tensor([0])), lm(ids[:, 4:5], torch.tensor([4])),
                         lm(ids[:, 5:6], torch.tensor([5]))], dim=1)
    assert (got - want).abs().max().item() <= 1e-4


def _args(q_dtype=torch.float32, heads=4, kv_heads=2, start=0, seq=2):
    kc, vc = _caches(1, kv_heads, 32, "f32")
    return (torch.randn(1, seq, heads, 32, dtype=q_dtype), torch.randn(1, seq, kv_heads, 32),
            torch.randn(1, seq, kv_heads, 32), kc, vc, start, seq)


def test_bad_input_eager():
    op = torch.ops.headway.sdpa_with_kv_cache
    with pytest.raises(headway.Unsupported, match=r"query has dtype float16.*llama::sdpa_with_kv_cache"):
        op(*_args(q_dtype=torch.float16))
    with pytest.raises(headway.InvalidArgument, match="6 heads and key 4 kv heads: 6 is not divisible by 4"):
        op(*_args(heads=6, kv_heads=4))
    with pytest.raises(headway.OutOfRange, match=r"start_pos 15 \+ seq_len 2 = 17 goes past the cache's 16 rows"):
        op(*_args(start=15))
    with pytest.raises(headway.Unsupported, match="float32 caches go to headway::sdpa_with_kv_cache"):
        torch.ops.headway.sdpa_with_quantized_kv_cache(*_args())
    with pytest.raises(headway.InvalidArgument, match="neither q8_0 .* nor q4_0"):
        q, k, v, _, _, s, n = _args()
        bad = torch.zeros(1, CACHE, 2, 20, dtype=torch.uint8)
        torch.ops.headway.sdpa_with_quantized_kv_cache(q, k, v, bad, bad.clone(), s, n)


def test_bad_input_at_export():
    """The meta kernels check what is static when torch.export traces."""

    class M(torch.nn.Module):
        def forward(self, q, k, v, kc, vc):
            return torch.ops.headway.sdpa_with_kv_cache(q, k, v, kc, vc, 0, q.shape[1])

    with pytest.raises(headway.Unsupported, match="query has dtype float16"):
        torch.export.export(M(), _args(q_dtype=torch.float16)[:5])
    with pytest.raises(headway.InvalidArgument, match="not divisible"):
        torch.export.export(M(), _args(heads=6, kv_heads=4)[:5])


def test_bad_input_in_executorch():
    """A start_pos past the cache arrives at run time: the kernel refuses it, execute() raises
    headway's message, and the next call runs."""
    method = _program(_Sdpa(4, 2, 64, "f32"), (torch.randn(1, 1, 4, 64), torch.randn(1, 1, 2, 64),
                                               torch.randn(1, 1, 2, 64), torch.tensor([0])), None)
    args = [torch.randn(1, 1, 4, 64), torch.randn(1, 1, 2, 64), torch.randn(1, 1, 2, 64)]
    with pytest.raises(headway.OutOfRange, match=r"headway::sdpa_with_kv_cache: start_pos 16 \+ seq_len 1 = 17 goes "
                                                 "past the cache's 16 rows"):
        hx.execute(method, args + [torch.tensor([CACHE])])
    hx.execute(method, args + [torch.tensor([0])])
    assert hx.last_error() == ""


def test_replace_attention_refuses_what_it_cannot_take():
    with pytest.raises(headway.InvalidArgument, match="kv_dtype 'f16' is not one of f32, q8_0, q4_0"):
        hx.replace_attention(_tiny_llama(), max_cache_len=CACHE, kv_dtype="f16")
    with pytest.raises(headway.Unsupported, match="has no decoder layers with a self_attn"):
        hx.replace_attention(torch.nn.Linear(2, 2))


def test_executorch_llama_through_executorch():
    """ExecuTorch's own Llama (examples.models.llama, KV cache, dynamic shapes) with
    replace_attention, exported and run by ExecuTorch: its own eager logits (its SDPA over its
    KVCache) within 1e-4, prompt and decode steps."""
    llama = pytest.importorskip("executorch.examples.models.llama.llama_transformer")
    from executorch.examples.models.llama.model_args import ModelArgs

    torch.manual_seed(5)
    args = ModelArgs(dim=64, n_layers=2, n_heads=4, n_kv_heads=2, vocab_size=96, hidden_dim=96, max_seq_len=CACHE,
                     max_context_len=CACHE, use_kv_cache=True, enable_dynamic_shape=True, generate_full_logits=True)
    ref = llama.construct_transformer(args).eval()
    for p in ref.parameters():
        if p.dim() > 1:
            torch.nn.init.normal_(p, std=0.25)

    class Tokens(torch.nn.Module):
        def __init__(self, model):
            super().__init__()
            self.model = model

        def forward(self, tokens, input_pos):
            return self.model(tokens, {"input_pos": input_pos})

    ids = torch.randint(0, 96, (1, 7))
    ours = Tokens(hx.replace_attention(copy.deepcopy(ref)))
    assert isinstance(ours.model.layers[0].attention.SDPA, hx.HeadwaySDPA)
    seq = torch.export.Dim("seq", min=1, max=CACHE)
    method = _program(ours, (ids[:, :5], torch.tensor([0])), ({1: seq}, None))
    for start, end in ((0, 5), (5, 6), (6, 7)):
        with torch.no_grad():
            want = ref(ids[:, start:end], {"input_pos": torch.tensor([start])})
        got = hx.execute(method, [ids[:, start:end], torch.tensor([start])])[0]
        assert (got - want).abs().max().item() <= 1e-4, (start, end)


def test_docs_quick_start():
    """docs/executorch.md's quick start runs as written."""
    text = (pathlib.Path(__file__).resolve().parents[2] / "docs" / "executorch.md").read_text()
    scope = {}
    exec(re.search(r"```python\n(.*?)```", text, re.S).group(1), scope)  # noqa: S102
    assert tuple(scope["logits"].shape) == (1, 8, 96) and tuple(scope["step"].shape) == (1, 1, 96)
