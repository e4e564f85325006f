#!/bin/sh
# run_hosts_layout.sh TAG SRC HP WORK NHOSTS SLOTS hp-run-flags... - one layout across NHOSTS
# namespace hosts of SLOTS ranks each (hosts_lib.sh; as root, exit 77 where namespaces cannot
# be made), under mpirun on host 1 over TCP only, 1 BLAS thread a rank:
#   1. its losses of 5 steps equal, bit for bit, those of the same run on this one machine
#      (`hp run`, hp's own launcher);
#   2. `--verify` passes across the hosts (the verifier's table and "verify: PASS");
#   3. every group's traffic goes where `hp plan --ranks-per-node SLOTS` says: the bytes of a
#      step on each host's eth0 (to other hosts) and lo (between its own ranks), the difference
#      of a 1-step and a 5-step run, against rank 0's counted traffic (check_hosts_traffic.py).
tag=$1 SRC=$2 HP=$3 WORK=$4 nhosts=$5 slots=$6
shift 6
. "$SRC/tests/hosts_lib.sh"
rm -rf "$WORK"; mkdir -p "$WORK" || exit 2
hosts_up "$tag" "$nhosts"
np=$((nhosts * slots))
hosts="" i=1
while [ $i -le "$nhosts" ]; do hosts="$hosts${hosts:+,}10.77.0.$((10 + i)):$slots"; i=$((i + 1)); done
echo "layout: hp run $* on --host $hosts (world $np)"

# tx bytes of host I's eth0 and lo
counters() {
  i=1
  while [ $i -le "$nhosts" ]; do
    sh "$NETNS" exec "$tag" $i sh -c 'echo $(cat /sys/class/net/eth0/statistics/tx_bytes) $(cat /sys/class/net/lo/statistics/tx_bytes)'
    i=$((i + 1))
  done
}

OPENBLAS_NUM_THREADS=1 "$HP" run "$@" --steps 5 --quiet --json "$WORK/one.json" >/dev/null 2>"$WORK/one.err" ||
  { fail "the one-machine run failed"; cat "$WORK/one.err"; exit 1; }
for steps in 1 5; do
  counters >"$WORK/c$steps.before"
  hosts_mpirun "$hosts" $np "$HP" run "$@" --steps $steps --quiet --json "$WORK/hosts$steps.json" \
    >"$WORK/hosts$steps.out" 2>&1
  rc=$?
  counters >"$WORK/c$steps.after"
  [ $rc -eq 0 ] || { fail "the $steps-step run across the hosts exited $rc"; cat "$WORK/hosts$steps.out"; exit 1; }
done
paste -d' ' "$WORK/c1.before" "$WORK/c1.after" "$WORK/c5.before" "$WORK/c5.after" | awk '{ print NR, $0 }' >"$WORK/counters"

python3 - "$WORK/one.json" "$WORK/hosts5.json" "$np" <<'PY' || fail "the losses across the hosts differ from the one-machine run's"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
np_ = int(sys.argv[3])
print("one machine: ", a["losses_exact"])
print("across hosts:", b["losses_exact"])
good = a["world"] == b["world"] == np_ and len(a["losses_exact"]) == 5 and a["losses_exact"] == b["losses_exact"]
print("losses across the hosts equal the one-machine run bit for bit:", "yes" if good else "NO")
sys.exit(0 if good else 1)
PY

hosts_mpirun "$hosts" $np "$HP" run "$@" --steps 3 --verify >"$WORK/verify.out" 2>&1
rc=$?
grep -E '^(loss trajectory|traffic of rank|verify:)' "$WORK/verify.out"
[ $rc -eq 0 ] && grep -qx 'verify: PASS.*' "$WORK/verify.out" || { fail "--verify across the hosts: exit $rc"; cat "$WORK/verify.out"; }
grep -q 'verify: PASS' "$WORK/verify.out" || fail "no 'verify: PASS' line"

"$HP" plan "$@" --ranks-per-node "$slots" >"$WORK/plan.txt" || { fail "hp plan failed"; cat "$WORK/plan.txt"; }
grep '^nodes of' "$WORK/plan.txt"
python3 "$SRC/tests/check_hosts_traffic.py" "$WORK/plan.txt" "$WORK/hosts5.json" "$WORK/counters" "$slots" 1 5 ||
  fail "the traffic on the hosts' links is not what the plan says"
[ $ok = 1 ] && echo PASS
[ $ok = 1 ]
