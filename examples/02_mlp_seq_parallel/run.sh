#!/bin/sh
# 02_mlp_seq_parallel: recipe M3, the toy MLP with tensor + sequence parallel (world = tp).
#   T=4 ./run.sh      another tp degree (it divides the 24 rows and the 32 hidden units)
. "$(cd "$(dirname "$0")" && pwd)/../run_common.sh"
T=${T:-2}
R=1 S=1 C=1 P=1
NPROC=$((R * S * C * T * P))          # N = R*S*C*T*P = 1*1*1*2*1 = 2
ex_need example_02_mlp_seq_parallel
ex_launch "$NPROC" "$BUILD_DIR/example_02_mlp_seq_parallel" --tp "$T"
