# run_common.sh - sourced by every example's run.sh: where the binaries are, the recipe, the launcher.
#   BUILD_DIR   the build folder holding example_* and hp (default: ../../build from the example)
#   MPIRUN      the launcher (default mpirun; the tests pass the one hyperpar was built with)
#   HP          the hp tool, whose recipe table ex_recipe reads (default: $BUILD_DIR/hp, where
#               the build puts it next to the example programs)
HERE=$(cd "$(dirname "$0")" && pwd)
BUILD_DIR=${BUILD_DIR:-$HERE/../../build}
MPIRUN=${MPIRUN:-mpirun}
HP=${HP:-$BUILD_DIR/hp}

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

# the flags hp_layout_flag (inspect.h) reads, as hp run names them: the degrees and the run's
# settings (the example programs take them all)
# shellcheck disable=SC2034   # read by the run.sh scripts
EX_LAYOUT_FLAGS="--dp-replicate --dp-shard --ulysses --cp --tp --pp --ep --etp --sp --no-sp
  --pp-schedule --pp-virtual --pp-microbatches --microbatches --cp-rotate --cp-no-balance
  --dispatcher --optimizer --seq-len --batch --steps --lr --max-norm --ac"

# ex_recipe ID ACCEPTS [MODEL]: recipe ID of the library's table (src/verify/recipes.c, through
# `hp matrix`), which must be one the table names this example's folder for. Sets NPROC (the
# recipe's world) and FLAGS (its `hp run` flags that the example program takes: ACCEPTS, a
# space-separated list of flag names; a flag's value is the next word unless that is a flag),
# and prints the world's arithmetic and, in one line, the recipe's flags the example does not
# take. MODEL: the model the program trains, unless it takes --model: a recipe of another
# model is refused. Exit 2 with one line when ID is none of this example's recipes.
ex_recipe() {
  if [ ! -x "$HP" ]; then
    echo "run.sh: $HP not found: build first (cmake -S . -B build && cmake --build build) or set HP" >&2
    exit 2
  fi
  ex_id=$1 ex_accepts=" $(echo $2) " ex_model=${3:-}
  ex_folder=$(basename "$HERE")
  # the example's recipes: the last column of its row in examples/README.md's generated table
  ex_valid=$("$HP" matrix --examples-markdown |
    awk -F'|' -v f="[$ex_folder]" 'index($2, f) { r = $(NF - 1); gsub(/,/, "", r); sub(/^ +/, "", r); sub(/ +$/, "", r); print r }')
  case " $ex_valid " in
    *" $ex_id "*) ;;
    *) echo "run.sh: unknown RECIPE '$ex_id' for $ex_folder (one of: $ex_valid)" >&2; exit 2 ;;
  esac
  ex_line=$("$HP" matrix --list | awk -F'\t' -v id="$ex_id" '($1 == "recipe" || $1 == "resume") && $2 == id')
  ex_world=$(printf '%s\n' "$ex_line" | cut -f4)
  set -f   # the flags are words: split them, never glob them
  # shellcheck disable=SC2046
  set -- $(printf '%s\n' "$ex_line" | cut -f5)
  set +f
  P=1 R=1 S=1 U=1 C=1 T=1 EP=1 ET=1 FLAGS='' ex_left=
  while [ $# -gt 0 ]; do
    f=$1 v=; shift
    case ${1:-} in --*|'') ;; *) v=$1; shift ;; esac
    case $f in
      --pp) P=$v ;; --dp-replicate) R=$v ;; --dp-shard) S=$v ;; --ulysses) U=$v ;; --cp) C=$v ;; --tp) T=$v ;;
      --ep) EP=$v ;; --etp) ET=$v ;;
    esac
    case $ex_accepts in
      *" $f "*) FLAGS="$FLAGS $f${v:+ $v}" ;;
      *) if [ "$f" = --model ] && [ -n "$ex_model" ]; then   # the program's own model: nothing lost
           [ "$v" = "$ex_model" ] && continue
           echo "run.sh: recipe $ex_id trains $v, $ex_folder trains $ex_model" >&2; exit 2
         fi
         ex_left="$ex_left $f${v:+ $v}" ;;
    esac
  done
  NPROC=$((P * R * S * U * C * T))
  echo "$ex_id: N = P*R*S*U*C*T = $P*$R*$S*$U*$C*$T = $NPROC"
  if [ "$NPROC" -ne "$ex_world" ]; then
    echo "run.sh: $ex_id: the degrees give $NPROC ranks, the library's table $ex_world" >&2; exit 2
  fi
  # EP and ETP re-use those ranks: the experts are sharded over what ep*etp leaves of S*U*C*T
  [ "$EP" -eq 1 ] || echo "$ex_id: efsdp = S*U*C*T/(EP*ET) = $S*$U*$C*$T/($EP*$ET) = $((S * U * C * T / (EP * ET)))"
  [ -z "$ex_left" ] || echo "$ex_id: not passed ($ex_folder does not take them):$ex_left"
}
