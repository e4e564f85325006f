#!/bin/sh
# setup_torchtitan.sh - TorchTitan in the torch 2 venv (scripts/setup_torch2.sh), for the checks of
# TorchTitan itself (examples/torch/check_torchtitan.sh, tests/check_torchtitan_keys.py). Prints the
# venv's python on stdout; installs TorchTitan when it does not import, saying so in one line.
#   py=$(sh scripts/setup_torchtitan.sh)
#
# The pin is 0.2.2, the last release with TOML job files and torchtitan/config/job_config.py (0.3.0
# has Python config registries instead). It goes in with --no-deps: its requirements would move
# torch; then the few packages its imports need. datasets (imported by torchtitan's data loaders)
# goes in with --no-deps too, with its own requirements but huggingface_hub, whose older version
# datasets asks for would break the installed transformers.
# Exit codes: 0 ready; 77 when torch 2 or TorchTitan cannot be installed (PyPI unreachable: one
# line on stderr, the caller skips).
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
py=$(sh "$root/scripts/setup_torch2.sh" --python) || exit $?
ok() { "$py" -c "import torchtitan.models.llama3, torchtitan.distributed, torchtitan.config.job_config" 2>/dev/null; }
if ! ok; then
  echo "setup_torchtitan: installing torchtitan 0.2.2 into $(dirname "$(dirname "$py")") (pip)" >&2
  { "$py" -m pip install -q --no-deps torchtitan==0.2.2 torchdata==0.11.0 datasets &&
    "$py" -m pip install -q tyro einops tensorboard pyarrow dill pandas xxhash multiprocess "fsspec[http]" \
      requests tqdm pyyaml filelock; } >/dev/null 2>&1
  ok || { echo "setup_torchtitan: SKIP: torchtitan 0.2.2 could not be installed (PyPI unreachable?)" >&2; exit 77; }
fi
echo "$py"
