#!/bin/sh
# run_data_formats.sh HP TEXT - the same token ids in every format hp reads (training-job.md §4):
# TEXT's bytes written by scripts/write_token_files.py as llm.c v1 and v7 shards, raw uint16 and
# uint32, a Megatron int32 .bin/.idx with gaps between sequences, and by scripts/text_to_llmc.py
# as an llm.c shard; 3 AdamW steps on each must give the losses of `--data TEXT` (bytes) bit for
# bit (losses_exact of --json). The converter's val split must hold every byte once.
set -u
hp=$1; text=$2
root=$(cd "$(dirname "$0")/.." && pwd)
dir=$(mktemp -d) || exit 2
trap 'rm -rf "$dir"' EXIT
python3 "$root/scripts/write_token_files.py" formats "$text" "$dir" || exit 2
python3 "$root/scripts/text_to_llmc.py" "$text" "$dir/conv" >/dev/null || exit 2
python3 "$root/scripts/text_to_llmc.py" "$text" "$dir/split" --val-fraction 0.1 >/dev/null || exit 2
pass=0; fail=0
losses() {   # FILE FORMAT -> the losses_exact of a 3-step run, one line
  "$hp" run --training.dataset_path "$1" --training.dataset_format "$2" --steps 3 --optimizer adamw \
      --lr 3e-3 --json "$dir/out.json" --quiet >/dev/null || { echo "run failed"; return; }
  python3 -c "import json,sys; print(' '.join(json.load(open(sys.argv[1]))['losses_exact']))" "$dir/out.json"
}
want=$(losses "$text" bytes)
echo "bytes: $want"
for c in "same.llmc1.bin auto" "same.llmc7.bin llmc" "same.u16 uint16" "same.u32 uint32" \
         "same_meg auto" "same_meg.bin megatron" "conv_train.bin auto"; do
  set -- $c
  got=$(losses "$dir/$1" "$2")
  if [ "$got" = "$want" ]; then pass=$((pass + 1)); echo "PASS  $1 ($2)"
  else fail=$((fail + 1)); echo "FAIL  $1 ($2): $got"; fi
done
# the split: train + val tokens = the text's bytes, val the last 10%
n=$(wc -c <"$text")
sizes=$(python3 -c "import os,sys; print((os.path.getsize(sys.argv[1]) - 1024) // 2 + (os.path.getsize(sys.argv[2]) - 1024) // 2)" \
        "$dir/split_train.bin" "$dir/split_val.bin")
if [ "$sizes" = "$n" ]; then pass=$((pass + 1)); echo "PASS  val split: $sizes tokens"
else fail=$((fail + 1)); echo "FAIL  val split: $sizes tokens, the text has $n bytes"; fi
echo "data_formats: $pass passed, $fail failed"
[ "$fail" -eq 0 ] && [ "$pass" -eq 8 ]
