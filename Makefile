# Makefile - the short names for building and testing hyperpar (CMake does the real work).
#   make build            set the machine up (scripts/setup.sh) and build into build/
#   make test [L=L0]      build, then run the tests (L selects a label: L0, L1, L2)
#   make matrix           build, then run the completeness matrix into report/
#   make asan             AddressSanitizer + UBSan build in build-asan/, then the L0 tests
#   make clean            remove the build folders
BUILD_DIR ?= build
ASAN_DIR  ?= build-asan
L ?=
CTEST_LABEL = $(if $(L),-L $(L),)

.PHONY: build test matrix asan clean

build:
	BUILD_DIR=$(BUILD_DIR) sh scripts/setup.sh

test: build
	ctest --test-dir $(BUILD_DIR) --output-on-failure -j2 $(CTEST_LABEL)

matrix: build
	$(BUILD_DIR)/hp matrix --report report

asan:
	BUILD_DIR=$(ASAN_DIR) HP_CMAKE_ARGS=-DHP_SANITIZE=ON sh scripts/setup.sh
	ctest --test-dir $(ASAN_DIR) --output-on-failure -j2 -L L0

clean:
	rm -rf $(BUILD_DIR) $(ASAN_DIR)
