#!/bin/sh
# 04_transformer_fsdp_cp: recipes M5 (A-CP / B-3), context parallel + FSDP2 over dp_shard*cp;
# RECIPE picks one, the library's table gives its degrees (run_common.sh's ex_recipe).
#   RECIPE=M5-s1-ag ./run.sh      CP alone (fsdp = cp = 2)
#   RECIPE=M5-s2-ring ./run.sh    ring rotation of K/V instead of all-gather
. "$(cd "$(dirname "$0")" && pwd)/../run_common.sh"
RECIPE=${RECIPE:-M5-s2-ag}
ex_recipe "$RECIPE" "$EX_LAYOUT_FLAGS" tiny   # M5-s2-ag: N = 1*1*2*1*2*1 = 4
ex_need example_04_transformer_fsdp_cp
# shellcheck disable=SC2086
ex_launch "$NPROC" "$BUILD_DIR/example_04_transformer_fsdp_cp" $FLAGS
