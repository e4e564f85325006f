#!/bin/sh
# 01_mlp_tensor_parallel: recipe M2 / A-TP, the toy MLP with tensor parallel (world = tp).
#   T=4 ./run.sh      another tp degree (2, 4 or 8: it divides the 32 hidden units)
. "$(cd "$(dirname "$0")" && pwd)/../run_common.sh"
R=1 S=1 C=1 P=1
T=${T:-2}
NPROC=$((R * S * C * T * P))          # N = R*S*C*T*P = 1*1*1*2*1 = 2
ex_need example_01_mlp_tensor_parallel
ex_launch "$NPROC" "$BUILD_DIR/example_01_mlp_tensor_parallel" --tp "$T"
