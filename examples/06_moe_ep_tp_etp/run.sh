#!/bin/sh
# 06_moe_ep_tp_etp: recipe S2 (B-7, etp = tp) and S1b / C2 / C3; RECIPE picks one.
#   RECIPE=C2 ./run.sh      S2 (default), S1b (etp 1), C2 (8 ranks), C3 (8 ranks, HSDP)
. "$(cd "$(dirname "$0")" && pwd)/../run_common.sh"
RECIPE=${RECIPE:-S2}
P=1
case $RECIPE in
  S2)  R=1 S=2 C=1 T=2 EP=2 ET=2 ;;
  S1b) R=1 S=2 C=1 T=2 EP=4 ET=1 ;;
  C2)  R=1 S=2 C=2 T=2 EP=4 ET=1 ;;
  C3)  R=2 S=1 C=2 T=2 EP=2 ET=1 ;;
  *) echo "run.sh: unknown RECIPE '$RECIPE' (S2 S1b C2 C3)" >&2; exit 2 ;;
esac
NPROC=$((R * S * C * T * P))          # S2: N = 1*2*1*2*1 = 4
EFSDP=$((S * C * T / (EP * ET)))      # S2: efsdp = 2*1*2/(2*2) = 1
echo "NPROC=$NPROC efsdp=$EFSDP"
ex_need example_06_moe_ep_tp_etp
ex_launch "$NPROC" "$BUILD_DIR/example_06_moe_ep_tp_etp" --dp-replicate "$R" --dp-shard "$S" --cp "$C" --tp "$T" --sp --ep "$EP" --etp "$ET"
