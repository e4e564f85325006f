#!/usr/bin/env python3
"""scaling.py - the Python side of bench/scaling.sh: 1 vs N rank scaling of hyperpar (DDP,
FSDP, HSDP weak scaling; TP strong scaling) and of PyTorch gloo DDP, side by side in one go,
in interleaved rounds, and the efficiency table.

usage:
  scaling.py --hp BUILD/hp [--rounds 5] [--steps 8] [--warmup 2] [--model small]
             [--seq-len 256] [--batch-per-rank 2] [--no-torch] [--json FILE]

Why rounds: the machine is shared and noisy, so one pair of runs proves nothing. Each round
runs every case's 1-rank job right next to its N-rank job (1, N in odd rounds, N, 1 in even
ones), the efficiency of that round is the ratio of the pair, and the table gives the median
over rounds with the spread (lowest - highest). Every rank runs 1 BLAS thread; PyTorch runs the OpenBLAS core hp
reported (OPENBLAS_CORETYPE), so the kernels are the same on both sides.

  weak scaling   (same sequences per rank):    efficiency = t(1 rank) / t(N ranks)
  strong scaling (same global batch, TP):      efficiency = t(1 rank) / (N * t(N ranks))
  ceiling        (2 independent 1-rank jobs at once): t(1 rank) / t(2 x 1), where a step of
                 2 x 1 is the slower of the two jobs' steps of that number (as if they waited
                 for each other once a step, moving nothing); below 1 the other jobs on the
                 machine leave the 2 ranks less than 2 cores, and "/ceiling" divides each
                 2-rank weak efficiency by its round's ceiling

A step time is the median of the steps after the warm-up, as rank 0 measures it (hp run's
per-step line; ddp_torch.py's JSON). The column "of best" is the same median over rounds of
the ratio of the jobs' best steps: on a shared machine the best step is the one least slowed
by other jobs.
"""
import argparse
import json
import os
import re
import socket
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
# hp run's step line (TorchTitan's, docs/metrics.md): its tps is tokens per second per rank
STEP_LINE = re.compile(r"^step:\s+(\d+)\s.*\stps: ([0-9,]+)\s")
BLAS_LINE = re.compile(r"^hp: blas (.*?), core (\w+) ")   # the BLAS half of "hp: blas ... | gemm: ..."

# name, kind, ranks, hp run flags of the N-rank job, data-parallel degree (sequences scale by it)
HP_CASES = [
    ("DDP", "weak", 2, ["--dp-replicate", "2", "--dp-shard", "1"], 2),
    ("FSDP", "weak", 2, ["--dp-shard", "2"], 2),
    ("HSDP", "weak", 4, ["--dp-replicate", "2", "--dp-shard", "2"], 4),
    ("TP (+SP)", "strong", 2, ["--tp", "2", "--dp-shard", "1"], 1),
    ("TP async", "strong", 2, ["--tp", "2", "--dp-shard", "1", "--async-tp"], 1),
]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def hp_cmd(args, flags, batch):
    return [args.hp, "run", "--model", args.model, "--seq-len", str(args.seq_len), "--batch", str(batch),
            "--steps", str(args.warmup + args.steps)] + flags


def start_hp(args, flags, batch):
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    return subprocess.Popen(hp_cmd(args, flags, batch), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, env=env)


def hp_steps(args, flags, batch, p, info):
    """The step ms of a finished hp run (rank 0's per-step lines after the warm-up)."""
    out, _ = p.communicate(timeout=600)
    cmd = hp_cmd(args, flags, batch)
    # the world is the product of the degrees given; a step's ms = B x S x 1000 / (tps x world)
    world = 1
    for k in ("--dp-replicate", "--dp-shard", "--tp"):
        if k in flags:
            world *= int(flags[flags.index(k) + 1])
    ms = []
    for line in out.splitlines():
        m = STEP_LINE.match(line)
        if m and int(m.group(1)) > args.warmup:
            tps = float(m.group(2).replace(",", ""))
            ms.append(batch * args.seq_len * 1000.0 / (tps * world) if tps > 0 else float("inf"))
        b = BLAS_LINE.match(line)
        if b and "core" not in info:
            info["blas"], info["core"] = b.group(1), b.group(2)
    if p.returncode != 0 or len(ms) != args.steps:
        sys.stderr.write(f"scaling: `{' '.join(cmd)}` failed (exit {p.returncode}):\n{out}\n")
        raise SystemExit(1)
    return ms


def run_hp(args, flags, batch, info):
    ms = hp_steps(args, flags, batch, start_hp(args, flags, batch), info)
    return statistics.median(ms), min(ms)


def run_independent(args, k, info):
    """N independent 1-rank jobs at once, no communication: what the machine's free cores
    allow N ranks right now. A synchronous step waits for its slowest rank, so step i counts
    as the slowest of the jobs' steps i (they start together and run the same steps, so
    their steps i roughly coincide): (median, best) of those."""
    procs = [start_hp(args, [], args.batch_per_rank) for _ in range(k)]
    steps = [hp_steps(args, [], args.batch_per_rank, p, info) for p in procs]
    slowest = [max(t) for t in zip(*steps)]
    return statistics.median(slowest), min(slowest)


def run_torch(args, world, core):
    cmd = ["/usr/bin/python3", os.path.join(HERE, "ddp_torch.py"), "--world", str(world), "--model", args.model,
           "--seq-len", str(args.seq_len), "--batch-per-rank", str(args.batch_per_rank), "--steps", str(args.steps),
           "--warmup", str(args.warmup), "--port", str(free_port())]
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    if core and not os.environ.get("OPENBLAS_CORETYPE"):
        env["OPENBLAS_CORETYPE"] = core
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, timeout=600)
    lines = [l for l in p.stdout.splitlines() if l.startswith("{")]
    if p.returncode != 0 or not lines:
        sys.stderr.write(f"scaling: `{' '.join(cmd)}` failed (exit {p.returncode}):\n{p.stdout}{p.stderr}\n")
        raise SystemExit(1)
    r = json.loads(lines[-1])
    return r["ms_median"], r["ms_best"]


def efficiency(kind, ranks, t1, tn):
    return t1 / tn if kind == "weak" else t1 / (ranks * tn)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hp", required=True)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--model", default="small")
    ap.add_argument("--seq-len", type=int, default=256)
    ap.add_argument("--batch-per-rank", type=int, default=2)
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--json")
    args = ap.parse_args()
    if args.rounds < 1 or args.steps < 1 or args.batch_per_rank < 1 or args.warmup < 0:
        print("scaling.py: --rounds, --steps, --batch-per-rank must be >= 1, --warmup >= 0", file=sys.stderr)
        return 2
    bpr = args.batch_per_rank
    info = {}
    cases = [(n, k, r, f, dp, "hyperpar") for n, k, r, f, dp in HP_CASES]
    if not args.no_torch:
        cases.append(("DDP", "weak", 2, None, 2, "PyTorch gloo"))
    # the ceiling: 2 jobs that share nothing but the cores (the other engineers' load included)
    cases.append(("2 x 1", "weak", 2, "independent", 2, "machine"))
    raw = {f"{impl} {name}": [] for name, _, _, _, _, impl in cases}
    loads = [os.getloadavg()[0]]   # the machine's other work: context for every figure
    for rnd in range(1, args.rounds + 1):
        for name, kind, ranks, flags, dp, impl in cases:
            if flags == "independent":
                one, many = (lambda: run_hp(args, [], bpr, info)), (lambda: run_independent(args, ranks, info))
            elif flags is not None:
                one, many = (lambda: run_hp(args, [], bpr, info)), (lambda: run_hp(args, flags, bpr * dp, info))
            else:
                one, many = (lambda: run_torch(args, 1, info.get("core"))), (lambda: run_torch(args, ranks, info.get("core")))
            # 1, N in odd rounds, N, 1 in even ones: a load that rises or falls during a round
            # favours neither side in the median
            if rnd % 2:
                (t1, b1), (tn, bn) = one(), many()
            else:
                (tn, bn), (t1, b1) = many(), one()
            e = efficiency(kind, ranks, t1, tn)
            raw[f"{impl} {name}"].append({"round": rnd, "ms_1": t1, "ms_n": tn, "efficiency": e,
                                          "ms_1_best": b1, "ms_n_best": bn,
                                          "efficiency_best": efficiency(kind, ranks, b1, bn)})
            print(f"round {rnd}: {impl:>12} {name:<8} 1 rank {t1:7.1f} ms, {ranks} ranks {tn:7.1f} ms: "
                  f"efficiency {e:.2f}", flush=True)
        loads.append(os.getloadavg()[0])

    cores = os.cpu_count() or 1
    print(f"\nscaling: model {args.model}, S {args.seq_len}, {bpr} sequences per rank (weak) / "
          f"{bpr} in all (TP), 1 thread per rank, {args.steps} steps after {args.warmup} warm-up; "
          f"{args.rounds} interleaved rounds on {cores} cores; BLAS {info.get('blas', '?')} "
          f"core {info.get('core', '?')} on both sides; load average {min(loads):.1f}-{max(loads):.1f} "
          f"(above ~0.5 other jobs share the cores)")
    print(f"{'implementation':<13} {'case':<9} {'scaling':<7} {'ranks':>5} | {'1 rank ms':>9} {'N ranks ms':>10} | "
          f"{'efficiency':>10} {'spread':>11} {'of best':>7} {'/ceiling':>8} | note")
    table = []
    ceiling = [r["efficiency"] for r in raw["machine 2 x 1"]]
    for name, kind, ranks, _, _, impl in cases:
        rows = raw[f"{impl} {name}"]
        effs = sorted(r["efficiency"] for r in rows)
        med = statistics.median(effs)
        # the same from each job's best step: less of the other jobs' noise, on a shared machine
        med_best = statistics.median(r["efficiency_best"] for r in rows)
        t1 = statistics.median(r["ms_1"] for r in rows)
        tn = statistics.median(r["ms_n"] for r in rows)
        # the round's efficiency over that round's ceiling (2-rank weak cases): what the
        # implementation loses beyond what the busy cores take
        of_ceiling = (statistics.median(r["efficiency"] / c for r, c in zip(rows, ceiling))
                      if kind == "weak" and ranks == 2 and impl != "machine" else None)
        oc = f"{of_ceiling:>8.2f}" if of_ceiling is not None else f"{'':>8}"
        note = ""
        if ranks > cores:   # more ranks than cores: the ranks share them, the ideal is cores/ranks
            note = f"{ranks} ranks on {cores} cores: ideal {cores / ranks:.2f}, per core {med * ranks / cores:.2f}"
        print(f"{impl:<13} {name:<9} {kind:<7} {ranks:>5} | {t1:>9.1f} {tn:>10.1f} | {med:>10.2f} "
              f"{effs[0]:>5.2f}-{effs[-1]:<5.2f} {med_best:>7.2f} {oc} | {note}")
        table.append({"impl": impl, "case": name, "scaling": kind, "ranks": ranks, "ms_1_median": t1,
                      "ms_n_median": tn, "efficiency_median": med, "efficiency_min": effs[0],
                      "efficiency_max": effs[-1], "efficiency_of_best_median": med_best,
                      "efficiency_over_ceiling_median": of_ceiling, "rounds": rows})
    print("(targets: weak-scaling efficiency >= 0.9 for DDP and FSDP, as the median of the rounds; "
          "machine 2 x 1 = two independent 1-rank jobs at once, the most 2 ranks can get from the cores "
          "free now; /ceiling = the round's efficiency over that round's ceiling)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"model": args.model, "seq_len": args.seq_len, "batch_per_rank": bpr, "cores": cores,
                       "blas": info.get("blas"), "blas_core": info.get("core"), "rounds": args.rounds,
                       "load_average": loads,
                       "table": table}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
