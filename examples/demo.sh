#!/usr/bin/env bash
# The README's main job: plan real models, show a config that cannot work, run attention.
set -euo pipefail
headway=${1:-build/release/bin/headway}
here=$(cd "$(dirname "$0")/.." && pwd)

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
