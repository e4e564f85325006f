#!/bin/sh
# run_hf_transformers.sh HP TEST_HF DIR - the outside check of the Hugging Face export with
# transformers itself (tests/check_hf_transformers.py), in the torch 2 venv of
# scripts/setup_torch2.sh, transformers pip-installed there when missing. Skips (77, one line)
# where PyPI cannot be reached.
hp=$1 exporter=$2 dir=$3
root=$(cd "$(dirname "$0")/.." && pwd)
py=$(sh "$root/scripts/setup_torch2.sh" --python) || { rc=$?; [ $rc = 77 ] && echo "SKIP: no torch 2 (PyPI unreachable)"; exit $rc; }
if ! "$py" -c "import transformers" 2>/dev/null; then
  echo "run_hf_transformers: installing transformers into $(dirname "$(dirname "$py")") (pip)"
  "$py" -m pip install -q transformers >/dev/null 2>&1 || { echo "SKIP: pip cannot install transformers (PyPI unreachable?)"; exit 77; }
fi
mkdir -p "$dir"
OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 TRANSFORMERS_VERBOSITY=error "$py" "$root/tests/check_hf_transformers.py" "$hp" \
  "$exporter" "$dir/work" >"$dir/log" 2>&1
rc=$?
grep -v "Loading weights" "$dir/log"
exit $rc
