# The two entry points of the README. Everything else is CMake presets.
#   make demo   install what is missing, build, plan real models and run attention on them
#   make test   install what is missing, build and run every test suite (what CI runs)
#   make test-cross   the same for the ARM cross builds (aarch64, armv7) under qemu-user
.PHONY: demo test test-cross test-cross-ci deps release debug clean

deps:
	bash toolchains/install-deps.sh host

release: deps
	cmake --preset release
	cmake --build --preset release

demo: release
	bash examples/demo.sh build/release/bin/headway

test: deps
	bash toolchains/install-deps.sh gpu  # Vulkan, glslc and lavapipe: the GPU tests run on the CPU
	cmake --workflow --preset release
	cmake --workflow --preset debug

# Each cross suite prints, from its ctest log, which SIMD target each emulated CPU ran.
test-cross:
	bash toolchains/install-deps.sh aarch64
	bash toolchains/install-deps.sh armv7
	cmake --workflow --preset aarch64
	@grep -h "attention kernels dispatch to" build/aarch64/Testing/Temporary/LastTest.log
	cmake --workflow --preset armv7
	@grep -h "attention kernels dispatch to" build/armv7/Testing/Temporary/LastTest.log

# CI's share of the cross suites (.ci/run calls it after make test): only the binaries
# it needs, then the kernel suite on NEON, SVE and SVE2 (armv7: NEON), `headway attend` end to
# end and the CLI contract, under qemu.
test-cross-ci:
	bash toolchains/install-deps.sh aarch64
	bash toolchains/install-deps.sh armv7
	for p in aarch64 armv7; do \
	  cmake --preset $$p && \
	  cmake --build --preset $$p --target attention_kernel_test simd_targets headway_cli cli_attend_test && \
	  ctest --preset $$p -R '^(simd (NEON|SVE|SVE2) |cli_attend_test|cli: )' && \
	  grep -h "attention kernels dispatch to" build/$$p/Testing/Temporary/LastTest.log || exit 1; \
	done

clean:
	rm -rf build
