#!/bin/sh
# run_multi_host.sh HP MPIEXEC DIR - hp under an outside launcher with a hostfile, as on several
# hosts (docs/multi_host.md): `mpirun --hostfile F` (Open MPI; MPICH's Hydra: -f F) with F =
# localhost and 4 slots, hp run --tp 2 --dp-shard 2 for 3 steps; its losses must equal, bit for
# bit, those of the same run launched by hp itself (--nproc 4). Both runs: 1 BLAS thread per rank.
set -eu
hp=$1 mpiexec=$2 dir=$3
rm -rf "$dir"
mkdir -p "$dir"
export OPENBLAS_NUM_THREADS=1
run="run --tp 2 --dp-shard 2 --steps 3 --quiet"
# shellcheck disable=SC2086
"$hp" $run --nproc 4 --json "$dir/self.json" >/dev/null
if "$mpiexec" --version 2>&1 | grep -Eq 'HYDRA|MPICH'; then
  printf 'localhost:4\n' >"$dir/hostfile"
  # shellcheck disable=SC2086
  "$mpiexec" -f "$dir/hostfile" -bind-to none -n 4 -genv OPENBLAS_NUM_THREADS 1 \
      "$hp" $run --json "$dir/hostfile.json" >/dev/null
else   # Open MPI (orterun / prterun)
  printf 'localhost slots=4\n' >"$dir/hostfile"
  root=""; [ "$(id -u)" = 0 ] && root=--allow-run-as-root
  # shellcheck disable=SC2086
  "$mpiexec" --hostfile "$dir/hostfile" $root --oversubscribe --bind-to none -np 4 \
      -x OPENBLAS_NUM_THREADS "$hp" $run --json "$dir/hostfile.json" >/dev/null
fi
python3 - "$dir/self.json" "$dir/hostfile.json" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
assert a["world"] == b["world"] == 4, (a["world"], b["world"])
la, lb = a["losses_exact"], b["losses_exact"]
print("self-launched:", la, "\nhostfile:     ", lb)
if len(la) != 3 or la != lb:
    sys.exit("FAIL: the hostfile run's losses differ from the self-launched run's")
print("multi-host (hostfile): 1 passed, 0 failed")
PY
