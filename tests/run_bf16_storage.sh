#!/bin/sh
# run_bf16_storage.sh HP - bf16 activation storage (precision.md, "Storage"): on the tiny model
# with 8 blocks, one process, the activations a bf16 run keeps (the tracking allocator's
# high-water mark) are below the fp32 run's, each run's equal the planner's prediction to the
# byte, and the bf16 run's reduction is at least what the 2-byte fields alone give minus the one
# fp32 set the blocks run in. A third run checkpoints every second block (--ac every:2): the
# stored blocks and the checkpointed ones share that set, and the plan still equals the run.
# Under --ac full (a fourth and fifth run, fp32 and bf16) the blocks keep only their inputs:
# bf16 keeps those inside the stage in 2 bytes, so it must be below fp32 there too.
hp=$1
[ -x "$hp" ] || { echo "usage: run_bf16_storage.sh HP_BINARY" >&2; exit 2; }
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
flags="--model tiny --layers 8 --seq-len 64 --batch 2"
for p in float32 bfloat16 ac2 full32 full16; do
  case $p in
    ac2) more="--mixed-precision-param bfloat16 --ac every:2" ;;
    full32) more="--mixed-precision-param float32 --ac full" ;;
    full16) more="--mixed-precision-param bfloat16 --ac full" ;;
    *) more="--mixed-precision-param $p" ;;
  esac
  # shellcheck disable=SC2086
  "$hp" plan $flags $more --json "$tmp/plan.$p.json" >/dev/null 2>&1 ||
    { echo "FAIL: hp plan $flags $more"; exit 1; }
  # shellcheck disable=SC2086
  "$hp" run $flags $more --steps 1 --quiet --json "$tmp/run.$p.json" </dev/null >"$tmp/run.$p.log" 2>&1 ||
    { echo "FAIL: hp run $flags $more"; tail -5 "$tmp/run.$p.log"; exit 1; }
done
python3 - "$tmp" <<'PY'
import json, sys
t = sys.argv[1]
runs = ("float32", "bfloat16", "ac2", "full32", "full16")
plan = {p: json.load(open(f"{t}/plan.{p}.json"))["memory"] for p in runs}
run = {p: json.load(open(f"{t}/run.{p}.json"))["memory"]["peak"]["activations"] for p in runs}
bad = []
for p in plan:
    if plan[p]["activation_bytes"] != run[p]:
        bad.append(f"{p}: predicted {plan[p]['activation_bytes']} B of activations, measured {run[p]} B")
ratio = run["bfloat16"] / run["float32"]
# 8 blocks: without the shared set the bf16 fields would halve; the set costs one fp32 block
if not run["bfloat16"] < 0.75 * run["float32"]:
    bad.append(f"bf16 activations {run['bfloat16']} B are not below 0.75 of fp32's {run['float32']} B")
# --ac full: each of the 7 inputs inside the stage saves half a block input (Nres x D x 2 B),
# the two fp32 stream buffers cost two whole ones
if not run["full16"] < run["full32"]:
    bad.append(f"--ac full: bf16 activations {run['full16']} B are not below fp32's {run['full32']} B")
print(f"{'FAIL' if bad else 'ok  '} bf16 storage: activations fp32 {run['float32']} B, bf16 {run['bfloat16']} B "
      f"(ratio {ratio:.3f}), bf16 with --ac every:2 {run['ac2']} B; --ac full fp32 {run['full32']} B, "
      f"bf16 {run['full16']} B; each = the plan")
for b in bad:
    print("   ", b)
sys.exit(1 if bad else 0)
PY
