#!/bin/sh
# run_async_tp_equal.sh HP DIR ID... - async TP is the plain path, bit for bit: each recipe ID
# (a plain TP + SP recipe of `hp matrix --list`) runs 3 steps with and without --async-tp; the
# step-1 dumps (batch, parameters, gathered gradients, result) must be the same bytes, the
# three losses the same doubles, the traffic counters the same bytes, and the async run's plan
# check must pass (docs/async_tp.md). Exit 0 when every ID passes, 1 otherwise.
# EXTRA (environment): more flags for both runs, e.g. EXTRA="--gemm onednn".
set -eu
hp=$1 dir=$2; shift 2
export OPENBLAS_NUM_THREADS="${OPENBLAS_NUM_THREADS:-1}"
rm -rf "$dir"; mkdir -p "$dir"
list="$dir/recipes.tsv"
"$hp" matrix --list >"$list"
n=0
for id in "$@"; do
  flags=$(awk -F'\t' -v id="$id" '$1 == "recipe" && $2 == id { print $5 }' "$list")
  [ -n "$flags" ] || { echo "FAIL: no recipe $id"; exit 1; }
  # shellcheck disable=SC2086
  "$hp" run $flags ${EXTRA:-} --steps 3 --quiet --dump "$dir/$id-plain" --json "$dir/$id-plain.json"
  # shellcheck disable=SC2086
  "$hp" run $flags ${EXTRA:-} --steps 3 --dump "$dir/$id-async" --json "$dir/$id-async.json" --async-tp >"$dir/$id-async.log"
  grep -q "^async tp: step 3: [1-9][0-9]* fused ops overlapped" "$dir/$id-async.log" || {
    cat "$dir/$id-async.log"; echo "FAIL: $id: no fused ops logged for step 3"; exit 1; }
  for f in "$dir/$id-plain"/*; do
    cmp "$f" "$dir/$id-async/$(basename "$f")" || { echo "FAIL: $id: $(basename "$f") differs under --async-tp"; exit 1; }
  done
  python3 - "$dir/$id-plain.json" "$dir/$id-async.json" "$id" <<'PY'
import json, sys
a, b, rid = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3]
bad = []
if a["losses_exact"] != b["losses_exact"]: bad.append("losses %s vs %s" % (a["losses_exact"], b["losses_exact"]))
if a["traffic"] != b["traffic"]: bad.append("traffic counters differ")
if not (b.get("plan_check") or {}).get("pass", False): bad.append("plan check of the async run: %s" % b.get("plan_check"))
if bad: print("FAIL: %s: %s" % (rid, "; ".join(bad))); sys.exit(1)
print("%s: async = plain, bit for bit (losses %s)" % (rid, " ".join(str(x) for x in b["losses"])))
PY
  n=$((n + 1))
done
echo "async_tp_equals_tp: $n recipes, async TP bitwise equal to plain TP"
