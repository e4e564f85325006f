#!/bin/sh
# 04_transformer_fsdp_cp: recipe M5 (A-CP / B-3), context parallel + FSDP2 over dp_shard*cp.
#   S=1 ./run.sh            CP alone (fsdp = cp = 2)
#   ROTATE=ring ./run.sh    ring rotation of K/V instead of all-gather
. "$(cd "$(dirname "$0")" && pwd)/../run_common.sh"
R=1 C=2 T=1 P=1
S=${S:-2}
ROTATE=${ROTATE:-allgather}
NPROC=$((R * S * C * T * P))          # N = R*S*C*T*P = 1*2*2*1*1 = 4
ex_need example_04_transformer_fsdp_cp
ex_launch "$NPROC" "$BUILD_DIR/example_04_transformer_fsdp_cp" --dp-replicate "$R" --dp-shard "$S" --cp "$C" --tp "$T" --cp-rotate "$ROTATE"
