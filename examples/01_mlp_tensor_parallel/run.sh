#!/bin/sh
# 01_mlp_tensor_parallel: recipes M2 / A-TP, the toy MLP with tensor parallel (world = tp). The
# degrees are the recipe's, from the library's table (run_common.sh's ex_recipe).
#   RECIPE=M2-tp4 ./run.sh      another recipe (unknown: the list of this example's)
. "$(cd "$(dirname "$0")" && pwd)/../run_common.sh"
RECIPE=${RECIPE:-M2-tp2}
ex_recipe "$RECIPE" "--tp"          # M2-tp2: N = P*R*S*U*C*T = 1*1*1*1*1*2 = 2
ex_need example_01_mlp_tensor_parallel
# shellcheck disable=SC2086
ex_launch "$NPROC" "$BUILD_DIR/example_01_mlp_tensor_parallel" $FLAGS
