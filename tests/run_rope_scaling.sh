#!/bin/sh
# run_rope_scaling.sh HP DIR - Llama 3.1's rope_scaling in a config.json is applied, not read as
# absent: a small model whose original context (8) is below its sequence (32) trains under
# tp 2 x dp_shard 2 and verifies against its one-process reference; its loss differs from the
# same model without rope_scaling (its lower frequencies are rescaled); its dump names the
# rescale; a checkpoint of it does not resume under plain RoPE.
set -eu
hp=$1 dir=$2
fail() { echo "FAIL: $*"; exit 1; }
rm -rf "$dir"; mkdir -p "$dir"
base='"model_type": "llama", "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
  "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 256, "rope_theta": 10000.0'
printf '{%s}\n' "$base" >"$dir/plain.json"
printf '{%s, "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
  "high_freq_factor": 4.0, "original_max_position_embeddings": 8}}\n' "$base" >"$dir/scaled.json"
export OPENBLAS_NUM_THREADS=1
"$hp" run --model-config "$dir/scaled.json" --tp 2 --dp-shard 2 --steps 2 --verify --quiet >"$dir/verify.log" 2>&1 ||
  { cat "$dir/verify.log"; fail "the rescaled model does not verify under tp 2 x dp_shard 2"; }
grep -q '^verify: PASS' "$dir/verify.log" || { cat "$dir/verify.log"; fail "no verify: PASS"; }
"$hp" run --model-config "$dir/scaled.json" --steps 1 --json "$dir/scaled.out.json" --dump "$dir/dump" --quiet \
  --checkpoint-dir "$dir/ck" --checkpoint-every 1
"$hp" run --model-config "$dir/plain.json" --steps 1 --json "$dir/plain.out.json" --quiet
python3 - "$dir" <<'PY'
import json, sys
d = sys.argv[1]
a = json.load(open(d + "/scaled.out.json"))["losses_exact"]
b = json.load(open(d + "/plain.out.json"))["losses_exact"]
if a == b: print("FAIL: rope_scaling changed no loss: %s" % a); sys.exit(1)
r = json.load(open(d + "/dump/result.json"))["model"].get("rope_scaling")
if not r or r.get("rope_type") != "llama3" or r.get("factor") != 8: print("FAIL: the dump names no rescale: %s" % r); sys.exit(1)
print("rope_scaling: loss %s rescaled, %s plain; the dump names %s" % (a, b, r))
PY
if "$hp" run --model-config "$dir/plain.json" --steps 2 --resume "$dir/ck" --quiet >"$dir/resume.log" 2>&1; then
  fail "a rescaled model's checkpoint resumed under plain RoPE"
fi
grep -q "model config rope_factor: 0 in this run, 8 in the checkpoint" "$dir/resume.log" ||
  { cat "$dir/resume.log"; fail "the refusal does not name rope_factor"; }
echo "run_rope_scaling: Llama 3.1's rope_scaling applied, verified, dumped and checkpointed"
