# run_common.sh - sourced by every example's run.sh: where the binaries are.
#   BUILD_DIR   the build folder holding example_* and hp (default: ../../build from the example)
#   MPIRUN      the launcher (default mpirun, Open MPI)
HERE=$(cd "$(dirname "$0")" && pwd)
BUILD_DIR=${BUILD_DIR:-$HERE/../../build}
MPIRUN=${MPIRUN:-mpirun}

# ex_need BINARY: stop with one line when it has not been built
ex_need() {
  if [ ! -x "$BUILD_DIR/$1" ]; then
    echo "run.sh: $BUILD_DIR/$1 not found: build first (cmake -S . -B build && cmake --build build) or set BUILD_DIR" >&2
    exit 2
  fi
}
