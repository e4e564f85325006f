#!/bin/sh
# run_format.sh HP PYTHON DIR - the layout on disk: under HSDP x TP (replicas over
# dp_replicate, norms replicated over tp) each element is written once, so the pieces hold
# exactly the model state (params + exp_avg + exp_avg_sq); every rank file is a real
# safetensors file; --checkpoint-keep 2 leaves the newest two step folders and no temporary
# one; a checkpoint saved by one rank loads under four ranks each reading less than the
# whole state.
set -u
[ $# -eq 3 ] || { echo "usage: run_format.sh HP PYTHON DIR" >&2; exit 2; }
hp=$1 py=$2 dir=$3
here=$(dirname "$0")
rm -rf "$dir" && mkdir -p "$dir" || exit 2
fail() { echo "FAIL: $*"; exit 1; }
"$hp" run --dp-replicate 2 --dp-shard 2 --tp 2 --optimizer adamw --steps 3 --checkpoint-dir "$dir/ck" \
      --checkpoint-every 1 --checkpoint-keep 2 --quiet || fail "save exited $?"
got=$(cd "$dir/ck" && ls -A | tr '\n' ' ')
[ "$got" = "latest step-2 step-3 " ] || fail "folder holds '$got', want latest step-2 step-3"
for f in "$dir"/ck/step-3/rank-*.safetensors; do
  "$py" "$here/../read_safetensors.py" "$f" --expect-meta step=3 >/dev/null || fail "$f is not a safetensors file"
done
"$py" - "$dir/ck/step-3/index.json" <<'PY' || exit 1
import json, math, sys
ix = json.load(open(sys.argv[1]))
full = sum(math.prod(t["shape"]) for t in ix["tensors"]) * 4 * 3
pieces = sum(p["bytes"] for f in ix["files"] for p in f["pieces"])
files = sum(f["bytes"] for f in ix["files"])
ranks = sorted(f["rank"] for f in ix["files"])
print(f"ok    model state {full} bytes; pieces {pieces} bytes; files {files} bytes "
      f"(+{files - pieces} of headers) from ranks {ranks} of {ix['degrees']['world']}")
if pieces != full:
    sys.exit("FAIL: the pieces do not hold the model state exactly once")
if any(r >= 4 for r in ranks):
    sys.exit("FAIL: a dp_replicate replica (rank >= 4) wrote pieces")
PY
"$hp" run --optimizer adamw --steps 1 --checkpoint-dir "$dir/one" --quiet || fail "single-rank save exited $?"
"$hp" run --dp-shard 4 --optimizer adamw --steps 2 --resume "$dir/one" >"$dir/resume.log" || fail "resume under 4 ranks exited $?"
"$py" - "$dir/one/step-1/index.json" "$dir/resume.log" <<'PY' || exit 1
import json, math, re, sys
ix = json.load(open(sys.argv[1]))
full = sum(math.prod(t["shape"]) for t in ix["tensors"]) * 4 * 3
m = re.search(r"rank 0 read (\d+) bytes", open(sys.argv[2]).read())
if not m or not int(m.group(1)) < full:
    sys.exit(f"FAIL: rank 0 read {m and m.group(1)} bytes of a {full}-byte state from a single-rank checkpoint")
print(f"ok    a single-rank checkpoint under 4 ranks: rank 0 read {m.group(1)} of {full} bytes")
PY
echo "format check: PASS"
