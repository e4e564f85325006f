#!/bin/sh
# 08_pipeline: recipes P1-P4, every pp rank one stage (pp = NPROC).
#   SCHEDULE=zbv ./run.sh       the zero-bubble V schedule (backward split into I and W)
. "$(cd "$(dirname "$0")" && pwd)/../run_common.sh"
P=${P:-2} SCHEDULE=${SCHEDULE:-1f1b} M=${M:-4}
NPROC=$P                               # N = P (every other degree 1) = 2
ex_need example_08_pipeline
ex_launch "$NPROC" "$BUILD_DIR/example_08_pipeline" --pp-schedule "$SCHEDULE" --pp-microbatches "$M"
