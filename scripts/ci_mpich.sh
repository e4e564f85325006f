#!/bin/sh
# ci_mpich.sh - the second CI build: hyperpar against Debian's MPICH instead of Open MPI.
#   scripts/ci_mpich.sh                     # -> build-mpich/, L0 tests + a few recipes
#   BUILD_DIR=/tmp/b scripts/ci_mpich.sh
# It installs MPICH (libmpich-dev, mpich) when missing, but first pins the Debian alternatives
# (mpicc, mpirun/mpiexec, the mpi include dir) to what they point at now, so that the main
# build keeps Open MPI: MPICH is only ever named by its suffixed tools (mpicc.mpich,
# mpiexec.mpich). Each stage prints its time; the script exits non-zero on any failure.
set -eu
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build-mpich}
have() { command -v "$1" >/dev/null 2>&1; }
t0=$(date +%s)
stage() { echo "ci_mpich: [$(( $(date +%s) - t0 )) s] $*"; }

# ---- 1. MPICH next to Open MPI, without moving Open MPI's alternatives ----------------------
mpi_alternatives() { update-alternatives --get-selections 2>/dev/null | grep -E '^(mpi|mpirun|mpi-[a-z0-9_]+-linux-gnu[a-z]*) ' || true; }
if ! have mpicc.mpich || ! have mpiexec.mpich; then
  if [ "$(id -u)" = 0 ]; then SUDO=""
  elif have sudo && sudo -n true 2>/dev/null; then SUDO="sudo -n"
  else
    echo "ci_mpich.sh: MPICH is missing; install it as root: apt-get install -y --no-install-recommends libmpich-dev mpich" >&2
    exit 1
  fi
  before=$(mpi_alternatives)
  # manual mode: a newly installed MPI can no longer win an alternative by its priority
  echo "$before" | while read -r name mode path; do
    [ -n "$name" ] && $SUDO update-alternatives --quiet --set "$name" "$path"
  done
  stage "installing MPICH (libmpich-dev mpich)"
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends libmpich-dev mpich \
    || { $SUDO apt-get update && $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends libmpich-dev mpich; }
  after=$(mpi_alternatives)
  # the paths must be the same as before (only auto -> manual may differ)
  if [ "$(echo "$before" | awk '{print $1, $3}')" != "$(echo "$after" | awk '{print $1, $3}')" ]; then
    echo "ci_mpich.sh: installing MPICH moved the MPI alternatives: before: $before; after: $after" >&2
    exit 1
  fi
fi
mpicc.mpich -show >/dev/null
stage "alternatives: $(readlink -f /usr/bin/mpicc) $(readlink -f /usr/bin/mpiexec)"

# ---- 2. build against MPICH --------------------------------------------------------------------
# FindMPI takes everything from the compiler wrapper it is given; the launcher is named too,
# since the mpiexec on PATH is Open MPI's.
stage "configure + build $BUILD_DIR"
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DMPI_C_COMPILER=/usr/bin/mpicc.mpich -DMPIEXEC_EXECUTABLE=/usr/bin/mpiexec.mpich >/dev/null
cmake --build "$BUILD_DIR" -j"$(nproc 2>/dev/null || echo 2)" >/dev/null
# it must really be MPICH: the tool reports the library it links
ldd "$BUILD_DIR/hp" | grep -q 'libmpich' || { echo "ci_mpich.sh: $BUILD_DIR/hp does not link libmpich" >&2; exit 1; }

# ---- 3. the L0 tests (a failure is reported at the end, after the recipes ran too) -------------
stage "L0 tests"
l0=0
# the negative cases (recipe_neg-*) run once per CI, in `make matrix`; the bad inputs (exit 2
# before any rank starts) in `make test` and under ASan. The 8-rank comm tests are left out
# here: MPICH's ranks poll while they wait, so 8 of them on 2 cores take 130 s where Open MPI
# takes 25 s; their 2- and 4-rank versions run the same collectives under MPICH.
# Tests that never start MPI (the CLI's checks, the planner, the kernels, the exhaustive casts,
# the fuzz corpora, the benchmarks' smoke tests) have nothing to learn from another MPI, nor
# PyTorch's layouts (torch2_*: their side runs on torchrun and gloo) or the export formats.
ctest --test-dir "$BUILD_DIR" -j2 -L L0 --output-on-failure \
  -E "^recipe_neg-|^bad_inputs$|^comm_(small_pieces_|async_)?np8$|^cli_|^plan_(search|params|hf_config|semantics|library|world|check|json|run_405b|ranks)|^fuzz_|^bench_|^(bf16|float8)_exhaustive$|^float8_linear$|^gemm_|^test_|^kernels|^lr_schedule$|^memtrack$|^st_|^recipes_|^readme_|^examples_recipes|^layers_point_down$|^torch(2|titan)_|^hf_|^flags_doc$" || l0=$?

# ---- 4. recipes started by mpiexec.mpich, and one started by hp itself ------------------------
export OPENBLAS_NUM_THREADS=1
# check_pass CMD...: runs a verified recipe, shows its verdict, fails unless it exits 0 with PASS
check_pass() {
  out=$("$@" 2>&1) && rc=0 || rc=$?
  echo "$out" | grep -E '^verify:|^hp:|rror' || echo "$out" | tail -n 5
  [ "$rc" = 0 ] && echo "$out" | grep -q '^verify: PASS' || { echo "ci_mpich.sh: exit $rc from: $*" >&2; exit 1; }
}
for recipe in "--dp-shard 2 --tp 2" "--tp 2 --cp 2" "--dp-shard 4 --model tiny-moe --ep 4"; do
  stage "mpiexec.mpich -n 4 hp run $recipe --verify"
  # shellcheck disable=SC2086
  check_pass mpiexec.mpich -n 4 -bind-to none "$BUILD_DIR/hp" run $recipe --verify
done
# hp started alone must launch itself with the launcher of the MPI it was built with
stage "hp run --dp-shard 2 --tp 2 --verify (self-launched)"
check_pass "$BUILD_DIR/hp" run --dp-shard 2 --tp 2 --verify
if [ "$l0" != 0 ]; then
  stage "FAILED: L0 tests under MPICH (ctest exit $l0; the list is above)"
  exit 1
fi
stage "done: MPICH build, L0 tests and 4 recipes pass"
