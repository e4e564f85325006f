#!/bin/sh
# 03_mini_transformer_fsdp_tp: the dense recipes on the tiny transformer; RECIPE picks one, the
# library's table gives its degrees (run_common.sh's ex_recipe).
#   RECIPE=M6-ag ./run.sh      another recipe (unknown: the list of this example's)
. "$(cd "$(dirname "$0")" && pwd)/../run_common.sh"
RECIPE=${RECIPE:-B2}
ex_recipe "$RECIPE" "$EX_LAYOUT_FLAGS" tiny   # B2: N = P*R*S*U*C*T = 1*1*2*1*1*2 = 4
ex_need example_03_mini_transformer_fsdp_tp
# shellcheck disable=SC2086
ex_launch "$NPROC" "$BUILD_DIR/example_03_mini_transformer_fsdp_tp" $FLAGS
