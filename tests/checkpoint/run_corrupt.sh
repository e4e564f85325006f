#!/bin/sh
# run_corrupt.sh HP DIR MPIEXEC... - the ranks' own checks, when no `hp run` parent checked
# the checkpoint first (started by mpirun): a flipped byte in rank 1's file (found by the
# rank that CRC-checks that piece) and a truncated file are refused by every rank with exit 2
# before any step, and one line names the file, the tensor and the problem.
set -u
[ $# -ge 3 ] || { echo "usage: run_corrupt.sh HP DIR MPIEXEC..." >&2; exit 2; }
hp=$1 dir=$2
shift 2
rm -rf "$dir" && mkdir -p "$dir" || exit 2
fail() { echo "FAIL: $*"; exit 1; }
"$hp" run --optimizer adamw --dp-shard 2 --steps 1 --checkpoint-dir "$dir/ck" --quiet || fail "save exited $?"
cp -r "$dir/ck/step-1" "$dir/crc" && cp -r "$dir/ck/step-1" "$dir/trunc" || exit 2
python3 - "$dir/crc/rank-00001.safetensors" "$dir/trunc/rank-00001.safetensors" <<'PY'
import os, sys
b = bytearray(open(sys.argv[1], "rb").read()); b[-5] ^= 1; open(sys.argv[1], "wb").write(bytes(b))
os.truncate(sys.argv[2], 1000)
PY
for case in "crc|rank-00001.safetensors: tensor output.weight \(exp_avg_sq, box 128:256,0:64\): CRC32 0x[0-9a-f]+, the index says 0x[0-9a-f]+ \(corrupted\)" \
            "trunc|rank-00001.safetensors: tensor tok_embeddings.weight: truncated: 1000 bytes, the index says [0-9]+"; do
  name=${case%%|*} pattern=${case#*|}
  "$@" -np 4 "$hp" run --optimizer adamw --dp-shard 4 --steps 2 --resume "$dir/$name" --quiet \
       >"$dir/$name.out" 2>"$dir/$name.err"
  rc=$?
  [ "$rc" -eq 2 ] || fail "$name: exit $rc, want 2 (see $dir/$name.err)"
  n=$(grep -Ec "^hp: --resume: checkpoint .*$pattern" "$dir/$name.err")
  [ "$n" -eq 1 ] || fail "$name: $n lines match '$pattern' (want 1): $(cat "$dir/$name.err")"
  grep -q "^step:" "$dir/$name.out" && fail "$name: a step ran"
  echo "ok    $name: exit 2, one line: $(grep '^hp:' "$dir/$name.err")"
done
echo "corrupt check: PASS"
