#!/bin/sh
# pp.sh - the pipeline benchmark: each schedule at pp 2 (and 4) on one model, side by side in
# one run: step time, each pp rank's measured idle fraction, and the schedule's ideal bubble.
#   bench/pp.sh [HP] [MODEL] [P...]        defaults: build/hp bench 2
# The bench model (D 512, 8 blocks) at B 8 x S 256; ratios, not absolute times, carry over
# between machines. With more ranks than cores the idle fraction includes waiting for a core.
hp=${1:-build/hp}; model=${2:-bench}; shift 2 2>/dev/null || shift $#
ps=${*:-2}
for P in $ps; do
  M=$((2 * P))
  for s in gpipe 1f1b interleaved-1f1b zbv; do
    flags="--model $model --pp $P --pp-schedule $s --pp-microbatches $M --batch 8 --seq-len 256"
    ideal=$("$hp" plan $flags | sed -n 's/.*ideal bubble: \([0-9.]*\).*/\1/p')
    out=$("$hp" run $flags --steps 3 2>&1)
    # step 3's time from its line's tps (tokens per second per rank): B x S x 1000 / (tps x world)
    tps=$(printf '%s\n' "$out" | sed -n 's/^step: *3  .*  tps: \([0-9,]*\)  .*/\1/p' | tr -d ,)
    ms=$(awk -v t="$tps" -v w="$P" 'BEGIN { if (t > 0) printf "%.1f", 8 * 256 * 1000 / (t * w) }')
    idle=$(printf '%s\n' "$out" | sed -n 's/^pipeline (last step): //p')
    printf 'pp %d %-17s ideal bubble %s  step %s ms  %s\n' "$P" "$s" "$ideal" "$ms" "$idle"
  done
done
