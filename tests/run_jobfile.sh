#!/bin/sh
# run_jobfile.sh - a TorchTitan job file end to end (docs/job_file.md, training-job.md §1):
#   run_jobfile.sh HP_BINARY EXAMPLES_DIR
# 1. hp run --config examples/debug_model.toml (2 ranks: the launched ranks read the file too)
#    writes {dump_folder}/config.toml before step 1, and it holds every key of the schema
#    (hp run --help-config), read by Python's own TOML reader (tomllib);
# 2. hp run --config on that config.toml trains the same losses bit for bit (the --json files);
# 3. job.print_config prints exactly that file; the command line overrides the file
#    (--training.steps 2: two losses, steps = 2 in config.toml);
# 4. hp plan --config examples/llama3_small.toml: TorchTitan's debugmodel, the notes of the keys
#    hp does not implement (at their defaults) and of those that mean nothing here;
# 5. docs/job_file.md holds every row of the schema as hp run --help-config prints it.
# Exits 1 on the first failure with one line saying which.
hp=$1; ex=$2
[ -x "$hp" ] && [ -d "$ex" ] || { echo "usage: run_jobfile.sh HP_BINARY EXAMPLES_DIR" >&2; exit 2; }
T=$(mktemp -d) || exit 2
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$hp" run --config "$ex/debug_model.toml" --job.dump_folder "$T/a" --json "$T/a.json" >"$T/a.out" 2>"$T/a.err" ||
  fail "debug_model.toml: exit $? ($(tail -1 "$T/a.err"))"
[ -s "$T/a/config.toml" ] || fail "no $T/a/config.toml"
"$hp" run --help-config >"$T/schema.md" || fail "hp run --help-config"
python3 - "$T/a/config.toml" "$T/schema.md" "$T/a" <<'PY' || exit 1
import sys, tomllib
cfg = tomllib.load(open(sys.argv[1], "rb"))
keys = [l.split("|")[1].strip() for l in open(sys.argv[2]) if l.startswith("| ") and "." in l.split("|")[1]]
def leaves(t, pre=""):   # nested sections ([quantize.linear.float8]) flattened to dotted keys
    for k, v in t.items():
        if isinstance(v, dict): yield from leaves(v, f"{pre}{k}.")
        else: yield f"{pre}{k}", v
flat = dict(leaves(cfg))
missing = [k for k in keys if k != "job.config_file" and k not in flat]
if missing: sys.exit(f"FAIL: config.toml lacks {missing}")
want = {"training.steps": 5, "optimizer.name": "AdamW", "optimizer.lr": 8e-4, "parallelism.data_parallel_shard_degree": 2,
        "lr_scheduler.decay_type": "cosine", "job.dump_folder": sys.argv[3], "model.flavor": "tiny"}
for k, v in want.items():
    if flat.get(k) != v: sys.exit(f"FAIL: config.toml {k} = {flat.get(k)!r}, want {v!r}")
print(f"config.toml: {len(flat)} keys, every one of the schema's {len(keys) - 1}")
PY

"$hp" run --config "$T/a/config.toml" --json "$T/b.json" >"$T/b.out" 2>"$T/b.err" ||
  fail "rerun of config.toml: exit $? ($(tail -1 "$T/b.err"))"
python3 - "$T/a.json" "$T/b.json" <<'PY' || exit 1
import json, struct, sys
a, b = (json.load(open(p))["losses"] for p in sys.argv[1:3])
bits = lambda xs: [struct.pack("<d", x) for x in xs]
if len(a) != 5 or bits(a) != bits(b): sys.exit(f"FAIL: rerun losses differ: {a} vs {b}")
print("rerun of config.toml: the same 5 losses bit for bit:", a)
PY

"$hp" run --config "$T/a/config.toml" --job.print_config --training.steps 2 --json "$T/c.json" --quiet \
  --job.dump_folder "$T/c" >"$T/c.out" 2>"$T/c.err" || fail "print_config run: exit $? ($(tail -1 "$T/c.err"))"
cmp -s "$T/c.out" "$T/c/config.toml" || fail "job.print_config did not print config.toml"
grep -qx "steps = 2" "$T/c/config.toml" || fail "--training.steps 2 did not override the file's steps"
grep -qx "print_config = true" "$T/c/config.toml" || fail "config.toml lacks print_config = true"
python3 -c "import json,sys; n=len(json.load(open(sys.argv[1]))['losses']); sys.exit(0 if n == 2 else 'FAIL: %d losses, want 2' % n)" \
  "$T/c.json" || exit 1

"$hp" plan --config "$ex/llama3_small.toml" >"$T/p.out" 2>"$T/p.err" || fail "plan llama3_small.toml: $(tail -1 "$T/p.err")"
grep -q "model llama3-debugmodel (dense), world 2, seq_len 256, global batch 16" "$T/p.out" || fail "plan: not the debugmodel"
grep -q "^hp: note: TorchTitan keys hp does not implement, at their defaults (off): profiling.enable_profiling" "$T/p.err" ||
  fail "plan: no note of the TorchTitan-only keys"
grep -q "^hp: note: TorchTitan keys with no meaning in hp, accepted and ignored: metrics.disable_color_printing" "$T/p.err" ||
  fail "plan: no note of the ignored keys"
# docs/job_file.md tabulates the schema: every row of --help-config, as the binary prints it
doc="$ex/../docs/job_file.md"
grep '^| ' "$T/schema.md" | while IFS= read -r row; do
  grep -qxF -- "$row" "$doc" || { echo "FAIL: docs/job_file.md lacks the schema row: $row"; exit 1; }
done || exit 1
echo "PASS: job file end to end"
