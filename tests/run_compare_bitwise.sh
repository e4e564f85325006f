#!/bin/sh
# run_compare_bitwise.sh HP DIR - hp compare's byte-for-byte verdict (docs/dump.md): two runs of
# the same layout are identical, and say so, and pass --bitwise; a dump of another layout (within
# the tolerance, not the same bits today) passes without --bitwise, and with it fails naming the
# first differing element with both values in hex.
set -u
hp=$1 dir=$2
rm -rf "$dir"; mkdir -p "$dir"; cd "$dir" || exit 1
fail() { echo "FAIL: $*"; exit 1; }
for d in A A2; do "$hp" run --steps 1 --quiet --dump $d >>hp.log 2>&1 || { cat hp.log; fail "hp run --dump $d"; }; done
"$hp" run --steps 1 --quiet --dump B --dp-shard 2 --tp 2 >>hp.log 2>&1 || { cat hp.log; fail "hp run --dp-shard 2 --tp 2"; }
"$hp" compare A A2 --bitwise >same.out 2>&1; rc=$?
[ $rc -eq 0 ] || { cat same.out; fail "A against its rerun --bitwise: exit $rc, want 0"; }
grep -q '^compare: byte for byte: identical (the loss and [0-9]* gradients)$' same.out || { cat same.out; fail "no identical line"; }
tail -1 same.out | grep -q '; identical byte for byte)$' || { cat same.out; fail "the verdict does not say identical"; }
"$hp" compare A B >tol.out 2>&1; rc=$?
[ $rc -eq 0 ] || { cat tol.out; fail "A against dp_shard 2 x tp 2: exit $rc, want 0 (within the tolerance)"; }
"$hp" compare A B --bitwise >bits.out 2>&1; rc=$?
[ $rc -eq 1 ] || { cat bits.out; fail "A against dp_shard 2 x tp 2 --bitwise: exit $rc, want 1"; }
grep -Eq '^compare: byte for byte: first difference [a-z0-9_.]+\[[0-9]+\]: A 0x[0-9a-f]{8} \(.*\), B 0x[0-9a-f]{8} \(.*\): FAIL$' bits.out ||
  { cat bits.out; fail "no first difference in hex"; }
tail -1 bits.out | grep -q ': not identical byte for byte$' || { cat bits.out; fail "the verdict does not name the bitwise miss"; }
echo "compare_bitwise: a rerun identical byte for byte; another layout within the tolerance, and its first differing bits named"
grep 'first difference' bits.out
