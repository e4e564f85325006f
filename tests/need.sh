#!/bin/sh
# need.sh HP WHAT -- COMMAND...: runs COMMAND where this machine has WHAT, as hp sees it (after
# HP_CPU_ISA, ONEDNN_MAX_CPU_ISA and the like); elsewhere prints one line naming what is missing
# and exits 77, the code the CTest's SKIP_RETURN_CODE names: the test counts as skipped, never
# as passed.
#   WHAT: onednn-bf16 (oneDNN's bf16 matmul: avx512_core or wider)
set -eu
hp=$1 what=$2; shift 2
[ "${1:-}" = "--" ] && shift
case $what in
  onednn-bf16)
    line=$("$hp" --version | grep '^gemm onednn bf16 matmul: ') || { echo "need.sh: hp --version names no oneDNN bf16 line"; exit 1; }
    case $line in
      *": yes") ;;
      *) isa=$("$hp" --version | sed -n 's/^gemm: onednn [0-9.]*, isa \([a-z0-9_]*\),.*/\1/p')
         echo "need.sh onednn-bf16: skipped: oneDNN has no bf16 matmul here (isa $isa; it needs avx512_core)"; exit 77 ;;
    esac ;;
  *) echo "need.sh: unknown requirement '$what'"; exit 1 ;;
esac
exec "$@"
