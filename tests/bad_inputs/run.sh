#!/bin/sh
# run.sh - every bad invocation of cases.txt: the expected exit code, exactly one line on
# stderr matching the pattern, no signal, and an answer in under 2 s.
#   run.sh HP_BINARY CASES_FILE
# Prints one PASS/FAIL line per case and a closing "N passed, M failed" line; exits 1 on any failure.
hp=$1; cases=$2
[ -x "$hp" ] && [ -r "$cases" ] || { echo "usage: run.sh HP_BINARY CASES_FILE" >&2; exit 2; }
FILES=$(mktemp -d) || exit 2
trap 'rm -rf "$FILES"' EXIT
export FILES
# the bad Hugging Face config.json files of tests/plan_configs (--model-config)
PLAN_CONFIGS=$(cd "$(dirname "$cases")/../plan_configs" && pwd) || exit 2
export PLAN_CONFIGS
# prepared bad files: short text, not a safetensors file, a truncated header, wrong names
printf 'too short' >"$FILES/short.txt"
printf 'plain text, no header' >"$FILES/not-safetensors.bin"
printf '\350\003\000\000\000\000\000\000{"a":' >"$FILES/truncated.safetensors"
hdr='{"x.weight":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}'
python3 - "$FILES/wrong-names.safetensors" "$hdr" <<'PY'
import struct, sys
h = sys.argv[2].encode()
open(sys.argv[1], "wb").write(struct.pack("<Q", len(h)) + h + b"\0\0\0\0")
PY
: >"$FILES/not-a-folder"
# bad token files (training-job.md §4): bad magic, version, size, an id >= vocab, a headerless
# file, too few windows, an inconsistent Megatron idx (scripts/write_token_files.py bad)
python3 "$(dirname "$cases")/../../scripts/write_token_files.py" bad "$FILES"
"$hp" run --steps 1 --data "$FILES/good.bin" --checkpoint-dir "$FILES/ck-data" --quiet >/dev/null 2>&1
# a validation set of 1000 bytes: 30 windows of seq_len+1 = 33 (docs/metrics.md)
head -c 1000 /dev/zero | tr '\0' 'a' >"$FILES/val-1000.txt"
# bad checkpoints (docs/checkpoints.md): one good AdamW step-1, then a truncated, a corrupted
# (last data byte flipped), a renamed-tensor and a reshaped-tensor copy of it
"$hp" run --optimizer adamw --steps 1 --checkpoint-dir "$FILES/ck" --quiet >/dev/null 2>&1
for c in trunc crc names shape; do cp -r "$FILES/ck/step-1" "$FILES/ck-$c"; done
f=rank-00000.safetensors
python3 - "$FILES/ck-trunc/$f" "$FILES/ck-crc/$f" <<'PY'
import os, sys
os.truncate(sys.argv[1], os.path.getsize(sys.argv[1]) - 100)
b = bytearray(open(sys.argv[2], "rb").read()); b[-1] ^= 0x40; open(sys.argv[2], "wb").write(bytes(b))
PY
sed -i 's/"output.weight"/"output.weigth"/g' "$FILES/ck-names/index.json"
sed -i '0,/\[256, 64\]/s//[512, 64]/' "$FILES/ck-shape/index.json"
# bad Hugging Face folders (hf.h): the good checkpoint exported, then one with another layer
# count in config.json, one missing a tensor, one whose q_proj has half its rows
"$hp" export "$FILES/ck/step-1" --format hf --out "$FILES/hf" >/dev/null 2>&1
for c in layers missing shape vocab; do cp -r "$FILES/hf" "$FILES/hf-$c"; done
# a 512-token model: --prompt text is not its bytes (hp generate needs a tokenizer)
sed -i 's/"vocab_size":[[:space:]]*256/"vocab_size": 512/' "$FILES/hf-vocab/config.json"
sed -i 's/"num_hidden_layers":[[:space:]]*2/"num_hidden_layers": 3/' "$FILES/hf-layers/config.json"
python3 - "$FILES/hf-missing/model.safetensors" "$FILES/hf-shape/model.safetensors" <<'PY'
import json, struct, sys
def rewrite(path, edit):   # a safetensors file with one tensor dropped or cut to its first half
    raw = open(path, "rb").read(); n = struct.unpack("<Q", raw[:8])[0]
    head = json.loads(raw[8:8 + n]); data = raw[8 + n:]; out, blobs, at = {}, [], 0
    for name, t in head.items():
        if name == "__metadata__": out[name] = t; continue
        b = data[t["data_offsets"][0]:t["data_offsets"][1]]
        t, b = edit(name, t, b)
        if t is None: continue
        out[name] = dict(t, data_offsets=[at, at + len(b)]); blobs.append(b); at += len(b)
    h = json.dumps(out).encode(); h += b" " * (-len(h) % 8)
    open(path, "wb").write(struct.pack("<Q", len(h)) + h + b"".join(blobs))
rewrite(sys.argv[1], lambda n, t, b: (None, b) if n == "model.layers.1.mlp.down_proj.weight" else (t, b))
def half(n, t, b):
    if n != "model.layers.0.self_attn.q_proj.weight": return t, b
    return dict(t, shape=[t["shape"][0] // 2, t["shape"][1]]), b[:len(b) // 2]
rewrite(sys.argv[2], half)
PY
# bad job files (docs/job_file.md): one refused key or TOML construct each
J=$FILES/job; mkdir -p "$J"
printf '[training]\nstepz = 3\n' >"$J/unknown_key.toml"
printf '[trainer]\nsteps = 3\n' >"$J/unknown_section.toml"
printf 'steps = 3\n' >"$J/top_key.toml"
printf '[training]\nsteps = "10"\n' >"$J/wrong_type.toml"
printf '[training]\nseq_len = 32.0\n' >"$J/float_for_int.toml"
printf '[training]\nsteps = 0\n' >"$J/out_of_range.toml"
printf '[optimizer]\nname = "Adam"\n' >"$J/enum.toml"
printf '[training]\nsteps = 2\nsteps = 3\n' >"$J/dup_key.toml"
printf '[checkpoint]\nenable = false\nenable_checkpoint = true\n' >"$J/old_name_twice.toml"
printf '[training]\ndataset = "c4_test"\n' >"$J/named_dataset.toml"
printf '[training]\nsteps = 2\n[model]\n[training]\n' >"$J/dup_table.toml"
printf '[training]\nsteps = { a = 1 }\n' >"$J/inline_table.toml"
printf '[[training]]\nsteps = 1\n' >"$J/array_table.toml"
printf 'training.steps = 1\n' >"$J/dotted_key.toml"
printf '[job]\ndescription = 2026-12-02\n' >"$J/date.toml"
printf '[job]\ndescription = """\nx"""\n' >"$J/multiline.toml"
printf '[optimizer]\nlr = inf\n' >"$J/inf.toml"
printf '[compile]\nenable = true\n' >"$J/tt_compile.toml"
printf '[activation_checkpoint]\nmode = "selective"\nselective_ac_option = "op"\n' >"$J/ac_op.toml"
printf '[job]\nconfig_file = "x.toml"\n' >"$J/nested.toml"
printf '[model]\nname = "llama3"\nflavor = "tiny"\n' >"$J/flavor.toml"
printf '[training]\nlocal_batch_size = 3\nglobal_batch_size = 8\n[parallelism]\ndata_parallel_shard_degree = 2\n' >"$J/local_batch.toml"
# bad dumps for hp compare (docs/dump.md): one good dump, another seed's, a bf16 one; copies with
# a file missing, truncated or replaced, and headers edited (a tensor renamed, reshaped, retyped)
"$hp" run --steps 1 --dump "$FILES/dump" --quiet >/dev/null 2>&1
"$hp" run --steps 1 --seed 7 --dump "$FILES/dump-seed7" --quiet >/dev/null 2>&1
"$hp" run --steps 1 --mixed-precision-param bfloat16 --dump "$FILES/dump-bf16" --quiet >/dev/null 2>&1
for c in nograds trunc json noloss fp16 batch init nobatch names shape dtype reduce partials; do cp -r "$FILES/dump" "$FILES/dump-$c"; done
rm "$FILES/dump-nograds/grads.safetensors"
cp "$FILES/dump-seed7/batch.safetensors" "$FILES/dump-batch/"
cp "$FILES/dump-seed7/model.safetensors" "$FILES/dump-init/"
cp "$FILES/dump/model.safetensors" "$FILES/dump-nobatch/batch.safetensors"
printf '{"loss": ' >"$FILES/dump-json/result.json"
sed -i 's/"loss":.*/"loss": "high",/' "$FILES/dump-noloss/result.json"
sed -i 's/"float32"/"float16"/' "$FILES/dump-fp16/result.json"
sed -i 's/^{/{"reduce": {"dtype": "float16", "partials": 2},/' "$FILES/dump-reduce/result.json"
sed -i 's/^{/{"reduce": {"dtype": "float32", "partials": 0},/' "$FILES/dump-partials/result.json"
python3 - "$FILES" <<'PY'
import json, os, struct, sys
d = sys.argv[1]
os.truncate(f"{d}/dump-trunc/grads.safetensors", os.path.getsize(f"{d}/dump-trunc/grads.safetensors") - 100)
def edit(path, fn):   # rewrite a safetensors header, the data unchanged
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    h = fn(json.loads(raw[8:8 + n]))
    b = json.dumps(h).encode()
    open(path, "wb").write(struct.pack("<Q", len(b)) + b + raw[8 + n:])
def rename(h): h["output.weigth"] = h.pop("output.weight"); return h
def reshape(h): h["norm.weight"]["shape"] = [8, 8]; return h
def retype(h): h["norm.weight"]["dtype"] = "I32"; return h
for f in ("model", "grads"):
    edit(f"{d}/dump-names/{f}.safetensors", rename)
    edit(f"{d}/dump-shape/{f}.safetensors", reshape)
edit(f"{d}/dump-dtype/model.safetensors", retype)
PY
# bad GGUF files for hp import (docs/model_io.md): a header promising 3 tensors and nothing after
# it, another architecture, a tensor whose data runs past the end of the file
python3 - "$FILES" <<'PY'
import struct, sys
d = sys.argv[1]
s = lambda t: struct.pack("<Q", len(t)) + t
head = lambda nt, nkv: b"GGUF" + struct.pack("<IQQ", 3, nt, nkv)
open(f"{d}/truncated.gguf", "wb").write(head(3, 0))
open(f"{d}/qwen2.gguf", "wb").write(head(0, 1) + s(b"general.architecture") + struct.pack("<I", 8) + s(b"qwen2"))
info = s(b"w") + struct.pack("<IQIQ", 1, 32, 0, 0)
b = head(1, 0) + info
open(f"{d}/short-data.gguf", "wb").write(b + b"\0" * ((32 - len(b) % 32) % 32) + b"\0" * 64)
PY
# 2 s each (the sanitizer build is several times slower and sets HP_BAD_INPUT_MS)
limit_ms=${HP_BAD_INPUT_MS:-2000}
pass=0; fail=0
out=$FILES/out; err=$FILES/err
while IFS= read -r line; do
  case "$line" in ''|'#'*) continue ;; esac
  code=$(printf '%s' "$line" | sed 's/ *|.*//')
  pattern=$(printf '%s' "$line" | sed 's/^[^|]*| *//; s/ *|[^|]*$//')
  args=$(printf '%s' "$line" | sed 's/.*| *//')
  t0=$(date +%s%N)
  eval "set -- $args"
  "$hp" "$@" >"$out" 2>"$err" </dev/null
  rc=$?
  ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  why=""
  [ "$rc" -ge 128 ] && why="$why killed by signal $((rc - 128));"
  [ "$rc" -eq "$code" ] || why="$why exit $rc, want $code;"
  grep -Eq -- "$pattern" "$err" || why="$why stderr does not match;"
  n=$(grep -c '' "$err")
  [ "$n" -eq 1 ] || why="$why stderr has $n lines, want 1;"
  [ "$ms" -lt "$limit_ms" ] || why="$why took $ms ms (limit $limit_ms);"
  if [ -z "$why" ]; then
    pass=$((pass + 1)); echo "PASS  ${ms} ms  hp $args"
  else
    fail=$((fail + 1)); echo "FAIL  hp $args:$why"
    echo "      pattern: $pattern"; sed 's/^/      stderr: /' "$err"
  fi
done <"$cases"
echo "bad inputs: $pass passed, $fail failed"
[ "$fail" -eq 0 ] && [ "$pass" -ge 40 ]
