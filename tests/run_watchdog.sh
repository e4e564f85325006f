#!/bin/sh
# run_watchdog.sh - runs an MPI job that must abort, and checks how it ended.
#   run_watchdog.sh ERR_REGEX CODE mpiexec -np 4 test_watchdog OP
# Passes when the job exits with CODE and its stderr has a line matching ERR_REGEX (grep -E),
# within WATCHDOG_LIMIT seconds (default 20): the job must end at the watchdog, well before
# CTest's timeout (30 s) would kill a hang. The limit is not a speed check: MPI start and abort
# take from 2 s to 10 s on a loaded 2-core machine, and longer under ASan.
# With WATCHDOG_HP_LINES_ONLY=1 (a job started by hp's own launcher) every stderr line must be
# one of hp's ("hp: ..."): the launcher's MPI_ABORT banner that repeats hp's line and Open MPI's
# teardown noise (ORTE_ERROR_LOG ... show_help.c, "Data unpack would read past end of buffer")
# are filtered out by hp (tools/hp/launch/launch_banner.c).
# Prints the job's output, its exit code and the time it took.
if [ $# -lt 3 ]; then echo "usage: run_watchdog.sh ERR_REGEX CODE cmd..." >&2; exit 2; fi
re=$1; code=$2; shift 2
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
t0=$(date +%s.%N)
"$@" >"$tmp/out" 2>"$tmp/err"
rc=$?
t1=$(date +%s.%N)
secs=$(echo "$t0 $t1" | awk '{printf "%.2f", $2 - $1}')
echo "--- stdout"; cat "$tmp/out"; echo "--- stderr"; cat "$tmp/err"
echo "--- exit code $rc after $secs s"
ok=1
[ "$rc" -eq "$code" ] || { echo "FAIL: exit code $rc, want $code"; ok=0; }
grep -Eq -- "$re" "$tmp/err" || { echo "FAIL: stderr has no line matching: $re"; ok=0; }
limit=${WATCHDOG_LIMIT:-20}
awk -v s="$secs" -v l="$limit" 'BEGIN { exit !(s < l) }' || { echo "FAIL: took $secs s, limit $limit s"; ok=0; }
if [ "${WATCHDOG_HP_LINES_ONLY:-0}" = 1 ] && grep -qv '^hp: ' "$tmp/err"; then
  echo "FAIL: stderr has lines that are not hp's:"; grep -v '^hp: ' "$tmp/err"; ok=0
fi
n=$(grep -Ec -- "$re" "$tmp/err")
echo "matching lines: $n"
[ $ok -eq 1 ] && echo PASS
[ $ok -eq 1 ]
