# The two entry points of the README. Everything else is CMake presets.
#   make demo   install what is missing, build the headway tool, ask SmolLM2-135M a question, plan real models, run attention
#   make test   install what is missing, build and run every test suite (what CI runs)
#   make test-cross   the same for the ARM cross builds (aarch64, armv7) under qemu-user
#   make check  the fast lane: build the release preset, run its unit and kernel tests
#   make bench-baremetal   Cortex-M55 instruction counts under qemu, SCALAR against MVE kernels
#   make format / make format-check   lay out, or check, every C++ source (.clang-format)
.PHONY: demo test check test-cross test-cross-ci test-baremetal bench-baremetal deps release debug clean

deps:
	bash toolchains/install-deps.sh host

release: deps
	cmake --preset release
	cmake --build --preset release

# ctest labels (tests/CMakeLists.txt): unit and kernel, not cli, gpu, torch or slow.
check: release
	ctest --preset release -L 'unit|kernel' -LE slow

# The demo runs the headway tool alone: it builds that and the libraries it links (headway_cli),
# not the test suites, which `make test` and `make check` build.
demo: deps
	cmake --preset release
	cmake --build --preset release --target headway_cli
	bash toolchains/install-deps.sh python  # .venv: the SmolLM2-135M-Instruct GGUF the demo runs
	bash examples/demo.sh build/release/bin/headway

test: deps
	bash toolchains/install-deps.sh gpu  # Vulkan, glslc and lavapipe: the GPU tests run on the CPU
	bash toolchains/install-deps.sh python  # .venv from requirements.txt: `headway layer` against transformers
	cmake --workflow --preset release
	cmake --workflow --preset debug

# Each cross workflow (every test but those labelled slow), then its slow tests: the kernel suite
# once per SIMD flavour on an emulated CPU that has it (in two halves that run side by side). Each
# prints, from its ctest log, which SIMD target each emulated CPU ran. The workflows run the whole
# suite case by case already: aarch64's on a Cortex-A76 (NEON with SDOT, its test preset's
# QEMU_CPU), armv7's on qemu's default CPU (NEON). CI (.ci/run) runs test-cross-ci: the same
# workflows, then aarch64's SVE2 suite only (qemu emulates SVE many times slower than NEON). SVE's,
# SVE2_128's and SVE_256's suites (their dispatch checks run in the workflow), the bench smoke test
# (`cli: bench-json`: its roofs and a 512-token prefill) and `cli: run-gpt-oss-json` (two of
# gpt-oss-20b's layers) take minutes each under qemu; the release build runs the last two.
test-cross: SLOW_AARCH64 = -L slow
test-cross: SLOW_ARMV7 = -L slow
test-cross-ci: SLOW_AARCH64 = -L slow -R '^simd SVE2 '
test-cross-ci: SLOW_ARMV7 =
test-cross test-cross-ci:
	bash toolchains/install-deps.sh aarch64
	bash toolchains/install-deps.sh armv7
	cmake --workflow --preset aarch64
	ctest --test-dir build/aarch64 --output-on-failure -j2 $(SLOW_AARCH64)
	grep -h "attention kernels dispatch to" build/aarch64/Testing/Temporary/LastTest.log
	cmake --workflow --preset armv7
	$(if $(SLOW_ARMV7),ctest --test-dir build/armv7 --output-on-failure -j2 $(SLOW_ARMV7))
	grep -h "attention kernels dispatch to" build/armv7/Testing/Temporary/LastTest.log

# Bare metal Cortex-M55 (mps3-an547) and Cortex-M4F (mps2-an386) under qemu-system-arm: the
# firmware (a Session of attention blocks, then a whole q8_0 decoder's greedy tokens) and the
# kernel harness against the double reference, the no-allocator check on every image, and the
# size report (examples/baremetal, tests/baremetal).
test-baremetal:
	bash toolchains/install-deps.sh cortex-m
	cmake --workflow --preset cortex-m55
	@grep -hE "^(headway kernel harness:|mla prefill|model prefill)" build/cortex-m55/Testing/Temporary/LastTest.log
	cmake --workflow --preset cortex-m55-scalar  # Highway's SCALAR kernels on the M55: the second opinion
	@grep -hE "^(headway kernel harness:|mla prefill|model prefill)" build/cortex-m55-scalar/Testing/Temporary/LastTest.log
	cmake --workflow --preset cortex-m4
	@grep -hE "^(headway kernel harness:|mla prefill|model prefill)" build/cortex-m4/Testing/Temporary/LastTest.log

# Instructions on the Cortex-M55 under qemu-system-arm -icount shift=0 (1 ns of guest time per
# instruction; SysTick calibrated in each run against a loop of known length,
# toolchains/cortex-m/instruction_count.hpp), for the cortex-m55-scalar preset
# (HEADWAY_KERNELS_HELIUM=OFF: Highway's SCALAR kernels) and cortex-m55 (MVE): the kernels at the
# firmware's shapes (bench/baremetal: decode at 512 keys, a 64-token causal prefill, the largest
# projection's GEMV in f16 and q8_0) and the firmware's prefills and decodes (the Session's and the
# whole decoder's), as one table with SCALAR / MVE.
# Instructions, not cycles (an M55 issues a 128-bit MVE instruction in two beats); it prints and
# asserts nothing about the numbers. Seconds of qemu once built.
bench-baremetal:
	bash toolchains/install-deps.sh cortex-m
	cmake --preset cortex-m55-scalar
	cmake --build --preset cortex-m55-scalar --target bench_baremetal headway_firmware
	cmake --preset cortex-m55
	cmake --build --preset cortex-m55 --target bench_baremetal headway_firmware
	bash bench/baremetal/compare.sh build/cortex-m55-scalar build/cortex-m55

# ThreadSanitizer over the threading tests only (build/tsan); clang-14 libFuzzer targets over their
# seed corpora, FUZZ_SECONDS each (build/fuzz). .ci/run may call both after make test.
FUZZ_SECONDS ?= 60
.PHONY: test-tsan test-fuzz format format-check
test-tsan: deps
	cmake --workflow --preset tsan

test-fuzz:
	bash toolchains/install-deps.sh fuzz
	cmake --preset fuzz
	cmake --build --preset fuzz
	bash tests/fuzz/run.sh $(FUZZ_SECONDS)

clean:
	rm -rf build

# .clang-format over every tracked C++ source: format rewrites them, format-check (CI) lists the
# files that differ and fails.
FORMAT_FILES = git ls-files '*.c' '*.cc' '*.h' '*.hpp' '*.cpp'
format:
	bash toolchains/install-deps.sh format
	$(FORMAT_FILES) | xargs clang-format-14 -i

format-check:
	bash toolchains/install-deps.sh format
	$(FORMAT_FILES) | xargs clang-format-14 --dry-run -Werror
