#!/bin/sh
# netns_rsh.sh [-opts] HOST CMD... - the remote shell for the namespace hosts of
# scripts/netns_hosts.sh: runs CMD on HOST (10.77.0.1I -> namespace $HP_NETNS_TAG-hI, host name
# $HP_NETNS_TAG-hI), the way rsh/ssh would on a cluster. Open MPI: --mca plm_rsh_agent scripts/netns_rsh.sh; MPICH's Hydra:
# -launcher ssh -launcher-exec scripts/netns_rsh.sh. Leading options (ssh's -x, -q ...) are
# ignored. The environment passes on as is (one machine): HP_NETNS_TAG must be set.
while [ $# -gt 0 ]; do case $1 in -*) shift ;; *) break ;; esac; done
[ $# -ge 2 ] || { echo "usage: netns_rsh.sh [-opts] HOST CMD..." >&2; exit 255; }
host=$1; shift
case $host in
  10.77.0.1[1-9]) i=${host#10.77.0.1} ;;
  *) echo "netns_rsh.sh: $host is not a namespace host (10.77.0.11..19)" >&2; exit 255 ;;
esac
[ -n "${HP_NETNS_TAG:-}" ] || { echo "netns_rsh.sh: HP_NETNS_TAG is not set" >&2; exit 255; }
# the host's own name too (a UTS namespace): Open MPI names its session folders in the shared
# /tmp after it, and two hosts of one name race to make the same folders
ns=$HP_NETNS_TAG-h$i
exec ip netns exec "$ns" unshare --uts sh -c "echo $ns >/proc/sys/kernel/hostname && $*"
