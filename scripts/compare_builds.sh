#!/bin/sh
# compare_builds.sh OLD_HP NEW_HP [DIR] - does a change keep the numbers? Runs every recipe of
# OLD_HP's matrix (`hp matrix --list`) under both builds, 3 steps with --dump, on the same BLAS
# core, and counts the recipes whose losses (%.17g, every bit) and step-1 gradients
# (grads.safetensors, byte for byte) are identical. Exits 1 when any differs.
#   git worktree add /tmp/old <commit> && cmake -S /tmp/old -B /tmp/old/build && cmake --build /tmp/old/build --target hp
#   scripts/compare_builds.sh /tmp/old/build/hp build/hp
#   RECIPES='bf16' scripts/compare_builds.sh ...   # only the recipes whose id matches (grep -E)
old=$1 new=$2 out=${3:-/tmp/hp-compare}
[ -x "$old" ] && [ -x "$new" ] || { echo "usage: compare_builds.sh OLD_HP NEW_HP [DIR]" >&2; exit 2; }
rm -rf "$out" && mkdir -p "$out" || exit 2
# the same kernels and threads for both builds: the core the new build runs here (asked, not
# assumed: a core this CPU cannot run would crash OpenBLAS), or the environment's; 1 thread a rank
core=$("$new" --version 2>/dev/null | sed -n 's/^blas core: //p')
export OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-$core}
export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1}
echo "compare_builds: both builds on core ${OPENBLAS_CORETYPE:-(OpenBLAS's own)}, $OPENBLAS_NUM_THREADS BLAS thread(s) per process"
losses() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['losses_exact'])" "$1" 2>/dev/null; }
same=0 diff=0
"$old" matrix --list | awk -F '\t' '$1 == "recipe" { print $2 "\t" $5 }' |
  { if [ -n "${RECIPES:-}" ]; then grep -E "^[^$(printf '\t')]*(${RECIPES})"; else cat; fi; } >"$out/list"
tab=$(printf '\t')
while IFS="$tab" read -r id flags; do
  for b in old new; do
    eval "hp=\$$b"
    # shellcheck disable=SC2086
    "$hp" run $flags --steps 3 --dump "$out/$id.$b" --json "$out/$id.$b.json" --quiet >/dev/null 2>&1 </dev/null
  done
  lo=$(losses "$out/$id.old.json"); ln=$(losses "$out/$id.new.json")
  if [ -n "$lo" ] && [ "$lo" = "$ln" ] && cmp -s "$out/$id.old/grads.safetensors" "$out/$id.new/grads.safetensors"; then
    same=$((same + 1))
  else
    diff=$((diff + 1)); echo "DIFF $id: losses $lo vs $ln"
  fi
done <"$out/list"
echo "compare_builds: $same recipes byte-identical (losses and step-1 gradients), $diff different"
[ "$diff" -eq 0 ]
