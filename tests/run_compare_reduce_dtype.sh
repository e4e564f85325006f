#!/bin/sh
# run_compare_reduce_dtype.sh HP DIR - hp compare's reduce-dtype check (docs/dump.md, "reduce"):
# a dump whose result.json says its gradient partials were summed in float32 over >= 2 ranks, but
# whose gradients are bf16 values in every element, fails naming the tensors; the same dump
# saying bfloat16, or a float32 reduction that really was one, passes.
#   B32: hp's bf16 step on dp_shard 2 (the partials summed in float32), said float32: PASS
#   B16: the same with --mixed-precision-reduce bfloat16, said float32: FAIL ("summed in bfloat16")
#   B16 said bfloat16: PASS
set -u
hp=$1 dir=$2
rm -rf "$dir"; mkdir -p "$dir"; cd "$dir" || exit 1
fail() { echo "FAIL: $*"; exit 1; }
run() { "$hp" run --steps 1 --quiet "$@" >>hp.log 2>&1 || { cat hp.log; fail "hp run $*"; }; }
run --dump A --mixed-precision-param bfloat16
run --dump F
run --dump B32 --dp-shard 2 --mixed-precision-param bfloat16
run --dump B16 --dp-shard 2 --mixed-precision-param bfloat16 --mixed-precision-reduce bfloat16
say() {   # say DUMP DTYPE: result.json's "reduce" set to DTYPE over 2 partials
  python3 - "$1/result.json" "$2" <<'PY' || fail "cannot edit $1/result.json"
import json, sys
p, dtype = sys.argv[1], sys.argv[2]
j = json.load(open(p))
j["reduce"] = {"dtype": dtype, "partials": 2}
json.dump(j, open(p, "w"))
PY
}
say B32 float32
"$hp" compare A B32 --fp32 F >b32.out 2>&1; rc=$?
[ $rc -eq 0 ] || { cat b32.out; fail "B32 (float32 reduce, said float32): exit $rc, want 0"; }
grep -q '^compare: reduce dtype: B says float32 over 2 partials; 0 gradients are bf16 values' b32.out ||
  { cat b32.out; fail "B32: no reduce dtype line saying 0 gradients"; }
say B16 float32
"$hp" compare A B16 --fp32 F >b16.out 2>&1; rc=$?
[ $rc -eq 1 ] || { cat b16.out; fail "B16 (bfloat16 reduce, said float32): exit $rc, want 1"; }
grep -q 'a gradient summed in bfloat16 where B says float32$' b16.out || { cat b16.out; fail "B16: no verdict naming the reduce"; }
grep -Eq '^  output\.weight .* FAIL$' b16.out || { cat b16.out; fail "B16: output.weight's row does not say FAIL"; }
say B16 bfloat16
"$hp" compare A B16 --fp32 F >b16ok.out 2>&1; rc=$?
[ $rc -eq 0 ] || { cat b16ok.out; fail "B16 said bfloat16: exit $rc, want 0"; }
! grep -q 'reduce dtype' b16ok.out || fail "B16 said bfloat16: the reduce check ran"
echo "compare_reduce_dtype: float32 said and done passes, bfloat16 done under float32 said fails naming output.weight"
