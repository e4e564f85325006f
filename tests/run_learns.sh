#!/bin/sh
# run_learns.sh HP FILE - 40 AdamW steps on the bytes of a real text make the loss fall
# well below its value at init (about ln 256 = 5.5).
set -eu
out=$("$1" run --model tiny --data "$2" --steps 40 --optimizer adamw --lr 3e-3 --seq-len 64)
first=$(echo "$out" | sed -n '/^step:/{s/.*  loss: *\([0-9.]*\) .*/\1/p;q}')
last=$(echo "$out" | grep '^step:' | tail -n 1 | sed -n 's/.*  loss: *\([0-9.]*\) .*/\1/p')
echo "loss: step 1 $first, step 40 $last"
awk -v a="$first" -v b="$last" 'BEGIN { exit !(b < a - 1.5) }' || { echo "learns: 0 passed, 1 failed"; exit 1; }
echo "learns: 1 passed, 0 failed"
