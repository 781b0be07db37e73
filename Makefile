# Thin wrapper: set-up (apt packages), CMake build, then the quickstart or the tests.
BUILD ?= build
JOBS ?= $(shell nproc)

.PHONY: demo test build setup setup-test clean

demo: setup build
	$(BUILD)/trainrun recipes/quickstart.yaml

test: setup-test build
	cd $(BUILD) && ctest --output-on-failure -j$(JOBS)

setup:
	@scripts/setup.sh

setup-test:
	@scripts/setup.sh --test

build:
	@cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
	@cmake --build $(BUILD) -j$(JOBS)

clean:
	rm -rf $(BUILD)
