#!/bin/sh
# netns_hosts.sh - N test hosts on this machine, each a network namespace with its own address
# on a bridge, for running hp across "hosts" whose links can be cut, slowed and whose processes
# can all be killed (docs/multi_host.md, tests/hosts.cmake). Needs root (CAP_SYS_ADMIN, CAP_NET_ADMIN).
#   scripts/netns_hosts.sh up TAG N       # hosts TAG-h1..TAG-hN at 10.77.0.11..10.77.0.(10+N)
#   scripts/netns_hosts.sh down TAG       # kill every process in them, remove them
#   scripts/netns_hosts.sh check          # exit 0 where namespaces can be made, else a line + 77
#   scripts/netns_hosts.sh exec TAG I cmd...   # run cmd on host I (1..N), host name TAG-hI
#   scripts/netns_hosts.sh link TAG I up|down  # plug / cut host I's cable (its switch port)
#   scripts/netns_hosts.sh pids TAG       # "TAG-hI PID" for every process left on a host
# Layout: namespace TAG-sw holds the switch, a bridge br0; host I is namespace TAG-hI with lo
# and eth0 = 10.77.0.(10+I)/24, the other end of a veth pair whose switch end is port I (pI, in
# TAG-sw). Nothing is created in the calling namespace: its routes, addresses and interface
# names are untouched, traffic stays between the hosts (and their loopbacks), and tests with
# different TAGs run side by side (the same addresses, on separate switches). `up` first removes
# what a killed earlier run of the same TAG left. mpirun runs on host 1 as on a cluster's head
# node and reaches the others through scripts/netns_rsh.sh (HP_NETNS_TAG=TAG names the hosts).
# N: 1..9. Exit codes: 0 done, 1 failure, 2 usage, 77 namespaces cannot be made here.
set -eu
NET=10.77.0
usage() { echo "usage: netns_hosts.sh up TAG N | down TAG | check | exec TAG I cmd... | link TAG I up|down | pids TAG" >&2; exit 2; }
tag_ok() { case $1 in ''|*[!A-Za-z0-9_-]*) echo "netns_hosts.sh: bad TAG '$1' (letters, digits, - and _)" >&2; exit 2;; esac
           [ ${#1} -le 24 ] || { echo "netns_hosts.sh: TAG '$1' longer than 24 characters" >&2; exit 2; }; }
host_ok() { case $1 in [1-9]) ;; *) echo "netns_hosts.sh: host '$1' not in 1..9" >&2; exit 2;; esac; }

# The namespaces of TAG that exist now.
spaces() { ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^$1-(sw|h[1-9])\$" || true; }

check() {
  if [ "$(id -u)" != 0 ]; then
    echo "netns_hosts.sh: skipped: network namespaces need root (uid $(id -u))"; exit 77
  fi
  command -v ip >/dev/null 2>&1 || { echo "netns_hosts.sh: skipped: no 'ip' (iproute2)"; exit 77; }
  probe="hpprobe$$"
  if ! ip netns add "$probe" 2>/dev/null; then
    echo "netns_hosts.sh: skipped: 'ip netns add' fails here (no CAP_SYS_ADMIN, or no /run/netns)"; exit 77
  fi
  ok=1 why=""
  ip netns exec "$probe" ip link add b0 type bridge 2>/dev/null &&
    ip netns exec "$probe" ip link add v0 type veth peer name v1 2>/dev/null ||
    { ok=0; why="this kernel makes no bridge or veth pair in a namespace"; }
  [ $ok = 1 ] && ! ip netns exec "$probe" unshare --uts true 2>/dev/null &&
    { ok=0; why="'unshare --uts' fails here (a host name per namespace host)"; }
  ip netns del "$probe" 2>/dev/null || true
  [ $ok = 1 ] || { echo "netns_hosts.sh: skipped: $why"; exit 77; }
}

down() {
  tag=$1
  for ns in $(spaces "$tag"); do
    # every process of the host: SIGKILL, then wait for them to be gone
    pids=$(ip netns pids "$ns" 2>/dev/null || true)
    # shellcheck disable=SC2086
    [ -z "$pids" ] || kill -9 $pids 2>/dev/null || true
    i=0
    while [ -n "$(ip netns pids "$ns" 2>/dev/null || true)" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
    ip netns del "$ns" 2>/dev/null || true
  done
  left=$(spaces "$tag")
  [ -z "$left" ] || { echo "netns_hosts.sh: could not remove: $left" >&2; return 1; }
}

up() {
  tag=$1 n=$2
  case $n in [1-9]) ;; *) echo "netns_hosts.sh: N '$n' not in 1..9" >&2; exit 2;; esac
  down "$tag"
  sw=$tag-sw
  ip netns add "$sw"
  ip netns exec "$sw" ip link set lo up
  ip netns exec "$sw" ip link add br0 type bridge
  ip netns exec "$sw" ip link set br0 up
  i=1
  while [ $i -le "$n" ]; do
    h=$tag-h$i
    ip netns add "$h"
    # made inside the switch: pI stays there, eth0 moves to the host (no name in the caller's
    # namespace, so no collision between tags)
    ip netns exec "$sw" ip link add "p$i" type veth peer name eth0 netns "$h"
    ip netns exec "$sw" ip link set "p$i" master br0 up
    ip netns exec "$h" ip link set lo up
    ip netns exec "$h" ip addr add "$NET.$((10 + i))/24" dev eth0
    ip netns exec "$h" ip link set eth0 up
    i=$((i + 1))
  done
}

[ $# -ge 1 ] || usage
cmd=$1; shift
case $cmd in
  check) [ $# = 0 ] || usage; check ;;
  up)    [ $# = 2 ] || usage; tag_ok "$1"; up "$1" "$2" ;;
  down)  [ $# = 1 ] || usage; tag_ok "$1"; down "$1" ;;
  exec)  [ $# -ge 3 ] || usage; tag_ok "$1"; host_ok "$2"; ns=$1-h$2; shift 2
         # its own host name too (as netns_rsh.sh gives it)
         # shellcheck disable=SC2016
         exec ip netns exec "$ns" unshare --uts sh -c 'echo "$0" >/proc/sys/kernel/hostname && exec "$@"' "$ns" "$@" ;;
  link)  [ $# = 3 ] || usage; tag_ok "$1"; host_ok "$2"
         case $3 in up|down) ;; *) usage;; esac
         ip netns exec "$1-sw" ip link set "p$2" "$3" ;;
  pids)  [ $# = 1 ] || usage; tag_ok "$1"
         for ns in $(spaces "$1"); do
           for p in $(ip netns pids "$ns" 2>/dev/null || true); do echo "$ns $p"; done
         done ;;
  *) usage ;;
esac
