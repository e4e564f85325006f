#!/bin/sh
# async_tp.sh - TP strong scaling with and without --async-tp (docs/async_tp.md): the same
# model, global batch and sequence at tp 1 and tp 2 (SP on), the tp 2 run plain and async, in
# interleaved rounds (plain, async, tp 1, plain, async, tp 1, ...) so that drift of the machine
# falls on all three alike; per run the median step time of the measured steps, then the
# median over the rounds, and the ratios side by side. The async run must also log a nonzero
# count of fused ops every step (it fails otherwise).
#   bench/async_tp.sh [HP] [MODEL] [ROUNDS] [STEPS]     defaults: build/hp bench 5 6
hp=${1:-build/hp}; model=${2:-bench}; rounds=${3:-5}; steps=${4:-6}
base="--model $model --batch 4 --seq-len 512 --steps $steps"
export OPENBLAS_NUM_THREADS="${OPENBLAS_NUM_THREADS:-1}"
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
# step_ms FLAGS...: the median time of steps 2..N of one run (each step from its tps figure:
# batch x seq x 1000 / tps), and the step-N fused-op count line checked under --async-tp
step_ms() {
  out=$("$hp" run $base "$@" 2>&1) || { printf '%s\n' "$out" >&2; echo "FAIL: hp run $base $*" >&2; exit 1; }
  case " $* " in *" --async-tp "*)
    printf '%s\n' "$out" | grep -q "^async tp: step $steps: [1-9]" || { echo "FAIL: no fused ops logged" >&2; exit 1; } ;;
  esac
  printf '%s\n' "$out" | sed -n 's/^step: *\([0-9]*\)  .*  tps: \([0-9,]*\)  .*/\1 \2/p' | tr -d , |
    awk '$1 >= 2 && $2 > 0 { print 4 * 512 * 1000 / $2 }' | sort -g |
    awk '{ v[NR] = $1 } END { if (NR == 0) exit 1; print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
median() { sort -g "$1" | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
r=1
while [ "$r" -le "$rounds" ]; do
  step_ms --tp 2 --sp >>"$tmp/plain" || exit 1
  step_ms --tp 2 --sp --async-tp >>"$tmp/async" || exit 1
  step_ms --tp 1 >>"$tmp/one" || exit 1
  r=$((r + 1))
done
one=$(median "$tmp/one"); plain=$(median "$tmp/plain"); async=$(median "$tmp/async")
echo "model $model, batch 4 x seq 512, $rounds interleaved rounds, median of steps 2..$steps (ms per step)"
printf '%-22s %10s %12s\n' layout "step ms" "speedup"
printf '%-22s %10.1f %12s\n' "tp 1" "$one" "1.00"
printf '%-22s %10.1f %12.2f\n' "tp 2 (SP), plain" "$plain" "$(awk -v a="$one" -v b="$plain" 'BEGIN { print a / b }')"
printf '%-22s %10.1f %12.2f\n' "tp 2 (SP), --async-tp" "$async" "$(awk -v a="$one" -v b="$async" 'BEGIN { print a / b }')"
printf 'async / plain step time: %.3f (per round: %s)\n' "$(awk -v a="$async" -v b="$plain" 'BEGIN { print a / b }')" \
  "$(paste -d/ "$tmp/async" "$tmp/plain" | tr '\n' ' ')"
