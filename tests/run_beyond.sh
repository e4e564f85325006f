#!/bin/sh
# run_beyond.sh HP DIR WANT [TENSOR] -- LAYOUT [FLAGS...] - examples/beyond/check_beyond.sh
# (Megatron-Core's / DeepSpeed's layout against hp's one process, docs/beyond_pytorch.md) must
# exit WANT: 0 with a PASS verdict naming the worst tensor and no row saying FAIL; 1 with a FAIL
# verdict and the row of TENSOR (a grep -E pattern) saying FAIL. 77 (not installable) passes
# through: skipped. 3 (no verdict: a run did not start or finish) is tried once more.
set -u
hp=$1 dir=$2 want=$3; shift 3
tensor=""
[ "${1:-}" = "--" ] || { tensor=$1; shift; }
[ "${1:-}" = "--" ] && shift
src=$(cd "$(dirname "$0")/.." && pwd)
rm -rf "$dir"; mkdir -p "$dir"
HP=$hp CHECK_BEYOND_DIR=$dir/work sh "$src/examples/beyond/check_beyond.sh" "$@" >"$dir/out" 2>"$dir/err"
got=$?
if [ $got -eq 3 ] && [ "$want" -ne 3 ]; then
  echo "run_beyond: no verdict (exit 3): $(tail -1 "$dir/err"); once more"
  cp "$dir/err" "$dir/err.first"
  HP=$hp CHECK_BEYOND_DIR=$dir/work sh "$src/examples/beyond/check_beyond.sh" "$@" >"$dir/out" 2>"$dir/err"
  got=$?
fi
cat "$dir/out" "$dir/err"
[ $got -eq 77 ] && exit 77
[ $got -eq "$want" ] || { echo "FAIL: check_beyond.sh $*: exit $got, want $want"; exit 1; }
verdict=$(grep "^check_beyond:" "$dir/out" | tail -1)
case $want in
  0) echo "$verdict" | grep -q ': compare: PASS (worst gradient ' || { echo "FAIL: no PASS verdict naming the worst tensor"; exit 1; }
     ! grep -q ' FAIL$' "$dir/out" || { echo "FAIL: a row says FAIL under a PASS"; exit 1; } ;;
  1) echo "$verdict" | grep -q ': compare: FAIL (worst gradient [a-z0-9_.]*, ' || { echo "FAIL: no FAIL verdict naming a tensor"; exit 1; }
     [ -z "$tensor" ] || grep -Eq "^  ($tensor) .* FAIL\$" "$dir/out" || {
       echo "FAIL: the row of $tensor does not say FAIL"; exit 1; } ;;
esac
echo "beyond layout ($*): exit $got as wanted"
