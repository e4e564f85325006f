#!/bin/sh
# run_plan_vs_bench.sh - measured against predicted: `hp bench --memory` runs FSDP jobs at
# dp_shard 1, 2, 4 and reports each rank's allocated persistent (p, g, m, v shards) and
# working (one gathered unit + its grads) bytes; `hp plan --memory` must predict exactly those
# numbers for every rank.
#   run_plan_vs_bench.sh HP_BINARY [MODEL]
hp=$1; model=${2:-small}
[ -x "$hp" ] || { echo "usage: run_plan_vs_bench.sh HP_BINARY [MODEL]" >&2; exit 2; }
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
"$hp" bench --memory --model "$model" --shards 1,2,4 --json "$tmp/bench.json" >"$tmp/bench.txt" 2>&1 ||
  { cat "$tmp/bench.txt"; echo "FAIL: hp bench --memory exit $?"; exit 1; }
python3 - "$hp" "$model" "$tmp/bench.json" <<'PY'
import json, subprocess, sys
hp, model, path = sys.argv[1:4]
rows = json.load(open(path))
assert len(rows) == 1 + 2 + 4, "want a row per rank of dp_shard 1, 2, 4, got %d" % len(rows)
bad = 0
for r in rows:
    n, k = int(r["dp_shard"]), int(r["rank"])
    out = subprocess.run([hp, "plan", "--model", model, "--dp-shard", str(n), "--nproc", str(n),
                          "--rank", str(k), "--json", "-"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    j = json.loads(out.stdout[out.stdout.index("\n{") + 1:])
    m = j["memory"]
    ok = m["persistent_bytes"] == r["persistent_bytes"] and m["fsdp_working_bytes"] == r["working_bytes"]
    bad += not ok
    print("%s dp_shard %d rank %d: persistent measured %d predicted %d, working measured %d predicted %d"
          % ("ok  " if ok else "FAIL", n, k, r["persistent_bytes"], m["persistent_bytes"],
             r["working_bytes"], m["fsdp_working_bytes"]))
sys.exit(1 if bad else 0)
PY
rc=$?
[ "$rc" -eq 0 ] && echo "plan vs bench: PASS"
exit "$rc"
