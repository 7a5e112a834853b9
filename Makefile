# The two commands: `make run` and `make test`. Each installs what is missing, then builds.
BUILD ?= build
JOBS ?= $(shell nproc)
PYTHON ?= /usr/bin/python3

.PHONY: deps build cli run test-programs test test-slow bench fuzz figures docs docs-check clean format format-check

# Each target installs only what it needs (scripts/install-deps.sh lists them).
deps:
	@bash scripts/install-deps.sh run

$(BUILD)/CMakeCache.txt: | deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release

build: deps $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j$(JOBS)

# Only the command-line tool: `make run` does not wait for the test executables.
cli: deps $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j$(JOBS) --target testbed

run: cli
	$(BUILD)/testbed run scenarios/100mbps_ring.yaml

# The test programs only (the benchmarks build with `make bench`).
# Configured again: a build folder made by `make run` has no GoogleTest, hence no tests.
test-programs: deps $(BUILD)/CMakeCache.txt
	@bash scripts/install-deps.sh test
	cmake -S . -B $(BUILD) > /dev/null
	cmake --build $(BUILD) -j$(JOBS) --target testbed_tests

# The first tier of tests: every test but the second tier's.
test: test-programs
	cd $(BUILD) && ctest --output-on-failure -j$(JOBS) -LE slow

# The second tier (tests/CMakeLists.txt, label `slow`): whole-binary scripts, the docs' numbers,
# the slowest cases. CI runs it after `make test`.
test-slow: test-programs
	cd $(BUILD) && ctest --output-on-failure -j$(JOBS) -L slow

# libFuzzer harnesses (tests/fuzz/) under ASan and UBSan, FUZZ_SECONDS each, in their own
# clang build folder.
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 120
fuzz: deps
	@bash scripts/install-deps.sh fuzz
	CC=clang CXX=clang++ cmake -S . -B $(FUZZ_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTESTBED_FUZZ=ON
	cmake --build $(FUZZ_BUILD) -j$(JOBS) --target fuzzers
	bash scripts/fuzz.sh $(abspath $(FUZZ_BUILD)) $(FUZZ_SECONDS)

# The code's layout (.clang-format, Debian's clang-format 14): `make format` rewrites every C++
# source in place; `make format-check` (in .ci/run) fails on a file that differs from it.
FORMAT_FILES = $(shell git ls-files '*.cpp' '*.h')
format:
	@bash scripts/install-deps.sh test
	clang-format -i $(FORMAT_FILES)
format-check:
	@bash scripts/install-deps.sh test
	clang-format --dry-run --Werror $(FORMAT_FILES)

bench: build
	$(BUILD)/testbed_bench scenarios/100mbps_ring.yaml

# Reduced paper reproductions end to end (sweeps, then figures and tables into figures/).
# Finished runs are skipped, so a second `make figures` only redraws.
FIGURE_SWEEPS = sparta bandwidth_latency topology lofi_vs_ddp compression_bandwidth zoo_bandwidth
figures: cli
	@bash scripts/install-deps.sh analysis
	@for s in $(FIGURE_SWEEPS); do $(BUILD)/testbed sweep scenarios/paper/$$s.yaml -j 2 || exit 1; done
	@for s in $(FIGURE_SWEEPS); do $(PYTHON) -m analysis.figures results/paper/$$s --out figures/$$s || exit 1; done

# Every simulated number in the docs, from the binary: rewrite them all, or check them all.
docs: build
	@bash scripts/install-deps.sh analysis
	$(PYTHON) scripts/doc_numbers.py --write

docs-check: build
	@bash scripts/install-deps.sh analysis
	$(PYTHON) scripts/doc_numbers.py --check

clean:
	rm -rf $(BUILD)
