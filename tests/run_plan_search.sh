#!/bin/sh
# run_plan_search.sh - `hp plan --search` finds layouts that fit, and its first one is legal and
# fits when planned on its own (hp plan with those degrees, exit 0, peak <= the memory given).
# Without HW the ranking is the stated cost that counts the pipeline's bubble: the header says
# so, every row's cost is its inter-node GB / (1 - its bubble), and the rows are in the order of
# that cost; with MAX_FIRST_BUBBLE=P set, the first row's ideal bubble is below P %.
# The search time is printed, not asserted.
#   run_plan_search.sh HP_BINARY WORLD MODEL MEM SEQ_LEN BATCH [HW]
hp=$1; world=$2; model=$3; mem=$4; seq=$5; batch=$6; hw=$7
[ -x "$hp" ] && [ -n "$batch" ] || { echo "usage: run_plan_search.sh HP WORLD MODEL MEM SEQ BATCH [HW]" >&2; exit 2; }
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
set -- --model "$model" --seq-len "$seq" --batch "$batch"
[ -n "$hw" ] && set -- "$@" --hw "$hw"
t0=$(date +%s%N)
"$hp" plan --search --world "$world" --mem-per-rank "$mem" "$@" >"$tmp/out" 2>"$tmp/err"
rc=$?
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
cat "$tmp/out" "$tmp/err"
echo "search of world $world took $ms ms (not asserted)"
[ "$rc" -eq 0 ] || { echo "FAIL: exit $rc"; exit 1; }
fit=$(sed -n 's/.* legal, \([0-9]*\) fit;.*/\1/p' "$tmp/out")
[ -n "$fit" ] && [ "$fit" -gt 0 ] || { echo "FAIL: no layout fits"; exit 1; }
# rows: # pp schedule dp_rep dp_shd uly cp tp ep etp mb ac peak ...
rows=$(grep -cE '^ +[0-9]+ +[0-9]+ +[a-z0-9-]+ +[0-9]+ +[0-9]+ +[0-9]+ +[0-9]+ +[0-9]+ +[0-9]+ +[0-9]+ +[0-9]+ +[a-z0-9:]+ ' "$tmp/out")
want=$fit; [ "$want" -gt 10 ] && want=10
[ "$rows" -eq "$want" ] || { echo "FAIL: $rows rows, want $want (top 10 of $fit)"; exit 1; }
if [ -z "$hw" ]; then
  grep -qF "ranked by cost = the wire bytes a rank sends between nodes of" "$tmp/out" ||
    { echo "FAIL: the header does not say what the search ranks by"; exit 1; }
  # columns from the end: ... inter-node GB, bubble %, cost GB
  grep -E '^ +[0-9]+ +[0-9]+ +[a-z0-9-]+ ' "$tmp/out" | awk -v max="${MAX_FIRST_BUBBLE:-}" '
    { inter = $(NF - 2); bub = $(NF - 1); sub(/%$/, "", bub); cost = $NF
      want = inter / (1 - bub / 100)
      if (cost - want > 0.002 + 0.002 * want || want - cost > 0.002 + 0.002 * want) {
        printf "FAIL: row %s: cost %s, want inter-node %s / (1 - %s%%) = %.3f\n", $1, cost, inter, bub, want; bad = 1 }
      if (NR > 1 && cost + 0 < last + 0) { printf "FAIL: row %s costs %s, less than the row above (%s)\n", $1, cost, last; bad = 1 }
      if (NR == 1 && max != "" && bub + 0 >= max + 0) { printf "FAIL: the first layout idles %s%% of the step (bubble), limit %s%%\n", bub, max; bad = 1 }
      last = cost }
    END { exit bad }' || exit 1
  echo "ranked by inter-node bytes / (1 - bubble): every row's cost checked, in order"
fi
# the first row, planned alone with its schedule, Ulysses degree and AC mode
set -- $(grep -E '^ +1 ' "$tmp/out" | head -1)
P=$2; SCHED=$3; R=$4; S=$5; U=$6; C=$7; T=$8; EP=$9; ET=${10}; MB=${11}; AC=${12}; peak=${13}
mb_flag=--microbatches; sched=; [ "$P" -gt 1 ] && { mb_flag=--pp-microbatches; sched="--pp-schedule $SCHED"; }
"$hp" plan --model "$model" --seq-len "$seq" --batch "$batch" --nproc "$world" --pp "$P" $sched --dp-replicate "$R" \
  --dp-shard "$S" --ulysses "$U" --cp "$C" --tp "$T" --ep "$EP" --etp "$ET" $mb_flag "$MB" --ac "$AC" --memory >"$tmp/plan" 2>&1 ||
  { cat "$tmp/plan" | tail -3; echo "FAIL: the first layout does not plan (exit $?)"; exit 1; }
bytes=$(sed -n 's/^  peak  *\([0-9]*\) B.*/\1/p' "$tmp/plan")
python3 -c "
import sys
mem = '$mem'
units = {'GiB': 2**30, 'GB': 1e9, 'TiB': 2**40, 'MiB': 2**20}
lim = next(float(mem[:-len(u)]) * s for u, s in units.items() if mem.endswith(u))
peak = float('$bytes')
assert 0 < peak <= lim, (peak, lim)
assert abs(peak / 2**30 - float('$peak')) < 0.01, ('table', '$peak', peak / 2**30)
print('first layout: peak %.2f GiB <= %s' % (peak / 2**30, mem))
" || { echo "FAIL: the first layout's peak"; exit 1; }
echo "plan search: PASS"
