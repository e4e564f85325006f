#!/bin/sh
# run_install_check.sh - the install CTest (tests/install.cmake): hyperpar used the way a C user
# uses it, from an installed copy only.
#   sh run_install_check.sh BUILD EXAMPLE_DIR WORK LIBDIR MPICC "MPIEXEC FLAGS" CMAKE PKG_CONFIG
# Fails (exit 1) with one line naming the first check that did not hold.
set -u
BUILD=$1 EX=$2 WORK=$3 LIBDIR=$4 MPICC=$5 MPIEXEC=$6 CMAKE=$7 PKGCONF=$8
P=$WORK/prefix
fail() { echo "install check: FAILED: $*" >&2; exit 1; }
rm -rf "$WORK" && mkdir -p "$WORK" || fail "cannot create $WORK"

# 1. install into a prefix that exists nowhere else
"$CMAKE" --install "$BUILD" --prefix "$P" >"$WORK/install.log" 2>&1 || { cat "$WORK/install.log"; fail "cmake --install"; }
for f in "$LIBDIR/libhyperpar.so" "$LIBDIR/libhyperpar.a" "$LIBDIR/pkgconfig/hyperpar.pc" \
         "$LIBDIR/cmake/hyperpar/hyperparConfig.cmake" "$LIBDIR/cmake/hyperpar/hyperparConfigVersion.cmake" \
         include/hyperpar/train.h include/hyperpar/dims.h; do
  [ -e "$P/$f" ] || fail "not installed: $P/$f"
done

# 2. each public header alone, with only the installed include folder: a header that includes
#    a private one (src/...) or forgets one of its own includes fails here
n=0
for h in "$P"/include/hyperpar/*.h; do
  name=$(basename "$h")
  printf '#include <hyperpar/%s>\nint main(void) { return 0; }\n' "$name" >"$WORK/header.c"
  "$MPICC" -std=c11 -Wall -Wextra -Werror -fsyntax-only -I"$P/include" "$WORK/header.c" \
    || fail "public header hyperpar/$name does not compile alone against $P/include"
  n=$((n + 1))
done
[ "$n" -ge 10 ] || fail "only $n public headers installed"
echo "install check: $n public headers compile alone"

# 3. the README's build line, against the installed copy: shared, then static
export PKG_CONFIG_PATH="$P/$LIBDIR/pkgconfig"
flags=$("$PKGCONF" --cflags --libs hyperpar) || fail "pkg-config --cflags --libs hyperpar"
sflags=$("$PKGCONF" --static --cflags --libs hyperpar | sed 's/-lhyperpar /-l:libhyperpar.a /') \
  || fail "pkg-config --static --cflags --libs hyperpar"
cd "$WORK" || fail "cd $WORK"
cp "$EX/main.c" main.c
echo "+ $MPICC main.c $flags"
# shellcheck disable=SC2086
"$MPICC" -std=c11 -Wall -Wextra -Werror main.c $flags -Wl,-rpath,"$P/$LIBDIR" -o train_shared \
  || fail "mpicc main.c \$(pkg-config --cflags --libs hyperpar)"
# shellcheck disable=SC2086
"$MPICC" -std=c11 -Wall -Wextra -Werror main.c $sflags -o train_static \
  || fail "mpicc main.c \$(pkg-config --static --cflags --libs hyperpar) with libhyperpar.a"
ldd train_shared | grep -q "$P/$LIBDIR/libhyperpar.so" || fail "train_shared does not load $P/$LIBDIR/libhyperpar.so"
! ldd train_static | grep -q libhyperpar || fail "train_static loads a libhyperpar.so"

# 4. both train on 4 ranks, one step line per step (the library's metrics: TorchTitan's line),
# and agree to the last digit
# run_train EXE NP [DIR]: runs it, checks exit 0 and 5 step lines, leaves the losses in $losses
run_train() {
  # shellcheck disable=SC2086
  out=$($MPIEXEC -np "$2" "./$1" ${3:-} 2>&1); rc=$?
  echo "$out"
  [ "$rc" = 0 ] || fail "$1 on $2 ranks exited $rc"
  steps=$(echo "$out" | grep -cE '^step: +[0-9]+ +loss: +[0-9]+\.[0-9]+ ')
  [ "$steps" = 5 ] || fail "$1 on $2 ranks printed $steps step lines, want 5"
  losses=$(echo "$out" | grep -E '^step: ' | sed 's/ *grad_norm:.*//')
}
run_train train_shared 4; shared=$losses
run_train train_static 4; static=$losses
[ "$shared" = "$static" ] || fail "the shared and the static build trained to different losses"
run_train train_shared 3   # any world size: dp_shard = 3
# with a folder: the library's metrics.jsonl (a job record, then one train record a step) and loss.svg
run_train train_shared 2 "$WORK/metrics_run"
[ "$(grep -c '"type":"train"' "$WORK/metrics_run/metrics.jsonl")" = 5 ] && [ -s "$WORK/metrics_run/loss.svg" ] \
  || fail "train with a folder wrote no metrics.jsonl of 5 train records and loss.svg"

# 5. the same folder as a CMake project: find_package(hyperpar) -> hyperpar::hyperpar
"$CMAKE" -S "$EX" -B "$WORK/cmake_build" -DCMAKE_PREFIX_PATH="$P" -DMPI_C_COMPILER="$MPICC" \
  >"$WORK/cmake.log" 2>&1 || { cat "$WORK/cmake.log"; fail "configure a find_package(hyperpar) project"; }
"$CMAKE" --build "$WORK/cmake_build" >>"$WORK/cmake.log" 2>&1 || { cat "$WORK/cmake.log"; fail "build a find_package(hyperpar) project"; }
cp "$WORK/cmake_build/train" train_cmake && cp "$WORK/cmake_build/train_static" train_cmake_static \
  || fail "the CMake project built no train / train_static"
run_train train_cmake 2
run_train train_cmake_static 2
echo "install check: PASS"
