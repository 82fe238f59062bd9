# The README's commands. `make` builds, `make demo` runs the main job, `make check` runs every
# test (what .ci/run runs). Each installs missing Debian packages first.
BUILD_DIR ?= build
ASAN_DIR ?= build/asan
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: all deps configure build demo check test asan-test fuzz clean

all: build

deps:
	@bash scripts/install-deps

configure: deps
	@cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_FLAGS) >/dev/null

build: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS)

demo: build
	@bash scripts/demo.sh $(BUILD_DIR)

# Simulator tests again under AddressSanitizer + UndefinedBehaviorSanitizer (no LibTorch).
asan-test: deps
	@cmake -S . -B $(ASAN_DIR) -DCMAKE_BUILD_TYPE=Debug -DSHARDPLAN_SANITIZE=ON -DSHARDPLAN_WITH_TORCH=OFF >/dev/null
	@cmake --build $(ASAN_DIR) -j $(JOBS) --target simulator_test
	@$(ASAN_DIR)/bin/simulator_test --gtest_brief=1

# libFuzzer targets (tests/fuzz) built by clang with ASan+UBSan in their own directory, each
# run FUZZ_SECONDS on a scratch copy of its seed corpus; fails on any crash or invariant failure.
FUZZ_DIR ?= build/fuzz
FUZZ_SECONDS ?= 40
fuzz: deps
	@cmake -S . -B $(FUZZ_DIR) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSHARDPLAN_FUZZ=ON -DSHARDPLAN_WITH_TORCH=OFF -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ >/dev/null
	@cmake --build $(FUZZ_DIR) -j $(JOBS) --target fuzz_spec_text fuzz_hf_config fuzz_cost_model fuzz_server_validation
	@bash tests/fuzz/run_fuzzers.sh $(FUZZ_DIR)/bin $(FUZZ_SECONDS)

test: build
	@cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS) -LE bench

check: build asan-test fuzz
	@cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS) -LE bench

clean:
	rm -rf $(BUILD_DIR)
