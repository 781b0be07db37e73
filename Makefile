# Thin wrapper: set-up (apt packages), CMake build, then the quickstart, the tests or the benchmark.
BUILD ?= build
JOBS ?= $(shell nproc)
BUILD_TESTS ?= ON

.PHONY: demo test test-quick bench build setup setup-test setup-sanitize setup-docs test-asan test-tsan fuzz docs docs-reference docs-check clean

# The quickstart needs no test suite: without libgtest-dev (setup.sh installs it only with --test),
# configuring tests/ would fail on a fresh machine.
demo: BUILD_TESTS = OFF
demo: setup build
	$(BUILD)/trainrun recipes/quickstart.yaml

# CTEST_ARGS: a selection of the suite (ctest -R/-E ...), as CI's Debian 13 stage passes. Taken
# with $(value ...): a regex's `$` anchor is the regex's, not a make variable (expanded, `( |$)`
# became `( |` and ctest excluded nothing).
CTEST_ARGS ?=
test: setup-test build
	cd $(BUILD) && ctest --output-on-failure -j$(JOBS) $(value CTEST_ARGS)

# The edit-compile-test loop: the suite without the groups tests/heavy_tests.txt names (launchers,
# multi-process worlds, whole runs, every model against Python).
QUICK_EXCLUDE = $(shell grep -v '^\#' tests/heavy_tests.txt | paste -sd'|' -)
test-quick: setup-test build
	cd $(BUILD) && ctest --output-on-failure -j$(JOBS) -E '$(QUICK_EXCLUDE)'

# trainrun against the PyTorch scripts (bench/README.md); e.g. make bench BENCH_ARGS="--rows pets --rounds 5"
bench: setup-test build
	bench/compare --trainrun $(BUILD)/trainrun $(BENCH_ARGS)

# Sanitizers (clang; their own build folders build-asan/, build-tsan/; README "Sanitizers and fuzzing"):
# the whole suite under AddressSanitizer + UndefinedBehaviorSanitizer (and the fuzz targets'
# corpora and regressions), the data loader / launcher / distributed tests under ThreadSanitizer,
# and every fuzz target for FUZZ_SECONDS each.
# ASAN_CTEST_ARGS: a selection of the suite (ctest -R/-E ...); CI passes tests/asan_selection.txt's,
# ASAN_CTEST_ARGS="$$(scripts/test-selection.sh tests/asan_selection.txt)".
FUZZ_SECONDS ?= 60
ASAN_CTEST_ARGS ?=
test-asan: setup-sanitize
	@JOBS=$(JOBS) scripts/sanitize.sh asan $(value ASAN_CTEST_ARGS)

test-tsan: setup-sanitize
	@JOBS=$(JOBS) scripts/sanitize.sh tsan

fuzz: setup-sanitize
	@JOBS=$(JOBS) scripts/sanitize.sh asan-build
	@scripts/fuzz.sh $(FUZZ_SECONDS)

# The documentation site (mkdocs.yml, docs/): built offline into $(BUILD)/site. The reference pages
# (docs/reference/) are generated: by trainrun itself, and the bad-input table's lines and the
# run-folder tables by the tests that check them (docs/development.md); docs-reference rewrites
# them (a test fails while the committed ones differ); docs-check is CI's: the site built strict and opened in
# headless Chromium (tests/docs/), with every docs tool required rather than skipped.
docs: setup-docs
	mkdocs build --strict --quiet -f mkdocs.yml -d $(BUILD)/site
	@echo "docs: $(BUILD)/site/index.html"

docs-reference: setup-test build
	$(BUILD)/trainrun describe --format markdown --output docs/reference
	cd $(BUILD) && TRAINRUN_UPDATE_DOCS=1 ctest -j$(JOBS) -R '^BadInput[.]'
	cd $(BUILD) && TRAINRUN_UPDATE_DOCS=1 ctest -R '^RunFolderPage[.]'

docs-check: setup-docs setup-test build
	cd $(BUILD) && TRAINRUN_REQUIRE_DOCS_TOOLS=1 ctest --output-on-failure -j$(JOBS) -R '^Docs[.]'

setup:
	@scripts/setup.sh

setup-test:
	@scripts/setup.sh --test

setup-sanitize:
	@scripts/setup.sh --sanitize

setup-docs:
	@scripts/setup.sh --docs

build:
	@cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release -DTRAINRUN_BUILD_TESTS=$(BUILD_TESTS) >/dev/null
	@cmake --build $(BUILD) -j$(JOBS)

clean:
	rm -rf $(BUILD) build-asan build-tsan
