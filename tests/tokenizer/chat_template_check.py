"""`headway tokenize --messages` against transformers' apply_chat_template, for every recognized template.

The templates in chat_templates/ are the models' own (ChatML of Qwen2.5 and Qwen3, Llama 3, 3.1 and
3.2, Gemma 2 and 3, Phi-3-mini's first, Phi-3-small's and Phi-3.5's, Mistral v0.1, v0.3 and Nemo;
SmolLM2's is checked in its GGUF by model_logits_check). Each goes into a model folder with a
byte-level BPE trained here (the templates' special tokens added) and a tokenizer_config.json naming
it, BOS and EOS; transformers loads the folder and renders each conversation (with and without a
system message, one and several turns, contents with spaces around them and non-ASCII text) with
add_generation_prompt=True. headway must give the same prompt text and the same ids; where Jinja
raises (a system message Gemma 2 or Mistral v0.1 refuses, roles that do not alternate), headway must
exit 2 naming the message. A template of another kind must be refused, naming its file.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import AutoTokenizer

HERE = os.path.dirname(os.path.abspath(__file__))
SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|begin_of_text|>", "<|start_header_id|>",
           "<|end_header_id|>", "<|eot_id|>", "<bos>", "<eos>", "<start_of_turn>", "<end_of_turn>", "<s>", "</s>",
           "<|user|>", "<|assistant|>", "<|system|>", "<|end|>", "[INST]", "[/INST]"]
# template file → (bos_token, eos_token)
TEMPLATES = {
    "qwen2.5.jinja": (None, "<|im_end|>"),
    "qwen3.jinja": (None, "<|im_end|>"),
    "llama3.jinja": ("<|begin_of_text|>", "<|eot_id|>"),
    "llama3.1.jinja": ("<|begin_of_text|>", "<|eot_id|>"),
    "llama3.2.jinja": ("<|begin_of_text|>", "<|eot_id|>"),
    "gemma2.jinja": ("<bos>", "<eos>"),
    "gemma3.jinja": ("<bos>", "<eos>"),
    "phi3-mini.jinja": ("<s>", "<|endoftext|>"),
    "phi3-small.jinja": ("<|endoftext|>", "<|endoftext|>"),
    "phi3.5.jinja": ("<s>", "<|endoftext|>"),
    "mistral-v0.1.jinja": ("<s>", "</s>"),
    "mistral-v0.3.jinja": ("<s>", "</s>"),
    "mistral-nemo.jinja": ("<s>", "</s>"),
}


def sys_(c):
    return {"role": "system", "content": c}


def user(c):
    return {"role": "user", "content": c}


def bot(c):
    return {"role": "assistant", "content": c}


CONVERSATIONS = [
    [user("What is the capital of France?")],
    [sys_("You are terse."), user("What is the capital of France?")],
    [user("  Hi there!  \n"), bot(" Hello! How can I help?\n"), user("Tell me a joke about café crème.")],
    [sys_("  Answer in Greek: Καλημέρα.  "), user("Hi"), bot("Γεια σου!"), user("How are you?"), bot("Fine."),
     user("Bye 👋🏽")],
    [sys_(""), user("An empty system message")],
    [user("one"), user("two")],  # not alternating
]
CORPUS = ["Hello world, how are you today?", "The capital of France is Paris.", "Καλημέρα κόσμε, γεια σου!",
          "café crème brûlée 👋🏽 emoji", "Tell me a joke about cats and dogs.", "Answer in one word: yes or no.",
          "system user assistant model", "Cutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024"] * 20


def make_tokenizer(path):
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=SPECIAL,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(CORPUS, trainer)
    tok.save(path)


def ids_of(result):
    # transformers 5 returns a BatchEncoding by default; 4.x a list.
    return list(result["input_ids"]) if hasattr(result, "keys") else list(result)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--headway", required=True)
    args = ap.parse_args()
    failures = []
    cases = 0
    with tempfile.TemporaryDirectory() as tmp:
        tok_json = os.path.join(tmp, "tokenizer.json")
        make_tokenizer(tok_json)
        for name, (bos, eos) in TEMPLATES.items():
            folder = os.path.join(tmp, name)
            os.mkdir(folder)
            with open(tok_json) as f, open(os.path.join(folder, "tokenizer.json"), "w") as g:
                g.write(f.read())
            with open(os.path.join(HERE, "chat_templates", name)) as f:
                template = f.read()
            config = {"tokenizer_class": "PreTrainedTokenizerFast", "chat_template": template, "eos_token": eos}
            if bos is not None:
                config["bos_token"] = bos
            with open(os.path.join(folder, "tokenizer_config.json"), "w") as f:
                json.dump(config, f)
            hf = AutoTokenizer.from_pretrained(folder)
            for k, conv in enumerate(CONVERSATIONS):
                cases += 1
                try:
                    want_text = hf.apply_chat_template(conv, tokenize=False, add_generation_prompt=True)
                    want_ids = ids_of(hf.apply_chat_template(conv, tokenize=True, add_generation_prompt=True))
                except Exception as e:  # Jinja's raise_exception
                    want_text, want_ids = None, str(e)
                messages = os.path.join(tmp, "messages.json")
                with open(messages, "w") as f:
                    json.dump(conv, f)
                r = subprocess.run([args.headway, "tokenize", "--model-dir", folder, "--messages", messages, "--json"],
                                   capture_output=True, text=True)
                where = f"{name} conversation {k}"
                if want_text is None:
                    if r.returncode != 2 or "chat: message" not in r.stderr and "refuses" not in r.stderr:
                        failures.append(f"{where}: Jinja raised ({want_ids}); headway exit {r.returncode}: "
                                        f"{r.stdout}{r.stderr}")
                    continue
                if r.returncode != 0:
                    failures.append(f"{where}: exit {r.returncode}: {r.stderr.strip()}")
                    continue
                got = json.loads(r.stdout)
                if got["prompt"] != want_text:
                    failures.append(f"{where}: prompt\n  headway {got['prompt']!r}\n  jinja   {want_text!r}")
                elif got["ids"] != want_ids:
                    failures.append(f"{where}: ids\n  headway {got['ids']}\n  hf      {want_ids}")
        # A template of another kind is refused, naming its file.
        other = os.path.join(tmp, "other.jinja")
        with open(other, "w") as f:
            f.write("{% for m in messages %}### {{ m['role'] }}: {{ m['content'] }}\n{% endfor %}### assistant:")
        r = subprocess.run([args.headway, "tokenize", "--tokenizer", tok_json, "--chat", "--text", "hi",
                            "--chat-template", other], capture_output=True, text=True)
        cases += 1
        if r.returncode != 2 or "other.jinja: its chat template is not one headway recognizes" not in r.stderr:
            failures.append(f"unknown template: exit {r.returncode}: {r.stderr.strip()}")
    for f in failures:
        print("FAIL", f)
    print(f"chat templates: {cases - len(failures)}/{cases} cases as transformers renders them")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
