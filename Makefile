# Thin wrapper: set-up (apt packages), CMake build, then the quickstart, the tests or the benchmark.
BUILD ?= build
JOBS ?= $(shell nproc)

.PHONY: demo test bench build setup setup-test clean

demo: setup build
	$(BUILD)/trainrun recipes/quickstart.yaml

test: setup-test build
	cd $(BUILD) && ctest --output-on-failure -j$(JOBS)

# trainrun against the PyTorch scripts (bench/README.md); e.g. make bench BENCH_ARGS="--rows pets --rounds 5"
bench: setup-test build
	bench/compare --trainrun $(BUILD)/trainrun $(BENCH_ARGS)

setup:
	@scripts/setup.sh

setup-test:
	@scripts/setup.sh --test

build:
	@cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
	@cmake --build $(BUILD) -j$(JOBS)

clean:
	rm -rf $(BUILD)
