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
# --export-dtype bfloat16: every parameter the RNE cast of the fp32 export's (PyTorch's integer
# rule, written here from its definition), and a bf16 run loaded from it starts where one loaded
# from the fp32 export does (its forward casts the master to the same bf16 values)
"$hp" export "$dir/ck" --out "$dir/model-bf16.safetensors" --export-dtype bfloat16 || fail "export bf16 exited $?"
"$hp" run --dp-shard 2 --steps 1 --load "$dir/model-bf16.safetensors" --dump "$dir/dump-bf16" --quiet \
      --mixed-precision-param bfloat16 --json "$dir/bf16-from-bf16.json" || fail "--load of the bf16 export exited $?"
"$hp" run --dp-shard 2 --steps 1 --load "$dir/model.safetensors" --quiet \
      --mixed-precision-param bfloat16 --json "$dir/bf16-from-f32.json" || fail "bf16 run from the fp32 export exited $?"
"$py" - "$here/.." "$dir" <<'PY' || exit 1
import json, struct, sys
sys.path.insert(0, sys.argv[1])
import read_safetensors as rs
d = sys.argv[2]
_, meta, tf, vf = rs.read(d + "/model.safetensors")
_, metab, tb, vb = rs.read(d + "/model-bf16.safetensors")
_, _, tl, vl = rs.read(d + "/dump-bf16/model.safetensors")
def rne(x):
    u = struct.unpack("<I", struct.pack("<f", x))[0]
    if (u & 0x7FFFFFFF) > 0x7F800000: return (u >> 16) | 0x40
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) & 0xFFFF
def widen(b): return struct.unpack("<f", struct.pack("<I", b << 16))[0]
bad = [n for n in tf if tb[n][0] != "BF16" or vb[n] != [rne(x) for x in vf[n]]]
bad += [n for n in tf if vl[n] != [widen(b) for b in vb[n]]]
if bad or metab.get("export_dtype") != "bfloat16" or sorted(tf) != sorted(tb):
    print("FAIL: bf16 export:", bad[:5], metab)
    sys.exit(1)
la = json.load(open(d + "/bf16-from-bf16.json"))["losses"]
lb = json.load(open(d + "/bf16-from-f32.json"))["losses"]
if la != lb:
    print("FAIL: bf16 step-1 loss from the bf16 export", la, "!= from the fp32 export", lb)
    sys.exit(1)
print(f"ok    --export-dtype bfloat16: {len(tf)} tensors the RNE cast, loaded back exactly; bf16 step-1 loss {la[0]!r} equal")
PY
echo "export check: PASS"
