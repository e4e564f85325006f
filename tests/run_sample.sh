#!/bin/sh
# run_sample.sh HP - samples during training (sample.every, docs/model_io.md):
# 1. hp run --tp 2 with sample.every 3 over 7 steps samples after steps 3, 6 and 7 (the last):
#    a "sample step: K | PROMPT TEXT" line each, and a "sample" record each in metrics.jsonl
#    with the prompt, the ids and their text;
# 2. the sample after step 7 is hp generate's greedy text from the step-7 checkpoint;
# 3. resumed from step 3, the run's metrics.jsonl keeps step 3's sample record bit for bit.
# Exits 1 on the first failure with one line saying which.
hp=$1
[ -x "$hp" ] || { echo "usage: run_sample.sh HP_BINARY" >&2; exit 2; }
T=$(mktemp -d) || exit 2
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
text=/usr/share/common-licenses/GPL-3
[ -r "$text" ] || { echo "skipped: no $text to train on"; exit 77; }
train="--optimizer adamw --lr 3e-3 --data $text --tp 2 --sample.every 3 --prompt GNU --max-new-tokens 8"

"$hp" run --steps 7 $train --job.dump_folder "$T/a" --checkpoint-dir "$T/ck" --checkpoint-every 3 >"$T/a.out" 2>&1 ||
  fail "hp run: exit $? ($(tail -1 "$T/a.out"))"
[ "$(grep -c '^sample step: ' "$T/a.out")" = 3 ] || fail "want 3 sample lines: $(grep '^sample' "$T/a.out")"
"$hp" generate --checkpoint "$T/ck/step-7" --prompt GNU --max-new-tokens 8 --json "$T/g.json" >/dev/null 2>"$T/g.err" ||
  fail "hp generate: exit $? ($(tail -1 "$T/g.err"))"
cp -r "$T/a" "$T/b"   # the resumed run's folder: its metrics.jsonl keeps the records before step 4
"$hp" run --steps 7 $train --job.dump_folder "$T/b" --checkpoint-dir "$T/ck" --resume "$T/ck/step-3" >"$T/b.out" 2>&1 ||
  fail "hp run --resume: exit $? ($(tail -1 "$T/b.out"))"
python3 - "$T" <<'PY' || exit 1
import json, sys
T = sys.argv[1]
recs = [json.loads(l) for l in open(f"{T}/a/metrics.jsonl")]
samples = [r for r in recs if r["type"] == "sample"]
if [r["step"] for r in samples] != [3, 6, 7]: sys.exit(f"FAIL: sample records at {[r['step'] for r in samples]}, want [3, 6, 7]")
for r in samples:
    if r["prompt"] != "GNU" or len(r["ids"]) != 8 or r["text"] != bytes(r["ids"]).decode("utf-8", "replace"):
        sys.exit(f"FAIL: a bad sample record {r}")
lines = [l for l in open(f"{T}/a.out") if l.startswith("sample step:")]
if not lines[2].startswith("sample step:   7 | GNU" + samples[2]["text"]): sys.exit(f"FAIL: sample line {lines[2]!r}")
g = json.load(open(f"{T}/g.json"))
if g["ids"] != samples[2]["ids"]: sys.exit(f"FAIL: step 7's sample {samples[2]['ids']} is not hp generate's {g['ids']}")
a = open(f"{T}/a/metrics.jsonl").read().splitlines()
b = open(f"{T}/b/metrics.jsonl").read().splitlines()
s3 = [l for l in a if '"type":"sample","step":3,' in l]
if not s3 or s3[0] not in b: sys.exit("FAIL: the resumed run's metrics.jsonl lost step 3's sample record")
if [json.loads(l)["step"] for l in b if '"type":"sample"' in l] != [3, 6, 7]: sys.exit("FAIL: the resumed run's samples")
print(f"samples after steps 3, 6, 7 (step 7: {samples[2]['text']!r}, hp generate's too); kept across --resume")
PY
echo "PASS: samples during training"
