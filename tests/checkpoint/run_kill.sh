#!/bin/sh
# run_kill.sh HP DIR - a rank killed halfway through a save leaves the previous checkpoint
# intact: HP_CKPT_KILL_RANK=1 kills rank 1 of an FSDP2 run in its second save (step 4, its
# file half written); the job must fail, D/latest must still name step-2, no step-4 may
# exist, and --resume D must train steps 3-6 with the losses of an uninterrupted run, bitwise.
set -u
[ $# -eq 2 ] || { echo "usage: run_kill.sh HP DIR" >&2; exit 2; }
hp=$1 dir=$2
rm -rf "$dir" && mkdir -p "$dir" || exit 2
fail() { echo "FAIL: $*"; exit 1; }
flags="--dp-shard 2 --optimizer adamw --steps 6 --quiet"
# shellcheck disable=SC2086
"$hp" run $flags --json "$dir/full.json" || fail "uninterrupted run exited $?"
# shellcheck disable=SC2086
HP_CKPT_KILL_RANK=1 "$hp" run $flags --checkpoint-dir "$dir/ck" --checkpoint-every 2 >"$dir/kill.log" 2>&1
rc=$?
[ "$rc" -ne 0 ] || fail "the killed run exited 0"
grep -q "rank 1 killed halfway through the save of step 4" "$dir/kill.log" || fail "the failpoint did not fire (see $dir/kill.log)"
[ "$(cat "$dir/ck/latest")" = "step-2" ] || fail "latest is '$(cat "$dir/ck/latest")', want step-2"
[ ! -e "$dir/ck/step-4" ] || fail "step-4 exists after a killed save"
[ -d "$dir/ck/step-2" ] && [ -f "$dir/ck/step-2/index.json" ] || fail "step-2 is gone"
echo "ok    killed save (exit $rc): latest = step-2, no step-4"
# shellcheck disable=SC2086
"$hp" run $flags --resume "$dir/ck" --checkpoint-dir "$dir/ck" --checkpoint-every 2 --json "$dir/res.json" \
  || fail "resume from step-2 exited $?"
[ ! -e "$dir/ck/.step-4.tmp" ] || fail "the dead save's temporary folder was not cleaned"
[ "$(cat "$dir/ck/latest")" = "step-6" ] || fail "latest after the resumed run is not step-6"
python3 - "$dir/full.json" "$dir/res.json" <<'PY' || exit 1
import json, sys
full = json.load(open(sys.argv[1]))["losses_exact"]
res = json.load(open(sys.argv[2]))
if res["first_step"] != 3 or res["losses_exact"] != full[2:]:
    print("FAIL: resumed losses", res["first_step"], res["losses_exact"], "vs", full[2:])
    sys.exit(1)
print("ok    resumed from step-2: losses of steps 3-6 bit-identical to the uninterrupted run")
PY
echo "kill check: PASS"
