#!/usr/bin/env python3
"""torch_column.py - the matrix's torch column: every seed recipe that PyTorch can express, run by
examples/torch/check_layout.sh (PyTorch's own layout against hp's one process), next to hp's own
verdict (docs/torch.md, "The torch column").

    python3 examples/torch/torch_column.py [--level L0[,L1..]] [--only ID[,ID..]] [--report DIR]
                                           [--update] [--faults | --faults-only] [--hp build/hp]

For each recipe of `hp matrix --list` (resume rows included), its flags are translated into
check_layout.sh's. A flag PyTorch has no API for is "not expressible" at once, with the reason;
otherwise check_layout.sh runs and its exit code is the verdict: 0 agree, 1 disagree, 2 not
expressible (torch_layout.py names why), 77 torch 2 not installable (skipped), anything else an
error. --faults also runs every injected fault of torch_layout.py (--bug) on its recipe: each
must end in exit 1 with hp compare's row of the tensor it touches saying FAIL.

Writes DIR/torch.md (the column, hp's verdicts from DIR/report.json when `hp matrix --report DIR`
wrote one, and the counts agree / disagree / not expressible), DIR/torch.json, DIR/torch_faults.md
(the faults table docs/torch.md shows; tests/check_faults_doc.sh compares them) and every run's
output under DIR/torch/. --update keeps the rows of DIR/torch.json that this run did not select. Exit 0 when nothing disagreed, errored or went uncaught, 1 otherwise, 77
when torch 2 cannot be installed.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))

# hp run's flags check_layout.sh takes, with a value or without
VALUED = {"--dp-replicate", "--dp-shard", "--cp", "--tp", "--pp", "--ep", "--etp", "--cp-rotate", "--pp-schedule",
          "--pp-microbatches", "--pp-virtual", "--microbatches", "--reshard-after-forward", "--ac", "--model",
          "--layers", "--seq-len", "--batch", "--seed", "--mixed-precision-param", "--mixed-precision-reduce",
          "--optimizer", "--lr", "--max-norm"}
BARE = {"--sp", "--no-sp", "--cp-no-balance"}
# hp run's flags PyTorch has no API for: the first one a recipe has names why
NO_PYTORCH_API = {
    "--ulysses": "Ulysses (heads exchanged by all-to-all) has no PyTorch API: context_parallel rotates keys and "
                 "values (all-gather or ring) only",
    "--float8": "float8 training is torchao's Float8Linear (torch._scaled_mm), not part of PyTorch; not written here",
    "--float8-fsdp-all-gather": "float8 all-gather is torchao's, not part of PyTorch; not written here",
    "--async-tp": "PyTorch's async TP is inductor's micro-pipelined TP over symmetric memory: torch.compile on "
                  "CUDA only",
    "--dispatcher": "TorchTitan's ExpertParallel dispatches by all-to-all only (hp's --dispatcher allgather has no "
                    "PyTorch counterpart)",
}
RESUME_WHY = "a checkpoint resumed under another layout: the torch checks prove one step, not a resharded resume"

# the injected faults of torch_layout.py: name, the recipe it runs on, the tensor hp compare must
# name (a regex of a gradient's row; None: the verdict alone), the extra flags
FAULTS = [
    ("sp-norm-grad", "M3-tp2", r"layers\.[01]\.(attention|ffn)_norm\.weight", []),
    ("norm-replicate", "M3-tp2", r"norm\.weight", []),
    ("loss-per-rank", "M4-s2", r"output\.weight", []),
    ("fsdp-divide", "M4-s2", r"output\.weight", []),
    ("pp-microbatch", "P1-1f1b", r"output\.weight", []),
    ("pp-stage-order", "P3", r"layers\.[12]\.attention\.wo\.weight", []),
    ("bf16-reduce", "M4-s4-bf16", r"output\.weight", []),
    ("cp-loss", "M5-s1-ag", r"norm\.weight", []),
    ("ep-combine-twice", "A-EP", r"layers\.[01]\.moe\.experts\.w[123]", []),
    ("expert-divide", "A-EP", r"layers\.[01]\.moe\.experts\.w[123]", []),
]


def recipes(hp):
    out = subprocess.run([hp, "matrix", "--list"], check=True, capture_output=True, text=True).stdout
    rows = []
    for line in out.splitlines():
        f = line.split("\t")
        if f[0] in ("recipe", "resume"):
            rows.append({"kind": f[0], "id": f[1], "level": f[2], "world": int(f[3]), "flags": f[4]})
    return rows


def translate(flags):
    """hp run's flags -> (check_layout.sh's flags, None) or (None, why not expressible)."""
    t = flags.split()
    out, i = [], 0
    while i < len(t):
        f = t[i]
        if f in NO_PYTORCH_API:
            return None, NO_PYTORCH_API[f]
        if f in BARE:
            out.append(f)
            i += 1
        elif f in VALUED and i + 1 < len(t):
            out += [f, t[i + 1]]
            i += 2
        else:
            return None, f"check_layout.sh has no flag {f}"
    return out, None


def hp_verdicts(report):
    try:
        j = json.load(open(os.path.join(report, "report.json")))
    except (OSError, ValueError):
        return {}
    return {r["id"]: r.get("verdict", "-") for r in j.get("recipes", [])}


def check(flags, work, env):
    os.makedirs(work, exist_ok=True)
    t0 = time.time()
    for attempt in (1, 2):   # exit 3 (no verdict: a run that did not start or finish) once more
        p = subprocess.run(["sh", os.path.join(HERE, "check_layout.sh")] + flags, capture_output=True, text=True,
                           env=dict(env, CHECK_LAYOUT_DIR=os.path.join(work, "work")))
        if p.returncode != 3:
            break
        print(f"torch_column: no verdict (exit 3): {(p.stderr.strip().splitlines() or [''])[-1]}; once more",
              flush=True)
    text = p.stdout + p.stderr
    with open(os.path.join(work, "out"), "w") as f:
        f.write(text)
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("check_layout:")] or text.strip().splitlines() or [""]
    return p.returncode, lines[-1], text, time.time() - t0


def worst_of(verdict):
    m = re.search(r"worst gradient ([A-Za-z0-9_.]+), (?:ratio )?([0-9.e+-]+)", verdict)
    return (m.group(1), m.group(2)) if m else ("-", "-")


def run_column(rows, args, env, hp_of):
    res = []
    for r in rows:
        entry = {"id": r["id"], "level": r["level"], "world": r["world"], "hp": hp_of.get(r["id"], "-")}
        flags, why = (None, RESUME_WHY) if r["kind"] == "resume" else translate(r["flags"])
        if flags is None:
            entry.update(torch="not expressible", why=why)
        else:
            rc, verdict, _, secs = check(flags, os.path.join(args.report, "torch", r["id"]), env)
            entry["seconds"] = round(secs, 1)
            if rc == 2:
                entry.update(torch="not expressible", why=verdict.split("not expressible: ", 1)[-1])
            elif rc in (0, 1):
                name, err = worst_of(verdict)
                entry.update(torch="agree" if rc == 0 else "disagree", worst=name, error=err)
            elif rc == 77:
                entry.update(torch="skipped", why="torch 2 is not installable")
            else:
                entry.update(torch="error", why=f"check_layout.sh exit {rc}: {verdict}")
        print(f"torch_column: {r['id']:<18} hp {entry['hp']:<5} torch {entry['torch']}"
              + (f" ({entry.get('worst')}, {entry.get('error')})" if "worst" in entry else "")
              + (f": {entry['why']}" if entry.get("why") and entry["torch"] != "agree" else ""), flush=True)
        res.append(entry)
        if entry["torch"] == "skipped":
            break
    return res


def run_faults(rows, args, env):
    by_id = {r["id"]: r for r in rows}
    res = []
    for name, rid, tensor, extra in FAULTS:
        flags, why = translate(by_id[rid]["flags"])
        rc, verdict, text, _ = check(flags + ["--bug", name] + extra, os.path.join(args.report, "torch", "bug-" + name),
                                     env)
        failed = verdict.split("): ", 1)[1] if "): " in verdict else "-"
        name_w, err = worst_of(verdict)
        row_fail = bool(re.search(r"^  (" + tensor + r") .* FAIL$", text, re.M))
        caught = rc == 1 and row_fail
        res.append({"fault": name, "recipe": rid, "exit": rc, "failed": failed, "worst": name_w, "error": err,
                    "tensor": tensor, "caught": caught, "verdict": verdict})
        print(f"torch_column: fault {name:<17} on {rid:<10} exit {rc}: {'caught' if caught else 'NOT CAUGHT'}"
              f" ({failed}; worst {name_w} {err})", flush=True)
        if rc == 77:
            break
    return res


def write_md(path, col, faults, hp_known):
    n = {k: sum(1 for e in col if e["torch"] == k) for k in ("agree", "disagree", "not expressible", "error",
                                                               "skipped")}
    with open(path, "w") as f:
        f.write("# The torch column\n\nEach seed recipe under PyTorch's own layout (examples/torch/check_layout.sh: "
                "FSDP2, HSDP, DTensor TP/SP, context_parallel, pipelining, EP), against hp's one process; hp's "
                "own verdict beside it" + ("" if hp_known else " (none: no report.json from hp matrix here)") +
                ".\n\n")
        f.write(f"**{n['agree']} agree, {n['disagree']} disagree, {n['not expressible']} not expressible**"
                + (f", {n['error']} errors" if n["error"] else "") + (f", {n['skipped']} skipped" if n["skipped"]
                                                                       else "") + f" ({len(col)} rows).\n\n")
        f.write("| recipe | level | ranks | hp | torch | worst gradient | why not |\n|---|---|---|---|---|---|---|\n")
        for e in col:
            worst = f"`{e['worst']}` {e['error']}" if e.get("worst") else ""
            f.write(f"| {e['id']} | {e['level']} | {e['world']} | {e['hp']} | {e['torch']} | {worst} | "
                    f"{e.get('why', '') if e['torch'] != 'agree' else ''} |\n")
    return n


def write_faults_md(path, faults):
    with open(path, "w") as f:
        f.write("# Faults of PyTorch users, caught\n\nEach fault is injected into examples/torch/torch_layout.py by "
                "`--bug NAME` and run on its recipe by check_layout.sh. *Caught*: exit 1 and hp compare's row of "
                "the tensor the fault touches says FAIL. *What failed*: hp compare's first failed check.\n\n")
        f.write("| fault | recipe | what failed | worst error | caught |\n|---|---|---|---|---|\n")
        for e in faults:
            f.write(f"| {e['fault']} | {e['recipe']} | {e['failed']}; worst grad `{e['worst']}` {e['error']} | "
                    f"{e['error']} | {'yes' if e['caught'] else 'no'} |\n")


def main():
    ap = argparse.ArgumentParser(description="the matrix's torch column (docs/torch.md)")
    ap.add_argument("--level", default="all")
    ap.add_argument("--only", default="")
    ap.add_argument("--report", default="report")
    ap.add_argument("--update", action="store_true", help="keep DIR/torch.json's other rows")
    ap.add_argument("--faults", action="store_true")
    ap.add_argument("--faults-only", action="store_true")
    ap.add_argument("--hp", default=os.path.join(SRC, "build", "hp"))
    args = ap.parse_args()
    if not os.access(args.hp, os.X_OK):
        sys.exit(f"torch_column: no hp at {args.hp} (build it, or pass --hp)")
    env = dict(os.environ, HP=os.path.abspath(args.hp))
    if "TORCH2_PYTHON" not in env:   # install once, up front (one line when it cannot be)
        p = subprocess.run(["sh", os.path.join(SRC, "scripts", "setup_torch2.sh"), "--python"], capture_output=True,
                           text=True)
        if p.returncode == 77:
            print("torch_column: SKIP: torch 2 is not installable (scripts/setup_torch2.sh: " +
                  (p.stderr.strip().splitlines() or ["no PyPI"])[-1] + ")")
            sys.exit(77)
        if p.returncode != 0:
            sys.exit(f"torch_column: scripts/setup_torch2.sh failed (exit {p.returncode})")
        env["TORCH2_PYTHON"] = p.stdout.strip().splitlines()[-1]
    rows = recipes(args.hp)
    levels = None if args.level == "all" else set(args.level.split(","))
    only = set(filter(None, args.only.split(",")))
    sel = [r for r in rows if (levels is None or r["level"] in levels) and (not only or r["id"] in only)]
    os.makedirs(args.report, exist_ok=True)
    t0 = time.time()
    ok = True
    if not args.faults_only:
        hp_of = hp_verdicts(args.report)
        col = run_column(sel, args, env, hp_of)
        if args.update:   # the rows run now replace theirs in DIR/torch.json, the others are kept
            try:
                kept = {e["id"]: e for e in json.load(open(os.path.join(args.report, "torch.json")))["rows"]}
            except (OSError, ValueError, KeyError):
                kept = {}
            kept.update({e["id"]: e for e in col})
            col = [kept[r["id"]] for r in rows if r["id"] in kept]
        n = write_md(os.path.join(args.report, "torch.md"), col, None, bool(hp_of))
        with open(os.path.join(args.report, "torch.json"), "w") as f:
            json.dump({"rows": col, "counts": n}, f, indent=1)
        print(f"torch_column: {n['agree']} agree, {n['disagree']} disagree, {n['not expressible']} not expressible, "
              f"{n['error']} errors ({len(col)} rows; {args.report}/torch.md)")
        if n["skipped"]:
            sys.exit(77)
        ok = n["disagree"] == 0 and n["error"] == 0
    if args.faults or args.faults_only:
        faults = run_faults(rows, args, env)
        write_faults_md(os.path.join(args.report, "torch_faults.md"), faults)
        if any(e["exit"] == 77 for e in faults):
            sys.exit(77)
        caught = sum(e["caught"] for e in faults)
        print(f"torch_column: {caught} of {len(faults)} faults caught ({args.report}/torch_faults.md)")
        ok = ok and caught == len(faults)
    print(f"torch_column: {'PASS' if ok else 'FAIL'} in {time.time() - t0:.0f} s")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
