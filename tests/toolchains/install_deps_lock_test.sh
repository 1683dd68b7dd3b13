#!/usr/bin/env bash
# toolchains/install-deps.sh waits for a package manager that holds the dpkg lock, then installs:
# a process holds the lock for 2 s, and two installers start at once. apt-get, dpkg-query and sudo
# are stubs (no root, no network): the stub apt-get takes the lock as apt does, waiting up to its
# DPkg::Lock::Timeout and failing at once without one, and works for half a second holding it.
#   bash tests/toolchains/install_deps_lock_test.sh   (exit 0: both installers waited and succeeded)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/bin"
lock=$work/lock-frontend
touch "$lock"

cat > "$work/bin/apt-get" <<'STUB'
#!/usr/bin/env bash
timeout=0
for a in "$@"; do case "$a" in DPkg::Lock::Timeout=*) timeout=${a#*=} ;; esac; done
wait_flag=(-n)
if [ "$timeout" -gt 0 ]; then wait_flag=(-w "$timeout"); fi
if ! flock "${wait_flag[@]}" "$FAKE_LOCK" sleep 0.5; then
  echo "E: Could not get lock $FAKE_LOCK" >&2
  exit 100
fi
echo "apt-get $*" >> "$FAKE_APT_LOG"
STUB
printf '#!/bin/sh\nexit 1\n' > "$work/bin/dpkg-query"  # every package missing
printf '#!/bin/sh\nexec "$@"\n' > "$work/bin/sudo"
chmod +x "$work/bin/"*

export PATH=$work/bin:$PATH FAKE_LOCK=$lock FAKE_APT_LOG=$work/apt.log HEADWAY_APT_LOCKS=$lock
export HEADWAY_APT_LOCK_TIMEOUT=60
flock "$lock" sleep 2 &
holder=$!
sleep 0.2  # the holder has the lock before the installers look

start=$SECONDS
bash "$root/toolchains/install-deps.sh" format > "$work/a.out" 2>&1 & a=$!
bash "$root/toolchains/install-deps.sh" format > "$work/b.out" 2>&1 & b=$!
status=0
wait $a || { echo "FAIL: the first installer exited $?"; status=1; }
wait $b || { echo "FAIL: the second installer exited $?"; status=1; }
wait $holder
elapsed=$((SECONDS - start))
for out in "$work/a.out" "$work/b.out"; do
  sed 's/^/  /' "$out"
  grep -q "waiting for another package manager to finish ($lock held by process" "$out" ||
    { echo "FAIL: no message saying which lock it waits for"; status=1; }
  grep -q "installed clang-format-14" "$out" || { echo "FAIL: not installed"; status=1; }
done
grep -c "install -y" "$work/apt.log" | grep -qx 2 || { echo "FAIL: expected two installs:"; cat "$work/apt.log"; status=1; }
if grep -v "DPkg::Lock::Timeout=60" "$work/apt.log"; then echo "FAIL: apt-get called without DPkg::Lock::Timeout"; status=1; fi
[ "$elapsed" -ge 2 ] || { echo "FAIL: done in $elapsed s, before the lock was released"; status=1; }
[ $status -eq 0 ] && echo "both installers waited for the lock and installed in $elapsed s"
exit $status
