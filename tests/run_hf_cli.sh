#!/bin/sh
# run_hf_cli.sh HP DIR - the Hugging Face folder through hp's commands: a checkpoint exported as
# hp's file and as an HF folder (hp export --format hf); `hp run --load` of the folder trains
# the very losses (%.17g, every bit) of `--load` of the file, one process and tp 2 x dp_shard 2,
# and --verify passes from the folder under tp 2; `hp export --format gguf` writes a GGUF file
# (magic, version 3) in F32, F16 and BF16.
set -eu
hp=$1 dir=$2
rm -rf "$dir" && mkdir -p "$dir"
export OPENBLAS_NUM_THREADS=1
fail() { echo "FAIL: $*"; exit 1; }
"$hp" run --steps 2 --checkpoint-dir "$dir/ck" --checkpoint-every 2 --quiet >/dev/null || fail "the checkpoint run"
"$hp" export "$dir/ck" --out "$dir/model.safetensors" || fail "hp export"
"$hp" export "$dir/ck" --format hf --out "$dir/hf" || fail "hp export --format hf"
for f in config.json generation_config.json model.safetensors; do [ -s "$dir/hf/$f" ] || fail "the folder has no $f"; done
losses() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['losses_exact'])" "$1"; }
for layout in "" "--tp 2 --dp-shard 2"; do
  # shellcheck disable=SC2086
  "$hp" run --steps 3 $layout --load "$dir/model.safetensors" --json "$dir/file.json" --quiet >/dev/null || fail "--load FILE $layout"
  # shellcheck disable=SC2086
  "$hp" run --steps 3 $layout --load "$dir/hf" --json "$dir/hf.json" --quiet >/dev/null || fail "--load DIR $layout"
  a=$(losses "$dir/file.json"); b=$(losses "$dir/hf.json")
  [ -n "$a" ] && [ "$a" = "$b" ] || fail "--load of the HF folder ($layout): losses $b, of the file $a"
  echo "PASS: --load DIR = --load FILE ${layout:-(one process)}: $a"
done
"$hp" run --tp 2 --steps 3 --verify --load "$dir/hf" >"$dir/verify.log" 2>&1 || { cat "$dir/verify.log"; fail "--verify from the folder"; }
grep -q "verify: PASS" "$dir/verify.log" || fail "no verify: PASS"
for t in float32 float16 bfloat16; do
  "$hp" export "$dir/ck" --format gguf --export-dtype $t --out "$dir/m-$t.gguf" || fail "hp export --format gguf ($t)"
  python3 -c "import struct,sys; b=open(sys.argv[1],'rb').read(8); sys.exit(0 if b[:4]==b'GGUF' and struct.unpack('<I',b[4:])[0]==3 else 1)" \
    "$dir/m-$t.gguf" || fail "m-$t.gguf is not GGUF v3"
done
echo "PASS: hp export --format hf / gguf and hp run --load DIR"
