#!/bin/sh
# run_jobfile_torchtitan.sh HP_BINARY EXAMPLES_DIR - TorchTitan's own debug_model.toml as it ships
# (examples/torchtitan_debug_model.toml, v0.2.2) and the older key names of its 2025 files
# (docs/job_file.md, "TorchTitan's debug_model.toml"):
# 1. as it ships: exit 2, one line naming training.dataset = "c4_test" and training.dataset_path;
# 2. with --training.dataset_path FILE (and a smaller seq_len, batch, steps): it trains;
# 3. a file in 2025's names (checkpoint.enable_checkpoint, validation.enabled, [float8]
#    filter_fqns = ["output"], lr_scheduler.lr_min, ...) trains, and its config.toml holds them
#    under today's names; a key given with its older name too is refused in one line;
# 4. validation.enabled with a named validation.dataset and no validation.dataset_path: exit 2.
hp=$(cd "$(dirname "$1")" && pwd)/$(basename "$1"); ex=$(cd "$2" && pwd)
[ -x "$hp" ] && [ -d "$ex" ] || { echo "usage: run_jobfile_torchtitan.sh HP_BINARY EXAMPLES_DIR" >&2; exit 2; }
T=$(mktemp -d) || exit 2
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
tt=$ex/torchtitan_debug_model.toml
python3 "$ex/../scripts/text_to_llmc.py" "$ex/../docs/model.md" "$T/md" >/dev/null || fail "text_to_llmc.py"

"$hp" run --config "$tt" >"$T/1.out" 2>"$T/1.err"; rc=$?
[ $rc -eq 2 ] || fail "debug_model.toml as it ships: exit $rc, want 2"
[ "$(wc -l <"$T/1.err")" -eq 1 ] || fail "debug_model.toml as it ships: not one line: $(cat "$T/1.err")"
grep -q ':[0-9]*: training.dataset = "c4_test": hp reads token files, not TorchTitan.s named datasets: give training.dataset_path' \
  "$T/1.err" || fail "debug_model.toml as it ships: $(cat "$T/1.err")"
echo "as it ships: exit 2: $(cat "$T/1.err")"

(cd "$T" && "$hp" run --config "$tt" --training.dataset_path "$T/md_train.bin" --training.seq_len 64 \
  --training.local_batch_size 2 --training.steps 2 --job.dump_folder "$T/a" --json "$T/a.json" >"$T/2.out" 2>"$T/2.err") ||
  fail "debug_model.toml with --training.dataset_path: exit $? ($(tail -1 "$T/2.err"))"
python3 -c "import json,sys; l=json.load(open(sys.argv[1]))['losses']; sys.exit(0 if len(l) == 2 else 'FAIL: %s' % l); " "$T/a.json" ||
  exit 1
grep -q '^name = "llama3"' "$T/a/config.toml" && grep -q '^flavor = "debugmodel"' "$T/a/config.toml" ||
  fail "config.toml is not TorchTitan's llama3 debugmodel"
echo "with --training.dataset_path: 2 steps of llama3 debugmodel: $(grep -c '^step:' "$T/2.out") step lines"

cat >"$T/old.toml" <<TOML
# TorchTitan's key names of 2025 (its job files before the v0.2 renames)
[job]
print_args = false
use_for_integration_test = true
[lr_scheduler]
warmup_steps = 1
lr_min = 0.1
[training]
local_batch_size = 2
seq_len = 32
steps = 2
dataset = "c4_test"
dataset_path = "$T/md_train.bin"
compile = false
seed = 7
[checkpoint]
enable_checkpoint = true
folder = "ck"
interval = 2
initial_load_model_weights_only = true
last_save_model_weights_only = false
[float8]
enable_fsdp_float8_all_gather = false
precompute_float8_dynamic_scale_for_fsdp = false
filter_fqns = ["output"]
[validation]
enabled = false
dataset = "c4_validation"
freq = 5
steps = 10
[memory_estimation]
enabled = false
TOML
"$hp" run --config "$T/old.toml" --job.dump_folder "$T/b" >"$T/3.out" 2>"$T/3.err" ||
  fail "2025's key names: exit $? ($(tail -1 "$T/3.err"))"
python3 - "$T/b/config.toml" <<'PY' || exit 1
import sys, tomllib
c = tomllib.load(open(sys.argv[1], "rb"))
want = {("checkpoint", "enable"): True, ("lr_scheduler", "min_lr_factor"): 0.1, ("debug", "seed"): 7,
        ("quantize", "linear", "float8", "filter_fqns"): ["output"], ("validation", "enable"): False}
for path, v in want.items():
    t = c
    for p in path:
        t = t.get(p, {})
    if t != v:
        sys.exit(f"FAIL: config.toml {'.'.join(path)} = {t!r}, want {v!r} (from its older name)")
PY
[ -d "$T/b/ck/step-2" ] || fail "checkpoint.enable_checkpoint = true saved no checkpoint in $T/b/ck"
echo "2025's key names: read as today's (config.toml), checkpoint saved"

printf '[checkpoint]\nenable = false\nenable_checkpoint = true\n' >"$T/twice.toml"
"$hp" plan --config "$T/twice.toml" >/dev/null 2>"$T/4.err"; rc=$?
[ $rc -eq 2 ] && grep -q "twice.toml:3: checkpoint.enable_checkpoint is checkpoint.enable, given already (.*twice.toml:2: checkpoint.enable)" \
  "$T/4.err" || fail "a key and its older name: exit $rc: $(cat "$T/4.err")"
printf '[validation]\nenabled = true\ndataset = "c4_validation"\nsteps = 2\n' >"$T/val.toml"
"$hp" run --config "$T/val.toml" >/dev/null 2>"$T/5.err"; rc=$?
[ $rc -eq 2 ] && grep -q 'val.toml:3: validation.dataset = "c4_validation": .*give validation.dataset_path' "$T/5.err" ||
  fail "a named validation.dataset: exit $rc: $(cat "$T/5.err")"
echo "PASS: TorchTitan's debug_model.toml and its older key names"
