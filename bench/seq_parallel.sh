#!/bin/sh
# seq_parallel.sh - which sequence parallelism to pick: Ulysses, ring CP and the 2-D Ulysses x
# ring at the same world, side by side in one run on one model: step time and the bytes a rank
# moves per step on the ulysses and cp groups (hp plan's traffic, which the verifier checks
# equal to the counters for every recipe).
#   bench/seq_parallel.sh [HP] [MODEL] [WORLD]        defaults: build/hp bench 4
hp=${1:-build/hp}; model=${2:-bench}; W=${3:-4}
base="--model $model --batch 4 --seq-len 512"
printf '%-34s %10s %14s %14s\n' layout "step ms" "ulysses B" "cp B"
for layout in "--ulysses $W" "--cp $W --cp-rotate ring" "--cp $W --cp-rotate allgather" \
              "--ulysses 2 --cp $((W / 2)) --cp-rotate ring"; do
  # step 3's time from its line's tps (tokens per second per rank): B x S x 1000 / (tps x world)
  tps=$("$hp" run $base $layout --steps 3 2>&1 | sed -n 's/^step: *3  .*  tps: \([0-9,]*\)  .*/\1/p' | tr -d ,)
  ms=$(awk -v t="$tps" -v w="$W" 'BEGIN { if (t > 0) printf "%.1f", 4 * 512 * 1000 / (t * w) }')
  traffic=$("$hp" plan $base $layout --memory 2>/dev/null)
  ub=$(printf '%s\n' "$traffic" | awk '$1 == "ulysses" { s += $3 } END { print s + 0 }')
  cb=$(printf '%s\n' "$traffic" | awk '$1 == "cp" && $2 != "" && $3 ~ /^[0-9]+$/ { s += $3 } END { print s + 0 }')
  printf '%-34s %10s %14s %14s\n' "$layout" "$ms" "$ub" "$cb"
done
