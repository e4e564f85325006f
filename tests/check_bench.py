#!/usr/bin/env python3
"""check_bench.py - runs `hp bench` on the tiny model and checks what it reports (not how fast).

usage: check_bench.py step|memory|recipes HP JSON_OUT
  step:   the single-rank bench: FLOPs/step equal the formula of tools/hp/cmd_bench.c, the rates
          and ratios are positive and consistent with each other
  memory: --memory at dp_shard 1, 2, 3 (3 does not divide the tiny model's rows: padding):
          per rank, persistent = full model / N + padding, summed over ranks exactly
  recipes: --recipes: every recipe verifies and its counted bytes equal the predicted ones
"""
import json
import subprocess
import sys

passed = failed = 0


def check(ok, what):
    global passed, failed
    if ok:
        passed += 1
    else:
        failed += 1
    print(("  ok   " if ok else "FAILED ") + what)


def run(cmd):
    print("$ " + " ".join(cmd))
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=100)
    print(p.stdout)
    return p.returncode


def flops_tiny(B, S):
    V, D, L, H, Hkv, F = 256, 64, 2, 8, 4, 128    # model.md's tiny
    hd = D // H
    P = V * D + L * (D * H * hd * 2 + D * Hkv * hd * 2 + 3 * D * F)
    return 6 * P * B * S + 12 * L * B * H * hd * S * (S + 1) // 2


def step(hp, out):
    rc = run([hp, "bench", "--model", "tiny", "--seq-len", "32", "--batch", "4", "--steps", "2",
              "--threads", "1", "--json", out])
    check(rc == 0, "hp bench exits 0")
    j = json.load(open(out))
    check(j["flops_per_step"] == flops_tiny(4, 32),
          f"flops_per_step {j['flops_per_step']:.0f} == 6 P T + 12 L B H hd S(S+1)/2 = {flops_tiny(4, 32)}")
    check(j["ms_best"] > 0 and j["ms_best"] <= j["ms_median"], "ms_best > 0 and <= ms_median")
    check(abs(j["tokens_per_s"] - 128 / (j["ms_best"] * 1e-3)) < 1e-6 * j["tokens_per_s"],
          "tokens/s = B*S / best step time")
    check(abs(j["ratio_sgemm"] - j["gflops"] / j["sgemm_gflops"]) < 1e-9 and j["sgemm_gflops"] > 0,
          "ratio_sgemm = achieved GFLOP/s / sgemm GFLOP/s")
    check(j["threads"] == 1 and j["optimizer"] == "adamw", "1 thread, AdamW (the bench's default)")
    V, D, L, H, Hkv, F = 256, 64, 2, 8, 4, 128
    hd = D // H
    full = 2 * V * D + D + L * (2 * D + D * H * hd * 2 + D * Hkv * hd * 2 + 3 * D * F)
    check(j["persistent_bytes"] == 4 * 4 * full,
          f"persistent bytes = params, grads, m, v x {full} floats x 4 bytes (one rank: no padding)")
    rc = run([hp, "bench", "--threads", "0"])
    check(rc == 2, "--threads 0 is refused with exit 2")


def memory(hp, out):
    rc = run([hp, "bench", "--memory", "--model", "tiny", "--batch", "6", "--shards", "1,2,3",
              "--json", out])
    check(rc == 0, "hp bench --memory exits 0")
    rows = json.load(open(out))
    for n in (1, 2, 3):
        r = [x for x in rows if x["dp_shard"] == n]
        check(len(r) == n, f"dp_shard {n}: one row per rank")
        full = r[0]["full_over_n_bytes"] * n
        check(sum(x["persistent_bytes"] - x["padding_bytes"] for x in r) == full,
              f"dp_shard {n}: sum over ranks of (persistent - padding) == full model bytes")
        check(all(x["persistent_bytes"] == r[0]["persistent_bytes"] for x in r),
              f"dp_shard {n}: every rank keeps the same padded shard")
        pad = r[-1]["padding_bytes"]
        check((pad > 0) == (n == 3), f"dp_shard {n}: padding {pad:.0f} bytes only where N does not divide")
        check(all(x["working_bytes"] == rows[0]["working_bytes"] for x in r),
              f"dp_shard {n}: working bytes (one gathered unit) do not shrink with N")


def recipes(hp, out):
    rc = run([hp, "bench", "--recipes", "--json", out])
    check(rc == 0, "hp bench --recipes exits 0")
    rows = json.load(open(out))
    check(len(rows) >= 8, f"{len(rows)} recipes reported")
    for r in rows:
        check(r["pass"] and r["bytes_counted"] > 0 and r["bytes_counted"] == r["bytes_predicted"],
              f"{r['recipe']}: verified, {r['bytes_counted']:.0f} bytes counted == predicted")


def main():
    mode, hp, out = sys.argv[1:4]
    {"step": step, "memory": memory, "recipes": recipes}[mode](hp, out)
    print(f"check_bench: {passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
