#!/usr/bin/env bash
# `pip install <repo>` into a fresh virtual environment of Debian's python3, as a user would run
# it: scikit-build-core and nanobind come from PyPI into pip's isolated build environment, numpy
# as the package's one dependency. Then the installed module (not the build tree's) attends and
# plans, and bad input raises headway.Error with the library's message.
#   pip_install_check.sh REPO_ROOT WORK_DIR
set -euo pipefail
repo=$1
work=$2
rm -rf "$work"
/usr/bin/python3 -m venv "$work/venv"
start=$(date +%s)
# The kernels for this machine's SIMD target alone: what is checked here is the packaging (the
# build backend, the install component, the wheel's layout, the import), and compiling the kernels
# for every target again would be most of the test's time (the release build compiles and tests
# them all with the same CMake).
"$work/venv/bin/pip" install --no-input --disable-pip-version-check -q \
  --config-settings=cmake.define.HEADWAY_KERNELS_NATIVE_ONLY=ON "$repo"
echo "pip install took $(( $(date +%s) - start )) s"
cd "$work"  # away from the repo: `import headway` must find the installed package
"$work/venv/bin/python" - <<'PY'
import numpy as np
import headway

assert "site-packages" in headway.__file__, headway.__file__
rng = np.random.default_rng(1)
q = rng.standard_normal((5, 4, 64), dtype=np.float32)
k = rng.standard_normal((9, 2, 64), dtype=np.float32)
v = rng.standard_normal((9, 2, 64), dtype=np.float32)
o = headway.attend(q, k, v, causal=True)
qh = q.astype(np.float64).reshape(5, 2, 2, 64)
s = np.einsum("tgrd,sgd->grts", qh, k.astype(np.float64)) / 8.0
s = np.where(np.arange(9)[None, None, None, :] <= np.arange(5)[:, None] + 4, s, -np.inf)
p = np.exp(s - s.max(-1, keepdims=True))
ref = np.einsum("grts,sgd->tgrd", p / p.sum(-1, keepdims=True), v.astype(np.float64)).reshape(5, 4, 64)
err = float(np.abs(o - ref).max())
assert err < 1e-5, err
assert headway.plan(preset="llama-3-8b")["kv_bytes_per_token"] == 131072
try:
    headway.plan(spec="d_model=800 heads=12 ctx=2048")
    raise AssertionError("no error")
except headway.Error as e:
    assert isinstance(e, ValueError) and "hidden_size 800 is not divisible by num_heads 12" in str(e), e
print(f"installed {headway.__version__} at {headway.__file__}: attend max abs error {err:.2e}")
PY
