#!/bin/sh
# run_metrics_resume.sh HP DIR - a resumed run keeps its history: a job runs 5 steps with a
# checkpoint at step 3 (into job.dump_folder D), then resumes from step-3 to step 6 in the same
# D. D/metrics.jsonl then holds the first run's job record and its records of steps 1-3, bit for
# bit, a second job record (first_step 4) and steps 4-6; the first run's steps 4-5 are gone; the
# losses equal an uninterrupted 6-step run's; loss.svg's curve starts at step 1.
set -eu
hp=$1 dir=$2
rm -rf "$dir"; mkdir -p "$dir"
export OPENBLAS_NUM_THREADS=1
common="--optimizer adamw --metrics.log_freq 1 --quiet"
"$hp" run $common --steps 6 --job.dump_folder "$dir/whole"
"$hp" run $common --steps 5 --job.dump_folder "$dir/d" --checkpoint-dir "$dir/ck" --checkpoint-every 3
cp "$dir/d/metrics.jsonl" "$dir/first.jsonl"
"$hp" run $common --steps 6 --job.dump_folder "$dir/d" --checkpoint-dir "$dir/ck" --resume "$dir/ck/step-3"
python3 - "$dir" <<'PY'
import json, re, sys
d = sys.argv[1]
lines = open(d + "/d/metrics.jsonl").read().splitlines()
recs = [json.loads(l) for l in lines]
first = open(d + "/first.jsonl").read().splitlines()
whole = [json.loads(l) for l in open(d + "/whole/metrics.jsonl").read().splitlines()]
bad = []
jobs = [i for i, r in enumerate(recs) if r["type"] == "job"]
if len(jobs) != 2 or jobs[0] != 0 or recs[jobs[1]].get("first_step") != 4:
    bad.append("job records at %s (want 0, and one with first_step 4): %s" % (jobs, [recs[i].get("first_step") for i in jobs]))
steps = [r["step"] for r in recs if r["type"] == "train"]
if steps != [1, 2, 3, 4, 5, 6]:
    bad.append("train steps %s, want 1..6 once each" % steps)
kept = [l for l in first if json.loads(l)["type"] == "job" or json.loads(l).get("step", 99) <= 3]
if lines[:len(kept)] != kept:
    bad.append("the first run's job record and steps 1-3 are not kept as they were")
lw = [r["loss"] for r in whole if r["type"] == "train"]
lr = [r["loss"] for r in recs if r["type"] == "train"]
if lw != lr:
    bad.append("losses %s, the uninterrupted run's %s" % (lr, lw))
svg = open(d + "/d/loss.svg").read()
if not re.search(r">1</text>", svg):
    bad.append("loss.svg has no tick at step 1")
if bad:
    print("FAIL: " + "; ".join(bad)); sys.exit(1)
print("metrics resume: steps 1-3 kept bit for bit, 4-6 appended after a second job record; losses = the uninterrupted run's")
PY
