#!/usr/bin/env python3
"""check_plan_vs_run.py [--exact-categories] PLAN_JSON RUN_JSON [NAME] - `hp plan --json` (predicted, rank 0) against
`hp run --json` (measured on world rank 0): params_total and the persistent bytes equal, every
(group, op) of one step equal (the EP all-to-all follows the routing: left out), the predicted
peak within 10% of the measured high-water mark; and the run's own plan_check verdict agrees.
With --exact-categories every category of the prediction must also equal the measured
high-water mark of that category (memtrack.h; "other" is not predicted). Prints one line
(predicted / measured peak per category) and exits 1 on a difference."""
import json, sys

args = sys.argv[1:]
exact = "--exact-categories" in args
args = [a for a in args if a != "--exact-categories"]
plan, run = json.load(open(args[0])), json.load(open(args[1]))
name = args[2] if len(args) > 2 else args[1]
bad = []
for k in ("params_total", "memory", "traffic"):
    if k not in run:
        sys.exit("FAIL %s: the run's JSON has no %r" % (name, k))
pm, rm = plan["memory"], run["memory"]
if plan["params_total"] != run["params_total"]:
    bad.append("params_total %d != %d" % (plan["params_total"], run["params_total"]))
if pm["persistent_bytes"] != rm["persistent_bytes"]:
    bad.append("persistent %d != %d" % (pm["persistent_bytes"], rm["persistent_bytes"]))
ops = set()
for src in (plan["traffic"], run["traffic"]):
    for g, o in src.items():
        ops.update((g, op) for op in o)
for g, op in sorted(ops):
    if (g, op) == ("ep", "all_to_all"):
        continue   # data-dependent: the planner gives its expectation under uniform routing
    p = plan["traffic"].get(g, {}).get(op, 0)
    c = run["traffic"].get(g, {}).get(op, 0)
    if p != c:
        bad.append("traffic %s %s: predicted %d, counted %d" % (g, op, p, c))
ratio = pm["peak_bytes"] / rm["peak_bytes"]
if abs(ratio - 1) > 0.10:
    bad.append("peak predicted %d vs measured %d (ratio %.3f)" % (pm["peak_bytes"], rm["peak_bytes"], ratio))
keys = {"params": "params_bytes", "grads": "grads_bytes", "optimizer": "optimizer_bytes",
        "fsdp_working": "fsdp_working_bytes", "comm_scratch": "comm_scratch_bytes",
        "accumulation": "accumulation_bytes", "activations": "activation_bytes", "scratch": "scratch_bytes"}
if exact:
    for c, k in keys.items():
        if pm[k] != rm["peak"][c]:
            bad.append("%s: predicted %d B, measured high-water mark %d B" % (c, pm[k], rm["peak"][c]))
cats = " ".join("%s %d/%d" % (c, pm[k], rm["peak"][c]) for c, k in keys.items() if pm[k] or rm["peak"][c])
pc = run.get("plan_check")
if pc is None:
    bad.append("the run wrote no plan_check")
elif bool(pc["pass"]) != (not bad):
    bad.append("the run's plan_check says %s (%s)" % (pc["pass"], pc.get("why", "")))
print("%s %s: peak ratio %.4f; %s; other %d" % ("FAIL" if bad else "ok  ", name, ratio, cats,
                                                rm["peak"]["other"]))
for b in bad:
    print("   ", b)
sys.exit(1 if bad else 0)
