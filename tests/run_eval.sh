#!/bin/sh
# run_eval.sh HP DIR - hp eval: a model's loss on a dataset, nothing trained. A run of 2 steps
# with a validation round at step 2 and a checkpoint there; `hp eval --checkpoint` of that step
# on the same data gives the round's loss bit for bit (%.17g), as does `hp eval --load` of the
# step's Hugging Face export; under tp 2 x dp_shard 2 it agrees within 1e-5; the json has the
# perplexity exp(loss) and the bits per byte loss / ln 2 (a byte-level model).
set -eu
hp=$1 dir=$2
rm -rf "$dir" && mkdir -p "$dir"
export OPENBLAS_NUM_THREADS=1
fail() { echo "FAIL: $*"; exit 1; }
head -c 40000 "$(dirname "$0")/../docs/architecture.md" >"$dir/text.txt"
"$hp" run --steps 2 --data "$dir/text.txt" --validation.enable --validation.freq 2 --validation.steps 3 \
  --checkpoint-dir "$dir/ck" --checkpoint-every 2 --job.dump_folder "$dir/job" --quiet >/dev/null || fail "the training run"
val=$(python3 -c "import json,sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    if r.get('type') == 'val': print(repr(r['loss']))" "$dir/job/metrics.jsonl")
[ -n "$val" ] || fail "no validation record in metrics.jsonl"
"$hp" export "$dir/ck" --format hf --out "$dir/hf" || fail "hp export --format hf"
"$hp" eval --checkpoint "$dir/ck/step-2" --data "$dir/text.txt" --batches 3 --json "$dir/ck.json" --quiet >/dev/null || fail "hp eval --checkpoint"
"$hp" eval --load "$dir/hf" --data "$dir/text.txt" --batches 3 --json "$dir/hf.json" --quiet >/dev/null || fail "hp eval --load DIR"
"$hp" eval --checkpoint "$dir/ck" --data "$dir/text.txt" --batches 3 --tp 2 --dp-shard 2 --json "$dir/tp.json" --quiet >/dev/null \
  || fail "hp eval under tp 2 x dp_shard 2"
python3 - "$val" "$dir/ck.json" "$dir/hf.json" "$dir/tp.json" <<'PY'
import json, math, sys
val = float(sys.argv[1])
ck, hf, tp = (json.load(open(p)) for p in sys.argv[2:5])
assert ck["loss"] == val, f"hp eval --checkpoint: {ck['loss']!r}, the run's validation round {val!r}"
assert hf["loss"] == val, f"hp eval --load HF folder: {hf['loss']!r}, the run's validation round {val!r}"
assert abs(tp["loss"] - val) <= 1e-5 * abs(val), f"tp 2 x dp_shard 2: {tp['loss']!r} vs {val!r}"
assert ck["batches"] == 3 and ck["tokens"] == 3 * 8 * 32, ck
assert abs(ck["perplexity"] - math.exp(val)) <= 1e-12 * math.exp(val)
assert abs(ck["bits_per_byte"] - val / math.log(2)) <= 1e-12
print(f"PASS: hp eval = the validation round {val!r} (checkpoint and HF folder bit for bit, tp 2 x dp_shard 2 "
      f"{tp['loss']!r}); perplexity {ck['perplexity']:.4g}, {ck['bits_per_byte']:.4f} bits per byte")
PY
