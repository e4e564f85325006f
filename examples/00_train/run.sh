#!/bin/sh
# 00_train: the smallest training program, built the way a user builds it, against an
# INSTALLED hyperpar, then trained on N ranks (any N: dp_shard = N, so NPROC = 1*N*1*1*1).
#   cmake --install build --prefix "$HOME/hp"      # once, in the source tree
#   PREFIX=$HOME/hp ./run.sh                       # 4 ranks
#   N=3 PREFIX=$HOME/hp ./run.sh
. "$(cd "$(dirname "$0")" && pwd)/../run_common.sh"
PREFIX=${PREFIX:-$HOME/hp}
NPROC=${N:-4}
export PKG_CONFIG_PATH="$PREFIX/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
if ! pkg-config --exists hyperpar; then
  echo "run.sh: hyperpar.pc not found in $PREFIX/lib/pkgconfig: install first (cmake --install build --prefix $PREFIX) or set PREFIX" >&2
  exit 2
fi
EXE=${TMPDIR:-/tmp}/hp_00_train.$$
set -x
# shellcheck disable=SC2046
mpicc "$HERE/main.c" $(pkg-config --cflags --libs hyperpar) -Wl,-rpath,"$PREFIX/lib" -o "$EXE"
"$MPIRUN" --allow-run-as-root --oversubscribe --bind-to none -x OPENBLAS_NUM_THREADS=1 -np "$NPROC" "$EXE"
rc=$?
rm -f "$EXE"
exit $rc
