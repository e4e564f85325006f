#!/bin/sh
# run_dump_check.sh HP PYTHON READER DIR - `hp run --steps 1 --dump DIR` (and a 4-rank
# FSDP+TP run) writes safetensors files that a reader written against the format alone loads,
# with the model's names and shapes; --load of the dumped model reproduces the dumped loss.
set -eu
hp=$1 py=$2 reader=$3 dir=$4
rm -rf "$dir"
"$hp" run --model tiny --steps 1 --dump "$dir/one" --quiet
"$hp" run --model tiny --steps 1 --dump "$dir/four" --dp-shard 2 --tp 2 --quiet
for run in one four; do
  "$py" "$reader" "$dir/$run/model.safetensors" --expect-count 21 \
        --expect-shape tok_embeddings.weight=256x64 --expect-shape layers.1.feed_forward.w2.weight=64x128
  "$py" "$reader" "$dir/$run/grads.safetensors" --expect-count 21
  "$py" "$reader" "$dir/$run/batch.safetensors" --expect-count 2 --expect-shape tokens=8x32 \
        --expect-shape labels=8x32
done
# the 4-rank run gathered the same tensors as the single rank (same init, same batch)
cmp "$dir/one/model.safetensors" "$dir/four/model.safetensors"
cmp "$dir/one/batch.safetensors" "$dir/four/batch.safetensors"
# --load of the dumped model starts from the same parameters: same loss as the dump
l1=$("$py" -c "import json,sys; print('%.5f' % json.load(open(sys.argv[1]))['loss'])" "$dir/one/result.json")
l2=$("$hp" run --model tiny --steps 1 --load "$dir/one/model.safetensors" | sed -n 's/^step:.*  loss: *\([0-9.]*\) .*/\1/p')
[ "$l1" = "$l2" ] || { echo "loss after --load $l2 != dumped loss $l1"; exit 1; }
echo "dump check: 1 passed, 0 failed"
