#!/bin/sh
# run_float8_filter.sh HP OUT_DIR - the float8 module filter end to end (docs/float8.md): with a
# filter naming every block linear ("layers") nothing converts, so the losses equal the plain
# bf16 run's bit for bit; with a filter naming only the attention's wq the losses differ from
# both the plain run and the run converting every linear. The fp8 all-gather
# (--float8-fsdp-all-gather, applied at fsdp 1 too) follows the same filter: naming every linear
# gives the plain run again; converting all of them differs from the bf16-gathered float8 run (the
# weight is rounded once, from fp32, not twice). On tiny-moe, the routed experts (moe.experts)
# convert too: leaving them out, or converting only them, gives results of their own, and a
# filter naming every linear ("layers") again the plain run's. Exit 0 when all hold.
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
run_moe() {   # run_moe NAME FLAGS...: the same on tiny-moe
  name=$1; shift
  "$hp" run --model tiny-moe --steps 3 --mixed-precision-param bfloat16 --quiet --json "$out/$name.json" "$@" \
    >"$out/$name.log" 2>&1 || { echo "FAIL: $name: exit $? ($(tail -1 "$out/$name.log"))"; exit 1; }
}
run_moe moe_plain
run_moe moe_all --float8 tensorwise
run_moe moe_none --float8 tensorwise --float8-filter layers
run_moe moe_no_routed --float8 tensorwise --float8-filter moe.experts
run_moe moe_routed_only --float8 tensorwise --float8-filter attention,shared_experts
python3 - "$out" <<'PY'
import json, struct, sys
L = {n: json.load(open(f"{sys.argv[1]}/{n}.json"))["losses"]
     for n in ("plain", "all", "none", "some", "none_ag", "all_ag", "moe_plain", "moe_all", "moe_none",
               "moe_no_routed", "moe_routed_only")}
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
check(bits(L["moe_none"]) == bits(L["moe_plain"]), f"tiny-moe, filter 'layers' converts nothing: {L['moe_none']}")
moe = [bits(L[n]) for n in ("moe_plain", "moe_all", "moe_no_routed", "moe_routed_only")]
check(all(moe[i] != moe[j] for i in range(4) for j in range(i)),
      f"tiny-moe: plain, all, all but the routed experts, the routed experts only differ: "
      f"{L['moe_all']} {L['moe_no_routed']} {L['moe_routed_only']}")
sys.exit(0 if ok else 1)
PY
