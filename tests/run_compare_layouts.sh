#!/bin/sh
# run_compare_layouts.sh HP DIR - hp against hp: a dump of each layout compared with the one-process
# dump of the same seed passes `hp compare` (fp32: 1e-5 relative; bf16: the closeness rule
# against the fp32 one-process dump).
set -eu
hp=$1 dir=$2
export OPENBLAS_NUM_THREADS="${OPENBLAS_NUM_THREADS:-1}"
rm -rf "$dir"
n=0
check() {   # check NAME MODEL [--fp32 DIR] -- FLAGS...: dump under FLAGS, compare with NAME's one-process dump
  name=$1 model=$2; shift 2
  fp32=""
  if [ "$1" = "--fp32" ]; then fp32="--fp32 $2"; shift 2; fi
  shift   # --
  [ -d "$dir/one-$name" ] || "$hp" run --model "$model" --steps 1 --dump "$dir/one-$name" --quiet $extra
  "$hp" run --model "$model" --steps 1 --dump "$dir/$name-$n" --quiet $extra "$@"
  # shellcheck disable=SC2086
  "$hp" compare "$dir/one-$name" "$dir/$name-$n" $fp32 >"$dir/out" || {
    cat "$dir/out"; echo "FAIL: $name under $*"; exit 1; }
  tail -1 "$dir/out"
  n=$((n + 1))
}
extra=""
check tiny tiny -- --tp 2 --dp-shard 2
check tiny tiny -- --cp 2 --tp 2 --nproc 4
check tiny tiny -- --pp 2 --pp-microbatches 2
check moe tiny-moe -- --dp-shard 2 --tp 2 --ep 2
extra="--mixed-precision-param bfloat16"
check bf16 tiny --fp32 "$dir/one-tiny" -- --tp 2 --dp-shard 2
echo "compare layouts: $n passed, 0 failed"
