#!/usr/bin/env python3
"""check_every_flag.py HP - every command of `hp --help` and every flag of its `--help` ends
with exit 0, 1 or 2, never on a signal, and a non-zero exit says why in at least one line.

Each flag runs with a value that cannot be right ("x", or "x" after a flag that takes none),
and the flags whose values the help lists (`a | b | c`) run with each listed value on the
tiny model, one step: --gemm onednn and --mixed-precision-param bfloat16 among them, which on a
CPU without oneDNN's bf16 matmul (an AVX2 one, or HP_CPU_ISA=avx2) must end in one line and
exit 2, not an abort. `hp bench` runs with its backends and precisions the same way. The
machine is not assumed: what a value may do here (0 or 2) is left to hp; only the way it ends is
checked. Exit 0 when every invocation ended cleanly, 1 otherwise.
"""
import os, re, signal, subprocess, sys, tempfile

COMMANDS = ["plan", "run", "generate", "export", "import", "matrix", "bench", "compare", "tokenize"]
# flags whose listed values run for real (quick on the tiny model): the precision and backend
# choices, which reach the ISA-dependent code
VALUE_RUNS = {"run": {"--gemm", "--mixed-precision-param", "--mixed-precision-reduce", "--float8",
                      "--optimizer", "--ac", "--cp-rotate", "--dispatcher", "--reshard-after-forward",
                      "--pp-schedule", "--lr_scheduler.decay_type", "--training.dataset_format"},
              "bench": {"--gemm", "--mixed-precision-param", "--float8"},
              "plan": {"--mixed-precision-param", "--float8", "--pp-schedule", "--ac"}}
BASE = {"run": ["--model", "tiny", "--steps", "1", "--seq-len", "16", "--batch", "2"],
        "bench": ["--model", "tiny", "--steps", "1", "--warmup", "0", "--seq-len", "16", "--batch", "2",
                  "--threads", "1"],
        "plan": ["--model", "tiny"]}
# values a help text names in a sentence rather than as 'a | b'
LISTED_IN_PROSE = {"--gemm": {"openblas", "onednn", "auto"},
                   "--mixed-precision-param": {"float32", "bfloat16"},
                   "--mixed-precision-reduce": {"float32", "bfloat16"},
                   "--ac": {"none", "full", "every:2"},
                   "--reshard-after-forward": {"default", "always", "never"},
                   "--lr_scheduler.decay_type": {"linear", "sqrt", "cosine"}}
# the pairs that reach a backend's bf16 products (the abort of an AVX2 CPU was one of them)
COMBOS = [["--mixed-precision-param", "bfloat16", "--gemm", g] for g in ("onednn", "auto", "openblas")] + \
         [["--mixed-precision-param", "bfloat16", "--float8", "tensorwise", "--gemm", "onednn"]]
SIGNAL_WORDS = ("received signal", "Signal code", "Subprocess aborted", "core dumped", "Segmentation fault")

failures = []
runs = 0


def run(hp, argv, cwd):
    global runs
    runs += 1
    env = dict(os.environ, OPENBLAS_NUM_THREADS=os.environ.get("OPENBLAS_NUM_THREADS", "1"))
    try:
        p = subprocess.run([hp] + argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           timeout=120, cwd=cwd, env=env, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        failures.append(f"hp {' '.join(argv)}: no end within 120 s")
        return None
    out = p.stdout.strip()
    bad = []
    if p.returncode < 0:
        bad.append(f"killed by {signal.Signals(-p.returncode).name}")
    elif p.returncode not in (0, 1, 2):
        bad.append(f"exit {p.returncode}")
    if p.returncode != 0 and not out:
        bad.append("a failure without a line")
    said = [w for w in SIGNAL_WORDS if w in p.stdout]
    if said:
        bad.append(f"output speaks of a signal ({said[0]})")
    if bad:
        tail = "\n    ".join(out.splitlines()[-6:])
        failures.append(f"hp {' '.join(argv)}: {', '.join(bad)}\n    {tail}")
    return p.returncode


def flags_of(help_text):
    """Each flag of a --help text, with the values it lists ('a | b | c' or 'a|b|c') if any."""
    flags = {}
    for line in help_text.splitlines():
        for m in re.finditer(r"--[a-z][a-z0-9._-]*", line):
            flag = m.group(0)
            if flag in ("--help", "--section.key"):
                continue
            flags.setdefault(flag, set())
            rest = line[m.end():]
            alts = re.match(r"[ =]*(?:[A-Z][A-Z_]*\s+)?([a-z0-9][a-z0-9_:-]*(?:\s*\|\s*[a-z0-9][a-z0-9_:-]*)+)", rest)
            if alts:
                flags[flag] |= {a.strip().rstrip(":") for a in alts.group(1).split("|")}
    for flag, values in LISTED_IN_PROSE.items():
        if flag in flags:
            flags[flag] |= values
    return flags


def main():
    hp = os.path.abspath(sys.argv[1])
    cwd = tempfile.mkdtemp(prefix="hp_every_flag_")
    p = subprocess.run([hp, "--help"], stdout=subprocess.PIPE, text=True)
    listed = [c for c in COMMANDS if re.search(rf"^\s+{c}\s", p.stdout, re.M)]
    if listed != COMMANDS:
        failures.append(f"hp --help lists {listed}, this test knows {COMMANDS}")
    run(hp, ["--version"], cwd)
    run(hp, ["nosuchcommand"], cwd)
    for cmd in COMMANDS:
        h = subprocess.run([hp, cmd, "--help"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if h.returncode != 0:
            failures.append(f"hp {cmd} --help: exit {h.returncode}")
        flags = flags_of(h.stdout)
        if not flags:
            failures.append(f"hp {cmd} --help lists no flags")
        base = BASE.get(cmd, [])
        for flag, values in sorted(flags.items()):
            run(hp, [cmd] + base + [flag, "x!"], cwd)   # a value no flag takes
            if flag in VALUE_RUNS.get(cmd, ()):
                for v in sorted(values):
                    run(hp, [cmd] + base + [flag, v], cwd)
        if cmd in ("run", "bench"):
            for combo in COMBOS:
                run(hp, [cmd] + base + combo, cwd)
    print(f"check_every_flag: {runs} invocations, {len(failures)} ended badly")
    for f in failures:
        print("FAIL " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
