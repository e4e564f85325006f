#!/bin/sh
# run_abort_grace.sh MPIEXEC... -- TEST_WATCHDOG - the watchdog's abort when the launcher cannot
# carry it out (comm_abort.c; docs/multi_host.md): mpirun -np 4 test_watchdog barrier with
# HP_TIMEOUT=2, world rank 3 skipping the barrier; once every rank is in it, mpirun is frozen
# (SIGSTOP: the ranks' parent, their PMI server), as a launcher that cannot reach a host is
# stuck. Ranks 0-2 fire at 2 s and call MPI_Abort, which then cannot return (its server does
# not answer). Passes when those three ranks exit on their own within the timeout +
# HP_ABORT_GRACE_S (10 s) + 5 s and the frozen daemon and the launcher are gone by then too
# (the ranks' watcher sends the daemon SIGKILL a second after the grace). Rank 3, still asleep,
# is killed at the end. Prints the measured times.
n=0
for a in "$@"; do [ "$a" = -- ] && break; n=$((n + 1)); done
[ $n -lt $# ] || { echo "usage: run_abort_grace.sh MPIEXEC... -- TEST_WATCHDOG" >&2; exit 2; }
tmp=$(mktemp -d) || exit 2
i=0 launcher=""
for a in "$@"; do i=$((i + 1)); [ $i -le $n ] && launcher="$launcher $a"; done
shift $((n + 1))
tw=$1
export HP_TIMEOUT=2 WATCHDOG_READY_DIR=$tmp
# shellcheck disable=SC2086
$launcher -np 4 "$tw" barrier >"$tmp/out" 2>"$tmp/err" &
job=$!
real=$(readlink -f "$tw")
descendants() { for c in $(pgrep -P "$1"); do echo "$c"; descendants "$c"; done; }
ranks() { for p in $(descendants "$job"); do [ "$(readlink -f /proc/"$p"/exe 2>/dev/null)" = "$real" ] && echo "$p"; done; }
cleanup() { for p in $(descendants "$job") $all_ranks $servers; do kill -9 "$p" 2>/dev/null; done; kill -9 "$job" 2>/dev/null; rm -rf "$tmp"; }
all_ranks="" servers=""
i=0
ready() { c=0; for f in "$tmp"/ready.*; do [ -e "$f" ] && c=$((c + 1)); done; echo $c; }
while [ "$(ready)" -lt 4 ]; do
  i=$((i + 1))
  if [ $i -gt 600 ] || ! kill -0 "$job" 2>/dev/null; then
    echo "FAIL: the 4 ranks did not reach the barrier within 60 s"; cat "$tmp/out" "$tmp/err"; cleanup; exit 1
  fi
  sleep 0.1
done
all_ranks=$(ranks | tr '\n' ' ')
# the ranks' launcher daemon, their PMI server (Open MPI's mpirun on one host, Hydra's proxy)
servers=$(for p in $all_ranks; do ps -o ppid= -p "$p"; done | sort -u | tr -d ' ' | tr '\n' ' ')
# shellcheck disable=SC2086
kill -STOP $servers
t0=$(date +%s.%N)
echo "ranks $all_ranks in the barrier; their launcher daemon $servers frozen (SIGSTOP)"
rank3=$(for p in $all_ranks; do [ -f /proc/"$p"/environ ] && tr '\0' '\n' <"/proc/$p/environ" | grep -qx 'OMPI_COMM_WORLD_RANK=3\|PMI_RANK=3' && echo "$p"; done)
others=$(for p in $all_ranks; do [ "$p" != "$rank3" ] && echo "$p"; done | tr '\n' ' ')
bound=17   # HP_TIMEOUT 2 + HP_ABORT_GRACE_S 10 + 5
alive() { st=$(ps -o stat= -p "$1" 2>/dev/null | cut -c1); [ -n "$st" ] && [ "$st" != Z ]; }
ranks_end="" job_end=""
i=0
while [ $i -lt $((bound * 10 + 50)) ]; do
  t=$(date +%s.%N)
  if [ -z "$ranks_end" ]; then
    up=0; for p in $others; do alive "$p" && up=1; done
    [ $up = 0 ] && ranks_end=$t
  fi
  if [ -z "$job_end" ]; then
    up=0; for p in $servers $job; do alive "$p" && up=1; done
    [ $up = 0 ] && job_end=$t
  fi
  [ -n "$ranks_end" ] && [ -n "$job_end" ] && break
  sleep 0.1; i=$((i + 1))
done
ok=1
el() { [ -n "$1" ] && echo "$t0 $1" | awk '{printf "%.1f s", $2 - $1}' || echo "not"; }
echo "ranks 0-2 ($others) ended $(el "$ranks_end") after the freeze; the frozen daemon and the launcher $(el "$job_end") after it (bound $bound s)"
[ -n "$ranks_end" ] && awk -v a="$(el "$ranks_end" | cut -d' ' -f1)" -v b=$bound 'BEGIN { exit !(a < b) }' || { echo "FAIL: ranks 0-2 did not end within $bound s"; ok=0; }
[ -n "$job_end" ] && awk -v a="$(el "$job_end" | cut -d' ' -f1)" -v b=$bound 'BEGIN { exit !(a < b) }' || { echo "FAIL: the frozen launcher was not ended within $bound s"; ok=0; }
[ -n "$rank3" ] || { echo "FAIL: rank 3 not found"; ok=0; }
cleanup
wait "$job" 2>/dev/null
[ $ok = 1 ] && echo PASS
[ $ok = 1 ]
