#!/bin/sh
# 07_ulysses_cp: recipes U1-U7, Ulysses alone or 2-D Ulysses x ring; RECIPE picks one, the
# library's table gives its degrees (run_common.sh's ex_recipe).
#   RECIPE=U3 ./run.sh      Ulysses 8 > 4 kv heads: kv heads repeated, their grads summed
. "$(cd "$(dirname "$0")" && pwd)/../run_common.sh"
RECIPE=${RECIPE:-U4-ring}
ex_recipe "$RECIPE" "$EX_LAYOUT_FLAGS --model"   # U4-ring: N = 1*1*1*2*2*1 = 4
ex_need example_07_ulysses_cp
# shellcheck disable=SC2086
ex_launch "$NPROC" "$BUILD_DIR/example_07_ulysses_cp" $FLAGS
