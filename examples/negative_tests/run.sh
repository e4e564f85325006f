#!/bin/sh
# negative_tests: the mistakes of the completeness matrix's negative cases, made in a user's
# program (the examples, under mpirun), must be refused - every rank exits, non-zero, fast, with
# the rule and the numbers printed once - and leave no rank running. (The negative cases
# themselves, through `hp run`, are the library's table, src/verify/recipes.c: `hp matrix` and
# their recipe_neg-* CTests run each once.)
#  1. the example binaries under mpirun with illegal degrees;
#  2. afterwards no example process may be left.
. "$(cd "$(dirname "$0")" && pwd)/../run_common.sh"
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
# live processes whose command line holds $1 (zombies about to be reaped do not count)
count() {
  ps -eo stat=,args= >"$tmp/ps"
  awk -v p="$1" '$1 !~ /^Z/ && index($0, p) { n++ } END { print n + 0 }' "$tmp/ps"
}
before_hp=$(count "hp run")
before_ex=$(count "example_0")
pass=0 fail=0

# 1. in a program: the example binaries, started by mpirun with illegal degrees
expect_refused() {  # NAME NPROC REGEX BINARY ARGS...
  name=$1 np=$2 regex=$3 bin=$4; shift 4
  ex_need "$bin"
  if "$MPIRUN" --version 2>&1 | grep -qi -e hydra -e mpich; then   # MPICH's Hydra
    timeout 60 "$MPIRUN" -n "$np" -bind-to none "$BUILD_DIR/$bin" "$@" >"$tmp/out" 2>"$tmp/err" </dev/null
  else
    timeout 60 "$MPIRUN" --allow-run-as-root --oversubscribe --bind-to none -np "$np" \
      "$BUILD_DIR/$bin" "$@" >"$tmp/out" 2>"$tmp/err" </dev/null
  fi
  rc=$?
  n=$(grep -Ec -- "$regex" "$tmp/err")
  if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && [ "$n" -eq 1 ]; then
    pass=$((pass + 1)); echo "ok    $name: exit $rc, $(grep -E -- "$regex" "$tmp/err")"
  else
    fail=$((fail + 1)); echo "FAIL  $name: exit $rc (124 = hang), the rule printed $n times (want 1):"; cat "$tmp/err"
  fi
}
expect_refused example-world 3 "world size: .* = 4 != 3 ranks launched" \
  example_03_mini_transformer_fsdp_tp --dp-shard 2 --tp 2
expect_refused example-etp 4 "etp must be 1 or tp when ep > 1: etp = 4, tp = 2" \
  example_06_moe_ep_tp_etp --dp-shard 2 --tp 2 --ep 2 --etp 4
expect_refused example-etp-no-ep 4 "etp [(]2[)] > 1 needs ep > 1" \
  example_06_moe_ep_tp_etp --dp-shard 2 --tp 2 --ep 1 --etp 2
expect_refused example-ep-dense 2 "ep [(]2[)] > 1 needs a MoE model" \
  example_03_mini_transformer_fsdp_tp --dp-shard 2 --tp 1 --ep 2
expect_refused example-seq-cp 4 "context parallel: 2[*]cp[*]tp = 2[*]2[*]1 = 4 must divide seq_len [(]30[)]" \
  example_04_transformer_fsdp_cp --dp-shard 2 --cp 2 --seq-len 30
expect_refused example-experts 3 "ep [(]3[)] must divide num_experts [(]8[)]" \
  example_05_moe_ep_fsdp --dp-shard 3 --ep 3
expect_refused example-flag 2 "bad flag '--tp'" \
  example_03_mini_transformer_fsdp_tp --tp two
expect_refused example-pp 4 "pipeline: n_layers [(]2[)] must be >= pp[*]pp_virtual = 4[*]1 = 4 stages" \
  example_03_mini_transformer_fsdp_tp --pp 4 --dp-shard 1 --tp 1

# 2. nothing left running (give exiting ranks up to 5 s)
i=0
while :; do
  after_hp=$(count "hp run")
  after_ex=$(count "example_0")
  [ "$after_hp" -le "$before_hp" ] && [ "$after_ex" -le "$before_ex" ] && break
  i=$((i + 1)); [ $i -ge 10 ] && break
  sleep 0.5
done
if [ "$after_hp" -gt "$before_hp" ] || [ "$after_ex" -gt "$before_ex" ]; then
  fail=$((fail + 1)); echo "FAIL  processes left running: hp run $before_hp -> $after_hp, examples $before_ex -> $after_ex"
  grep -E "hp run|example_0" "$tmp/ps"
else
  pass=$((pass + 1)); echo "ok    no rank left running (hp run: $after_hp, examples: $after_ex)"
fi
echo "negative_tests: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
