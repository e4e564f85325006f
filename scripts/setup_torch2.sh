#!/bin/sh
# setup_torch2.sh [--python] - a virtual environment with PyTorch 2.x from PyPI, for the checks of
# PyTorch's own parallelisms (examples/torch/torch_layout.py, check_layout.sh, tests/torch2.cmake).
# The project's build and its C tests never need it; Debian's python3-torch 1.13 (scripts/setup.sh)
# stays the interpreter of the other torch tests.
#
#   scripts/setup_torch2.sh            # create or reuse the venv; the last line names its python
#   py=$(scripts/setup_torch2.sh --python)   # only the interpreter's path on stdout
#
# HP_TORCH2_VENV: where (default ~/.cache/hyperpar/torch2-venv, shared by every worktree);
# HP_TORCH2_VERSION: the torch pin (default 2.15.0, the version proven in docs/torch.md);
# HP_TORCH2_PYTHON: the interpreter that makes the venv (default python3 with a working venv module).
#
# How: `pip install torch==V numpy` into the venv. PyPI's Linux x86_64 wheel is the CUDA build
# (539 MB) and pulls the nvidia-*/cuda-toolkit/triton wheels: 5.4 GB installed, about 2 minutes
# here with the wheels cached. The lighter `--no-deps` install does not import on a machine
# without CUDA (libtorch.so links libcufile, libcusparseLt, libnvshmem_host, libcudart, ...:
# "ImportError: libcufile.so.0: cannot open shared object file"), and PyTorch's CPU index
# (download.pytorch.org/whl/cpu) is a different host, often unreachable where PyPI is. So the
# full wheel it is; CPU and gloo are all that is used.
#
# Exit codes: 0 ready; 77 when PyPI cannot be reached and no venv exists (one line saying so: the
# caller skips); 1 when the install itself fails.
set -eu
venv=${HP_TORCH2_VENV:-$HOME/.cache/hyperpar/torch2-venv}
ver=${HP_TORCH2_VERSION:-2.15.0}
quiet=0
[ "${1:-}" = --python ] && quiet=1
say() { if [ $quiet = 1 ]; then echo "$*" >&2; else echo "$*"; fi; }

ready() {   # the venv imports torch >= 2.4 with gloo (FSDP2, DTensor, context_parallel, pipelining)
  [ -x "$venv/bin/python" ] && OMP_NUM_THREADS=1 "$venv/bin/python" - <<'PY' 2>/dev/null
import sys, torch, torch.distributed as dist
from torch.distributed.fsdp import fully_shard                      # noqa: F401
from torch.distributed.tensor.parallel import parallelize_module     # noqa: F401
from torch.distributed.pipelining import PipelineStage               # noqa: F401
major, minor = (int(x) for x in torch.__version__.split(".")[:2])
sys.exit(0 if (major, minor) >= (2, 4) and dist.is_gloo_available() else 1)
PY
}

stamp=$venv/.hp_torch2_ready   # written after a full check: later calls skip the 8 s import
if [ -x "$venv/bin/python" ] && [ -f "$stamp" ] && [ "$stamp" -nt "$venv/bin/python" ]; then
  say "setup_torch2: ready: $venv/bin/python (torch $(cat "$stamp"))"
  [ $quiet = 1 ] && echo "$venv/bin/python"
  exit 0
fi
if ready; then
  v=$("$venv/bin/python" -c "import torch; print(torch.__version__)" 2>/dev/null)
  echo "$v" >"$stamp"
  say "setup_torch2: ready: $venv/bin/python (torch $v)"
  [ $quiet = 1 ] && echo "$venv/bin/python"
  exit 0
fi

base=${HP_TORCH2_PYTHON:-}
if [ -z "$base" ]; then
  for c in python3 /usr/bin/python3 python3.11 python3.12; do
    if command -v "$c" >/dev/null 2>&1 && "$c" -c "import venv, ensurepip" 2>/dev/null; then base=$c; break; fi
  done
fi
[ -n "$base" ] || { say "setup_torch2: no python3 with the venv and ensurepip modules (apt-get install python3-venv)"; exit 1; }

# PyPI first: without it nothing can be installed, and the caller skips (77)
if ! "$base" -m pip --version >/dev/null 2>&1; then
  say "setup_torch2: SKIP: $base has no pip to ask PyPI for torch $ver"; exit 77
fi
if ! timeout 60 "$base" -m pip download --no-deps --quiet --dest "${TMPDIR:-/tmp}/setup_torch2.$$" \
       "filelock" >/dev/null 2>&1; then
  rm -rf "${TMPDIR:-/tmp}/setup_torch2.$$"
  say "setup_torch2: SKIP: pip cannot reach PyPI (a 60 s download of a small package failed): torch $ver is not installable here"
  exit 77
fi
rm -rf "${TMPDIR:-/tmp}/setup_torch2.$$"

say "setup_torch2: installing torch $ver from PyPI into $venv (the CUDA wheel and its nvidia-* wheels, about 5.4 GB; CPU and gloo are used)"
start=$(date +%s)
rm -rf "$venv"
mkdir -p "$(dirname "$venv")"
"$base" -m venv "$venv"
if ! "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "torch==$ver" numpy >&2; then
  say "setup_torch2: pip install torch==$ver failed (above)"; exit 1
fi
ready || { say "setup_torch2: torch $ver installed but does not import with gloo, FSDP2, DTensor and pipelining"; exit 1; }
v=$("$venv/bin/python" -c "import torch; print(torch.__version__)")
echo "$v" >"$stamp"
size=$(du -sh "$venv" | cut -f1)
say "setup_torch2: ready: $venv/bin/python (torch $v, $size, $(( $(date +%s) - start )) s)"
[ $quiet = 1 ] && echo "$venv/bin/python"
exit 0
