#!/bin/sh
# run_cpu_isa_cap.sh HP - HP_CPU_ISA caps what hp, OpenBLAS and oneDNN use, as a narrower CPU
# would have them (include/hyperpar/cpu.h): hp --version names the cap and the level it leaves;
# with OPENBLAS_CORETYPE unset, hp picks the cap's core (a wider one narrowed); oneDNN's ISA is
# capped unless ONEDNN_MAX_CPU_ISA says otherwise; the first line of hp run names the cap; a
# capped run verifies against its one-process reference. Levels above this CPU's are not
# assumed: the cap used is avx2 where the CPU has it, else the CPU's own level (asked of hp).
set -eu
hp=$1
fail() { echo "FAIL: $*"; exit 1; }
unset HP_CPU_ISA ONEDNN_MAX_CPU_ISA DNNL_MAX_CPU_ISA OPENBLAS_CORETYPE
v=$("$hp" --version)
widest=$(echo "$v" | sed -n 's/^cpu: \([a-z0-9_]*\)$/\1/p')
[ -n "$widest" ] || fail "hp --version without a cap: no plain 'cpu: LEVEL' line: $v"
case $widest in sse4_1|avx) cap=$widest ;; *) cap=avx2 ;; esac
echo "this CPU: $widest; the cap tested: $cap"

v=$(HP_CPU_ISA=$cap "$hp" --version)
echo "$v"
echo "$v" | grep -qx "cpu: $cap (capped: HP_CPU_ISA=$cap)" || fail "hp --version does not name the cap $cap"
if [ "$cap" = avx2 ]; then
  core=$(echo "$v" | sed -n 's/^blas core: //p')
  case $core in Haswell|Zen) ;; *) fail "HP_CPU_ISA=avx2: core $core is not an AVX2 one" ;; esac
  echo "$v" | grep -q "^blas: .*HP_CPU_ISA=avx2" || [ "$widest" = avx2 ] ||
    fail "the BLAS line does not say the cap chose the core"
  echo "$v" | grep -q "^gemm: onednn [0-9.]*, isa avx2, " || fail "oneDNN's ISA is not capped at avx2"
  echo "$v" | grep -qx "gemm onednn bf16 matmul: no (oneDNN has it from avx512_core on)" ||
    fail "oneDNN's bf16 matmul is said to exist under avx2"
  # oneDNN's own variable wins over the cap
  v2=$(HP_CPU_ISA=avx2 ONEDNN_MAX_CPU_ISA=AVX "$hp" --version)
  echo "$v2" | grep -q "^gemm: onednn [0-9.]*, isa avx, " || fail "ONEDNN_MAX_CPU_ISA=AVX is not kept under HP_CPU_ISA"
fi
out=$(HP_CPU_ISA=$cap OPENBLAS_NUM_THREADS=1 "$hp" run --tp 2 --steps 2 --verify 2>&1) || { echo "$out"; fail "hp run --tp 2 --verify under HP_CPU_ISA=$cap"; }
echo "$out" | head -1 | grep -q " | cpu capped at $cap (HP_CPU_ISA)$" || { echo "$out"; fail "the first line does not name the cap"; }
echo "$out" | grep -q "^verify: PASS" || { echo "$out"; fail "no verify: PASS"; }
echo "run_cpu_isa_cap: HP_CPU_ISA=$cap holds for hp, OpenBLAS and oneDNN"
