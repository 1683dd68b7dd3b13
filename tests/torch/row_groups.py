"""Whether `headway` holds a model's quantized matrices in row groups on this machine: where its
kernels run AVX3_DL (AVX-512 VNNI, as `headway doctor` says), q8_0, q4_0, q4_1, q5_0, q5_1, q4_K
and q6_K matrices are multiplied in integers with x in 16-bit codes per block of 32, prefill and
decode alike (simd/matmul/matmul_row_groups-inl.h), and the checks hold their logits to x's
rounding rather than to f32's."""
import os
import subprocess

# x's rounding to 16-bit codes (2⁻¹⁶ of each block's largest value) in the logits of small random
# models (logits up to about 4-9): measured 2.5e-4 to 2.4e-3 over the decoder families (Gemma 2 the
# most), 6.9e-3 over the hybrid Qwen3.5's Gated DeltaNet layers.
ROW_GROUPS_MAX_ABS = 1e-2


def runs_row_groups(headway):
    # `headway doctor` also creates a Vulkan instance. Under the sanitizers its run goes without
    # leak detection, as every GPU test's does (runtime/gpu/CMakeLists.txt: on some machines
    # lavapipe keeps a 128-byte allocation to exit); the checks' own model runs keep it.
    env = dict(os.environ)
    env["ASAN_OPTIONS"] = ":".join(filter(None, [env.get("ASAN_OPTIONS"), "detect_leaks=0"]))
    doctor = subprocess.run([headway, "doctor"], check=True, capture_output=True, text=True, env=env).stdout
    return "kernels run AVX3_DL " in doctor
