#!/usr/bin/env bash
# The GPU backend's check on a machine with a real GPU, in one go (under 5 minutes on a 16-core
# box): build the GPU tests, the GPU bench and the headway tool, run every GPU test case against
# the CPU reference on the machine's own Vulkan device (not lavapipe), then time the bench cases
# (GFLOP/s, GPU and CPU) and a few `headway bench` cases on the GPU and on every CPU thread.
#
#   bench/gpu_check.sh                 build in build/gpu-check (needs toolchains/install-deps.sh gpu)
#   bench/gpu_check.sh --pack DIR      build here, copy the three programs and the non-libc shared
#                                      libraries they load into DIR (to carry to a GPU machine
#                                      that has a GPU driver but no compiler or packages)
#   bench/gpu_check.sh --prebuilt DIR  run what --pack put in DIR
#
# Environment: BUILD_DIR (default build/gpu-check), JOBS (default nproc), HEADWAY_GPU_DEVICE
# (a Vulkan device index; default: discrete, then integrated, then anything).
# Exit status: 0 all passed, 1 a test or bench failed, 2 the machine lacks what the check needs.
set -uo pipefail

cd "$(dirname "$0")/.."
mode=build
dir=""
case "${1:-}" in
  "") ;;
  --pack|--prebuilt) mode=${1#--}; dir=${2:?"gpu_check.sh: $1 needs a directory"} ;;
  *) echo "usage: bench/gpu_check.sh [--pack DIR | --prebuilt DIR]" >&2; exit 2 ;;
esac
build=${BUILD_DIR:-build/gpu-check}
jobs=${JOBS:-$(nproc 2>/dev/null || echo 2)}
start=$(date +%s)
step() { echo; echo "== $* ($(( $(date +%s) - start )) s)"; }

build_here() {
  local missing=()
  for tool in cmake g++ glslc; do command -v "$tool" >/dev/null || missing+=("$tool"); done
  for header in vulkan/vulkan.h hwy/highway.h doctest/doctest.h nlohmann/json.hpp; do
    [ -e "/usr/include/$header" ] || [ -e "/usr/local/include/$header" ] || missing+=("$header")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "gpu_check: missing ${missing[*]}: run toolchains/install-deps.sh gpu, or build elsewhere with" \
         "--pack DIR and run --prebuilt DIR here" >&2
    exit 2
  fi
  step "configure $build"
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DHEADWAY_GPU=ON -DHEADWAY_TESTS=ON \
    -DHEADWAY_TOOLS=ON >"$build.configure.log" 2>&1 ||
    { tail -30 "$build.configure.log"; exit 2; }
  grep -E "headway:" "$build.configure.log" || true
  step "build gpu_attention_test gpu_attention_bench headway (-j$jobs)"
  cmake --build "$build" --target gpu_attention_test gpu_attention_bench headway_cli -j"$jobs" >"$build.build.log" 2>&1 ||
    { tail -40 "$build.build.log"; exit 1; }
  test_bin=$build/tests/gpu_attention_test
  bench_bin=$build/bin/gpu_attention_bench
  cli_bin=$build/bin/headway
}

case "$mode" in
  build) build_here ;;
  pack)
    build_here
    mkdir -p "$dir/lib"
    cp "$test_bin" "$bench_bin" "$cli_bin" "$dir/"
    # Every shared library but glibc's own: the GPU machine may lack Highway, pthreadpool, the
    # Vulkan loader or this libstdc++.
    ldd "$test_bin" "$bench_bin" "$cli_bin" | awk '/=> \//{print $3}' | sort -u |
      grep -Ev '/(libc|libm|libpthread|libdl|librt|ld-linux[^/]*)\.so' | xargs -r cp -L -t "$dir/lib/"
    echo "gpu_check: packed into $dir: $(ls "$dir" "$dir/lib" | tr '\n' ' ')"
    exit 0 ;;
  prebuilt)
    test_bin=$dir/gpu_attention_test
    bench_bin=$dir/gpu_attention_bench
    cli_bin=$dir/headway
    export LD_LIBRARY_PATH="$dir/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    [ -x "$test_bin" ] && [ -x "$bench_bin" ] && [ -x "$cli_bin" ] || { echo "gpu_check: $dir has no packed programs" >&2; exit 2; } ;;
esac

# The machine's own device: no lavapipe pinning here (ctest pins it; this runs the programs).
unset VK_DRIVER_FILES VK_ICD_FILENAMES
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-$PWD/$build/vk-cache}
mkdir -p "$XDG_CACHE_HOME" 2>/dev/null || export XDG_CACHE_HOME=/tmp/headway-vk-cache
if command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | sed 's/^/nvidia-smi: /'
fi
ls /usr/share/vulkan/icd.d /etc/vulkan/icd.d 2>/dev/null | grep -i json | sed 's/^/vulkan driver: /'

status=0
step "GPU tests (every kernel case against the double-precision reference)"
t0=$(date +%s%N)
timeout 240 "$test_bin" || status=1
echo "gpu_attention_test: $(( ($(date +%s%N) - t0) / 1000000 )) ms"

step "GPU bench"
device_args=()
[ -n "${HEADWAY_GPU_DEVICE:-}" ] && device_args=(--device "$HEADWAY_GPU_DEVICE")
timeout 150 "$bench_bin" "${device_args[@]}" || status=1

# The same named cases on the GPU and on every CPU thread (docs/PERFORMANCE.md: the columns).
bench_cases=(--case decode-t2048-h32x8-d128-f16 --case decode-t8192-h32x32-d128-f16 --case decode-t8192-h32x8-d128-f16
             --case smollm2-135m-decode-t2048-h9x3-d64-f16 --case prefill-t2048-h32x8-d128-f16
             --case prefill-t2048-h32x8-d80-f16)
step "headway bench --backend gpu"
cli_device=()
[ -n "${HEADWAY_GPU_DEVICE:-}" ] && cli_device=(--device "$HEADWAY_GPU_DEVICE")
timeout 120 "$cli_bin" bench --backend gpu "${cli_device[@]}" "${bench_cases[@]}" --json || status=1
cpu_threads=$(( jobs > 256 ? 256 : jobs ))
step "headway bench --threads $cpu_threads (cpu)"
timeout 120 "$cli_bin" bench --threads "$cpu_threads" "${bench_cases[@]}" --json || status=1

step "done: $([ $status -eq 0 ] && echo passed || echo FAILED)"
exit $status
