#!/usr/bin/env bash
# bench/checkpoint.sh - what a checkpoint costs: save and load time and bytes per rank of the
# bench model (D 512, 8 layers, V 256, AdamW) under FSDP over 1, 2 and 4 ranks, and the
# checkpoint's size against the model state's (parameters + exp_avg + exp_avg_sq, fp32).
#   bench/checkpoint.sh                    # RANKS="1 2 4", MODEL=bench, ROUNDS=2, BUILD_DIR=build
#   RANKS="2" ROUNDS=1 OUT=/tmp/ck bench/checkpoint.sh
# Each save is `hp run --steps 1 --checkpoint-dir` (the step is the cheap S 32 x B 4 one: the
# checkpoint does not depend on the batch); each load is a `--resume` of it under the same
# ranks. Times are the slowest rank's, barrier to barrier, best of ROUNDS (the machine may be
# shared); they include fsync of every file and folder. Bytes are the min/max per rank:
# a load reads the overlap of its shards plus its share of the CRC32 checks.
set -euo pipefail
cd "$(dirname "$0")/.."
RANKS=${RANKS:-"1 2 4"}
MODEL=${MODEL:-bench}
ROUNDS=${ROUNDS:-2}
BUILD_DIR=${BUILD_DIR:-build}
OUT=${OUT:-${TMPDIR:-/tmp}/hp-bench-checkpoint}
HP=$BUILD_DIR/hp
[ -x "$HP" ] || { echo "bench/checkpoint.sh: $HP not built (cmake --build $BUILD_DIR)" >&2; exit 2; }
mkdir -p "$OUT"
flags="--model $MODEL --seq-len 32 --batch 4 --optimizer adamw"
printf '| ranks | save s | save bytes/rank (min-max) | load s | load bytes/rank (min-max) | checkpoint bytes | model state bytes | ratio |\n'
printf '|--:|--:|--:|--:|--:|--:|--:|--:|\n'
for n in $RANKS; do
  best_save="" best_load="" save_bytes="" load_bytes=""
  for r in $(seq "$ROUNDS"); do
    rm -rf "$OUT/ck$n"
    # shellcheck disable=SC2086
    s=$("$HP" run $flags --dp-shard "$n" --steps 1 --checkpoint-dir "$OUT/ck$n" | grep '^hp: saved')
    # shellcheck disable=SC2086
    l=$("$HP" run $flags --dp-shard "$n" --steps 2 --resume "$OUT/ck$n" | grep '^hp: resumed')
    st=$(sed -n 's/.*; \([0-9.]*\) s)$/\1/p' <<<"$s")
    lt=$(sed -n 's/.*; \([0-9.]*\) s)$/\1/p' <<<"$l")
    save_bytes=$(sed -n 's/.*min \([0-9]*\) max \([0-9]*\),.*/\1-\2/p' <<<"$s")
    load_bytes=$(sed -n 's/.*min \([0-9]*\) max \([0-9]*\),.*/\1-\2/p' <<<"$l")
    if [ -z "$best_save" ] || awk "BEGIN{exit !($st < $best_save)}"; then best_save=$st; fi
    if [ -z "$best_load" ] || awk "BEGIN{exit !($lt < $best_load)}"; then best_load=$lt; fi
  done
  read -r ck state < <(python3 - "$OUT/ck$n/step-1" <<'PY'
import json, math, os, sys
d = sys.argv[1]
ix = json.load(open(os.path.join(d, "index.json")))
state = sum(math.prod(t["shape"]) for t in ix["tensors"]) * 4 * 3
print(sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d)), state)
PY
)
  ratio=$(awk "BEGIN{printf \"%.5f\", $ck / $state}")
  printf '| %d | %s | %s | %s | %s | %d | %d | %s |\n' "$n" "$best_save" "$save_bytes" "$best_load" "$load_bytes" "$ck" "$state" "$ratio"
done
