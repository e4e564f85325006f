#!/bin/sh
# setup.sh - make a fresh Debian 12 machine ready and build hyperpar. Idempotent: it installs
# only what is missing and re-runs cmake on an existing build folder.
#   scripts/setup.sh                         # -> build/ (RelWithDebInfo)
#   BUILD_DIR=build-asan HP_CMAKE_ARGS=-DHP_SANITIZE=ON scripts/setup.sh
# Needs: a C compiler, make, cmake, pkg-config, python3, Open MPI (mpicc, mpirun),
# OpenBLAS (cblas.h), oneDNN (dnnl.h, the second GEMM backend), cJSON (cjson/cJSON.h),
# SentencePiece (libsentencepiece-dev, the tokenizer) and g++ for its shim; perl-doc, the text
# of the README's training job.
set -eu
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
HP_CMAKE_ARGS=${HP_CMAKE_ARGS:-}

. scripts/apt_common.sh
# has_header NAME: the C compiler finds #include <NAME>
has_header() { have cc && printf '#include <%s>\n' "$1" | cc -E -x c - >/dev/null 2>&1; }

have cc         || { need gcc; need libc6-dev; }
have make       || need make
have cmake      || need cmake
have pkg-config || need pkg-config
have python3    || need python3
have mpicc      || need libopenmpi-dev
have mpirun     || need openmpi-bin
if have cc; then
  has_header cblas.h       || need libopenblas-dev
  has_header cjson/cJSON.h || need libcjson-dev
  has_header zlib.h        || need zlib1g-dev
  has_header dnnl.h        || need libdnnl-dev
else
  need libopenblas-dev; need libcjson-dev; need zlib1g-dev; need libdnnl-dev
fi
# SentencePiece: the tokenizer (hp tokenize, prompts and text; a C++ shim links it) and its
# spm_* tools. hp builds without it and says so where a command needs it.
have g++ || need g++
pkg-config --exists sentencepiece 2>/dev/null || need libsentencepiece-dev
have spm_encode || need sentencepiece
# the text of the README's training job: Perl's documentation (perl-doc's POD, 9 MB)
pod=$(perl -MConfig -e 'print "$Config{privlib}/pod"' 2>/dev/null || echo /usr/share/perl/5.36/pod)
[ -r "$pod/perlintro.pod" ] || need perl-doc
# pkg-config must know openblas (CMakeLists asks it for the CBLAS flags)
if have pkg-config && ! pkg-config --exists openblas; then need libopenblas-dev; fi

install_missing setup.sh

# PyTorch for the outside check of the model (tests/check_torch.py, required: its tests fail
# without it) and the benchmark's eager comparison. HP_NO_TORCH=1 skips the install for a
# machine that only builds; CI never sets it.
if [ "${HP_NO_TORCH:-0}" != 1 ] && ! /usr/bin/python3 -c "import torch" 2>/dev/null; then
  if [ "$(id -u)" = 0 ] || { have sudo && sudo -n true 2>/dev/null; }; then
    S=""; [ "$(id -u)" = 0 ] || S="sudo -n"
    echo "setup.sh: installing python3-torch (HP_NO_TORCH=1 skips it)"
    { [ -n "$missing" ] || $S apt-get update; } >/dev/null 2>&1 || true
    if ! $S env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends python3-torch \
         >/dev/null 2>&1 || ! /usr/bin/python3 -c "import torch" 2>/dev/null; then
      echo "setup.sh: python3-torch could not be installed (apt-get install python3-torch failed); the PyTorch outside checks need it" >&2
      exit 1
    fi
  else
    echo "setup.sh: python3-torch is missing; install it as root: apt-get install -y --no-install-recommends python3-torch (or HP_NO_TORCH=1 to build without the outside checks)" >&2
    exit 1
  fi
fi

jobs=$(nproc 2>/dev/null || echo 2)
# shellcheck disable=SC2086
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo $HP_CMAKE_ARGS
cmake --build "$BUILD_DIR" -j"$jobs"
