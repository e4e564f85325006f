#!/bin/sh
# run_hosts_fault.sh FAULT SRC HP WORK - a fault of a cluster, on namespace hosts (hosts_lib.sh,
# docs/multi_host.md "When a host or a link fails"). As root; exit 77 where namespaces cannot
# be made. Every job runs under mpirun on host 1, 1 BLAS thread a rank, watchdog --timeout 5.
#   cut   2 hosts, --model small --dp-shard 2: host 2's cable is cut (its switch port set down)
#         once steps run. The job must end non-zero within the timeout + 15 s of the cut, with
#         the watchdog's line (rank, op, group, step), and leave no process on any host.
#   kill  3 hosts, --dp-shard 3: every process of host 3 gets SIGKILL once steps run. The same
#         bound and ending; hp's line is rank 0's, naming where it was when mpirun ended it.
#   slow  2 hosts, --model small --dp-shard 2, 30 steps: once 4 steps ran, host 2's link is
#         throttled both ways (tc tbf, 128 Mbit/s: ~0.3 s for a step's 3.8 MB; the ranks are held
#         with SIGSTOP while it is set, so the step it starts at is known). Every collective still completes far below the watchdog: the
#         job must end 0 with its 30 steps, no watchdog line, its losses those of the same run on
#         one machine bit for bit, and the steps after the throttle must run at most 1/3 of the
#         tokens per second of those before (else the link was not made slow).
#   ckpt  2 hosts x 2 slots, --dp-shard 4 --checkpoint-every 2, 8 steps: the save of step 4 is
#         held on rank 2 (host 2) halfway through its file (HP_CKPT_KILL_SIGNAL=STOP), host 2's
#         cable is cut, rank 2 is let go. The job must end as for `cut`; ck/latest must still
#         name step-2, complete. Then the elastic restart: the job resumes from it on host 1
#         alone, --dp-shard 2 (another world), trains steps 3..8, and its losses must follow the
#         uninterrupted 8-step --dp-shard 4 run within 1e-5 relative a step (the verifier's
#         resume tolerance, docs/verification.md).
# Prints the measured times, hp's lines and the losses. The only timed checks are the bounds on
# how long a fault takes to end the job (the issue's "watchdog plus a stated grace").
fault=$1 SRC=$2 HP=$3 WORK=$4
. "$SRC/tests/hosts_lib.sh"
rm -rf "$WORK"; mkdir -p "$WORK" || exit 2
TIMEOUT=5 GRACE=15
out=$WORK/out err=$WORK/err
watchdog_re='hp: watchdog: rank [0-9]+ waited [0-9.]+ s in [a-z-]+ on group [a-z_]+ \(step [0-9]+\); aborting the job'
term_re='hp: rank 0 got SIGTERM from the launcher after waiting [0-9.]+ s in [a-z-]+ on group [a-z_]+ \(step [0-9]+\)'

# Ends the job started in the background ($JOB_PID) and checks how: within TIMEOUT + GRACE of
# $t_fault, non-zero, hp's line matching $1, and no process left on any host by then.
check_ending() {
  line_re=$1
  bound=$((TIMEOUT + GRACE))
  if ! wait_gone "$JOB_PID" $((bound + 10)); then
    fail "the job still runs $((bound + 10)) s after the fault"; hosts_left
  fi
  t_end=$(now)
  wait "$JOB_PID"; rc=$?
  JOB_PID=""
  secs=$(elapsed "$t_fault" "$t_end")
  # the launcher's daemons on the other hosts, and hp's watchers, get the rest of the bound
  rest=$(awk -v b="$bound" -v s="$secs" 'BEGIN { r = b - s; print (r > 1 ? r : 1) }')
  i=0 n=$(awk -v r="$rest" 'BEGIN { print int(r * 10) }')
  while [ -n "$(hosts_left)" ] && [ $i -lt "$n" ]; do sleep 0.1; i=$((i + 1)); done
  left=$(hosts_left)
  t_clean=$(now)
  echo "--- stderr"; cat "$err"
  echo "--- last step line"; grep -E '^step:' "$out" | tail -n 1
  echo "$fault: the job ended $secs s after the fault (bound $bound s: --timeout $TIMEOUT + $GRACE s), exit code $rc; hosts empty after $(elapsed "$t_fault" "$t_clean") s"
  [ "$rc" -ne 0 ] || fail "exit code 0 after the fault"
  lt "$secs" "$bound" || fail "ended $secs s after the fault, bound $bound s"
  grep -Eq -- "$line_re" "$err" || fail "stderr has no line matching: $line_re"
  [ -z "$left" ] || { fail "processes left on the hosts:"; echo "$left"; }
  echo "hp's lines:"; grep -E '^hp: ' "$err" | sed 's/^/  /'
}

case $fault in
cut)
  hosts_up hpcut 2
  hosts_mpirun 10.77.0.11:1,10.77.0.12:1 2 "$HP" run --model small --dp-shard 2 --steps 1000000 \
    --timeout $TIMEOUT >"$out" 2>"$err" &
  JOB_PID=$!
  wait_line "$out" '^step: +[0-9]+ ' 60 || { fail "no step line within 60 s"; cat "$out" "$err"; exit 1; }
  sleep 0.5
  t_fault=$(now)
  sh "$NETNS" link hpcut 2 down
  echo "cut host 2's link after: $(grep -E '^step:' "$out" | tail -n 1 | cut -c1-40)"
  check_ending "$watchdog_re"
  ;;
kill)
  hosts_up hpkill 3
  hosts_mpirun 10.77.0.11:1,10.77.0.12:1,10.77.0.13:1 3 "$HP" run --model small --dp-shard 3 \
    --batch 6 --steps 1000000 --timeout $TIMEOUT >"$out" 2>"$err" &
  JOB_PID=$!
  wait_line "$out" '^step: +[0-9]+ ' 60 || { fail "no step line within 60 s"; cat "$out" "$err"; exit 1; }
  sleep 0.5
  victims=$(sh "$NETNS" pids hpkill | awk '$1 == "hpkill-h3" { print $2 }' | tr '\n' ' ')
  t_fault=$(now)
  # shellcheck disable=SC2086
  kill -9 $victims
  echo "SIGKILL to every process of host 3 ($victims) after: $(grep -E '^step:' "$out" | tail -n 1 | cut -c1-40)"
  check_ending "$term_re|$watchdog_re"
  ;;
slow)
  hosts_up hpslow 2
  ip netns exec hpslow-sw tc qdisc add dev p2 root tbf rate 128mbit burst 64kb latency 2s 2>/dev/null &&
    ip netns exec hpslow-sw tc qdisc del dev p2 root ||
    { echo "run_hosts_fault.sh slow: skipped: tc has no tbf qdisc here (a throttled link)"; exit 77; }
  OPENBLAS_NUM_THREADS=1 "$HP" run --model small --dp-shard 2 --steps 30 --quiet --json "$WORK/one.json" \
    >/dev/null 2>"$WORK/one.err" || { fail "the one-machine run failed"; cat "$WORK/one.err"; exit 1; }
  hosts_mpirun 10.77.0.11:1,10.77.0.12:1 2 "$HP" run --model small --dp-shard 2 --steps 30 --timeout $TIMEOUT \
    --json "$WORK/slow.json" >"$out" 2>"$err" &
  JOB_PID=$!
  wait_line "$out" '^step: +4 ' 60 || { fail "no step 4 within 60 s"; cat "$out" "$err"; exit 1; }
  ranks=$(hosts_ranks | tr '\n' ' ')
  # shellcheck disable=SC2086
  kill -STOP $ranks
  sleep 0.3   # the last lines through mpirun
  k=$(grep -E '^step:' "$out" | tail -n 1 | awk '{print $2}')
  # both ways: into host 2 at its switch port, out of it at its eth0
  ip netns exec hpslow-sw tc qdisc add dev p2 root tbf rate 128mbit burst 64kb latency 2s &&
    ip netns exec hpslow-h2 tc qdisc add dev eth0 root tbf rate 128mbit burst 64kb latency 2s ||
    { fail "tc tbf cannot throttle the link here"; kill -CONT $ranks; exit 1; }
  t_fault=$(now)
  # shellcheck disable=SC2086
  kill -CONT $ranks
  echo "host 2's link throttled to 128 Mbit/s each way after step $k"
  wait_gone "$JOB_PID" 120 || fail "the job still runs 120 s after the throttle"
  t_end=$(now)
  wait "$JOB_PID"; rc=$?
  JOB_PID=""
  echo "--- stderr"; cat "$err"
  echo "--- step lines"; grep -E '^step:' "$out" | cut -c1-100
  echo "slow: the job ended $(elapsed "$t_fault" "$t_end") s after the throttle, exit code $rc"
  [ "$rc" -eq 0 ] || fail "exit code $rc under a slow link"
  grep -q 'watchdog' "$err" && fail "the watchdog fired under a slow link"
  [ "$(grep -E '^step:' "$out" | tail -n 1 | awk '{print $2}')" = 30 ] || fail "the last step line is not step 30"
  # tokens per second per rank: the median of steps 2..k against that of steps k+2..30
  grep -E '^step:' "$out" | sed 's/,//g' | awk -v k="$k" '
    { for (i = 1; i < NF; i++) if ($i == "tps:") t = $(i + 1); s = $2 }
    s >= 2 && s <= k { a[na++] = t } s >= k + 2 { b[nb++] = t }
    function median(x, n,   i, j, v) { for (i = 1; i < n; i++) { v = x[i]; for (j = i - 1; j >= 0 && x[j] > v; j--) x[j + 1] = x[j]; x[j + 1] = v } return n % 2 ? x[int(n / 2)] : (x[n / 2 - 1] + x[n / 2]) / 2 }
    END { if (na < 1 || nb < 10) { print "slow: too few steps to compare (" na ", " nb ")"; exit 1 }
          ma = median(a, na); mb = median(b, nb)
          printf "slow: median tps %d before the throttle (steps 2-%d), %d after (steps %d-30): %.1fx slower\n", ma, k, mb, k + 2, ma / mb
          exit !(mb * 3 <= ma) }' || fail "the steps after the throttle are not 3x slower: the link was not made slow"
  python3 - "$WORK/one.json" "$WORK/slow.json" <<'PY' || fail "the slow run's losses differ from the one-machine run's"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
same = len(a["losses_exact"]) == 30 and a["losses_exact"] == b["losses_exact"]
print("slow: the 30 losses equal the one-machine run's bit for bit:", "yes" if same else "NO")
sys.exit(0 if same else 1)
PY
  ;;
ckpt)
  hosts_up hpckpt 2
  ck=$WORK/ck
  common="--dp-shard 4 --steps 8 --timeout $TIMEOUT"
  # the uninterrupted run on one host (hp's own launcher), for the resume's losses
  OPENBLAS_NUM_THREADS=1 "$HP" run $common --quiet --json "$WORK/full.json" >/dev/null 2>"$WORK/full.err" ||
    { fail "the uninterrupted run failed"; cat "$WORK/full.err"; exit 1; }
  export HP_CKPT_KILL_RANK=2 HP_CKPT_KILL_STEP=4 HP_CKPT_KILL_SIGNAL=STOP
  # shellcheck disable=SC2086
  hosts_mpirun 10.77.0.11:2,10.77.0.12:2 4 "$HP" run $common --checkpoint-dir "$ck" \
    --checkpoint-every 2 >"$out" 2>"$err" &
  JOB_PID=$!
  unset HP_CKPT_KILL_RANK HP_CKPT_KILL_STEP HP_CKPT_KILL_SIGNAL
  held='hp: HP_CKPT_KILL_RANK: rank 2 stopped halfway through the save of step 4 \(pid [0-9]+\)'
  wait_line "$err" "$held" 60 || { fail "rank 2 did not reach the save of step 4"; cat "$out" "$err"; exit 1; }
  pid=$(grep -Eo "$held" "$err" | sed 's/.*(pid \([0-9]*\)).*/\1/')
  t_fault=$(now)
  sh "$NETNS" link hpckpt 2 down
  kill -CONT "$pid"
  echo "cut host 2's link during the save of step 4 (rank 2, pid $pid, let go after the cut)"
  check_ending "$watchdog_re"
  latest=$(cat "$ck/latest" 2>/dev/null)
  echo "after the cut: ck/latest = '$latest'; ck holds: $(ls -A "$ck" | tr '\n' ' ')"
  [ "$latest" = step-2 ] || fail "ck/latest is '$latest', want step-2 (the last complete save)"
  [ -f "$ck/step-2/index.json" ] || fail "ck/step-2 has no index.json"
  [ -d "$ck/step-4" ] && fail "a step-4 folder was published by a save that never completed"
  # the hosts left: host 1 alone, 2 ranks (another world), from ck's latest
  t_res=$(now)
  hosts_mpirun 10.77.0.11:2 2 "$HP" run --dp-shard 2 --steps 8 --timeout $TIMEOUT --resume "$ck" \
    --quiet --json "$WORK/resumed.json" >"$WORK/res.out" 2>"$WORK/res.err"
  rc=$?
  echo "resume on host 1 (--dp-shard 2, world 2): exit code $rc after $(elapsed "$t_res" "$(now)") s"
  [ $rc -eq 0 ] || { fail "the resume on the host left failed"; cat "$WORK/res.out" "$WORK/res.err"; }
  [ $rc -eq 0 ] && { python3 - "$WORK/full.json" "$WORK/resumed.json" <<'PY' || fail "the resumed losses do not follow the uninterrupted run"
import json, sys
full, res = (json.load(open(p)) for p in sys.argv[1:3])
lf = [float(x) for x in full["losses_exact"]]
lr = [float(x) for x in res["losses_exact"]]
ok = full["world"] == 4 and res["world"] == 2 and res.get("first_step") == 3 and len(lr) == 6 and len(lf) == 8
print(f"resumed: world {res['world']}, steps {res.get('first_step')}..{res.get('first_step', 0) + len(lr) - 1}; uninterrupted: world {full['world']}, 8 steps")
TOL = 1e-5   # the verifier's resume tolerance (hp_verify_tol.resume), relative a step
worst = 0.0
for k, b in enumerate(lr):
    a = lf[k + 2]
    rel = abs(a - b) / abs(a)
    worst = max(worst, rel)
    print(f"  step {k + 3}: resumed {b!r:<22} uninterrupted {a!r:<22} rel {rel:.3g}{'' if rel <= TOL else '  FAIL'}")
    ok &= rel <= TOL
print(f"resume: worst relative loss difference {worst:.3g} (tolerance {TOL:g}): {'PASS' if ok else 'FAIL'}")
sys.exit(0 if ok else 1)
PY
  }
  ;;
*) echo "usage: run_hosts_fault.sh cut|kill|slow|ckpt SRC HP WORK" >&2; exit 2 ;;
esac
[ $ok = 1 ] && echo PASS
[ $ok = 1 ]
