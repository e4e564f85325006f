#!/bin/sh
# run_capture_check.sh HP DIR - step 1 is captured once, before clipping, whatever the flags:
# the gradients --dump writes are byte-identical with and without --verify and with and
# without --max-norm, and the verifier says the clipping was active.
set -u
hp=$1 dir=$2
rm -rf "$dir"; mkdir -p "$dir"
deg="--dp-shard 2 --tp 2"
fail() { echo "FAIL: $*"; exit 1; }
"$hp" run $deg --max-norm 0.1 --steps 1 --quiet --dump "$dir/clip" || fail "hp run --dump (clipped) exited $?"
"$hp" run $deg --steps 1 --quiet --dump "$dir/plain" || fail "hp run --dump (no clipping) exited $?"
"$hp" run $deg --max-norm 0.1 --verify --verify-steps 1 --dump "$dir/verify" >"$dir/verify.txt" ||
  fail "hp run --verify --dump exited $?"
grep -q "verify: clipping active: grad norm" "$dir/verify.txt" || fail "the verifier did not report active clipping"
cmp "$dir/clip/grads.safetensors" "$dir/verify/grads.safetensors" || fail "--verify captured other gradients than hp run"
cmp "$dir/clip/grads.safetensors" "$dir/plain/grads.safetensors" || fail "--max-norm changed the captured gradients"
echo "PASS: one capture of step 1, before clipping"
