# The two entry points of the README. Everything else is CMake presets.
#   make demo   install what is missing, build, plan real models and run attention on them
#   make test   install what is missing, build and run every test suite (what CI runs)
.PHONY: demo test deps release debug clean

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

clean:
	rm -rf build
