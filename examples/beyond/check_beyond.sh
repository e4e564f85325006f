#!/bin/sh
# check_beyond.sh LAYOUT [--model M] [--bug NAME] - one layout of a framework beyond PyTorch,
# proven by hp (docs/beyond_pytorch.md):
#
#   examples/beyond/check_beyond.sh megatron-tp2       # Megatron-Core Column/RowParallelLinear, tp 2
#   examples/beyond/check_beyond.sh deepspeed-zero2    # DeepSpeed ZeRO stage 2, dp 2 (zero1: stage 1)
#   examples/beyond/check_beyond.sh deepspeed-zero2 --bug zero-average   # must be caught
#
# 1. hp's one-process dump of step 1 (`hp run --steps 1 --dump DIR/A --quiet`, --model M, default
#    tiny), 2. the framework's layout under torchrun (gloo, CPU, 2 ranks; examples/beyond/
#    megatron_tp.py or deepspeed_zero.py) writes DIR/T from A's model and batch, 3. `hp compare A T`
#    judges the loss and every gradient, and the parameters after the framework's SGD step are
#    checked against A's model - lr * A's gradient (examples/torch/check_sgd_step.py).
# Exit 0 when the layout agrees, 1 when it does not, 2 when the program cannot express the layout
# (one line naming why), 77 when megatron-core / deepspeed are not installable here
# (scripts/setup_beyond.sh: PyPI unreachable), 3 on any other error - examples/torch/check_layout.sh's
# convention.
#
# HP: the hp binary (default build/hp); CHECK_LAYOUT_DIR: the work folder (default a temporary one,
# removed); BEYOND_PYTHON: an interpreter with torch 2, megatron-core and deepspeed (default:
# scripts/setup_beyond.sh's).
set -u
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
hp=${HP:-$src/build/hp}
[ -x "$hp" ] || { echo "check_beyond: no hp at $hp (build it, or set HP)" >&2; exit 3; }
[ $# -ge 1 ] || { echo "usage: check_beyond.sh megatron-tp2|deepspeed-zero1|deepspeed-zero2 [--model M] [--bug NAME]" >&2; exit 3; }
layout=$1; shift
model=tiny bug=""
while [ $# -gt 0 ]; do
  case $1 in
    --model) model=$2; shift 2 ;;
    --bug) bug="--bug $2"; shift 2 ;;
    *) echo "check_beyond: unknown flag $1 (--model, --bug)" >&2; exit 3 ;;
  esac
done
case $layout in
  megatron-tp2) prog=megatron_tp; pflags="--tp 2" ;;
  deepspeed-zero1) prog=deepspeed_zero; pflags="--stage 1" ;;
  deepspeed-zero2) prog=deepspeed_zero; pflags="--stage 2" ;;
  *) echo "check_beyond: unknown layout $layout (megatron-tp2, deepspeed-zero1, deepspeed-zero2)" >&2; exit 3 ;;
esac
[ -z "$bug" ] || [ $prog = deepspeed_zero ] || { echo "check_beyond: --bug is deepspeed_zero.py's (zero-average)" >&2; exit 3; }

if [ -n "${BEYOND_PYTHON:-}" ]; then
  py=$BEYOND_PYTHON
else
  py=$(sh "$src/scripts/setup_beyond.sh" --python)
  rc=$?
  [ $rc -eq 77 ] && { echo "check_beyond: SKIP: megatron-core / deepspeed are not installable here (scripts/setup_beyond.sh)"; exit 77; }
  [ $rc -eq 0 ] || { echo "check_beyond: scripts/setup_beyond.sh failed (exit $rc)" >&2; exit 3; }
fi
if [ -n "${CHECK_LAYOUT_DIR:-}" ]; then
  dir=$CHECK_LAYOUT_DIR; rm -rf "$dir"; mkdir -p "$dir"
else
  dir=$(mktemp -d "${TMPDIR:-/tmp}/check_beyond.XXXXXX"); trap 'rm -rf "$dir"' EXIT
fi
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 PYTHONWARNINGS=ignore DS_ACCELERATOR=cpu
label=" $layout --model $model${bug:+ $bug}"

"$hp" run --steps 1 --dump "$dir/A" --quiet --model "$model" >"$dir/hp.log" 2>&1 || {
  cat "$dir/hp.log" >&2; echo "check_beyond: hp run --model $model --dump failed" >&2; exit 3; }
# shellcheck disable=SC2086
"$py" -m torch.distributed.run --standalone --nproc-per-node 2 \
  "$here/$prog.py" "$dir/A" "$dir/T" $pflags $bug >"$dir/run.log" 2>&1
trc=$?
why=$(sed -n "s/^$prog: not expressible: //p" "$dir/run.log" | head -1)
if [ -n "$why" ]; then
  echo "check_beyond:$label: not expressible: $why"; exit 2
fi
if [ $trc -ne 0 ] || [ ! -f "$dir/T/result.json" ]; then
  grep -v '^\[rank[1-9]\|warn' "$dir/run.log" | tail -30 >&2
  echo "check_beyond:$label: torchrun of $prog.py failed (exit $trc; $dir/run.log)" >&2; exit 3
fi
grep "^$prog: " "$dir/run.log"

"$hp" compare "$dir/A" "$dir/T" >"$dir/compare.out" 2>&1
crc=$?
if [ $crc -eq 2 ]; then
  cat "$dir/compare.out" >&2; echo "check_beyond:$label: hp compare could not compare the dumps" >&2; exit 3
fi
grep -E ' FAIL$|^compare: (loss|grad norm)' "$dir/compare.out"
verdict=$(tail -1 "$dir/compare.out")
"$py" "$src/examples/torch/check_sgd_step.py" "$dir/A" "$dir/T" 0.01 >"$dir/params.out" 2>&1
prc=$?
cat "$dir/params.out"
echo "check_beyond:$label: $verdict"
if [ $crc -eq 0 ] && [ $prc -eq 0 ]; then exit 0; fi
[ $crc -eq 1 ] || [ $prc -eq 1 ] && exit 1
exit 3
