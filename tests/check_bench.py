#!/usr/bin/env python3
"""check_bench.py - runs `hp bench` on the tiny model and checks what it reports (not how fast).

usage: check_bench.py step|blas|gemm|launch|memory|recipes|scaling HP JSON_OUT
  step:   the single-rank bench: FLOPs/step equal the formula of tools/hp/bench/cmd_bench.c, the rates
          and ratios (step, sgemm, FMA peak) are positive and consistent with each other
  blas:   `hp bench` and `hp run` name the BLAS, its core and the thread count on their first
          line; on a CPU with AVX2 or AVX-512 the core is never a generic one; a user's
          OPENBLAS_CORETYPE is kept; the same line names the GEMM backend, its ISA and threads;
          the default backend follows its rule (hp_gemm_default_backend): openblas for a small
          step; for a step of 10 GFLOP or more, onednn under a preset core narrower than the
          CPU's widest and for bf16 on a CPU with bf16 instructions, openblas otherwise
  gemm:   --gemm onednn / HP_GEMM=onednn: the first line of hp bench and hp run names oneDNN, its
          ISA (the bf16 one on a CPU with AVX512_BF16) and the threads per rank; the bench's GEMM
          rates and bf16 peak; --gemm auto says what it picked and why; a bad HP_GEMM or --gemm
          exits 2 with one line
  launch: `hp run` launches with the MPI launcher it was built with, not the mpiexec / mpirun
          first on PATH; HP_MPIRUN names another, which gets the flavour's flags and the core
  memory: --memory at dp_shard 1, 2, 3 (3 does not divide the tiny model's rows: padding):
          per rank, persistent = full model / N + padding, summed over ranks exactly
  recipes: --recipes: every recipe verifies and its counted bytes equal the predicted ones
"""
import json
import os
import re
import stat
import subprocess
import sys
import tempfile

passed = failed = 0


def check(ok, what):
    global passed, failed
    if ok:
        passed += 1
    else:
        failed += 1
    print(("  ok   " if ok else "FAILED ") + what)


def run(cmd, env=None, out=None):
    print("$ " + " ".join(cmd))
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=100,
                       env=env)
    print(p.stdout)
    if out is not None:
        out.append(p.stdout)
    return p.returncode


# OpenBLAS core names whose kernels are older than AVX2 (blas_core.c's rank 0 and 1)
OLD_CORES = {"unknown", "katmai", "coppermine", "northwood", "banias", "prescott", "core2", "penryn",
             "dunnington", "nehalem", "atom", "nano", "opteron", "opteron_sse3", "barcelona", "bobcat",
             "sandybridge", "bulldozer", "piledriver", "steamroller", "excavator"}


# HP_CPU_ISA's levels (include/hyperpar/cpu.h), narrowest first, and the cpuinfo flags each adds
CAP_LEVELS = ["sse4_1", "avx", "avx2", "avx512", "avx512_bf16", "amx"]
FLAG_LEVEL = {"avx": "avx", "avx2": "avx2", "fma": "avx2", "avx512_bf16": "avx512_bf16", "amx_bf16": "amx",
              "amx_tile": "amx", "amx_int8": "amx"}


def flag_level(flag):
    if flag in FLAG_LEVEL:
        return FLAG_LEVEL[flag]
    return "avx512" if flag.startswith("avx512") else None


def cpu_flags():
    """The CPU's flags as hp sees them: /proc/cpuinfo's, less those above the HP_CPU_ISA cap."""
    flags = set()
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
                break
    except OSError:
        pass
    cap = os.environ.get("HP_CPU_ISA") or ""
    if cap in CAP_LEVELS:
        top = CAP_LEVELS.index(cap)
        flags = {f for f in flags if flag_level(f) is None or CAP_LEVELS.index(flag_level(f)) <= top}
    return flags


def cores_available():
    """The physical cores of this process's affinity mask, as hp's launcher counts them."""
    cpus = os.sched_getaffinity(0)
    cores = set()
    for c in cpus:
        try:
            with open(f"/sys/devices/system/cpu/cpu{c}/topology/physical_package_id") as f:
                package = int(f.read())
            with open(f"/sys/devices/system/cpu/cpu{c}/topology/core_id") as f:
                cores.add((package, int(f.read())))
        except (OSError, ValueError):
            return len(cpus)
    return max(len(cores), 1)


def env_without_core():
    env = dict(os.environ)
    env.pop("OPENBLAS_CORETYPE", None)
    env.pop("HP_BLAS_CORE_CHOSEN", None)
    env.pop("HP_GEMM", None)
    return env


# hp run's and hp bench's first line: the BLAS (groups 1-4) | the GEMM backend (5 name, 6 version,
# 7 its OpenBLAS core, 8 its ISA, 9 its threads, 10 " (picked by timing ...)" under --gemm auto)
# [| the HP_CPU_ISA cap (11)]
BLAS_LINE = re.compile(r"^hp: blas (OpenBLAS [0-9.]+), core (\w+) \((.+)\), (\d+) threads? "
                       r"\| gemm: (openblas|onednn) ([0-9.]+), (?:core (\w+), )?isa (\w+), (\d+) threads?"
                       r"( \(picked by timing: --gemm auto\))?(?: \| cpu capped at (\w+) \(HP_CPU_ISA\))?$")


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
    check(all(k in j for k in ("blas", "blas_core", "threads", "peak_gflops", "sgemm_gflops", "step_gflops")),
          "--json has blas, blas_core, threads, peak_gflops, sgemm_gflops, step_gflops")
    check(j["peak_gflops"] > 0 and j["step_gflops"] == j["gflops"], "peak_gflops > 0, step_gflops = gflops")
    check(abs(j["step_over_peak"] - j["step_gflops"] / j["peak_gflops"]) < 1e-9 and
          abs(j["sgemm_over_peak"] - j["sgemm_gflops"] / j["peak_gflops"]) < 1e-9,
          "step_over_peak and sgemm_over_peak are the ratios of the rates")
    check(j["threads"] == 1 and j["optimizer"] == "adamw", "1 thread, AdamW (the bench's default)")
    # the peak is the one of the vectors the BLAS core's kernels use, capped at the CPU's widest;
    # the machine's widest beside it (asked of /proc/cpuinfo here, not assumed)
    flags = cpu_flags()
    widest = ("avx512" if "avx512f" in flags else "avx2" if {"avx2", "fma"} <= flags else
              "avx" if "avx" in flags else "sse" if "sse2" in flags else "scalar")
    order = ["scalar", "sse", "avx", "avx2", "avx512"]
    core = j["blas_core"].lower()
    kernels = ("avx512" if core in ("skylakex", "cooperlake", "sapphirerapids") else
               "avx2" if core in ("haswell", "zen") else
               "avx" if core in ("sandybridge", "bulldozer", "piledriver", "steamroller", "excavator") else
               "sse" if core in OLD_CORES else widest)
    want = min(kernels, widest, key=order.index)
    check(j["peak_isa"] == want, f"core {j['blas_core']}: the peak is the {want} loop's (got {j['peak_isa']})")
    check(j["machine_peak_isa"] == widest and j["machine_peak_gflops"] > 0,
          f"the machine's peak is its widest vectors' ({widest}, got {j['machine_peak_isa']})")
    V, D, L, H, Hkv, F = 256, 64, 2, 8, 4, 128
    hd = D // H
    full = 2 * V * D + D + L * (2 * D + D * H * hd * 2 + D * Hkv * hd * 2 + 3 * D * F)
    check(j["persistent_bytes"] == 4 * 4 * full,
          f"persistent bytes = params, grads, m, v x {full} floats x 4 bytes (one rank: no padding)")
    rc = run([hp, "bench", "--threads", "0"])
    check(rc == 2, "--threads 0 is refused with exit 2")


def blas(hp, out):
    flags = cpu_flags()
    wide = bool(flags & {"avx2", "avx512f"})
    env = env_without_core()
    text = []
    rc = run([hp, "bench", "--model", "tiny", "--seq-len", "16", "--batch", "2", "--steps", "1",
              "--threads", "1", "--json", out], env=env, out=text)
    check(rc == 0, "hp bench exits 0")
    first = text[0].splitlines()[0] if text[0] else ""
    m = BLAS_LINE.match(first)
    check(m is not None, f"hp bench's first line names the BLAS, its core and the threads: '{first}'")
    j = json.load(open(out))
    check(m is not None and m.group(2) == j["blas_core"] and m.group(1) == j["blas"] and
          int(m.group(4)) == j["threads"] == 1, "the first line agrees with --json (blas, blas_core, threads 1)")
    check(m is not None and m.group(5) == "openblas" == j["gemm_backend"] and m.group(7) == j["blas_core"] and
          int(m.group(9)) == 1 and "OpenBLAS " + m.group(6) == j["blas"],
          "the GEMM is OpenBLAS by default, its core and 1 thread named on the first line")
    if wide:
        check(j["blas_core"].lower() not in OLD_CORES,
              f"cpu has {'avx512f' if 'avx512f' in flags else 'avx2'}: core {j['blas_core']} is not a generic one")
    else:
        print("  (this CPU has neither AVX2 nor AVX-512: no core to insist on)")

    text = []
    rc = run([hp, "run", "--model", "tiny", "--steps", "1", "--dp-shard", "2"], env=env, out=text)
    lines = text[0].splitlines()
    m2 = BLAS_LINE.match(lines[0]) if lines else None
    per_rank = int(env.get("OPENBLAS_NUM_THREADS") or "1")
    check(rc == 0 and m2 is not None and int(m2.group(4)) == per_rank,
          f"hp run on 2 ranks: the first line names the BLAS, its core and {per_rank} thread(s) per rank "
          "(the environment's OPENBLAS_NUM_THREADS, else 1)")
    check(sum(1 for l in lines if l.startswith("hp: blas")) == 1, "hp run prints that line once (rank 0)")
    check(m2 is not None and m2.group(2) == j["blas_core"], "the ranks of hp run get the core hp bench got")
    text = []
    rc = run([hp, "run", "--model", "tiny", "--steps", "1", "--verify", "--quiet"], env=env, out=text)
    check(rc == 0 and text[0].strip() == "verify: PASS", "--quiet output stays the one verify line")

    env_user = dict(env, OPENBLAS_CORETYPE="Haswell")
    text = []
    rc = run([hp, "run", "--model", "tiny", "--steps", "1", "--tp", "2"], env=env_user, out=text)
    first = text[0].splitlines()[0] if text[0] else ""
    m3 = BLAS_LINE.match(first)
    check(rc == 0 and m3 is not None and m3.group(2) == "Haswell" and "set by the user" in m3.group(3),
          f"a user's OPENBLAS_CORETYPE=Haswell is kept and said so: '{first}'")
    check(m3 is not None and m3.group(5) == "openblas" and not any(l.startswith("hp: gemm default")
                                                                   for l in text[0].splitlines()),
          "the tiny model's step is below 10 GFLOP: the default stays OpenBLAS, unsaid")

    # the default for a step of 10 GFLOP or more (the bench model, S 64, B 2: about 19 GFLOP)
    big = [hp, "run", "--model", "bench", "--seq-len", "64", "--batch", "2", "--steps", "1"]
    wide = "avx512f" in flags   # Haswell (AVX2) is narrower than the CPU's widest vectors
    native_bf16 = bool(flags & {"avx512_bf16", "amx_bf16"})
    for what, e, more, want in (("preset Haswell core, fp32", env_user, [], "onednn" if wide else "openblas"),
                                ("hp's own core, fp32", env, [], None),
                                ("bf16", env, ["--mixed-precision-param", "bfloat16"],
                                 "onednn" if native_bf16 else "openblas")):
        text = []
        rc = run(big + more, env=dict(e, OPENBLAS_NUM_THREADS="1"), out=text)
        lines = text[0].splitlines()
        m4 = BLAS_LINE.match(lines[0]) if lines else None
        said = [l for l in lines if l.startswith("hp: gemm default: ")]
        if want is None:   # hp's core is the CPU's best, unless this BLAS has none as wide (the line says)
            narrow = m4 is not None and ("would suit" in m4.group(3) or "kept its own" in m4.group(3))
            want = "onednn" if narrow else "openblas"
        check(rc == 0 and m4 is not None and m4.group(5) == want and
              (said == [] if want == "openblas" else len(said) == 1 and said[0].startswith("hp: gemm default: onednn: ")),
              f"the default for the bench model's step, {what}: {want}{', and why' if want == 'onednn' else ''} "
              f"({said[0] if said else 'nothing said'})")


def gemm(hp, out):
    flags = cpu_flags()
    env = env_without_core()
    text = []
    rc = run([hp, "bench", "--model", "tiny", "--seq-len", "16", "--batch", "2", "--steps", "1",
              "--threads", "1", "--gemm", "onednn", "--json", out], env=env, out=text)
    check(rc == 0, "hp bench --gemm onednn exits 0")
    first = text[0].splitlines()[0] if text[0] else ""
    m = BLAS_LINE.match(first)
    check(m is not None and m.group(5) == "onednn" and m.group(7) is None and int(m.group(9)) == 1,
          f"hp bench's first line names oneDNN, its ISA and 1 thread: '{first}'")
    isa = m.group(8) if m else ""
    if "avx512_bf16" in flags:
        check(isa in ("avx512_core_bf16", "avx512_core_amx"), f"cpu has avx512_bf16: oneDNN's ISA {isa} has bf16")
    # oneDNN 2.6 has a bf16 matmul from avx512_core on: below, hp bench skips it and names it
    onednn_bf16 = isa.startswith("avx512_core") or isa == "all"
    j = json.load(open(out)) if rc == 0 else {}
    g = j.get("gemm_bench", {})
    bf16_rates = ("onednn_bf16_gflops", "onednn_bf16_with_packing_gflops")
    check(j.get("gemm_backend") == "onednn" and (g.get("M"), g.get("N"), g.get("K")) == (2048, 1024, 1024) and
          all(g.get(k, 0) > 0 for k in ("openblas_sgemm_gflops", "onednn_f32_gflops")) and
          all((g.get(k, 0) > 0) == onednn_bf16 for k in bf16_rates) and
          ("onednn_bf16" in g.get("skipped", [])) == (not onednn_bf16),
          f"--json: the backend, the 2048x1024x1024 rates of OpenBLAS sgemm and oneDNN f32, and oneDNN bf16's "
          f"exactly where it has the matmul (isa {isa}), else named as skipped: {g.get('skipped')}")
    if not onednn_bf16:
        said = [l for l in text[0].splitlines() if "onednn bf16 skipped (oneDNN has no bf16 matmul on isa" in l]
        check(len(said) == 1, "hp bench's gemm line names the skipped oneDNN bf16 matmul")
    bf16_cpu = bool(flags & {"avx512_bf16", "amx_bf16"})
    check((j.get("bf16_peak_gflops", 0) > 0) == bf16_cpu,
          f"a bf16 peak is measured exactly when the CPU has bf16 dot products ({bf16_cpu})")
    if bf16_cpu and j:
        check(abs(j["step_over_bf16_peak"] - j["step_gflops"] / j["bf16_peak_gflops"]) < 1e-9,
              "step_over_bf16_peak is the ratio of the rates")

    env_on = dict(env, HP_GEMM="onednn")
    text = []
    rc = run([hp, "run", "--model", "tiny", "--steps", "1", "--dp-shard", "2"], env=env_on, out=text)
    lines = text[0].splitlines()
    m2 = BLAS_LINE.match(lines[0]) if lines else None
    per_rank = int(env.get("OPENBLAS_NUM_THREADS") or "1")
    check(rc == 0 and m2 is not None and m2.group(5) == "onednn" and int(m2.group(9)) == int(m2.group(4)) == per_rank,
          f"HP_GEMM=onednn hp run on 2 ranks: the first line names oneDNN with {per_rank} thread(s) per rank, "
          "the BLAS's count")
    text = []
    rc = run([hp, "run", "--model", "tiny", "--steps", "1", "--dp-shard", "2", "--verify", "--quiet",
              "--gemm", "onednn"], env=env, out=text)
    check(rc == 0 and text[0].strip() == "verify: PASS", "--gemm onednn: FSDP 2 verifies against one process")
    text = []
    rc = run([hp, "run", "--model", "tiny", "--steps", "1", "--gemm", "auto"], env=env, out=text)
    lines = text[0].splitlines()
    m3 = BLAS_LINE.match(lines[0]) if lines else None
    why = [l for l in lines if l.startswith("hp: gemm auto: ")]
    check(rc == 0 and m3 is not None and len(why) == 1 and why[0].startswith(f"hp: gemm auto: {m3.group(5)}, ")
          and "onednn" in why[0] and "openblas" in why[0] and "GFLOP/s" in why[0] and m3.group(10),
          f"--gemm auto: the pick on the first line, said to follow a timing, and why: {why}")
    check(m3 is not None and m3.group(11) == (os.environ.get("HP_CPU_ISA") or None),
          f"the first line names the HP_CPU_ISA cap exactly when one is set: {m3.group(11) if m3 else None}")
    # a bf16 run: auto times only where oneDNN has the bf16 matmul, and never picks it elsewhere
    text = []
    rc = run([hp, "run", "--model", "tiny", "--steps", "1", "--gemm", "auto", "--mixed-precision-param", "bfloat16"],
             env=env, out=text)
    lines = text[0].splitlines()
    m5 = BLAS_LINE.match(lines[0]) if lines else None
    why = [l for l in lines if l.startswith("hp: gemm auto: ")]
    if onednn_bf16:
        check(rc == 0 and m5 is not None and m5.group(10) and len(why) == 1 and "bf16 1024x1024x1024" in why[0],
              f"--gemm auto, bf16: both backends timed on the bf16 product: {why}")
    else:
        check(rc == 0 and m5 is not None and m5.group(5) == "openblas" and not m5.group(10) and len(why) == 1 and
              "has no bf16 matmul" in why[0] and "not timed" in why[0],
              f"--gemm auto, bf16, no oneDNN bf16 matmul here: openblas, untimed, and said: {why}")
        text = []
        rc = run([hp, "run", "--model", "tiny", "--steps", "1", "--gemm", "onednn", "--mixed-precision-param",
                  "bfloat16"], env=env, out=text)
        check(rc == 2 and "--gemm onednn: oneDNN has no bf16 matmul on this CPU (isa " in text[0]
              and len(text[0].strip().splitlines()) == 1,
              f"--gemm onednn, bf16, without oneDNN's bf16 matmul: one line, exit 2 (rc {rc}): {text[0].strip()}")

    for cmd, e, want in ((["run", "--gemm", "mkl"], env, "--gemm expects openblas, onednn or auto, got 'mkl'"),
                         (["bench", "--gemm", "OneDNN"], env, "--gemm expects openblas, onednn or auto, got 'OneDNN'"),
                         (["run"], dict(env, HP_GEMM="mkl"), "HP_GEMM expects openblas, onednn or auto, got 'mkl'"),
                         (["bench"], dict(env, HP_GEMM="fast"), "HP_GEMM expects openblas, onednn or auto, got 'fast'"),
                         (["plan", "--gemm", "onednn"], env, "--gemm is a flag of hp run")):
        p = subprocess.run([hp] + cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=e, timeout=30)
        errs = p.stderr.splitlines()
        check(p.returncode == 2 and len(errs) == 1 and want in errs[0],
              f"hp {' '.join(cmd)}{' with HP_GEMM=' + e['HP_GEMM'] if 'HP_GEMM' in e else ''}: exit 2, one line: {errs}")


def version_blas(hp, env):
    """(core, origin) of `hp --version`: the kernels a process of hp gets under env."""
    p = subprocess.run([hp, "--version"], stdout=subprocess.PIPE, text=True, env=env, timeout=30)
    m = re.search(r"^blas: OpenBLAS [0-9.]+, core (\w+) \((.+)\), \d+ threads?$", p.stdout, re.M)
    check(p.returncode == 0 and m is not None, f"hp --version names the BLAS core: {p.stdout!r}")
    return (m.group(1), m.group(2)) if m else ("", "")


def fake_launcher(path, log):
    """A launcher that records its arguments and fails: reaching it is the wrong choice."""
    with open(path, "w") as f:
        f.write("#!/bin/sh\nprintf '%s\\n' \"$@\" > '" + log + "'\nexit 42\n")
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def launch(hp, out):
    with tempfile.TemporaryDirectory() as d:
        bindir = os.path.join(d, "bin")
        os.mkdir(bindir)
        path_log = os.path.join(d, "path.log")
        for name in ("mpiexec", "mpirun"):
            fake_launcher(os.path.join(bindir, name), path_log)
        env = env_without_core()
        env["PATH"] = bindir + os.pathsep + env.get("PATH", "")
        env.pop("HP_MPIRUN", None)
        rc = run([hp, "run", "--model", "tiny", "--steps", "1", "--dp-shard", "2"], env=env)
        check(rc == 0 and not os.path.exists(path_log),
              "with a broken mpiexec and mpirun first on PATH, hp run still launches 2 ranks (its own launcher)")

        named_log = os.path.join(d, "named.log")
        named = os.path.join(d, "my-launcher")
        fake_launcher(named, named_log)
        env["HP_MPIRUN"] = named
        rc = run([hp, "run", "--model", "tiny", "--steps", "1", "--dp-shard", "2"], env=env)
        args = open(named_log).read().split("\n") if os.path.exists(named_log) else []
        print("  the named launcher got: " + " ".join(args))
        check(rc == 42 and len(args) > 2, "HP_MPIRUN names the launcher; its exit status comes back")
        ompi = "-x" in args
        hydra = "-genv" in args
        check(ompi != hydra, "the flags are one flavour's: Open MPI's -x or MPICH's -genv")
        threads = env.get("OPENBLAS_NUM_THREADS") or "1"
        # bound to cores when 2 ranks x threads fit on the cores this process may use, else
        # oversubscribed and unbound (launch_cores.c); the cores asked of the machine here too
        cores = cores_available()
        fits = 2 * max(int(threads) if threads.isdigit() else 1, 1) <= cores
        if ompi:
            bind = args[args.index("--bind-to") + 1] if "--bind-to" in args else None
            check(args[args.index("-np") + 1] == "2", "Open MPI: -np 2")
            if fits:
                check(bind == "core" and "--oversubscribe" not in args,
                      f"Open MPI: 2 ranks fit on {cores} cores: --bind-to core, no --oversubscribe")
            else:
                check(bind == "none" and "--oversubscribe" in args,
                      f"Open MPI: 2 ranks do not fit on {cores} cores: --oversubscribe --bind-to none")
            kv = [args[i + 1] for i, a in enumerate(args[:-1]) if a == "-x"]
        else:
            check(args[args.index("-n") + 1] == "2", "MPICH: -n 2")
            bind = args[args.index("-bind-to") + 1] if "-bind-to" in args else None
            check(bind.startswith("core") if fits else bind == "none",
                  f"MPICH: -bind-to {'core' if fits else 'none'} for 2 ranks on {cores} cores")
            kv = [args[i + 1] + "=" + args[i + 2] for i, a in enumerate(args[:-2]) if a == "-genv"]
        check(f"OPENBLAS_NUM_THREADS={threads}" in kv and "HP_LAUNCHED=1" in kv,
              f"every rank gets OPENBLAS_NUM_THREADS={threads} (the environment's, else 1) and HP_LAUNCHED=1")
        # what this machine's OpenBLAS picks by itself, asked of hp, not assumed: where hp
        # chooses a better core the ranks get it named; where OpenBLAS's own is right, no name
        own_core, origin = version_blas(hp, env)
        core = [x.split("=", 1)[1] for x in kv if x.startswith("OPENBLAS_CORETYPE=")]
        if origin.startswith("chosen by hp"):
            check(core == [own_core], f"hp chose core {own_core} here: every rank gets it named: {core}")
        else:
            check(core == [], f"OpenBLAS picks {own_core} itself here ({origin}): no core is forced: {core}")
        if cpu_flags() & {"avx2", "avx512f"}:
            check(own_core.lower() not in OLD_CORES, f"the ranks' core {own_core} is not a generic one")
        env["OPENBLAS_CORETYPE"] = "Haswell"
        os.remove(named_log)
        run([hp, "run", "--model", "tiny", "--steps", "1", "--dp-shard", "2"], env=env)
        args = open(named_log).read() if os.path.exists(named_log) else ""
        check("OPENBLAS_CORETYPE=Haswell" in args or "OPENBLAS_CORETYPE\nHaswell" in args,
              "a user's OPENBLAS_CORETYPE=Haswell reaches every rank unchanged")


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
        if n == 1:   # every unit is its shards (params.h): only the buffers' spare float each
            check(all(x["working_bytes"] == 2 * 4 for x in r),
                  "dp_shard 1: no gathered-unit buffers (the units are their shards)")
        else:
            sharded = [x for x in rows if x["dp_shard"] > 1]
            check(all(x["working_bytes"] == sharded[0]["working_bytes"] for x in r),
                  f"dp_shard {n}: working bytes (one gathered unit) do not shrink with N")


def recipes(hp, out):
    rc = run([hp, "bench", "--recipes", "--json", out])
    check(rc == 0, "hp bench --recipes exits 0")
    rows = json.load(open(out))
    check(len(rows) >= 8, f"{len(rows)} recipes reported")
    for r in rows:
        check(r["pass"] and r["bytes_counted"] > 0 and r["bytes_counted"] == r["bytes_predicted"],
              f"{r['recipe']}: verified, {r['bytes_counted']:.0f} bytes counted == predicted")


def scaling(hp, out):
    """bench/scaling.py end to end on the tiny model (one round, hyperpar only): its table
    and JSON carry every case with finite times and the efficiency of those times."""
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench", "scaling.py")
    text = []
    rc = run([sys.executable, script, "--hp", hp, "--rounds", "1", "--steps", "2", "--warmup", "0",
              "--model", "tiny", "--seq-len", "32", "--no-torch", "--json", out], out=text)
    check(rc == 0, "bench/scaling.py exits 0")
    if rc != 0:
        return
    table = json.load(open(out))["table"]
    cases = {(r["impl"], r["case"]) for r in table}
    want = {("hyperpar", "DDP"), ("hyperpar", "FSDP"), ("hyperpar", "HSDP"), ("hyperpar", "TP (+SP)"),
            ("hyperpar", "TP async"), ("machine", "2 x 1")}
    check(cases == want, f"the table's cases: {sorted(cases)}")
    for r in table:
        t1, tn = r["ms_1_median"], r["ms_n_median"]
        ranks = r["ranks"]
        want_e = t1 / tn if r["scaling"] == "weak" else t1 / (ranks * tn)
        check(t1 > 0 and tn > 0 and abs(r["efficiency_median"] - want_e) <= 1e-9 * want_e,
              f"{r['case']}: efficiency {r['efficiency_median']:.3f} = the times' ratio ({t1:.2f} / {tn:.2f} ms)")
    check(any(line.startswith("implementation") for line in text[0].splitlines()), "the table is printed")


def main():
    mode, hp, out = sys.argv[1:4]
    {"step": step, "blas": blas, "gemm": gemm, "launch": launch, "memory": memory, "recipes": recipes,
     "scaling": scaling}[mode](hp, out)
    print(f"check_bench: {passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
