# The README's commands. `make` builds, `make demo` runs the main job, `make check` runs every
# test (what .ci/run runs). Each installs missing Debian packages first.
BUILD_DIR ?= build
ASAN_DIR ?= build/asan
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: all deps configure build demo check test asan-test tsan-test fuzz clean

all: build

deps:
	@bash scripts/install-deps

configure: deps
	@cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_FLAGS) >/dev/null

build: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS)

demo: build
	@bash scripts/demo.sh $(BUILD_DIR)

# Sanitizer builds, each in its own directory, at -O1 with line tables only (-g1) to keep
# the build time down (measured figures in docs/testing.md, "Sanitizers").
SAN_CMAKE_FLAGS = -DCMAKE_BUILD_TYPE=Debug "-DCMAKE_CXX_FLAGS_DEBUG=-O1 -g1" "-DCMAKE_C_FLAGS_DEBUG=-O1 -g1"
# Every test (unit and e2e; the e2e tests spawn the instrumented server and CLI) under
# AddressSanitizer + UndefinedBehaviorSanitizer. Leak checking is off: LibTorch, gRPC and
# protobuf keep process-lifetime allocations that LSan would report.
ASAN_ENV = ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:strict_string_checks=1 \
           UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
asan-test: deps
	@cmake -S . -B $(ASAN_DIR) $(SAN_CMAKE_FLAGS) -DSHARDPLAN_SANITIZE=ON >/dev/null
	@cmake --build $(ASAN_DIR) -j $(JOBS)
	@cd $(ASAN_DIR) && $(ASAN_ENV) ctest --output-on-failure -j $(JOBS) -LE bench --timeout 900

# ThreadSanitizer: the server tests (service in-process, scheduler, update queue, store)
# and all the search tests, the LibTorch RL ones included (LibTorch itself is not
# instrumented and runs on one thread). tests/tsan.supp lists what is suppressed and why.
TSAN_DIR ?= build/tsan
TSAN_ENV = TSAN_OPTIONS="suppressions=$(CURDIR)/tests/tsan.supp halt_on_error=1 second_deadlock_stack=1"
TSAN_POLICY_FILTER ?= *
tsan-test: deps
	@cmake -S . -B $(TSAN_DIR) $(SAN_CMAKE_FLAGS) -DSHARDPLAN_TSAN=ON >/dev/null
	@cmake --build $(TSAN_DIR) -j $(JOBS) --target server_test policy_test policy_rl_test
	@$(TSAN_ENV) $(TSAN_DIR)/bin/server_test --gtest_brief=1
	@$(TSAN_ENV) $(TSAN_DIR)/bin/policy_test --gtest_brief=1 --gtest_filter='$(TSAN_POLICY_FILTER)'
	@$(TSAN_ENV) $(TSAN_DIR)/bin/policy_rl_test --gtest_brief=1 --gtest_filter='$(TSAN_POLICY_FILTER)'

# libFuzzer targets (tests/fuzz) built by clang with ASan+UBSan in their own directory, each
# run FUZZ_SECONDS on a scratch copy of its seed corpus; fails on any crash or invariant failure.
FUZZ_DIR ?= build/fuzz
FUZZ_SECONDS ?= 40
fuzz: deps
	@cmake -S . -B $(FUZZ_DIR) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSHARDPLAN_FUZZ=ON -DSHARDPLAN_WITH_TORCH=OFF -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ >/dev/null
	@cmake --build $(FUZZ_DIR) -j $(JOBS) --target fuzz_spec_text fuzz_hf_config fuzz_cost_model fuzz_server_validation fuzz_stored_rows
	@bash tests/fuzz/run_fuzzers.sh $(FUZZ_DIR)/bin $(FUZZ_SECONDS)

test: build
	@cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS) -LE bench

check: build asan-test tsan-test fuzz
	@cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS) -LE bench

clean:
	rm -rf $(BUILD_DIR)
