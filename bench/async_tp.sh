#!/bin/sh
# async_tp.sh - TP strong scaling with and without --async-tp (docs/async_tp.md): the same
# model, global batch and sequence at tp 1 and tp 2 (SP on), the tp 2 run plain and async, in
# interleaved rounds (plain, async, tp 1, plain, async, tp 1, ...) so that drift of the machine
# falls on all three alike; per run the median step time of the measured steps, then the
# median over the rounds, and the ratios side by side. The async run must also log a nonzero
# count of fused ops every step (it fails otherwise).
#   bench/async_tp.sh [HP] [MODEL] [ROUNDS] [STEPS]     defaults: build/hp bench 5 6
#   BATCH=4 SEQ=512 (environment): the global batch and sequence length
hp=${1:-build/hp}; model=${2:-bench}; rounds=${3:-5}; steps=${4:-6}
B=${BATCH:-4}; S=${SEQ:-512}
base="--model $model --batch $B --seq-len $S --steps $steps"
export OPENBLAS_NUM_THREADS="${OPENBLAS_NUM_THREADS:-1}"
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
# step_ms WORLD FLAGS...: the median time of steps 2..N of one run (each step from its tps figure,
# tokens per second per rank: batch x seq x 1000 / (tps x world)), and under --async-tp the
# step-N fused-op count line checked
step_ms() {
  w=$1; shift
  out=$("$hp" run $base "$@" 2>&1) || { printf '%s\n' "$out" >&2; echo "FAIL: hp run $base $*" >&2; exit 1; }
  case " $* " in *" --async-tp "*)
    printf '%s\n' "$out" | grep -q "^async tp: step $steps: [1-9]" || { echo "FAIL: no fused ops logged" >&2; exit 1; } ;;
  esac
  printf '%s\n' "$out" | sed -n 's/^step: *\([0-9]*\)  .*  tps: \([0-9,]*\)  .*/\1 \2/p' | tr -d , |
    awk -v n="$((B * S))" -v w="$w" '$1 >= 2 && $2 > 0 { print n * 1000 / ($2 * w) }' | sort -g |
    awk '{ v[NR] = $1 } END { if (NR == 0) exit 1; print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
median() { sort -g "$1" | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
r=1
while [ "$r" -le "$rounds" ]; do
  step_ms 2 --tp 2 --sp >>"$tmp/plain" || exit 1
  step_ms 2 --tp 2 --sp --async-tp >>"$tmp/async" || exit 1
  step_ms 1 --tp 1 >>"$tmp/one" || exit 1
  r=$((r + 1))
done
one=$(median "$tmp/one"); plain=$(median "$tmp/plain"); async=$(median "$tmp/async")
echo "model $model, batch $B x seq $S, $rounds interleaved rounds, median of steps 2..$steps (ms per step)"
printf '%-22s %10s %12s\n' layout "step ms" "speedup"
printf '%-22s %10.1f %12s\n' "tp 1" "$one" "1.00"
printf '%-22s %10.1f %12.2f\n' "tp 2 (SP), plain" "$plain" "$(awk -v a="$one" -v b="$plain" 'BEGIN { print a / b }')"
printf '%-22s %10.1f %12.2f\n' "tp 2 (SP), --async-tp" "$async" "$(awk -v a="$one" -v b="$async" 'BEGIN { print a / b }')"
printf 'async / plain step time: %.3f (per round: %s)\n' "$(awk -v a="$async" -v b="$plain" 'BEGIN { print a / b }')" \
  "$(paste -d/ "$tmp/async" "$tmp/plain" | tr '\n' ' ')"
