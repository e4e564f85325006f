#!/bin/sh
# run_resume.sh - one resume-equivalence recipe (K1..K6 of issue 14, tests/checkpoint.cmake):
#   run_resume.sh HP PYTHON DIR "LAYOUT_A" "LAYOUT_B" "COMMON"
# trains 6 steps under A uninterrupted; then 3 steps under A saved at step 3, resumed under B
# to step 6; exports both step-6 checkpoints and lets check_resume.py compare losses 4-6 and
# the final parameters (bitwise when A = B, else 1e-5 / 1e-4). Exits non-zero on any failure.
set -u
[ $# -eq 6 ] || { echo "usage: run_resume.sh HP PYTHON DIR LAYOUT_A LAYOUT_B COMMON" >&2; exit 2; }
hp=$1 py=$2 dir=$3 a=$4 b=$5 common=$6
here=$(dirname "$0")
rm -rf "$dir" && mkdir -p "$dir" || exit 2
mode=tolerance
[ "$a" = "$b" ] && mode=bitwise
step() { echo "+ hp $*"; "$hp" "$@" || { echo "FAIL: hp $* exited $?"; exit 1; }; }
# shellcheck disable=SC2086
step run $common $a --optimizer adamw --steps 6 --checkpoint-dir "$dir/full" --json "$dir/full.json" --quiet
# shellcheck disable=SC2086
step run $common $a --optimizer adamw --steps 3 --checkpoint-dir "$dir/ck" --checkpoint-every 3 --json "$dir/first.json" --quiet
# shellcheck disable=SC2086
step run $common $b --optimizer adamw --steps 6 --resume "$dir/ck" --checkpoint-dir "$dir/res" --json "$dir/res.json" --quiet
step export "$dir/full/step-6" --out "$dir/full.safetensors" --optimizer
step export "$dir/res/step-6" --out "$dir/res.safetensors" --optimizer
"$py" "$here/check_resume.py" "$dir/full.json" "$dir/first.json" "$dir/res.json" \
      "$dir/full.safetensors" "$dir/res.safetensors" "$mode"
