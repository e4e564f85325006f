#!/bin/sh
# 06_moe_ep_tp_etp: recipe S2 (B-7, etp = tp) and S1b / C2 / C3; RECIPE picks one, the library's
# table gives its degrees (run_common.sh's ex_recipe).
#   RECIPE=C2-ep4-ag ./run.sh      8 ranks
. "$(cd "$(dirname "$0")" && pwd)/../run_common.sh"
RECIPE=${RECIPE:-S2}
# S2: N = P*R*S*U*C*T = 1*1*2*1*1*2 = 4; efsdp = 2*1*1*2/(2*2) = 1
ex_recipe "$RECIPE" "$EX_LAYOUT_FLAGS" tiny-moe
ex_need example_06_moe_ep_tp_etp
# shellcheck disable=SC2086
ex_launch "$NPROC" "$BUILD_DIR/example_06_moe_ep_tp_etp" $FLAGS
