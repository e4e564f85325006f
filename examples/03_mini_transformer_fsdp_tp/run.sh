#!/bin/sh
# 03_mini_transformer_fsdp_tp: the dense recipes on the tiny transformer; RECIPE picks one.
#   RECIPE=M6 ./run.sh     M1 M4 B1 B2 (default) B4 M6 M7
. "$(cd "$(dirname "$0")" && pwd)/../run_common.sh"
RECIPE=${RECIPE:-B2}
P=1 SP=--sp
case $RECIPE in
  M1) R=2 S=1 C=1 T=1 ;;              # pure DDP
  M4) R=1 S=2 C=1 T=1 ;;              # FSDP2
  B1) R=1 S=2 C=1 T=2 SP=--no-sp ;;   # TP + FSDP2
  B2) R=1 S=2 C=1 T=2 ;;              # TP + SP + FSDP2
  B4) R=1 S=1 C=2 T=2 ;;              # TP + SP + CP + FSDP2 (over cp)
  M6) R=1 S=2 C=2 T=2 ;;              # the C-level Titan grid
  M7) R=2 S=2 C=1 T=2 ;;              # HSDP x TP + SP
  *) echo "run.sh: unknown RECIPE '$RECIPE' (M1 M4 B1 B2 B4 M6 M7)" >&2; exit 2 ;;
esac
[ "$T" -gt 1 ] || SP=
NPROC=$((R * S * C * T * P))          # B2: N = R*S*C*T*P = 1*2*1*2*1 = 4
ex_need example_03_mini_transformer_fsdp_tp
ex_launch "$NPROC" "$BUILD_DIR/example_03_mini_transformer_fsdp_tp" --dp-replicate "$R" --dp-shard "$S" --cp "$C" --tp "$T" $SP
