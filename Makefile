# Makefile - the short names for building and testing hyperpar (CMake does the real work).
#   make build            set the machine up (scripts/setup.sh) and build into build/
#   make test [L=L0]      build, then run the tests (L selects a label: L0, L1, L2; CTEST_ARGS more),
#                         and say how many were skipped and why (scripts/run_ctest.sh)
#   make profiles         the L0, determinism and bf16/float8 recipe tests as if on two narrower
#                         CPUs (scripts/cpu_profiles.sh: HP_CPU_ISA, ONEDNN_MAX_CPU_ISA, OPENBLAS_CORETYPE)
#   make matrix           build, then run the completeness matrix into report/ (MATRIX_JOBS=2 at once)
#   make torch            build, then every PyTorch check: the torch2 CTests (TorchTitan's among them,
#                         and Megatron-Core's and DeepSpeed's, label beyond),
#                         the matrix's torch column (every recipe PyTorch can express, under PyTorch's
#                         own layout, against hp's one process) and its injected faults, into
#                         report/torch.md (examples/torch/torch_column.py; torch 2 from PyPI when missing)
#   make determinism      build, then the determinism tests under a second BLAS core and 2 threads
#                         per rank (scripts/second_config.sh)
#   make asan             AddressSanitizer + UBSan build in build-asan/, then the L0 tests
#   make fuzz             libFuzzer (clang) targets in build-fuzz/, each run 10^6 executions
#   make fuzz-ci          the same targets, 6 s each
#   make clean            remove the build folders
BUILD_DIR ?= build
ASAN_DIR  ?= build-asan
L ?=
CTEST_LABEL = $(if $(L),-L $(L),)
CTEST_ARGS ?=
ASAN_CTEST_ARGS ?=
# recipes the matrix runs at once: a recipe's launch and its one-process reference leave a core
# idle, which a second recipe fills (each already runs up to 16 ranks; more would only queue)
MATRIX_JOBS ?= 2

FUZZ_DIR  ?= build-fuzz
# tests/fuzz/: scripts/setup_fuzz.sh installs clang + libFuzzer, then only the fuzz targets are built
FUZZ_BUILD = sh scripts/setup_fuzz.sh && \
	cmake -S . -B $(FUZZ_DIR) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHP_FUZZ=ON -DCMAKE_C_COMPILER=clang && \
	cmake --build $(FUZZ_DIR) -j2 --target hp_fuzz fuzz_write_seeds

.PHONY: build test matrix torch determinism profiles asan fuzz fuzz-ci clean

build:
	BUILD_DIR=$(BUILD_DIR) sh scripts/setup.sh

test: build
	sh scripts/run_ctest.sh $(BUILD_DIR) --output-on-failure -j2 $(CTEST_LABEL) $(CTEST_ARGS)

matrix: build
	$(BUILD_DIR)/hp matrix --jobs $(MATRIX_JOBS) --report report

torch: build
	sh scripts/run_ctest.sh $(BUILD_DIR) --output-on-failure -L 'torch2|beyond'
	python3 examples/torch/torch_column.py --faults --report report --hp $(BUILD_DIR)/hp
	sh tests/check_faults_doc.sh report/torch_faults.md docs/torch.md

determinism: build
	BUILD_DIR=$(BUILD_DIR) sh scripts/second_config.sh

profiles: build
	BUILD_DIR=$(BUILD_DIR) sh scripts/cpu_profiles.sh

asan:
	BUILD_DIR=$(ASAN_DIR) HP_CMAKE_ARGS=-DHP_SANITIZE=ON sh scripts/setup.sh
	ctest --test-dir $(ASAN_DIR) --output-on-failure -j2 -L L0 $(ASAN_CTEST_ARGS)

fuzz:
	$(FUZZ_BUILD)
	sh tests/fuzz/run_fuzz.sh $(FUZZ_DIR) -runs=1000000

fuzz-ci:
	$(FUZZ_BUILD)
	sh tests/fuzz/run_fuzz.sh $(FUZZ_DIR) -max_total_time=6

clean:
	rm -rf $(BUILD_DIR) $(ASAN_DIR)
