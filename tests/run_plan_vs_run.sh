#!/bin/sh
# run_plan_vs_run.sh - the planner against the tracking allocator and the byte counters, recipe
# by recipe: `hp plan <flags> --json` (predicted, rank 0) and `hp run <flags> --steps 2 --json`
# (measured on world rank 0) must agree: params_total, the persistent bytes, every category's
# bytes and every (group, op) of a step exactly (the EP all-to-all follows the routing and is
# left out), the peak within 10% (tests/check_plan_vs_run.py). The flags are the library's
# recipe list (`hp matrix --list`), so the test follows the recipes. The first recipe also
# runs `--steps 1 --dump DIR`: step 1 then runs in phases with gathers between them (cmd_run.c),
# and its measured traffic must still be the step's.
#   run_plan_vs_run.sh HP_BINARY RECIPE_ID...
hp=$1
shift
[ -x "$hp" ] && [ $# -gt 0 ] || { echo "usage: run_plan_vs_run.sh HP_BINARY RECIPE_ID..." >&2; exit 2; }
here=$(dirname "$0")
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
"$hp" matrix --list > "$tmp/list" || { echo "FAIL: hp matrix --list"; exit 1; }
fail=0
for id in "$@"; do
  flags=$(awk -F'\t' -v id="$id" '$1 == "recipe" && $2 == id { print $5 }' "$tmp/list")
  [ -n "$flags" ] || { echo "FAIL $id: no such recipe"; fail=1; continue; }
  # shellcheck disable=SC2086 (the flags are words)
  if ! "$hp" plan $flags --json "$tmp/$id.plan.json" > "$tmp/$id.plan.log" 2>&1; then
    echo "FAIL $id: hp plan $flags"; cat "$tmp/$id.plan.log"; fail=1; continue
  fi
  # shellcheck disable=SC2086
  if ! "$hp" run $flags --steps 2 --quiet --json "$tmp/$id.run.json" < /dev/null > "$tmp/$id.run.log" 2>&1; then
    echo "FAIL $id: hp run $flags"; tail -5 "$tmp/$id.run.log"; fail=1; continue
  fi
  python3 "$here/check_plan_vs_run.py" --exact-categories "$tmp/$id.plan.json" "$tmp/$id.run.json" "$id" || fail=1
  [ "$id" = "$1" ] || continue
  # shellcheck disable=SC2086
  if ! "$hp" run $flags --steps 1 --dump "$tmp/$id.dump" --quiet --json "$tmp/$id.dump.json" < /dev/null > "$tmp/$id.dump.log" 2>&1; then
    echo "FAIL $id: hp run $flags --steps 1 --dump"; tail -5 "$tmp/$id.dump.log"; fail=1; continue
  fi
  python3 "$here/check_plan_vs_run.py" --exact-categories "$tmp/$id.plan.json" "$tmp/$id.dump.json" "$id --dump" || fail=1
done
[ $fail -eq 0 ] && echo "plan_vs_run: $# recipes (the first with --dump too), predicted = measured"
exit $fail
