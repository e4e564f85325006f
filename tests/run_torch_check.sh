#!/bin/sh
# run_torch_check.sh HP PYTHON DIR MODEL [hp run flags...] - dump step 1 of a run and check
# it against the PyTorch float64 model of tests/check_torch.py. Without torch it fails: the
# outside check is required (scripts/setup.sh installs python3-torch).
set -eu
hp=$1 py=$2 dir=$3 model=$4
shift 4
"$py" -c "import torch" 2>/dev/null || {
  echo "FAIL: torch is not installed for $py (apt-get install python3-torch; scripts/setup.sh does)"; exit 1; }
rm -rf "$dir"
"$hp" run --model "$model" --steps 1 --dump "$dir" --quiet "$@"
exec "$py" "$(dirname "$0")/check_torch.py" "$dir"
