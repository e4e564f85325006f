# hosts_lib.sh - sourced by tests/run_hosts_*.sh: N namespace hosts (scripts/netns_hosts.sh) for
# one test, mpirun on host 1 reaching the others through scripts/netns_rsh.sh, and the checks
# the fault tests share. Set before sourcing: SRC (the source tree), HP (the hp binary), WORK
# (the test's folder, emptied). Then:
#   (sourcing it exits 77 with one line where namespaces cannot be made)
#   hosts_up TAG N            the hosts; they and the job go on any exit (trap)
#   hosts_mpirun HOSTS NP ... mpirun on host 1: --host HOSTS (10.77.0.11:2,...) -np NP, the rsh
#                             agent, TCP on 10.77.0.0/24 only; run it with & to get its pid
#   hosts_left                "NS PID COMM" of every process still on a host
#   wait_line FILE ERE SECS   0 once FILE has a line matching ERE, 1 after SECS
#   wait_gone PID SECS        0 once process PID has ended (it must be a child), 1 after SECS
#   hosts_ranks               the pids of hp's rank processes on the hosts
#   now                       seconds since the epoch, with decimals
#   fail MSG                  prints FAIL: MSG, counts it (ok=0)
set -u
NETNS=$SRC/scripts/netns_hosts.sh
AGENT=$SRC/scripts/netns_rsh.sh
HP_REAL=$(readlink -f "$HP")
ok=1
JOB_PID=""
HOSTS_TAG=""

now() { date +%s.%N; }
# shellcheck disable=SC2034  # (ok is the sourcing script's verdict)
fail() { echo "FAIL: $*"; ok=0; }
elapsed() { echo "$1 $2" | awk '{printf "%.1f", $2 - $1}'; }
# lt A B: A < B (decimals)
lt() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a < b) }'; }

hosts_cleanup() {
  if [ -n "$JOB_PID" ] && kill -0 "$JOB_PID" 2>/dev/null; then kill -9 "$JOB_PID" 2>/dev/null; fi
  [ -n "$HOSTS_TAG" ] && sh "$NETNS" down "$HOSTS_TAG"
  HOSTS_TAG=""
}

# first of all: where namespaces cannot be made, one line and the skip code
sh "$NETNS" check || exit $?

hosts_up() {
  HOSTS_TAG=$1
  trap 'hosts_cleanup' EXIT
  trap 'hosts_cleanup; exit 1' INT TERM HUP
  sh "$NETNS" up "$1" "$2" || { echo "FAIL: could not make $2 namespace hosts"; exit 1; }
  export HP_NETNS_TAG="$1"
  echo "hosts: $2 network namespaces $1-h1..$1-h$2 at 10.77.0.11..10.77.0.$((10 + $2)) on bridge br0 of $1-sw"
}

# Open MPI's flags for the namespace hosts: the agent, TCP on their subnet only (no shared
# memory: every byte between hosts crosses their links), 1 BLAS thread per rank.
hosts_mpirun() {
  hosts=$1 np=$2; shift 2
  exec_env="-x OPENBLAS_NUM_THREADS=1 -x OMP_WAIT_POLICY=PASSIVE"
  for v in HP_CKPT_KILL_RANK HP_CKPT_KILL_STEP HP_CKPT_KILL_SIGNAL; do
    eval "val=\${$v:-}"
    [ -n "$val" ] && exec_env="$exec_env -x $v"
  done
  # shellcheck disable=SC2086
  sh "$NETNS" exec "$HOSTS_TAG" 1 "${HOSTS_MPIRUN:-mpirun}" --allow-run-as-root --bind-to none --host "$hosts" -np "$np" \
    --mca plm_rsh_agent "$AGENT" --mca oob_tcp_if_include 10.77.0.0/24 \
    --mca btl_tcp_if_include 10.77.0.0/24 --mca btl tcp,self $exec_env "$@"
}

hosts_left() {
  sh "$NETNS" pids "$HOSTS_TAG" | while read -r ns pid; do
    echo "$ns $pid $(cat /proc/"$pid"/comm 2>/dev/null)"
  done
}

hosts_ranks() {
  sh "$NETNS" pids "$HOSTS_TAG" | while read -r ns pid; do
    [ "$(readlink -f /proc/"$pid"/exe 2>/dev/null)" = "$HP_REAL" ] && echo "$pid"
  done
}

wait_line() {
  i=0 n=$(awk -v s="$3" 'BEGIN { print int(s * 10) }')
  while [ $i -lt "$n" ]; do
    grep -Eq -- "$2" "$1" 2>/dev/null && return 0
    sleep 0.1; i=$((i + 1))
  done
  return 1
}

wait_gone() {
  i=0 n=$(awk -v s="$2" 'BEGIN { print int(s * 10) }')
  while [ $i -lt "$n" ]; do
    # a child that ended is a zombie until waited for
    st=$(ps -o stat= -p "$1" 2>/dev/null | cut -c1)
    [ -z "$st" ] || [ "$st" = Z ] && return 0
    sleep 0.1; i=$((i + 1))
  done
  return 1
}
