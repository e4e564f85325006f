#!/bin/sh
# 08_pipeline: recipes P1-P10, C4, C5, pipeline parallel alone and with the other degrees;
# RECIPE picks one, the library's table gives its degrees (run_common.sh's ex_recipe).
#   RECIPE=P4 ./run.sh       the zero-bubble V schedule (backward split into I and W)
. "$(cd "$(dirname "$0")" && pwd)/../run_common.sh"
RECIPE=${RECIPE:-P1-1f1b}
# P1-1f1b: N = P*R*S*U*C*T = 2*1*1*1*1*1 = 2
ex_recipe "$RECIPE" "$EX_LAYOUT_FLAGS --model"
ex_need example_08_pipeline
# shellcheck disable=SC2086
ex_launch "$NPROC" "$BUILD_DIR/example_08_pipeline" $FLAGS
