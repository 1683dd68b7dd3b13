#!/usr/bin/env bash
# Runs every libFuzzer target of a fuzz build for a fixed time each, over a
# copy of its seed corpus (tests/fuzz/corpus/<target>/ stays as committed). Fails on the first
# crash, leak, timeout, out-of-memory or sanitizer report, leaving the input that triggered it in
# build/fuzz/artifacts/<target>/.
#
#   tests/fuzz/run.sh [SECONDS] [TARGET...]     SECONDS per target, default 60 (FUZZ_SECONDS)
#   FUZZ_BUILD=build/fuzz (the fuzz preset's binaryDir)
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=${1:-${FUZZ_SECONDS:-60}}
shift || true
build=${FUZZ_BUILD:-build/fuzz}
bin=$build/bin/fuzz
if [ ! -d "$bin" ]; then
  echo "run.sh: no fuzz targets in $bin: cmake --preset fuzz && cmake --build --preset fuzz" >&2
  exit 2
fi
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for f in "$bin"/fuzz_*; do targets+=("$(basename "$f" | sed 's/^fuzz_//')"); done
fi
# Any sanitizer report is fatal, and leaks count (libFuzzer checks them after each input).
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# One target per core at a time (FUZZ_JOBS, default nproc): the wall time is SECONDS times the
# number of targets over the cores, and each target still gets its SECONDS.
jobs=${FUZZ_JOBS:-$(nproc)}
fuzz_one() {
  local t=$1 exe=$bin/fuzz_$1 work=$build/corpus/$1 artifacts=$build/artifacts/$1 start
  mkdir -p "$work" "$artifacts"
  [ -d tests/fuzz/corpus/$t ] && cp -n tests/fuzz/corpus/$t/* "$work"/ 2>/dev/null || true
  start=$(date +%s)
  # -rss_limit_mb: a parser that allocates from a length field shows up as an OOM crash.
  # -timeout: one input taking more than 10 s is a hang. -max_len: big enough for a config.json.
  if "$exe" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 -max_len=65536 \
       -print_final_stats=1 -artifact_prefix="$artifacts/" "$work" > "$build/fuzz_$t.log" 2>&1; then
    echo "== fuzz_$t: ok ($(( $(date +%s) - start )) s, $(grep -h '^stat::number_of_executed_units' "$build/fuzz_$t.log" | awk '{print $2}') runs)"
  else
    echo "== fuzz_$t: FAILED (log $build/fuzz_$t.log, input in $artifacts/)"
    grep -E "ERROR|SUMMARY|invariant failed|runtime error" "$build/fuzz_$t.log" | head -20 || true
    return 1
  fi
}
for t in "${targets[@]}"; do
  [ -x "$bin/fuzz_$t" ] || { echo "run.sh: no target $bin/fuzz_$t" >&2; exit 2; }
done
echo "fuzz: ${targets[*]}: ${seconds} s each, $jobs at a time"
failed=()
pids=()
names=()
for t in "${targets[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
  fuzz_one "$t" &
  pids+=($!)
  names+=("$t")
done
for i in "${!pids[@]}"; do
  wait "${pids[$i]}" || failed+=("${names[$i]}")
done
if [ ${#failed[@]} -ne 0 ]; then
  echo "fuzz: failed: ${failed[*]}" >&2
  exit 1
fi
echo "fuzz: all ${#targets[@]} targets clean"
