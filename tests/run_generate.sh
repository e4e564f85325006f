#!/bin/sh
# run_generate.sh HP - hp generate end to end (docs/model_io.md):
# 1. a tiny model trained 40 steps on a text's bytes, checkpointed;
# 2. greedy from the checkpoint on 1 process, --tp 2, --pp 2 and --tp 2 --pp 2: the same ids;
#    the JSON's prompt_ids are the prompt's bytes, its text the bytes of its ids, and stdout
#    the same text, streamed;
# 3. the HF export of the checkpoint (--load DIR) and hp's safetensors export (--load FILE)
#    generate the checkpoint's ids;
# 4. a seed repeats a sampled text (on 1 process and on --tp 2); --max-new-tokens N gives N ids;
# 5. the stats line names the prompt's and the generation's tokens and speeds.
# Exits 1 on the first failure with one line saying which.
hp=$1
[ -x "$hp" ] || { echo "usage: run_generate.sh HP_BINARY" >&2; exit 2; }
T=$(mktemp -d) || exit 2
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
text=/usr/share/common-licenses/GPL-3
[ -r "$text" ] || { echo "skipped: no $text to train on"; exit 77; }

"$hp" run --steps 40 --optimizer adamw --lr 3e-3 --data "$text" --checkpoint-dir "$T/ck" --quiet >"$T/train.out" 2>&1 ||
  fail "training: exit $? ($(tail -1 "$T/train.out"))"
gen() {   # gen NAME FLAGS...: hp generate into $T/NAME.{out,err,json}
  name=$1; shift
  "$hp" generate --prompt "The GNU " --max-new-tokens 24 --json "$T/$name.json" "$@" >"$T/$name.out" 2>"$T/$name.err" ||
    fail "hp generate $*: exit $? ($(tail -1 "$T/$name.err"))"
}
gen one --checkpoint "$T/ck"
gen tp2 --checkpoint "$T/ck" --tp 2
gen pp2 --checkpoint "$T/ck" --pp 2
gen tp2pp2 --checkpoint "$T/ck" --tp 2 --pp 2
"$hp" export "$T/ck" --format hf --out "$T/hf" >/dev/null 2>&1 || fail "hp export --format hf"
"$hp" export "$T/ck" --out "$T/model.safetensors" >/dev/null 2>&1 || fail "hp export"
gen hf --load "$T/hf"
gen file --load "$T/model.safetensors"
gen seeded --checkpoint "$T/ck" --temperature 0.9 --top-k 40 --top-p 0.95 --seed 5
gen seeded2 --checkpoint "$T/ck" --temperature 0.9 --top-k 40 --top-p 0.95 --seed 5
gen seeded_tp2 --checkpoint "$T/ck" --temperature 0.9 --top-k 40 --top-p 0.95 --seed 5 --tp 2
"$hp" generate --checkpoint "$T/ck" --prompt-ids 84,104,101 --max-new-tokens 5 --json "$T/five.json" >/dev/null 2>"$T/five.err" ||
  fail "hp generate --prompt-ids: exit $?"
grep -Eq '^generate: 8 prompt tokens in [0-9.]+ s \([0-9.]+ tok/s\) \| 24 new tokens in [0-9.]+ s \([0-9.]+ tok/s\) \| world 4$' \
  "$T/tp2pp2.err" || fail "no stats line: $(tail -1 "$T/tp2pp2.err")"

python3 - "$T" <<'PY' || exit 1
import json, sys
T = sys.argv[1]
def load(n): return json.load(open(f"{T}/{n}.json"))
one = load("one")
if one["prompt_ids"] != list(b"The GNU "): sys.exit(f"FAIL: prompt_ids {one['prompt_ids']}, want the prompt's bytes")
if len(one["ids"]) != 24: sys.exit(f"FAIL: {len(one['ids'])} ids, want 24")
if any(not 0 <= i < 256 for i in one["ids"]): sys.exit("FAIL: an id outside the vocab")
text = bytes(one["ids"]).decode("utf-8", "replace")
if one["text"] != text: sys.exit(f"FAIL: text {one['text']!r}, the ids' bytes say {text!r}")
out = open(f"{T}/one.out", "rb").read().decode("utf-8", "replace").rstrip("\n")
if out != text: sys.exit(f"FAIL: stdout {out!r}, the JSON's text {text!r}")
for n in ("tp2", "pp2", "tp2pp2", "hf", "file"):
    if load(n)["ids"] != one["ids"]: sys.exit(f"FAIL: {n}'s greedy ids {load(n)['ids']} are not one process's {one['ids']}")
s = load("seeded")
for n in ("seeded2", "seeded_tp2"):
    if load(n)["ids"] != s["ids"]: sys.exit(f"FAIL: {n}: the seed did not repeat the sample")
if len(load("five")["ids"]) != 5: sys.exit("FAIL: --max-new-tokens 5 did not give 5 ids")
print(f"greedy: {text!r} on 1 process, tp 2, pp 2, tp 2 x pp 2, the HF folder and the export; "
      f"seed 5: {s['text']!r} twice and on tp 2")
PY
echo "PASS: hp generate"
