# run_common.sh - sourced by every example's run.sh: where the binaries are, and the launcher.
#   BUILD_DIR   the build folder holding example_* and hp (default: ../../build from the example)
#   MPIRUN      the launcher (default mpirun; the tests pass the one hyperpar was built with)
HERE=$(cd "$(dirname "$0")" && pwd)
BUILD_DIR=${BUILD_DIR:-$HERE/../../build}
MPIRUN=${MPIRUN:-mpirun}

# ex_launch NPROC PROGRAM ARGS...: NPROC ranks of PROGRAM, oversubscribed, one BLAS thread
# each, with the flags of the launcher's own MPI (Open MPI's mpirun, or MPICH's Hydra).
ex_launch() {
  np=$1; shift
  if "$MPIRUN" --version 2>&1 | grep -qi -e hydra -e mpich; then
    set -x
    exec "$MPIRUN" -n "$np" -bind-to none -genv OPENBLAS_NUM_THREADS 1 "$@"
  fi
  set -x
  exec "$MPIRUN" --allow-run-as-root --oversubscribe --bind-to none -x OPENBLAS_NUM_THREADS=1 \
    -np "$np" "$@"
}

# ex_need BINARY: stop with one line when it has not been built
ex_need() {
  if [ ! -x "$BUILD_DIR/$1" ]; then
    echo "run.sh: $BUILD_DIR/$1 not found: build first (cmake -S . -B build && cmake --build build) or set BUILD_DIR" >&2
    exit 2
  fi
}
