#!/bin/sh
# run_torch2_layout.sh HP DIR WANT [TENSOR] -- FLAGS... - examples/torch/check_layout.sh FLAGS
# (PyTorch's own layout against hp's one process, docs/torch.md) must exit WANT:
# - 0: the verdict line says PASS, and no row of the table says FAIL;
# - 1: the verdict line says FAIL, and the row of TENSOR (a grep -E pattern; a fault's tensor)
#   says FAIL, so hp compare names the tensor the fault touches;
# - 2: one line saying what is not expressible.
# 77 (torch 2 not installable: scripts/setup_torch2.sh found no PyPI) passes through: skipped.
# 3 (no verdict: hp, torchrun or hp compare did not run through) is tried once more.
# TORCH2_CHECK=check_torchtitan runs examples/torch/check_torchtitan.sh instead (TorchTitan's own
# model and parallelize_llama; its 77 also means torchtitan is not installed); a path under
# examples/, TORCH2_CHECK=beyond/check_beyond, runs that script (Megatron-Core, DeepSpeed).
set -u
check=${TORCH2_CHECK:-check_layout}
case $check in
  */*) script=examples/$check.sh check=${check##*/} ;;
  *) script=examples/torch/$check.sh ;;
esac
hp=$1 dir=$2 want=$3; shift 3
tensor=""
[ "${1:-}" = "--" ] || { tensor=$1; shift; }
[ "${1:-}" = "--" ] && shift
src=$(cd "$(dirname "$0")/.." && pwd)
rm -rf "$dir"; mkdir -p "$dir"
HP=$hp CHECK_LAYOUT_DIR=$dir/work sh "$src/$script" "$@" >"$dir/out" 2>"$dir/err"
got=$?
if [ $got -eq 3 ] && [ "$want" -ne 3 ]; then   # no verdict: a run failed to start or finish (gloo's
  # rendezvous on a loaded machine); once more, saying so, with the first try's words kept
  echo "run_torch2_layout: no verdict (exit 3): $(tail -1 "$dir/err"); once more"
  cp "$dir/err" "$dir/err.first"
  HP=$hp CHECK_LAYOUT_DIR=$dir/work sh "$src/$script" "$@" >"$dir/out" 2>"$dir/err"
  got=$?
fi
cat "$dir/out" "$dir/err"
[ $got -eq 77 ] && exit 77
[ $got -eq "$want" ] || { echo "FAIL: $check.sh $*: exit $got, want $want"; exit 1; }
verdict=$(grep "^$check:" "$dir/out" | tail -1)
case $want in
  0) echo "$verdict" | grep -q ': compare: PASS (worst gradient ' || { echo "FAIL: no PASS verdict naming the worst tensor"; exit 1; }
     ! grep -q ' FAIL$' "$dir/out" || { echo "FAIL: a row says FAIL under a PASS"; exit 1; } ;;
  1) echo "$verdict" | grep -q ': compare: FAIL (worst gradient [a-z0-9_.]*, ' || { echo "FAIL: no FAIL verdict naming a tensor"; exit 1; }
     [ -z "$tensor" ] || grep -Eq "^  ($tensor) .* FAIL\$" "$dir/out" || {
       echo "FAIL: the row of $tensor does not say FAIL"; exit 1; } ;;
  2) [ "$(grep -c 'not expressible: ' "$dir/out")" -eq 1 ] || { echo "FAIL: exit 2 without one line naming why"; exit 1; } ;;
esac
echo "torch2 layout ($*): exit $got as wanted"
