#!/bin/sh
# run_pip_check.sh MODULES CHECK.py HP TEST_HF DIR - an outside check of hp's exports with the
# library people use (tests/check_hf_transformers.py: transformers; tests/check_gguf_llamacpp.py:
# llama.cpp through llama-cpp-python), in the torch 2 venv of scripts/setup_torch2.sh, each
# module of MODULES (comma-separated pip names) pip-installed there when missing (llama-cpp-python
# builds llama.cpp from source: minutes). Skips (77, one line) where PyPI cannot be reached.
modules=$1 check=$2 hp=$3 exporter=$4 dir=$5
root=$(cd "$(dirname "$0")/.." && pwd)
py=$(sh "$root/scripts/setup_torch2.sh" --python) || { rc=$?; [ $rc = 77 ] && echo "SKIP: no torch 2 (PyPI unreachable)"; exit $rc; }
for m in $(echo "$modules" | tr ',' ' '); do
  import=$(echo "$m" | tr '-' '_' | sed 's/^llama_cpp_python$/llama_cpp/; s/^protobuf$/google.protobuf/')
  "$py" -c "import $import" 2>/dev/null && continue
  echo "run_pip_check: installing $m into $(dirname "$(dirname "$py")") (pip)"
  CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_CUDA=OFF" "$py" -m pip install -q "$m" >/dev/null 2>&1 ||
    { echo "SKIP: pip cannot install $m (PyPI unreachable?)"; exit 77; }
done
mkdir -p "$dir"
OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 TRANSFORMERS_VERBOSITY=error "$py" "$root/tests/$check" "$hp" "$exporter" \
  "$dir/work" >"$dir/log" 2>&1
rc=$?
grep -v "Loading weights" "$dir/log"
exit $rc
