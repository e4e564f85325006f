#!/bin/sh
# cpu_profiles.sh - the tests again as if on narrower CPUs than this one: the L0 tests, the
# determinism tests and every bf16 and float8 recipe, under each profile.
#   BUILD_DIR=build sh scripts/cpu_profiles.sh            # two profiles below this CPU
#   HP_CPU_PROFILES="avx2 avx" sh scripts/cpu_profiles.sh # these ones
# A profile caps all three parties that read the CPU, as a CPU of that level would have them:
#   hp's own answers (HP_CPU_ISA: its vector loops, its BLAS core choice, the FMA peak);
#   oneDNN's dispatch (ONEDNN_MAX_CPU_ISA, and DNNL_MAX_CPU_ISA, the name oneDNN 2.6 reads);
#   OpenBLAS's kernels (OPENBLAS_CORETYPE at the level's core).
# The machine is asked (`hp --version`), never assumed: the profiles are the two widest levels of
# avx512, avx2, avx, sse4_1 below this CPU's widest (avx2 among them wherever the CPU is wider:
# the CPUs nobody here has are AVX2 ones without AVX-512). Each profile is checked to hold
# (hp --version names the cap, the core and oneDNN's ISA) before its tests run. Exit 0 when every
# profile's tests pass (skips allowed: each names what its CPU lacks), 1 otherwise.
set -eu
BUILD_DIR=${BUILD_DIR:-build}
hp=$BUILD_DIR/hp
[ -x "$hp" ] || { echo "cpu_profiles: $hp is not built (make build first)" >&2; exit 2; }
LEVELS="sse4_1 avx avx2 avx512 avx512_bf16 amx"
rank_of() { i=0; for l in $LEVELS; do [ "$l" = "$1" ] && { echo $i; return; }; i=$((i + 1)); done; echo -1; }
widest=$(env -u HP_CPU_ISA "$hp" --version | sed -n 's/^cpu: \([a-z0-9_]*\).*/\1/p')
[ -n "$widest" ] || { echo "cpu_profiles: hp --version names no cpu level" >&2; exit 1; }
if [ -z "${HP_CPU_PROFILES:-}" ]; then
  HP_CPU_PROFILES=""
  n=0
  for p in avx512 avx2 avx sse4_1; do
    [ "$(rank_of "$p")" -lt "$(rank_of "$widest")" ] && [ $n -lt 2 ] || continue
    HP_CPU_PROFILES="$HP_CPU_PROFILES $p"; n=$((n + 1))
  done
fi
[ -n "$HP_CPU_PROFILES" ] || { echo "cpu_profiles: no level below this CPU's $widest"; exit 0; }
echo "cpu_profiles: this CPU runs $widest; profiles:$HP_CPU_PROFILES"

onednn_isa_of() { case $1 in sse4_1) echo SSE41 ;; avx) echo AVX ;; avx2) echo AVX2 ;; avx512) echo AVX512_CORE ;;
                  avx512_bf16) echo AVX512_CORE_BF16 ;; *) echo ALL ;; esac; }
core_of() { case $1 in sse4_1) echo Prescott ;; avx) echo Sandybridge ;; avx2) echo Haswell ;;
            avx512) echo SkylakeX ;; *) echo Cooperlake ;; esac; }
start=$(date +%s)
failed=""
for p in $HP_CPU_PROFILES; do
  t0=$(date +%s)
  isa=$(onednn_isa_of "$p") core=$(core_of "$p")
  export HP_CPU_ISA=$p ONEDNN_MAX_CPU_ISA=$isa DNNL_MAX_CPU_ISA=$isa OPENBLAS_CORETYPE=$core
  v=$("$hp" --version)
  want_isa=$(echo "$isa" | tr 'A-Z' 'a-z' | sed 's/^sse41$/sse41/')
  echo "$v" | grep -qx "cpu: $p (capped: HP_CPU_ISA=$p)" &&
    echo "$v" | grep -qx "blas core: $core" &&
    { [ "$isa" = ALL ] || echo "$v" | grep -q "^gemm: onednn [0-9.]*, isa $want_isa, "; } || {
    echo "$v"; echo "cpu_profiles: profile $p does not hold here (cpu, core $core, oneDNN $want_isa)"; exit 1; }
  echo "cpu_profiles: [$p] HP_CPU_ISA=$p ONEDNN_MAX_CPU_ISA=$isa OPENBLAS_CORETYPE=$core"
  rc=0
  ctest --test-dir "$BUILD_DIR" --output-on-failure -j2 -L L0 -E '^recipe_|^failpoint_|^torch(2|titan)_' >"$BUILD_DIR/profile-$p-L0.log" 2>&1 || rc=1
  ctest --test-dir "$BUILD_DIR" --output-on-failure -L determinism >"$BUILD_DIR/profile-$p-determinism.log" 2>&1 || rc=1
  ctest --test-dir "$BUILD_DIR" --output-on-failure -j2 -R '^recipe_.*-(bf16r?|f8[a-z]+)(-async)?$' >"$BUILD_DIR/profile-$p-recipes.log" 2>&1 || rc=1
  for part in L0 determinism recipes; do
    log=$BUILD_DIR/profile-$p-$part.log
    sum=$(grep -E 'tests passed|tests failed' "$log" | tail -1)
    skipped=$(grep -c '(Skipped)$' "$log" || true)
    echo "cpu_profiles: [$p] $part: $sum; $skipped skipped"
    grep -E '^\s+[0-9]+ - .* \((Failed|Timeout|SEGFAULT|Subprocess aborted|Not Run)\)' "$log" || true
  done
  [ $rc = 0 ] || { failed="$failed $p"; grep -B2 -A30 -E '\*\*\*(Failed|Exception|Timeout)' "$BUILD_DIR"/profile-$p-*.log | head -200; }
  echo "cpu_profiles: [$p] done in $(( $(date +%s) - t0 )) s"
done
unset HP_CPU_ISA ONEDNN_MAX_CPU_ISA DNNL_MAX_CPU_ISA OPENBLAS_CORETYPE
echo "cpu_profiles: done in $(( $(date +%s) - start )) s"
[ -z "$failed" ] || { echo "cpu_profiles: FAILED under:$failed"; exit 1; }
