#!/bin/sh
# run_compare_torch.sh HP PYTHON DIR MODEL [bf16] - hp compare against another framework:
# `hp run --dump A`, then examples/torch/torch_dump.py recomputes step 1 from A's model and batch
# in PyTorch float32, one process (T1) and DDP over gloo on 2 processes (T2); `hp compare A T1`
# and `A T2` pass; a copy of T1 with one gradient scaled by 1 + 1e-3 fails (exit 1, that tensor's
# row and only it says FAIL); a copy with another seed's batch is refused (exit 2, one line).
# bf16: A under --mixed-precision-param bfloat16, T1 PyTorch's bf16 model, compared under the
# closeness rule against hp's fp32 dump F (no DDP: gloo would reduce in bf16), the gradient
# scaled by 1 + 5e-2 (bf16 noise is ~1e-3..1e-2 relative).
# Without torch it fails: the outside check is required (scripts/setup.sh installs python3-torch).
set -eu
hp=$1 py=$2 dir=$3 model=$4 mode=${5:-fp32}
src=$(cd "$(dirname "$0")/.." && pwd)
"$py" -c "import torch" 2>/dev/null || {
  echo "FAIL: torch is not installed for $py (apt-get install python3-torch; scripts/setup.sh does)"; exit 1; }
export OPENBLAS_NUM_THREADS="${OPENBLAS_NUM_THREADS:-1}"
rm -rf "$dir"
fp32="" scale=1e-3 bf=""
if [ "$mode" = bf16 ]; then
  bf="--mixed-precision-param bfloat16" scale=5e-2 fp32="--fp32 $dir/F"
  "$hp" run --model "$model" --steps 1 --dump "$dir/F" --quiet
fi
# shellcheck disable=SC2086
"$hp" run --model "$model" --steps 1 --dump "$dir/A" --quiet $bf
"$py" "$src/examples/torch/torch_dump.py" "$dir/A" "$dir/T1"
[ "$mode" = bf16 ] || "$py" "$src/examples/torch/torch_dump.py" "$dir/A" "$dir/T2" --ddp 2
expect() {   # expect CODE hp compare ARGS...: the exit code, with the output kept in $dir/out
  want=$1; shift
  set +e; "$hp" "$@" >"$dir/out" 2>"$dir/err"; got=$?; set -e
  cat "$dir/out" "$dir/err"
  [ "$got" -eq "$want" ] || { echo "FAIL: hp $*: exit $got, want $want"; exit 1; }
}
# shellcheck disable=SC2086
expect 0 compare "$dir/A" "$dir/T1" $fp32
grep -q '^compare: PASS' "$dir/out"
if [ "$mode" != bf16 ]; then
  expect 0 compare "$dir/A" "$dir/T2"
  grep -q '^compare: PASS' "$dir/out"
fi

# one gradient off by 1e-3 relative (the fp32 tolerance is 1e-5): exit 1, that row FAIL, only it
cp -r "$dir/T1" "$dir/P"
victim=layers.1.attention.wv.weight
"$py" - "$dir/P/grads.safetensors" "$victim" "$scale" <<'PY'
import array, json, struct, sys
path, name, scale = sys.argv[1], sys.argv[2], float(sys.argv[3])
raw = bytearray(open(path, "rb").read())
n = struct.unpack("<Q", raw[:8])[0]
b, e = json.loads(raw[8:8 + n])[name]["data_offsets"]
x = array.array("f", bytes(raw[8 + n + b:8 + n + e]))
x = array.array("f", (v * (1 + scale) for v in x))
raw[8 + n + b:8 + n + e] = x.tobytes()
open(path, "wb").write(bytes(raw))
PY
# shellcheck disable=SC2086
expect 1 compare "$dir/A" "$dir/P" $fp32
grep -q "^  $victim .* FAIL\$" "$dir/out" || { echo "FAIL: the row of $victim does not say FAIL"; exit 1; }
[ "$(grep -c ' FAIL$' "$dir/out")" -eq 1 ] || { echo "FAIL: more than the perturbed tensor failed"; exit 1; }
grep -q '^compare: FAIL' "$dir/out"

# another seed's batch: not the same inputs, refused before any comparison
# shellcheck disable=SC2086
"$hp" run --model "$model" --steps 1 --seed 7 --dump "$dir/S" --quiet $bf
cp -r "$dir/T1" "$dir/X"
cp "$dir/S/batch.safetensors" "$dir/X/"
# shellcheck disable=SC2086
expect 2 compare "$dir/A" "$dir/X" $fp32
[ "$(grep -c '' "$dir/err")" -eq 1 ] && grep -q 'the batches differ' "$dir/err" || {
  echo "FAIL: a mismatched batch must be one line naming it"; exit 1; }
echo "compare torch ($model, $mode): all passed"
