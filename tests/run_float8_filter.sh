#!/bin/sh
# run_float8_filter.sh HP OUT_DIR - the float8 module filter end to end (docs/float8.md): with a
# filter naming every block linear ("layers") nothing converts, so the losses equal the plain
# bf16 run's bit for bit; with a filter naming only the attention's wq the losses differ from
# both the plain run and the run converting every linear. The fp8 all-gather
# (--float8-fsdp-all-gather, applied at fsdp 1 too) follows the same filter: naming every linear
# gives the plain run again; converting all of them differs from the bf16-gathered float8 run (the
# weight is rounded once, from fp32, not twice). Exit 0 when all five hold.
hp=$1; out=$2
mkdir -p "$out" || exit 1
run() {   # run NAME FLAGS...: 3 steps of tiny under bf16, losses into OUT/NAME.json
  name=$1; shift
  "$hp" run --model tiny --steps 3 --mixed-precision-param bfloat16 --quiet --json "$out/$name.json" "$@" \
    >"$out/$name.log" 2>&1 || { echo "FAIL: $name: exit $? ($(tail -1 "$out/$name.log"))"; exit 1; }
}
run plain
run all --float8 tensorwise
run none --float8 tensorwise --float8-filter layers
run some --float8 tensorwise --float8-filter attention.wk,attention.wv,attention.wo,feed_forward
run none_ag --float8 tensorwise --float8-filter layers --float8-fsdp-all-gather
run all_ag --float8 tensorwise --float8-fsdp-all-gather
python3 - "$out" <<'PY'
import json, struct, sys
L = {n: json.load(open(f"{sys.argv[1]}/{n}.json"))["losses"] for n in ("plain", "all", "none", "some", "none_ag", "all_ag")}
bits = lambda xs: [struct.pack("<d", x) for x in xs]
ok = True
def check(cond, what):
    global ok
    print(("ok: " if cond else "FAIL: ") + what)
    ok &= cond
check(bits(L["none"]) == bits(L["plain"]), f"filter 'layers' converts nothing: {L['none']} == {L['plain']}")
check(bits(L["all"]) != bits(L["plain"]), f"float8 moves the losses: {L['all']} != {L['plain']}")
check(bits(L["some"]) not in (bits(L["plain"]), bits(L["all"])), f"converting wq only is a third result: {L['some']}")
check(bits(L["none_ag"]) == bits(L["plain"]), f"fp8 all-gather, filter 'layers': nothing cast: {L['none_ag']} == {L['plain']}")
check(bits(L["all_ag"]) not in (bits(L["plain"]), bits(L["all"])), f"fp8 all-gather casts the fp32 master once: {L['all_ag']} != {L['all']}")
sys.exit(0 if ok else 1)
PY
