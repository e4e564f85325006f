#!/usr/bin/env python3
"""check_metrics.py MODE HP DIR - hp run's step line, {job.dump_folder}/metrics.jsonl and loss.svg,
and its validation rounds (training-job.md §5-6, docs/metrics.md).

  files    one run with every output checked against the others: the line (TorchTitan's shape,
           rank 0) against the records, the records' fields and the relations between them
           (F recounted, tflops and mfu from tps, tokens_seen, lr of the schedule), the log and
           validation schedules, loss.svg as XML; a second run reaching the same parameters
           repeats a round bit for bit; a third without rounds trains the same losses bit for
           bit; validation.steps -1 reads every full batch once; --quiet prints no line
  layouts  the validation losses of 1 process, dp_shard 2, tp 2 and pp 2 within the verifier's
           loss tolerance (1e-5 relative)
  peak     the peak mfu divides by does not move from run to run (metrics_peak.c): measured once
           into HP_CACHE_DIR/fma_peak, the same figure kept by the next run (1 and 2 ranks), a
           line of the file used as written, --metrics.peak_tflops given, a folder that cannot
           hold the file measured and not kept (exit 0); mfu = 100 F tps / that peak each time
Exits 1 on any failure, naming it.
"""
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import xml.etree.ElementTree as ET

LINE = re.compile(r"^step: +(\d+)  loss: +([0-9.]+)  grad_norm: +([0-9.]+)  lr: ([0-9.]+e[-+]\d+)  "
                  r"memory: +([0-9.]+)GiB\(([0-9.]+)%\)  tps: ([0-9,]+)  tflops: ([0-9.]+)  mfu: ([0-9.]+)%"
                  r"  eta: (?:\d+h\d\dm|\d+m\d\ds|\d+s) \(([0-9.]+)%\)$")
VAL_LINE = re.compile(r"^validate step: +(\d+)  loss: +([0-9.]+)  tps: ([0-9,]+)$")
TRAIN_KEYS = ("step", "loss", "grad_norm", "lr", "tokens_seen", "elapsed_s", "memory_gib", "memory_gib_max",
              "memory_pct", "tps", "tflops", "mfu_pct")
JOB_KEYS = ("model", "world", "params", "F", "peak", "isa")
VAL_KEYS = ("step", "loss", "tokens", "tps")
B, S = 8, 16

failures = []


def check(cond, what):
    print(("ok    " if cond else "FAIL  ") + what)
    if not cond:
        failures.append(what)
    return cond


def text_file(path, n, seed):
    """n bytes of lowercase pseudo-text (a fixed generator: the same file every time)."""
    x, out = seed, bytearray()
    while len(out) < n:
        x = (x * 6364136223846793005 + 1442695040888963407) % 2**64
        c = (x >> 33) % 32
        out.append(32 if c >= 26 else 97 + c)
    with open(path, "wb") as f:
        f.write(bytes(out))
    return path


def run(hp, args, want_rc=0):
    p = subprocess.run([hp, "run"] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=240)
    if p.returncode != want_rc:
        sys.stdout.write(p.stdout + p.stderr)
        check(False, f"hp run {' '.join(args)} exited {p.returncode}, want {want_rc}")
        raise SystemExit(1)
    return p.stdout


def records(folder):
    with open(os.path.join(folder, "metrics.jsonl")) as f:
        return [json.loads(line) for line in f]


def f32(x):
    return struct.unpack("f", struct.pack("f", x))[0]


def rel(a, b):
    return abs(a - b) / max(abs(b), 1e-300)


def mode_files(hp, work):
    train = text_file(os.path.join(work, "train.txt"), 20000, 1)
    val = text_file(os.path.join(work, "val.txt"), 4000, 2)
    small = text_file(os.path.join(work, "small.txt"), 1000, 3)   # 1000 // 17 = 58 windows: 7 batches of 8
    common = ["--seq-len", str(S), "--batch", str(B), "--optimizer", "adamw", "--lr", "1e-3", "--data", train,
              "--lr_scheduler.warmup_steps", "2", "--lr_scheduler.total_steps", "7", "--validation.enable",
              "--validation.dataset_path", val, "--validation.steps", "2"]
    a = os.path.join(work, "a")
    out = run(hp, common + ["--steps", "7", "--metrics.log_freq", "3", "--validation.freq", "2",
                            "--job.dump_folder", a, "--json", os.path.join(work, "a.json")])
    lines = [l for l in out.splitlines() if l.startswith("step") or l.startswith("validate")]
    recs = records(a)
    order = [(r["type"], r.get("step")) for r in recs]
    # logged: the first step, every 3rd, the last; rounds: every 2nd step and after the last
    want = [("job", None), ("train", 1), ("val", 2), ("train", 3), ("val", 4), ("train", 6), ("val", 6),
            ("train", 7), ("val", 7)]
    check(order == want, f"records in order {order}")
    check(len(lines) == len(want) - 1, f"{len(lines)} printed lines (step and validate), want {len(want) - 1}")
    job = recs[0]
    check(all(k in job for k in JOB_KEYS), f"the job record has {JOB_KEYS}")
    check(job["world"] == 1 and job["model"] == "tiny" and job["peak"] > 0 and job["isa"] != "",
          f"job: world {job['world']}, model {job['model']}, peak {job['peak']:.4g} FLOP/s ({job['isa']})")
    # F = 6 (N - N_emb) + 12 L H hd S, with N_emb the embedding table V x D
    F = 6 * (job["params"] - job["vocab_size"] * job["dim"]) + \
        12 * job["n_layers"] * job["n_heads"] * job["head_dim"] * job["seq_len"]
    check(job["embedding_params"] == job["vocab_size"] * job["dim"] and job["F"] == F,
          f"F {job['F']} = 6 (N - N_emb) + 12 L H hd S = {F}")
    trains = [r for r in recs if r["type"] == "train"]
    vals = [r for r in recs if r["type"] == "val"]
    for r, line in zip(recs[1:], lines):
        if r["type"] == "train":
            m = LINE.match(line)
            if not check(m is not None, f"step {r['step']}: the line has TorchTitan's shape: {line!r}"):
                continue
            check(all(k in r and isinstance(r[k], (int, float)) for k in TRAIN_KEYS), f"step {r['step']}: {TRAIN_KEYS}")
            printed = (int(m.group(1)), m.group(2), m.group(3), m.group(4), m.group(7), m.group(8), m.group(9))
            from_rec = (r["step"], "%.5f" % r["loss"], "%.4f" % r["grad_norm"], "%.4e" % r["lr"],
                        f"{round(r['tps']):,}", "%.2f" % r["tflops"], "%.2f" % r["mfu_pct"])
            check(printed == from_rec, f"step {r['step']}: the line {printed} says the record {from_rec}")
            check(rel(r["tflops"], job["F"] * r["tps"] / 1e12) < 1e-12 and
                  rel(r["mfu_pct"], 100 * job["F"] * r["tps"] / job["peak"]) < 1e-12 and r["tps"] > 0,
                  f"step {r['step']}: tflops = F tps / 1e12, mfu = 100 F tps / peak ({r['mfu_pct']:.2f} %)")
            check(r["tokens_seen"] == r["step"] * B * S, f"step {r['step']}: tokens_seen {r['tokens_seen']}")
            check(m.group(10) == "%.1f" % (100.0 * r["step"] / job["steps"]),
                  f"step {r['step']}: the line's progress {m.group(10)}% is step / steps ({job['steps']})")
            if r["step"] == job["steps"]:
                check(" eta: 0s " in line, f"the last step's line says eta 0s: {line!r}")
            check(0 < r["memory_gib"] <= r["memory_gib_max"] and r["memory_pct"] > 0,
                  f"step {r['step']}: memory {r['memory_gib']:.5f} GiB (max over ranks {r['memory_gib_max']:.5f}, "
                  f"{r['memory_pct']:.4f} %)")
        else:
            m = VAL_LINE.match(line)
            if not check(m is not None, f"round after step {r['step']}: the line has the shape: {line!r}"):
                continue
            check(all(k in r for k in VAL_KEYS) and r["tokens"] == 2 * B * S and r["batches"] == 2,
                  f"round after step {r['step']}: {VAL_KEYS}, {r['tokens']} tokens in 2 batches")
            check((int(m.group(1)), m.group(2)) == (r["step"], "%.5f" % r["loss"]),
                  f"round after step {r['step']}: the line says the record")
    # lr_k of TorchTitan's schedule, warmup 2: lr/2, lr, lr, ... (fp32)
    check([t["lr"] for t in trains] == [f32(0.5e-3), f32(1e-3), f32(1e-3), f32(1e-3)],
          f"lr {[t['lr'] for t in trains]} is the schedule's lr_k")
    el = [r["elapsed_s"] for r in recs[1:]]
    check(el == sorted(el) and el[0] >= 0, "elapsed_s grows")
    # loss.svg: XML, the train loss and lr lines, one point per round
    root = ET.parse(os.path.join(a, "loss.svg")).getroot()
    ns = "{http://www.w3.org/2000/svg}"
    points = [c for c in root.iter(ns + "circle") if c.find(ns + "title") is not None]
    check(root.tag == ns + "svg" and len(list(root.iter(ns + "polyline"))) == 2 and len(points) == len(vals),
          f"loss.svg parses as XML: 2 lines, {len(points)} validation points")
    check(not os.path.exists(os.path.join(a, "loss.svg.tmp")), "no temporary file left")

    # another run reaching the same parameters (the same first 2 steps) repeats the round bit for bit
    b = os.path.join(work, "b")
    run(hp, common + ["--steps", "2", "--validation.freq", "100", "--job.dump_folder", b, "--quiet"])
    vb = [r for r in records(b) if r["type"] == "val"]
    check(len(vb) == 1 and vb[0]["step"] == 2 and vb[0]["loss"] == vals[0]["loss"],
          f"the round after step 2 of two runs: {vals[0]['loss']!r} and {vb[0]['loss'] if vb else None!r}, bit for bit")
    check(len({v["loss"] for v in vals}) == len(vals), "rounds at other parameters give other losses")
    # rounds leave training as it was: the same losses without them
    c = os.path.join(work, "c.json")
    plain = [x for x in common if x not in ("--validation.enable",)]
    plain = plain[:plain.index("--validation.dataset_path")]
    run(hp, plain + ["--steps", "7", "--json", c, "--quiet"])
    la, lc = json.load(open(os.path.join(work, "a.json")))["losses"], json.load(open(c))["losses"]
    check(len(la) == 7 and la == lc, "the 7 losses with rounds equal those without, bit for bit")
    check([t["loss"] for t in trains] == [la[k - 1] for k in (1, 3, 6, 7)], "the records' losses are --json's")

    # -1: every full batch once; --quiet: no line, the files still written
    d = os.path.join(work, "d")
    out = run(hp, ["--seq-len", str(S), "--batch", str(B), "--steps", "1", "--validation.enable",
                   "--validation.dataset_path", small, "--job.dump_folder", d, "--quiet"])
    vd = [r for r in records(d) if r["type"] == "val"]
    check(len(vd) == 1 and vd[0]["batches"] == 58 // B and vd[0]["tokens"] == (58 // B) * B * S,
          f"validation.steps -1 over 58 windows: {vd[0]['batches'] if vd else None} batches of {B}")
    check(not re.search(r"^(step|validate)", out, re.M), "--quiet prints no step or validate line")


def mode_layouts(hp, work):
    val = text_file(os.path.join(work, "val.txt"), 4000, 2)
    base = ["--seq-len", str(S), "--batch", str(B), "--steps", "2", "--optimizer", "adamw", "--lr", "1e-3",
            "--validation.enable", "--validation.dataset_path", val, "--validation.freq", "1",
            "--validation.steps", "3", "--quiet"]
    got = {}
    for name, flags in (("1 process", []), ("dp_shard 2", ["--dp-shard", "2"]), ("tp 2", ["--tp", "2"]),
                        ("pp 2", ["--pp", "2"])):
        folder = os.path.join(work, name.replace(" ", "_"))
        run(hp, base + flags + ["--job.dump_folder", folder])
        got[name] = [r["loss"] for r in records(folder) if r["type"] == "val"]
        check(len(got[name]) == 2, f"{name}: rounds after steps 1 and 2: {got[name]}")
    # MoE: the routed experts count K/E of themselves in F
    moe = os.path.join(work, "moe")
    run(hp, ["--model", "tiny-moe", "--seq-len", str(S), "--batch", str(B), "--steps", "1", "--quiet",
             "--job.dump_folder", moe])
    j = records(moe)[0]
    E, K = j["num_experts"], j["top_k"]
    routed = (j["n_layers"] - j["n_dense_layers"]) * E * 3 * j["dim"] * j["moe_hidden"]
    F = 6 * (j["params"] - j["embedding_params"] - routed + routed * K / E) + \
        12 * j["n_layers"] * j["n_heads"] * j["head_dim"] * j["seq_len"]
    check(E > K > 0 and j["routed_expert_params"] == routed and abs(j["F"] - F) <= 1e-9 * F,
          f"tiny-moe: {routed} routed expert parameters at K/E = {K}/{E}: F {j['F']} = {F}")
    ref = got["1 process"]
    for name, v in got.items():
        if name == "1 process" or len(v) != 2:
            continue
        worst = max(rel(x, y) for x, y in zip(v, ref))
        check(worst <= 1e-5, f"{name}: validation losses {v} vs 1 process {ref}: relative {worst:.2e} <= 1e-5")


def peak_run(hp, work, name, cache, extra=()):
    """One logged run under HP_CACHE_DIR=cache: its job record and its train records."""
    env = dict(os.environ, HP_CACHE_DIR=cache)
    folder = os.path.join(work, name)
    args = [hp, "run", "--model", "tiny", "--steps", "2", "--job.dump_folder", folder] + list(extra)
    p = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, timeout=240)
    check(p.returncode == 0, f"{name}: {' '.join(args[1:])} exits 0 (got {p.returncode})")
    if p.returncode != 0:
        sys.stdout.write(p.stdout + p.stderr)
        raise SystemExit(1)
    recs = records(folder)
    job, train = recs[0], [r for r in recs if r["type"] == "train"]
    ok = all(rel(r["mfu_pct"], 100 * job["F"] * r["tps"] / job["peak"]) < 1e-12 for r in train)
    check(ok and train, f"{name}: mfu = 100 F tps / peak on every line (peak {job['peak']:.6g} FLOP/s, "
                        f"{job['peak_source']})")
    return job


def kept_lines(cache):
    with open(os.path.join(cache, "fma_peak")) as f:
        return [line.split() for line in f if line.strip()]


def mode_peak(hp, work):
    cache = os.path.join(work, "cache")
    first = peak_run(hp, work, "first", cache)
    check(first["peak_source"] == "measured" and first["peak"] > 0,
          f"an empty cache: the peak is measured ({first['peak_source']}, {first['isa']})")
    lines = kept_lines(cache)
    check(len(lines) == 1 and lines[0][1] == first["isa"] and float(lines[0][0]) * 1e9 == first["peak"],
          f"and kept: {lines}")
    again = peak_run(hp, work, "again", cache)
    check(again["peak_source"] == "kept" and again["peak"] == first["peak"],
          f"the next run divides by the same peak: {again['peak']:.6g} ({again['peak_source']})")
    two = peak_run(hp, work, "two_ranks", cache, ["--dp-shard", "2"])
    check(two["peak_source"] in ("measured", "kept") and two["peak"] > 0,
          f"2 ranks: rank 0's peak for 1 thread a rank ({two['peak_source']})")
    two_again = peak_run(hp, work, "two_ranks_again", cache, ["--dp-shard", "2"])
    check(two_again["peak_source"] == "kept" and two_again["peak"] == two["peak"],
          f"2 ranks again: the same kept peak ({two_again['peak']:.6g})")
    # the file is the rule: a line written by hand (here 123.5 GFLOP/s) is used as written
    lines = kept_lines(cache)
    with open(os.path.join(cache, "fma_peak"), "w") as f:
        for l in lines:
            f.write(" ".join(["123.5"] + l[1:] if l[1] == first["isa"] and l[2] == lines[0][2] else l) + "\n")
    hand = peak_run(hp, work, "by_hand", cache)
    check(hand["peak"] == 123.5e9 and hand["peak_source"] == "kept",
          f"a line of the file is used as written: {hand['peak']:.6g} FLOP/s")
    given = peak_run(hp, work, "given", cache, ["--metrics.peak_tflops", "0.5"])
    check(given["peak"] == 0.5e12 and given["peak_source"] == "given" and given["isa"] == "given",
          f"--metrics.peak_tflops 0.5: {given['peak']:.6g} FLOP/s ({given['peak_source']})")
    blocked = os.path.join(work, "not_a_folder")
    with open(blocked, "w") as f:
        f.write("a file where the cache folder would be\n")
    unkept = peak_run(hp, work, "not_kept", os.path.join(blocked, "sub"))
    check(unkept["peak_source"] == "measured, not kept" and unkept["peak"] > 0,
          f"a cache folder that cannot be made: measured for this run only ({unkept['peak_source']})")


def main():
    if len(sys.argv) != 4 or sys.argv[1] not in ("files", "layouts", "peak"):
        print(__doc__, file=sys.stderr)
        return 2
    mode, hp, work = sys.argv[1:]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    {"files": mode_files, "layouts": mode_layouts, "peak": mode_peak}[mode](hp, work)
    print(f"metrics {mode}: {'FAIL' if failures else 'PASS'} ({len(failures)} failed)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
