# The two entry points of the README. Everything else is CMake presets.
#   make demo   install what is missing, build, plan real models and run attention on them
#   make test   install what is missing, build and run every test suite (what CI runs)
#   make test-cross   the same for the ARM cross builds (aarch64, armv7) under qemu-user
.PHONY: demo test test-cross deps release debug clean

deps:
	bash toolchains/install-deps.sh host

release: deps
	cmake --preset release
	cmake --build --preset release

demo: release
	bash examples/demo.sh build/release/bin/headway

test: deps
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

clean:
	rm -rf build
