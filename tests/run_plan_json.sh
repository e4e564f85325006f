#!/bin/sh
# run_plan_json.sh - `hp plan --memory --json FILE` writes the keys `hp run --json` shares
# (params_total, memory.persistent_bytes, memory.peak_bytes, traffic.<group>.<op>), with the
# same numbers the text report prints, for a dense and a MoE layout; '-' writes to stdout.
#   run_plan_json.sh HP_BINARY
hp=$1
[ -x "$hp" ] || { echo "usage: run_plan_json.sh HP_BINARY" >&2; exit 2; }
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
fail=0
check() {   # check NAME JSON_FILE TEXT_FILE PYTHON_ASSERTIONS
  python3 - "$2" "$3" "$4" <<'PY' || { echo "FAIL $1"; fail=1; return; }
import json, re, sys
j = json.load(open(sys.argv[1]))
text = open(sys.argv[2]).read()
for k in ("params_total", "memory", "traffic", "flops_per_rank"):
    assert k in j, "missing key " + k
for k in ("persistent_bytes", "peak_bytes", "params_bytes", "grads_bytes", "optimizer_bytes",
          "fsdp_working_bytes", "comm_scratch_bytes", "activation_bytes", "scratch_bytes"):
    assert isinstance(j["memory"][k], (int, float)) and j["memory"][k] >= 0, "memory." + k
m = j["memory"]
assert m["persistent_bytes"] == m["params_bytes"] + m["grads_bytes"] + m["optimizer_bytes"]
assert m["peak_bytes"] > m["persistent_bytes"]
assert j["worst_rank"]["peak_bytes"] >= m["peak_bytes"] and 0 <= j["worst_rank"]["rank"] < j["world"]
# the text report prints the same numbers
assert re.search(r"params_total [0-9,]+ \(%d\)" % j["params_total"], text), "params_total in the text"
assert re.search(r"persistent +%d B" % m["persistent_bytes"], text), "persistent in the text"
for g, ops in j["traffic"].items():
    for op, b in ops.items():
        assert b > 0 and re.search(r"%s +%s +%d " % (g, op, b), text), "traffic %s/%s in the text" % (g, op)
exec(sys.argv[3])
print("ok", sys.argv[1])
PY
}
"$hp" plan --model llama3-8b --tp 2 --dp-shard 4 --seq-len 4096 --batch 8 --memory --json "$tmp/dense.json" >"$tmp/dense.txt" ||
  { echo "FAIL: hp plan dense exit $?"; exit 1; }
check dense "$tmp/dense.json" "$tmp/dense.txt" '
assert j["params_total"] == 8030261248
assert set(j["traffic"]) >= {"tp", "fsdp"} and "all_gather" in j["traffic"]["fsdp"]
assert "ep" not in j["traffic"]'
"$hp" plan --model mixtral-8x7b --dp-shard 16 --ep 8 --seq-len 1024 --batch 16 --memory --hw h100 --json "$tmp/moe.json" >"$tmp/moe.txt" ||
  { echo "FAIL: hp plan moe exit $?"; exit 1; }
check moe "$tmp/moe.json" "$tmp/moe.txt" '
assert j["params_total"] == 46702792704
assert j["traffic"]["ep"]["all_to_all"] > 0 and "efsdp" in j["traffic"]
assert j["memory"]["activation_uniform_bytes"] < j["memory"]["activation_bytes"]
t = j["time_model"]
assert t["hw"] == "h100" and 0 < t["mfu_serial"] < t["mfu_overlap"] <= 1'
# pp: the activations are the schedule's microbatches in flight; pp rank 0 is the worst under 1f1b
"$hp" plan --model tiny --layers 8 --pp 4 --pp-microbatches 8 --rank 3 --memory --json "$tmp/pp.json" >"$tmp/pp.txt" ||
  { echo "FAIL: hp plan pp exit $?"; exit 1; }
check pp "$tmp/pp.json" "$tmp/pp.txt" '
assert j["memory"]["pp_in_flight"] == 1 and j["rank"] == 3
assert j["worst_rank"]["rank"] == 0 and j["worst_rank"]["peak_bytes"] > j["memory"]["peak_bytes"]
assert "pp" in j["traffic"]'
# '-' = stdout: the JSON follows the text report
"$hp" plan --model tiny --json - >"$tmp/stdout.txt" || { echo "FAIL: --json - exit $?"; exit 1; }
sed -n '/^{/,$p' "$tmp/stdout.txt" >"$tmp/stdout.json"
check stdout "$tmp/stdout.json" "$tmp/stdout.txt" 'assert j["params_total"] == 106816'
[ "$fail" -eq 0 ] && echo "plan json: PASS"
exit "$fail"
