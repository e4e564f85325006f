#!/bin/sh
# setup_beyond.sh [--python] - a virtual environment with megatron-core and deepspeed on top of
# the torch 2 venv of scripts/setup_torch2.sh, for examples/beyond/ (docs/beyond_pytorch.md).
# The torch 2 venv is never modified: this venv sees its site-packages through a .pth file
# (torch2_venv.pth), and pip installs megatron-core and deepspeed with --no-deps (their
# requirement on torch is that venv's torch), plus their small pure-Python requirements, none of
# which depends on torch. Debian's python3-torch 1.13 is never seen (no --system-site-packages).
#
#   scripts/setup_beyond.sh                 # create or reuse; the last line names its python
#   py=$(scripts/setup_beyond.sh --python)  # only the interpreter's path on stdout
#
# HP_BEYOND_VENV: where (default ~/.cache/hyperpar/beyond-venv); HP_MEGATRON_VERSION (0.16.1) and
# HP_DEEPSPEED_VERSION (0.19.8): the pins proven in docs/beyond_pytorch.md.
# Exit codes: 0 ready; 77 when torch 2 or these packages cannot be installed here (PyPI
# unreachable: one line, the caller skips); 1 when an install itself fails.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
venv=${HP_BEYOND_VENV:-$HOME/.cache/hyperpar/beyond-venv}
mver=${HP_MEGATRON_VERSION:-0.16.1}
dver=${HP_DEEPSPEED_VERSION:-0.19.8}
quiet=0
[ "${1:-}" = --python ] && quiet=1
say() { if [ $quiet = 1 ]; then echo "$*" >&2; else echo "$*"; fi; }
done_ok() {
  say "setup_beyond: ready: $venv/bin/python ($(cat "$venv/.hp_beyond_ready"))"
  [ $quiet = 1 ] && echo "$venv/bin/python"
  exit 0
}

rc=0
t2=$(sh "$here/setup_torch2.sh" --python) || rc=$?
if [ $rc = 77 ]; then say "setup_beyond: SKIP: torch 2 is not installable here (scripts/setup_torch2.sh)"; exit 77; fi
[ $rc = 0 ] || { say "setup_beyond: scripts/setup_torch2.sh failed (exit $rc)"; exit 1; }
site=$("$t2" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')

ready() {
  [ -x "$venv/bin/python" ] && DS_ACCELERATOR=cpu OMP_NUM_THREADS=1 PYTHONWARNINGS=ignore "$venv/bin/python" - <<'PY' >"$venv/.hp_beyond_probe" 2>&1
import torch, megatron.core, deepspeed
from megatron.core import parallel_state, tensor_parallel  # noqa: F401
from deepspeed.utils import safe_get_full_grad  # noqa: F401
print(f"torch {torch.__version__}, megatron-core {megatron.core.__version__}, deepspeed {deepspeed.__version__}")
PY
}
stamp=$venv/.hp_beyond_ready
if [ -f "$stamp" ] && [ -f "$venv/lib/torch2_site" ] && [ "$(cat "$venv/lib/torch2_site")" = "$site" ] &&
   [ "$stamp" -nt "$t2" ]; then
  done_ok
fi
if [ -x "$venv/bin/python" ] && ready; then
  tail -1 "$venv/.hp_beyond_probe" >"$stamp"; done_ok
fi

# PyPI reachable? (setup_torch2 may have found its venv without asking)
if ! timeout 60 "$t2" -m pip download --no-deps --quiet --dest "${TMPDIR:-/tmp}/setup_beyond.$$" hjson >/dev/null 2>&1; then
  rm -rf "${TMPDIR:-/tmp}/setup_beyond.$$"
  say "setup_beyond: SKIP: pip cannot reach PyPI: megatron-core and deepspeed are not installable here"
  exit 77
fi
rm -rf "${TMPDIR:-/tmp}/setup_beyond.$$"
say "setup_beyond: installing megatron-core $mver and deepspeed $dver into $venv (over the torch 2 venv's site-packages, $site)"
rm -rf "$venv"
base=$("$t2" -c 'import sys; print(sys._base_executable)')
"$base" -m venv "$venv"
vsite=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
echo "$site" >"$vsite/torch2_venv.pth"
echo "$site" >"$venv/lib/torch2_site"
pip="$venv/bin/python -m pip install --quiet --disable-pip-version-check"
# the frameworks without their requirements (torch, numpy: the torch 2 venv's)
$pip --no-deps "megatron-core==$mver" "deepspeed==$dver" >&2 || { say "setup_beyond: pip install of megatron-core / deepspeed failed (above)"; exit 1; }
# deepspeed's other requirements, each without torch among its own (pip sees what the .pth
# path holds and installs only what is missing there)
$pip hjson msgpack ninja psutil py-cpuinfo "pydantic>=2" einops tqdm packaging >&2 ||
  { say "setup_beyond: pip install of deepspeed's requirements failed (above)"; exit 1; }
ready || { cat "$venv/.hp_beyond_probe" >&2; say "setup_beyond: installed, but megatron.core / deepspeed do not import (above)"; exit 1; }
tail -1 "$venv/.hp_beyond_probe" >"$stamp"
done_ok
