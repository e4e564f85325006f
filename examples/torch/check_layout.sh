#!/bin/sh
# check_layout.sh [hp run's flags] [--bug NAME] - one PyTorch layout proven by hp (docs/torch.md).
#
#   examples/torch/check_layout.sh --dp-shard 2 --tp 2
#   examples/torch/check_layout.sh --model tiny --dp-shard 2 --mixed-precision-param bfloat16
#
# 1. hp's one-process dump of step 1: `hp run --steps 1 --dump DIR/A` with the model, data and
#    precision flags (--model --layers --seq-len --batch --seed --mixed-precision-param
#    --optimizer --lr); a bf16 run adds the fp32 dump DIR/F, the closeness rule's noise;
# 2. PyTorch's layout of the same flags (examples/torch/torch_layout.py under torchrun, gloo,
#    world = the degrees' product) writes DIR/T from A's model and batch;
# 3. `hp compare A T` (bf16: --fp32 F) judges the loss and every gradient; for SGD in fp32 the
#    parameters after PyTorch's optimizer step (T/params.safetensors) are checked too, against
#    A's model - lr * A's gradient.
# It prints the verdict with the worst tensor and exits 0 when the layout agrees, 1 when it does
# not, 2 when PyTorch (torch_layout.py) cannot express the layout (one line naming why), 77 when
# torch 2 is not installable (scripts/setup_torch2.sh: PyPI unreachable), 3 on any other error.
#
# HP: the hp binary (default build/hp); CHECK_LAYOUT_DIR: the work folder (default a temporary
# one, removed); TORCH2_PYTHON: an interpreter with torch 2 (default: scripts/setup_torch2.sh's).
set -u
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
hp=${HP:-$src/build/hp}
[ -x "$hp" ] || { echo "check_layout: no hp at $hp (build it, or set HP)" >&2; exit 3; }

if [ -n "${TORCH2_PYTHON:-}" ]; then
  py=$TORCH2_PYTHON
else
  py=$(sh "$src/scripts/setup_torch2.sh" --python)
  rc=$?
  [ $rc -eq 77 ] && { echo "check_layout: SKIP: torch 2 is not installable (scripts/setup_torch2.sh)"; exit 77; }
  [ $rc -eq 0 ] || { echo "check_layout: scripts/setup_torch2.sh failed (exit $rc)" >&2; exit 3; }
fi

# the flags: hp's model/run flags go to both, the degrees and --bug to PyTorch only
hpflags="" tflags="" world=1 bf16=0 opt=sgd lr=0.01 maxnorm=0 label=""
while [ $# -gt 0 ]; do
  f=$1
  case $f in
    --dp-replicate|--dp-shard|--cp|--tp|--pp|--ep|--etp)
      [ $# -ge 2 ] || { echo "check_layout: $f needs a value" >&2; exit 3; }
      case $f in --ep|--etp) ;; *) world=$((world * $2)) ;; esac   # ep and etp re-use the ranks
      tflags="$tflags $f $2"; label="$label $f $2"; shift 2 ;;
    --pp-schedule|--pp-microbatches|--pp-virtual|--ac|--bug|--cp-rotate|--microbatches|--reshard-after-forward|--dispatcher)
      [ $# -ge 2 ] || { echo "check_layout: $f needs a value" >&2; exit 3; }
      tflags="$tflags $f $2"; label="$label $f $2"; shift 2 ;;
    --sp|--no-sp|--cp-no-balance) tflags="$tflags $f"; label="$label $f"; shift ;;
    --max-norm) maxnorm=$2; hpflags="$hpflags $f $2"; tflags="$tflags $f $2"; label="$label $f $2"; shift 2 ;;
    --mixed-precision-reduce)
      hpflags="$hpflags $f $2"; tflags="$tflags $f $2"; label="$label $f $2"; shift 2 ;;
    --model|--layers|--seq-len|--batch|--seed)
      hpflags="$hpflags $f $2"; [ "$f" = --model ] && tflags="$tflags $f $2"; label="$label $f $2"; shift 2 ;;
    --mixed-precision-param)
      [ "$2" = bfloat16 ] && bf16=1
      hpflags="$hpflags $f $2"; tflags="$tflags $f $2"; label="$label $f $2"; shift 2 ;;
    --optimizer) opt=$2; hpflags="$hpflags $f $2"; tflags="$tflags $f $2"; label="$label $f $2"; shift 2 ;;
    --lr) lr=$2; hpflags="$hpflags $f $2"; tflags="$tflags $f $2"; label="$label $f $2"; shift 2 ;;
    *) echo "check_layout: unknown flag $f (hp run's degree, model and precision flags, --bug)" >&2; exit 3 ;;
  esac
done

if [ -n "${CHECK_LAYOUT_DIR:-}" ]; then
  dir=$CHECK_LAYOUT_DIR; rm -rf "$dir"; mkdir -p "$dir"
else
  dir=$(mktemp -d "${TMPDIR:-/tmp}/check_layout.XXXXXX"); trap 'rm -rf "$dir"' EXIT
fi
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 PYTHONWARNINGS=ignore

# shellcheck disable=SC2086
"$hp" run --steps 1 --dump "$dir/A" --quiet $hpflags >"$dir/hp.log" 2>&1 || {
  cat "$dir/hp.log" >&2; echo "check_layout: hp run$hpflags --dump failed" >&2; exit 3; }
fp32=""
if [ $bf16 = 1 ]; then
  nobf=$(echo "$hpflags" | sed 's/--mixed-precision-param bfloat16//; s/--mixed-precision-reduce bfloat16//')
  # shellcheck disable=SC2086
  "$hp" run --steps 1 --dump "$dir/F" --quiet $nobf >>"$dir/hp.log" 2>&1 || {
    cat "$dir/hp.log" >&2; echo "check_layout: hp run$nobf --dump (the fp32 noise) failed" >&2; exit 3; }
  fp32="--fp32 $dir/F"
fi

# shellcheck disable=SC2086
"$py" -m torch.distributed.run --standalone --nproc-per-node "$world" \
  "$here/torch_layout.py" "$dir/A" "$dir/T" $tflags >"$dir/torch.log" 2>&1
trc=$?
why=$(sed -n 's/^torch_layout: not expressible: //p' "$dir/torch.log" | head -1)
if [ -n "$why" ]; then
  echo "check_layout:$label: not expressible: $why"; exit 2
fi
if [ $trc -ne 0 ] || [ ! -f "$dir/T/result.json" ]; then
  grep -v '^\[rank[1-9]' "$dir/torch.log" | tail -30 >&2
  echo "check_layout:$label: torchrun of torch_layout.py failed (exit $trc; $dir/torch.log)" >&2; exit 3
fi
grep '^torch_layout: ' "$dir/torch.log"

# shellcheck disable=SC2086
"$hp" compare "$dir/A" "$dir/T" $fp32 >"$dir/compare.out" 2>&1
crc=$?
if [ $crc -eq 2 ]; then
  cat "$dir/compare.out" >&2; echo "check_layout:$label: hp compare could not compare the dumps" >&2; exit 3
fi
grep -E ' FAIL$|^compare: (loss|grad norm)' "$dir/compare.out"
verdict=$(tail -1 "$dir/compare.out")

prc=0
if [ $bf16 = 0 ] && [ "$opt" = sgd ]; then
  # the step itself: PyTorch's parameters after SGD against A's model - lr * A's gradient
  "$py" "$here/check_sgd_step.py" "$dir/A" "$dir/T" "$lr" "$maxnorm" >"$dir/params.out" 2>&1
  prc=$?
  cat "$dir/params.out"
fi

echo "check_layout:$label: $verdict"
if [ $crc -eq 0 ] && [ $prc -eq 0 ]; then exit 0; fi
[ $crc -eq 1 ] || [ $prc -eq 1 ] && exit 1
exit 3
