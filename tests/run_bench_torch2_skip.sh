#!/bin/sh
# run_bench_torch2_skip.sh HPDIR OUT - bench/run.sh on the tiny model, one round, with a torch 2
# interpreter that does not exist: it must finish (exit 0), print its table, and say in one line
# that the torch 2 rows are skipped (bench/README.md). 77 when Debian's torch 1.13, the side the
# table needs, is not installed (bench/run.sh would install it as root).
set -u
hpdir=$1 out=$2
/usr/bin/python3 -c 'import torch' 2>/dev/null || { echo "SKIP: /usr/bin/python3 has no torch (apt-get install python3-torch)"; exit 77; }
src=$(cd "$(dirname "$0")/.." && pwd)
rm -rf "$out"; mkdir -p "$out"
TORCH2_PYTHON=/nonexistent/python THREADS=1 MODEL=tiny SEQ=32 BATCH=2 STEPS=1 WARMUP=1 ROUNDS=1 \
  BUILD_DIR=$hpdir OUT=$out/bench bash "$src/bench/run.sh" >"$out/log" 2>&1
rc=$?
cat "$out/log"
[ $rc -eq 0 ] || { echo "FAIL: bench/run.sh exit $rc"; exit 1; }
[ "$(grep -c '^run.sh: torch 2 rows skipped: /nonexistent/python does not import torch >= 2$' "$out/log")" -eq 1 ] ||
  { echo "FAIL: no one line saying the torch 2 rows are skipped"; exit 1; }
grep -q '^torch 2 rows skipped: ' "$out/log" || { echo "FAIL: the table does not say the torch 2 rows are skipped"; exit 1; }
python3 -c 'import json, sys; r = json.load(open(sys.argv[1]))["results"]; sys.exit(0 if len(r) == 1 and r[0]["speedup_vs_torch"] > 0 and "torch2_eager" not in r[0] else 1)' \
  "$out/bench/summary.json" || { echo "FAIL: summary.json lacks the hp / torch 1.13 row, or has torch 2 rows"; exit 1; }
echo "bench/run.sh without torch 2: table printed, torch 2 rows skipped in one line"
