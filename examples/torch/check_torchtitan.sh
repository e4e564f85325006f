#!/bin/sh
# check_torchtitan.sh [--dp-replicate N] [--dp-shard N] [--tp N] [--bug NAME] - TorchTitan's own
# Llama 3 and its own parallelize_llama, proven by hp (docs/torch.md, "TorchTitan itself").
#
#   examples/torch/check_torchtitan.sh                      # one process
#   examples/torch/check_torchtitan.sh --dp-shard 2         # TorchTitan's FSDP2
#   examples/torch/check_torchtitan.sh --tp 2               # TorchTitan's TP + SP + loss parallel
#   examples/torch/check_torchtitan.sh --dp-shard 2 --bug fsdp-divide   # an injected fault: exit 1
#
# 1. hp's one-process dump of step 1 of the tiny model (`hp run --steps 1 --dump DIR/A`, SGD lr 0.01);
# 2. examples/torch/torchtitan_layout.py under torchrun (gloo, world = the degrees' product) writes
#    DIR/T from A's model and batch;
# 3. `hp compare A T` judges the loss and every gradient, and the parameters after TorchTitan's
#    SGD step (T/params.safetensors) are checked against A's model - lr * A's gradient.
# Exit 0: TorchTitan agrees; 1: it does not; 2: not expressible (one line); 77: torchtitan (or
# torch 2) is not installed / installable, one line saying how to install it; 3: any other error.
# HP: the hp binary (default build/hp); CHECK_LAYOUT_DIR: the work folder (default a temporary
# one, removed); TORCH2_PYTHON: an interpreter with torch 2 (default: scripts/setup_torch2.sh's).
set -u
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
hp=${HP:-$src/build/hp}
[ -x "$hp" ] || { echo "check_torchtitan: no hp at $hp (build it, or set HP)" >&2; exit 3; }
if [ -n "${TORCH2_PYTHON:-}" ]; then
  py=$TORCH2_PYTHON
else   # the torch 2 venv with TorchTitan 0.2.2, installed when missing (scripts/setup_torchtitan.sh)
  py=$(sh "$src/scripts/setup_torchtitan.sh")
  rc=$?
  [ $rc -eq 77 ] && { echo "check_torchtitan: SKIP: torch 2 or torchtitan is not installable (scripts/setup_torchtitan.sh)"; exit 77; }
  [ $rc -eq 0 ] || { echo "check_torchtitan: scripts/setup_torchtitan.sh failed (exit $rc)" >&2; exit 3; }
fi
if ! err=$("$py" -c "import torchtitan.models.llama3, torchtitan.distributed" 2>&1); then
  echo "check_torchtitan: SKIP: torchtitan does not import in $py ($(echo "$err" | tail -1))"
  exit 77
fi

tflags="" world=1 label="" bf16=0
while [ $# -gt 0 ]; do
  case $1 in
    --dp-replicate|--dp-shard|--tp|--cp|--pp)
      [ $# -ge 2 ] || { echo "check_torchtitan: $1 needs a value" >&2; exit 3; }
      world=$((world * $2)); tflags="$tflags $1 $2"; label="$label $1 $2"; shift 2 ;;
    --bug|--cp-rotate|--ac) tflags="$tflags $1 $2"; label="$label $1 $2"; shift 2 ;;
    --mixed-precision-param) [ "$2" = bfloat16 ] && bf16=1; label="$label $1 $2"; shift 2 ;;
    *) echo "check_torchtitan: unknown flag $1 (--dp-replicate --dp-shard --cp --tp --cp-rotate --ac --mixed-precision-param --bug)" >&2; exit 3 ;;
  esac
done
if [ -n "${CHECK_LAYOUT_DIR:-}" ]; then
  dir=$CHECK_LAYOUT_DIR; rm -rf "$dir"; mkdir -p "$dir"
else
  dir=$(mktemp -d "${TMPDIR:-/tmp}/check_torchtitan.XXXXXX"); trap 'rm -rf "$dir"' EXIT
fi
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 PYTHONWARNINGS=ignore
lr=0.01
prec="" fp32=""
if [ $bf16 = 1 ]; then   # hp's bf16 step, and its fp32 step: the closeness rule's noise
  prec="--mixed-precision-param bfloat16" fp32="--fp32 $dir/F"
  "$hp" run --model tiny --steps 1 --lr $lr --dump "$dir/F" --quiet >"$dir/hp.log" 2>&1 || {
    cat "$dir/hp.log" >&2; echo "check_torchtitan: hp run --dump (fp32) failed" >&2; exit 3; }
fi
# shellcheck disable=SC2086
"$hp" run --model tiny --steps 1 --lr $lr --dump "$dir/A" --quiet $prec >>"$dir/hp.log" 2>&1 || {
  cat "$dir/hp.log" >&2; echo "check_torchtitan: hp run --dump failed" >&2; exit 3; }
# shellcheck disable=SC2086
"$py" -m torch.distributed.run --standalone --nproc-per-node "$world" \
  "$here/torchtitan_layout.py" "$dir/A" "$dir/T" --lr $lr $tflags >"$dir/torch.log" 2>&1
trc=$?
why=$(sed -n 's/^torchtitan_layout: not expressible: //p' "$dir/torch.log" | head -1)
[ -n "$why" ] && { echo "check_torchtitan:$label: not expressible: $why"; exit 2; }
if [ $trc -ne 0 ] || [ ! -f "$dir/T/result.json" ]; then
  grep -v '^\[rank[1-9]' "$dir/torch.log" | tail -30 >&2
  echo "check_torchtitan:$label: torchrun of torchtitan_layout.py failed (exit $trc; $dir/torch.log)" >&2; exit 3
fi
grep '^torchtitan_layout: ' "$dir/torch.log"
# shellcheck disable=SC2086
"$hp" compare "$dir/A" "$dir/T" $fp32 >"$dir/compare.out" 2>&1
crc=$?
if [ $crc -eq 2 ]; then
  cat "$dir/compare.out" >&2; echo "check_torchtitan:$label: hp compare could not compare the dumps" >&2; exit 3
fi
grep -E ' FAIL$|^compare: (loss|grad norm)' "$dir/compare.out"
verdict=$(tail -1 "$dir/compare.out")
# the step: TorchTitan's parameters after SGD against A's model - lr * A's gradient (fp32)
prc=0
if [ $bf16 = 0 ]; then
  "$py" "$here/check_sgd_step.py" "$dir/A" "$dir/T" "$lr" >"$dir/params.out" 2>&1
  prc=$?
  cat "$dir/params.out"
fi
echo "check_torchtitan:$label: $verdict"
[ $crc -eq 0 ] && [ $prc -eq 0 ] && exit 0
{ [ $crc -eq 1 ] || [ $prc -eq 1 ]; } && exit 1
exit 3
