#!/bin/sh
# 05_moe_ep_fsdp: recipe S1 (B-6) - EP + dual-stack FSDP2 - and A-EP / S3; RECIPE picks one.
#   RECIPE=S3 ./run.sh      S1 (default), A-EP, S3 (S1 through the all-gather dispatcher)
. "$(cd "$(dirname "$0")" && pwd)/../run_common.sh"
RECIPE=${RECIPE:-S1}
R=1 C=1 T=1 P=1 ET=1 DISPATCH=alltoall
case $RECIPE in
  S1)   S=4 EP=4 ;;
  A-EP) S=2 EP=2 ;;
  S3)   S=4 EP=4 DISPATCH=allgather ;;
  *) echo "run.sh: unknown RECIPE '$RECIPE' (S1 A-EP S3)" >&2; exit 2 ;;
esac
NPROC=$((R * S * C * T * P))          # S1: N = 1*4*1*1*1 = 4; EP re-uses those ranks
EFSDP=$((S * C * T / (EP * ET)))      # experts are sharded over efsdp = S*C*T/(EP*ET)
echo "NPROC=$NPROC efsdp=$EFSDP"
ex_need example_05_moe_ep_fsdp
ex_launch "$NPROC" "$BUILD_DIR/example_05_moe_ep_fsdp" --dp-replicate "$R" --dp-shard "$S" --cp "$C" --tp "$T" --ep "$EP" --etp "$ET" --dispatcher "$DISPATCH"
