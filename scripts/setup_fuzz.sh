#!/bin/sh
# setup_fuzz.sh - make this machine ready for `make fuzz`: clang with libFuzzer and its
# sanitizer runtimes (Debian 12: clang + libclang-rt-14-dev), and what CMake needs to configure
# the project at all (cmake, pkg-config, Open MPI, OpenBLAS, cJSON). Idempotent: installs only
# what is missing, as root (or with sudo -n); otherwise prints the one apt-get line to run.
#   scripts/setup_fuzz.sh        # then: cmake -S . -B build-fuzz -DHP_FUZZ=ON -DCMAKE_C_COMPILER=clang
set -eu
cd "$(dirname "$0")/.."

. scripts/apt_common.sh
# links_fuzzer: clang builds and links a libFuzzer target with ASan + UBSan
links_fuzzer() {
  have clang || return 1
  tmp=$(mktemp -d)
  printf '#include <stddef.h>\n#include <stdint.h>\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }\n' > "$tmp/t.c"
  ok=0
  clang -fsanitize=fuzzer,address,undefined "$tmp/t.c" -o "$tmp/t" >/dev/null 2>&1 || ok=1
  rm -rf "$tmp"
  return $ok
}
has_header() { printf '#include <%s>\n' "$1" | clang -E -x c - >/dev/null 2>&1; }

have clang      || need clang
links_fuzzer    || need libclang-rt-14-dev
have make       || need make
have cmake      || need cmake
have pkg-config || need pkg-config
have mpicc      || need libopenmpi-dev
if have clang; then
  has_header cblas.h       || need libopenblas-dev
  has_header cjson/cJSON.h || need libcjson-dev
else
  need libopenblas-dev; need libcjson-dev
fi
if have pkg-config && ! pkg-config --exists openblas; then need libopenblas-dev; fi

install_missing setup_fuzz.sh
if ! links_fuzzer; then
  echo "setup_fuzz.sh: clang still cannot link -fsanitize=fuzzer,address,undefined (libclang-rt-$(clang -dumpversion 2>/dev/null | cut -d. -f1)-dev for this clang?)" >&2
  exit 1
fi
