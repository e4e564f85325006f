#!/bin/sh
# run_export.sh HP PYTHON DIR - load(export(checkpoint)) gives the same parameters bit for
# bit: a TP2 x FSDP2 AdamW checkpoint is exported (with and without the moments), read by
# tests/read_safetensors.py, loaded by `hp run --load` under another layout whose --dump
# writes the loaded model back: every tensor equal, bitwise.
set -u
[ $# -eq 3 ] || { echo "usage: run_export.sh HP PYTHON DIR" >&2; exit 2; }
hp=$1 py=$2 dir=$3
here=$(dirname "$0")
rm -rf "$dir" && mkdir -p "$dir" || exit 2
fail() { echo "FAIL: $*"; exit 1; }
"$hp" run --tp 2 --dp-shard 2 --optimizer adamw --steps 2 --checkpoint-dir "$dir/ck" --quiet || fail "save exited $?"
"$hp" export "$dir/ck/step-2" --out "$dir/model.safetensors" || fail "export exited $?"
"$hp" export "$dir/ck" --out "$dir/full.safetensors" --optimizer || fail "export --optimizer exited $?"
"$py" "$here/../read_safetensors.py" "$dir/model.safetensors" --expect-count 21 \
      --expect-shape tok_embeddings.weight=256x64 --expect-meta step=2 >/dev/null || fail "reader refused the export"
"$py" "$here/../read_safetensors.py" "$dir/full.safetensors" --expect-count 63 \
      --expect-shape optimizer.state.output.weight.exp_avg_sq=256x64 >/dev/null || fail "reader refused the export with moments"
"$hp" run --dp-shard 4 --steps 1 --load "$dir/model.safetensors" --dump "$dir/dump" --quiet || fail "--load of the export exited $?"
"$py" - "$here/.." "$dir/model.safetensors" "$dir/dump/model.safetensors" "$dir/full.safetensors" <<'PY' || exit 1
import sys
sys.path.insert(0, sys.argv[1])
import read_safetensors as rs
_, _, ta, va = rs.read(sys.argv[2])
_, _, tb, vb = rs.read(sys.argv[3])
_, _, tc, vc = rs.read(sys.argv[4])
bad = [n for n in ta if va[n] != vb.get(n)] + [n for n in ta if va[n] != vc.get(n)]
if bad or sorted(ta) != sorted(tb):
    print("FAIL: tensors differ after load(export):", bad[:5])
    sys.exit(1)
print(f"ok    load(export(checkpoint)): {len(ta)} tensors bit-identical")
PY
echo "export check: PASS"
