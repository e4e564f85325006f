#!/bin/sh
# 05_moe_ep_fsdp: recipe S1 (B-6) - EP + dual-stack FSDP2 - and A-EP / S3; RECIPE picks one,
# the library's table gives its degrees (run_common.sh's ex_recipe).
#   RECIPE=S3-S1 ./run.sh      S1 through the all-gather dispatcher
. "$(cd "$(dirname "$0")" && pwd)/../run_common.sh"
RECIPE=${RECIPE:-S1}
# S1: N = P*R*S*U*C*T = 1*1*4*1*1*1 = 4 (EP re-uses those ranks); efsdp = 4/(4*1) = 1
ex_recipe "$RECIPE" "$EX_LAYOUT_FLAGS" tiny-moe
ex_need example_05_moe_ep_fsdp
# shellcheck disable=SC2086
ex_launch "$NPROC" "$BUILD_DIR/example_05_moe_ep_fsdp" $FLAGS
