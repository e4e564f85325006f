#!/bin/sh
# run_failpoint.sh - the CTest of one failpoint: its recipe, run with HP_FAILPOINT=NAME, must
# fail verification (exit 1) and the verifier must name what the fault touches.
#   run_failpoint.sh HP NAME TOUCHES OUT_DIR -- FLAGS...
# TOUCHES is a POSIX ERE matched against "FAILED CHECK | WORST GRAD | WORST PARAM" of the
# run's --json result (the fields the `verify: FAIL (...)` line prints). Prints the result
# as one Markdown row of the faults-caught table and keeps OUT_DIR/NAME.json and .log.
# Exit 0 when the fault was caught as expected, 1 otherwise.
if [ $# -lt 5 ] || [ "$5" != "--" ]; then
  echo "usage: run_failpoint.sh HP NAME TOUCHES OUT_DIR -- FLAGS..." >&2; exit 2
fi
hp=$1; name=$2; touches=$3; out=$4; shift 5
mkdir -p "$out" || exit 1
json="$out/$name.json"; log="$out/$name.log"
rm -f "$json"
HP_FAILPOINT=$name "$hp" run "$@" --verify --quiet --json "$json" >"$log" 2>&1
rc=$?
cat "$log"
# a fault that makes a rank wait forever: the watchdog must end the job, non-zero, in its line
if [ "$touches" = watchdog ]; then
  [ "$rc" -ne 0 ] && grep -q "hp: watchdog: rank" "$log" && echo "PASS: $name ended by the watchdog (exit $rc)" && exit 0
  echo "FAIL: $name: exit $rc without the watchdog's line"; exit 1
fi
# a string or a number field of the (flat) JSON result
# a top-level key of the result JSON (nested objects such as plan_check have keys of their own)
field() { python3 -c 'import json, sys
v = json.load(open(sys.argv[1])).get(sys.argv[2])
print("" if v is None else str(v).lower() if isinstance(v, bool) else v)' "$json" "$1"; }
ok=1
[ "$rc" -eq 1 ] || { echo "FAIL: $name: exit code $rc, want 1 (verification must fail)"; ok=0; }
[ -s "$json" ] || { echo "FAIL: $name: no JSON result in $json"; ok=0; }
if [ $ok = 1 ]; then
  failure=$(field failure); wg=$(field worst_grad); wgr=$(field worst_grad_rel)
  wp=$(field worst_param); wpr=$(field worst_param_rel); pass=$(field pass)
  said="$failure | $wg | $wp"
  echo "verifier said: failed check '$failure'; worst grad $wg ($wgr); worst param $wp ($wpr)"
  [ "$pass" = false ] || { echo "FAIL: $name: JSON says pass=$pass"; ok=0; }
  echo "$said" | grep -Eq -- "$touches" || { echo "FAIL: $name: '$said' does not match /$touches/"; ok=0; }
fi
[ $ok = 1 ] && echo "PASS: $name caught" && exit 0
exit 1
