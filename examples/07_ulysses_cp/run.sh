#!/bin/sh
# 07_ulysses_cp: recipes U1-U7, Ulysses alone (U=4 C=1) or 2-D Ulysses x ring (U=2 C=2).
#   U=8 C=1 ./run.sh        Ulysses 8 > 4 kv heads: kv heads repeated, their grads summed
. "$(cd "$(dirname "$0")" && pwd)/../run_common.sh"
U=${U:-2} C=${C:-2}
NPROC=$((U * C))                       # N = U*C (dp_shard = 1) = 2*2 = 4
ex_need example_07_ulysses_cp
ex_launch "$NPROC" "$BUILD_DIR/example_07_ulysses_cp" --ulysses "$U" --cp "$C"
