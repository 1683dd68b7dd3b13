#!/usr/bin/env bash
# headway against llama.cpp on the same GGUF: `headway bench --model` and llama.cpp's llama-bench,
# the same -p / -n / -d / -t, run in turn (for each depth and thread count: llama-bench with flash
# attention off and on, then headway for each weight dtype), and one table of tokens/s at the end
# (mean ± stddev over the repetitions, as both print them).
#
#   bench/model_vs_llama.sh LLAMA_BENCH MODEL.gguf [-p 512] [-n 128] [-d 0,4096] [-t 1,2] [-r 5]
#                           [-w f32,f16] [--headway BIN] [--json FILE]
#
#   -p / -n / -d / -t / -r   prompt tokens, generated tokens, depths, thread counts, repetitions
#                            (lists comma-separated, as llama-bench takes them)
#   -w                       headway's weight dtypes (--weight-dtype; the file's blocks widened)
#   --headway BIN            the headway tool (default: build/release/bin/headway of this tree)
#   --json FILE              also keep every JSON line of both (llama-bench's -o jsonl, headway's --json)
#
# Building llama-bench. The peer is the llama.cpp vendored in the llama-cpp-python sdist named
# below; build its llama-bench outside this tree, for the CPU it will run on. On x86 with AVX-512
# and VNNI, with AMX switched off (a virtual machine may advertise AMX and fault on it: check the
# flags in /proc/cpuinfo):
#
#   pip download --no-deps --no-binary :all: llama-cpp-python==0.3.36 -d "$TMPDIR"
#   tar xzf "$TMPDIR"/llama_cpp_python-0.3.36.tar.gz -C "$TMPDIR"
#   cmake -S "$TMPDIR"/llama_cpp_python-0.3.36/vendor/llama.cpp -B "$TMPDIR"/llama-build \
#     -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF -DLLAMA_CURL=OFF \
#     -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON \
#     -DGGML_AVX512=ON -DGGML_AVX512_VNNI=ON -DGGML_AVX512_VBMI=ON -DGGML_AVX512_BF16=ON \
#     -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF
#   cmake --build "$TMPDIR"/llama-build -j2 --target llama-bench     # several minutes
#   # the binary: "$TMPDIR"/llama-build/bin/llama-bench
#
# (On another CPU: -DGGML_NATIVE=ON, or the GGML_* flags of what it has.) Both programs pick their
# own batch: llama-bench's default micro-batch is 512, headway prefills in chunks of up to 512
# tokens; both keep K/V in f16 by default.
set -euo pipefail

usage() { sed -n '2,/^set -euo/p' "$0" | sed -e '/^set -euo/d' -e 's/^# \{0,1\}//'; }

[[ $# -ge 2 ]] || { usage >&2; exit 2; }
llama_bench=$1
model=$2
shift 2
prompt=512 gen=128 depths=0 threads=1 reps=5 wdtypes=f32,f16 json_out=""
here=$(cd "$(dirname "$0")/.." && pwd)
headway=$here/build/release/bin/headway
while [[ $# -gt 0 ]]; do
  case $1 in
    -p) prompt=$2 ;;
    -n) gen=$2 ;;
    -d) depths=$2 ;;
    -t) threads=$2 ;;
    -r) reps=$2 ;;
    -w) wdtypes=$2 ;;
    --headway) headway=$2 ;;
    --json) json_out=$2 ;;
    -h | --help) usage; exit 0 ;;
    *) echo "model_vs_llama.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift 2
done
[[ -x $llama_bench ]] || { echo "model_vs_llama.sh: $llama_bench is not an executable (llama-bench)" >&2; exit 2; }
[[ -x $headway ]] || { echo "model_vs_llama.sh: $headway is not an executable (headway; --headway BIN)" >&2; exit 2; }
[[ -f $model ]] || { echo "model_vs_llama.sh: no file $model" >&2; exit 2; }

lines=$(mktemp)
trap 'rm -f "$lines"' EXIT
IFS=, read -r -a depth_list <<< "$depths"
IFS=, read -r -a thread_list <<< "$threads"
IFS=, read -r -a wdtype_list <<< "$wdtypes"
for d in "${depth_list[@]}"; do
  for t in "${thread_list[@]}"; do
    echo "model_vs_llama.sh: depth $d, $t thread(s): llama-bench -fa 0,1" >&2
    "$llama_bench" -m "$model" -p "$prompt" -n "$gen" -d "$d" -t "$t" -r "$reps" -fa 0,1 -o jsonl \
      | sed 's/^/llama.cpp\t/' >> "$lines"
    for w in "${wdtype_list[@]}"; do
      echo "model_vs_llama.sh: depth $d, $t thread(s): headway --weight-dtype $w" >&2
      "$headway" bench --model "$model" --prompt "$prompt" --tokens "$gen" --depth "$d" --threads "$t" \
        --reps "$reps" --weight-dtype "$w" --json | sed 's/^/headway\t/' >> "$lines"
    done
  done
done
[[ -z $json_out ]] || cut -f2- "$lines" > "$json_out"

python3 - "$lines" <<'EOF'
import json, sys

rows = []
for line in open(sys.argv[1]):
    engine, text = line.rstrip("\n").split("\t", 1)
    j = json.loads(text)
    if engine == "llama.cpp":
        fa = j.get("flash_attn")
        fa = {True: "on", False: "off", 1: "on", 0: "off"}.get(fa, str(fa))
        setup = "Q4_1 (file), fa " + fa
    else:
        setup = j["weight_dtype"] + " (widened)"
    test = ("pp%d" % j["n_prompt"]) if j["n_prompt"] else ("tg%d" % j["n_gen"])
    if j["n_depth"]:
        test += " @ d%d" % j["n_depth"]
    rows.append((j["n_depth"], j["n_gen"] > 0, j["n_threads"], engine, setup, test, j["type_k"],
                 "%.2f ± %.2f" % (j["avg_ts"], j["stddev_ts"])))
rows.sort(key=lambda r: r[:3])
print("| engine | weights | threads | type_k | test | t/s |")
print("| --- | --- | ---: | --- | ---: | ---: |")
for r in rows:
    print("| %s | %s | %d | %s | %s | %s |" % (r[3], r[4], r[2], r[6], r[5], r[7]))
EOF
