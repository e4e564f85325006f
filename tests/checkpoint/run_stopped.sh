#!/bin/sh
# run_stopped.sh HP DIR [save|load] - a rank frozen halfway through a save, or in a load,
# ends the job at the watchdog.
#   save: HP_CKPT_KILL_RANK=1 HP_CKPT_KILL_SIGNAL=STOP stops rank 1 of an FSDP2 run (SIGSTOP)
#         in its second save (step 4); rank 0 then waits in a checkpoint collective;
#   load: a resume of a step-2 checkpoint with HP_CKPT_LOAD_STOP_RANK=1 stops rank 1 once it
#         has read its pieces; rank 0 then waits in checkpoint-load-crc.
# With HP_TIMEOUT=2 the job must exit non-zero in under 10 s from the stop, with the
# watchdog's line naming that collective (group world), leave no rank process behind, and
# keep D/latest at step-2. Prints the measured time.
set -u
[ $# -ge 2 ] && [ $# -le 3 ] || { echo "usage: run_stopped.sh HP DIR [save|load]" >&2; exit 2; }
hp=$1 dir=$2 mode=${3:-save}
rm -rf "$dir" && mkdir -p "$dir" || exit 2
log=$dir/stopped.log
case $mode in
  save)
    pat='rank 1 stopped halfway through the save of step 4 (pid [0-9]*)'
    waited='checkpoint-[a-z-]+ on group world \(step 4\)'
    HP_TIMEOUT=2 HP_CKPT_KILL_RANK=1 HP_CKPT_KILL_SIGNAL=STOP "$hp" run --dp-shard 2 --optimizer adamw \
      --steps 6 --quiet --checkpoint-dir "$dir/ck" --checkpoint-every 2 >"$log" 2>&1 &
    ;;
  load)
    pat='rank 1 stopped in the load of [^ ]* (pid [0-9]*)'
    waited='checkpoint-load-crc on group world( \(step [0-9]+\))?'
    "$hp" run --dp-shard 2 --optimizer adamw --steps 2 --quiet --checkpoint-dir "$dir/ck" \
      --checkpoint-every 2 >"$dir/save.log" 2>&1 || { echo "FAIL: the step-2 save"; cat "$dir/save.log"; exit 1; }
    HP_TIMEOUT=2 HP_CKPT_LOAD_STOP_RANK=1 "$hp" run --dp-shard 2 --optimizer adamw --steps 4 --quiet \
      --resume "$dir/ck" >"$log" 2>&1 &
    ;;
  *) echo "run_stopped.sh: mode is save or load, not $mode" >&2; exit 2 ;;
esac
parent=$!
victim=
# alive = exists and is not a zombie
alive() { kill -0 "$1" 2>/dev/null && [ "$(ps -o stat= -p "$1" | cut -c1)" != Z ]; }
cleanup() {
  [ -n "$victim" ] && kill -9 "$victim" 2>/dev/null
  kill -9 "$parent" 2>/dev/null
}
fail() { echo "FAIL: $*"; echo "--- $log"; cat "$log"; cleanup; exit 1; }

i=0
until grep -q "$pat" "$log"; do
  i=$((i + 1))
  [ $i -le 1200 ] || fail "rank 1 did not stop within 60 s ($mode)"
  alive "$parent" || fail "the job ended before rank 1 stopped"
  sleep 0.05
done
t0=$(date +%s.%N)
victim=$(grep -o "$pat" "$log" | sed 's/.*(pid \([0-9]*\))/\1/')
i=0
while alive "$parent"; do
  i=$((i + 1))
  [ $i -le 300 ] || break   # 15 s: give up, fail below
  sleep 0.05
done
t1=$(date +%s.%N)
secs=$(echo "$t0 $t1" | awk '{printf "%.2f", $2 - $1}')
alive "$parent" && fail "the job still runs $secs s after rank 1 stopped"
wait "$parent"
rc=$?
echo "--- $log"; cat "$log"
echo "SIGSTOP to rank 1 (pid $victim) in a $mode: the job ended $secs s after the stop, exit code $rc"
ok=1
[ "$rc" -ne 0 ] || { echo "FAIL: exit code 0 after a stopped rank"; ok=0; }
awk -v s="$secs" 'BEGIN { exit !(s < 10) }' || { echo "FAIL: took $secs s, limit 10 s"; ok=0; }
grep -Eq "hp: watchdog: rank [0-9]+ waited 2\.[0-9] s in $waited; aborting the job" "$log" ||
  { echo "FAIL: no watchdog line naming a checkpoint collective in the output"; ok=0; }
if alive "$victim"; then echo "FAIL: the stopped rank (pid $victim) outlived the job"; ok=0; fi
[ "$(cat "$dir/ck/latest" 2>/dev/null)" = "step-2" ] || { echo "FAIL: latest is not step-2"; ok=0; }
cleanup
[ $ok -eq 1 ] && echo "stopped check ($mode): PASS"
[ $ok -eq 1 ]
