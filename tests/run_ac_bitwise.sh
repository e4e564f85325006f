#!/bin/sh
# run_ac_bitwise.sh HP DIR [LAYOUT...] - activation checkpointing changes no bit: for each
# layout, `hp run --steps 2 --dump` under --ac none, full and every:2 must write byte-identical
# gradients (grads.safetensors) and the same losses, and the activation bytes each run measured
# (--json: rank 0's, and each pp rank's) must be hp plan's for the same flags. A run with the
# recompute reading the wrong input (HP_FAILPOINT=ac_recompute_stale) must differ, so the
# comparison can fail. Layouts: tiny, m6-ring, m6-ag, c2, ulysses, pp, sp (default: all).
set -u
hp=$1 dir=$2
shift 2
layouts=${*:-tiny m6-ring m6-ag c2 ulysses pp sp}
rm -rf "$dir"; mkdir -p "$dir"
fail() { echo "FAIL: $*"; exit 1; }
flags_of() {
  case $1 in
    tiny)    echo "--model tiny" ;;
    m6-ring) echo "--model tiny --dp-shard 2 --cp 2 --tp 2 --cp-rotate ring" ;;
    m6-ag)   echo "--model tiny --dp-shard 2 --cp 2 --tp 2 --cp-rotate allgather" ;;
    c2)      echo "--model tiny-moe --dp-shard 2 --cp 2 --tp 2 --ep 4 --etp 1 --cp-rotate ring" ;;
    ulysses) echo "--model tiny --ulysses 2" ;;
    pp)      echo "--model tiny --layers 4 --pp 2 --pp-schedule 1f1b --pp-microbatches 4" ;;
    sp)      echo "--model tiny --tp 2" ;;
    *)       fail "unknown layout '$1'" ;;
  esac
}
# the run's losses, every step, as --json writes them exactly
losses() { tr -d ' \t\n' < "$1.json" | grep -o '"losses_exact":[[][^]]*[]]' ; }
for lo in $layouts; do
  flags=$(flags_of "$lo")
  for ac in none full every:2; do
    out="$dir/$lo-$ac"
    # shellcheck disable=SC2086
    "$hp" run $flags --steps 2 --quiet --ac "$ac" --dump "$out" --json "$out.json" >"$out.log" 2>&1 ||
      { cat "$out.log"; fail "$lo --ac $ac: hp run exited $?"; }
  done
  for ac in full every:2; do
    cmp -s "$dir/$lo-none/grads.safetensors" "$dir/$lo-$ac/grads.safetensors" ||
      fail "$lo: --ac $ac gradients differ from --ac none's"
    [ "$(losses "$dir/$lo-none")" = "$(losses "$dir/$lo-$ac")" ] ||
      fail "$lo: --ac $ac losses $(losses "$dir/$lo-$ac") differ from $(losses "$dir/$lo-none")"
    [ -n "$(losses "$dir/$lo-$ac")" ] || fail "$lo: no losses in $dir/$lo-$ac.json"
  done
  echo "ok: $lo: --ac full and every:2 give --ac none's gradients byte for byte and its losses"
  # measured (--json: rank 0's activations category, and under pp each pp rank's first rank)
  # against hp plan --json for the same flags and rank; full AC takes less where a rank
  # checkpoints two blocks or more (every layout here), every:2 never more
  # shellcheck disable=SC2086
  python3 - "$hp" "$dir/$lo" $flags <<'PY' || fail "$lo: activation bytes against hp plan"
import json, subprocess, sys
hp, base, flags = sys.argv[1], sys.argv[2], sys.argv[3:]
meas = {}
for ac in ("none", "full", "every:2"):
    rec = json.load(open("%s-%s.json" % (base, ac)))
    got = {0: rec["memory"]["current"]["activations"]}
    world = rec["world"]
    if "pp_ranks" in rec:
        n = len(rec["pp_ranks"])
        got = {p * (world // n): r["activation_bytes"] for p, r in enumerate(rec["pp_ranks"])}
    for rank, g in sorted(got.items()):
        out = subprocess.run([hp, "plan"] + flags + ["--ac", ac, "--nproc", str(world), "--rank", str(rank),
                             "--json", "-"], capture_output=True, text=True)
        assert out.returncode == 0, out.stderr
        want = json.loads(out.stdout[out.stdout.index("\n{") + 1:])["memory"]["activation_bytes"]
        ok = int(g) == int(want)
        print("%s %s rank %d --ac %s: activation bytes measured %d, planned %d"
              % ("ok  " if ok else "FAIL", base.rsplit("/", 1)[1], rank, ac, g, want))
        if not ok: sys.exit(1)
    meas[ac] = got
for rank in meas["none"]:
    if not (meas["full"][rank] < meas["none"][rank] and meas["every:2"][rank] <= meas["none"][rank]):
        print("FAIL rank %d: AC does not save: %s" % (rank, [meas[a][rank] for a in meas]))
        sys.exit(1)
PY
done
# the comparison can fail: a recompute from the wrong input changes the gradients
[ -f "$dir/tiny-none/grads.safetensors" ] ||
  "$hp" run --model tiny --steps 2 --quiet --dump "$dir/tiny-none" >"$dir/tiny-none.log" 2>&1 ||
  fail "hp run --model tiny exited $?"
HP_FAILPOINT=ac_recompute_stale "$hp" run --model tiny --steps 2 --quiet --ac full --dump "$dir/stale" \
  >"$dir/stale.log" 2>&1 || fail "the stale-recompute run exited $?"
if cmp -s "$dir/stale/grads.safetensors" "$dir/tiny-none/grads.safetensors"; then
  fail "a recompute from the wrong input gave the same bytes: the comparison cannot fail"
fi
echo "PASS: activation checkpointing is bit-identical ($layouts)"
