#!/usr/bin/env python3
"""check_torchtitan_keys.py HP - every key of the installed TorchTitan's JobConfig (its dataclasses,
torchtitan/config/job_config.py, 0.2.x: the TOML era) is a key hp knows: a job file of every key
at TorchTitan's default (None left out: TOML has none) is read by `hp plan` with exit 0, and each
key alone at a value that is not its default is accepted or refused in one line naming it (or
one of its flags: --ac for activation_checkpoint.mode).
Run with an interpreter that imports torchtitan; exit 77 (skip) when none does, 1 on a failure."""
import dataclasses, os, re, subprocess, sys, tempfile, typing
try:
    from torchtitan.config.job_config import JobConfig
except Exception as e:  # noqa: BLE001
    print(f"check_torchtitan_keys: SKIP: torchtitan.config.job_config does not import ({e})")
    sys.exit(77)
hp = sys.argv[1]


def walk(cls, pre=""):
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        t = hints[f.name]
        if dataclasses.is_dataclass(t):
            yield from walk(t, pre + f.name + ".")
        else:
            d = f.default if f.default is not dataclasses.MISSING else (
                f.default_factory() if f.default_factory is not dataclasses.MISSING else None)
            yield pre + f.name, d


def toml(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, list):
        return "[" + ", ".join(toml(x) for x in v) + "]"
    return '"' + str(v).replace("\\", "\\\\").replace('"', '\\"') + '"'


keys = [(k, v) for k, v in walk(JobConfig) if v is not None and k != "job.config_file"]
tmp = tempfile.mkdtemp()
data = os.path.join(tmp, "t.bin")
with open(data, "wb") as f:   # an llm.c shard of 70000 byte tokens (docs/data.md)
    import struct
    f.write(struct.pack("<256i", 20240520, 1, 70000, *([0] * 253)) + struct.pack("<70000H", *([7] * 70000)))


def write(path, entries):
    secs = {}
    for k, v in entries:
        s, _, name = k.rpartition(".")
        secs.setdefault(s, []).append(f"{name} = {toml(v)}")
    with open(path, "w") as f:
        for s, lines in secs.items():
            f.write(f"[{s}]\n" + "\n".join(lines) + "\n\n")


full = os.path.join(tmp, "defaults.toml")
write(full, keys + [("training.dataset_path", data)])
r = subprocess.run([hp, "plan", "--config", full], capture_output=True, text=True)
if r.returncode != 0:
    print(f"FAIL: every TorchTitan key at its default: hp plan exit {r.returncode}: {r.stderr.strip()}")
    sys.exit(1)
print(f"check_torchtitan_keys: {len(keys)} keys of TorchTitan's JobConfig at their defaults: hp plan reads them (exit 0)")
# a refusal names the key or one of its flags (the schema's flags column: --ac, --async-tp, ...)
schema = subprocess.run([hp, "run", "--help-config"], capture_output=True, text=True).stdout
flags = {}
for row in schema.splitlines():
    c = [x.strip() for x in row.split("|")]
    if row.startswith("| ") and len(c) > 6 and "." in c[1]:
        flags[c[1]] = [f for f in c[5].split() if f.startswith("--")]
bad = 0
for k, v in keys:
    other = (not v) if isinstance(v, bool) else v + 3 if isinstance(v, int) else "zz" if isinstance(v, str) else ["zz"] \
        if isinstance(v, list) else v * 2 + 1
    one = os.path.join(tmp, "one.toml")
    write(one, [(k, other), ("training.dataset_path", data)])
    r = subprocess.run([hp, "plan", "--config", one], capture_output=True, text=True)
    lines = [l for l in r.stderr.splitlines() if not l.startswith("hp: note:")]
    if r.returncode not in (0, 2) or (r.returncode == 2 and (len(lines) != 1 or not any(re.search(r"(^|[^\w-])" + re.escape(n) + r"\b", lines[0])
                                                   for f in [k.rpartition(".")[2]] + flags.get(k, [])
                                                   for n in (f, f.lstrip("-"))))):
        print(f"FAIL: {k} = {toml(other)}: exit {r.returncode}, {lines}")
        bad += 1
print(f"check_torchtitan_keys: each key at another value: accepted, or refused in one line naming it ({bad} failures)")
sys.exit(1 if bad else 0)
