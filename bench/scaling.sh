#!/usr/bin/env bash
# bench/scaling.sh - how hyperpar scales from 1 to 2 ranks on this machine, next to PyTorch
# gloo DDP on the same model, batch and thread count, in one go:
#   weak scaling (2 sequences per rank): DDP, FSDP, HSDP (2 x 2 = 4 ranks), PyTorch gloo DDP
#   strong scaling (the same 2 sequences): TP + SP on 2 ranks
#   the machine's ceiling: 2 independent 1-rank jobs at once (what the free cores allow)
# Rounds are interleaved (1 rank, N ranks, 1 rank, ...); the table gives the median of the
# per-round efficiencies and their spread. Model small (D 128, L 4), S 256, 1 thread per rank.
#
#   bench/scaling.sh                         # 7 rounds of 20 steps (~5 min)
#   ROUNDS=9 STEPS=12 bench/scaling.sh       # settings: ROUNDS, STEPS, WARMUP, MODEL, SEQ,
#                                            # BATCH_PER_RANK, BUILD_DIR (default build), OUT,
#                                            # NO_TORCH=1 (hyperpar only)
# Timings are reported, never asserted (the machine is shared): see bench/README.md.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-7}
STEPS=${STEPS:-20}
WARMUP=${WARMUP:-2}
MODEL=${MODEL:-small}
SEQ=${SEQ:-256}
BATCH_PER_RANK=${BATCH_PER_RANK:-2}
BUILD_DIR=${BUILD_DIR:-build}
OUT=${OUT:-${TMPDIR:-/tmp}/hp-scaling}
PY=/usr/bin/python3   # Debian's python3, the one python3-torch installs into

torch_flag=()
if [ "${NO_TORCH:-0}" = 1 ]; then
  torch_flag=(--no-torch)
elif ! "$PY" -c 'import torch.distributed' 2>/dev/null; then
  echo "scaling.sh: PyTorch is missing (as root: apt-get install -y python3-torch); NO_TORCH=1 runs hyperpar only" >&2
  exit 1
fi
if [ ! -x "$BUILD_DIR/hp" ]; then
  cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$BUILD_DIR" -j"$(nproc)" --target hp >/dev/null
fi
# the published figures are of a Release build (-O3); `make build` / setup.sh configure
# RelWithDebInfo (-O2 -g), a few per cent slower: say which one is measured
build_type=$(sed -n 's/^CMAKE_BUILD_TYPE:STRING=//p' "$BUILD_DIR/CMakeCache.txt" 2>/dev/null)
[ "$build_type" = Release ] ||
  echo "scaling.sh: note: $BUILD_DIR is a ${build_type:-non-CMake} build; bench/README.md's figures are of a Release build (cmake -S . -B $BUILD_DIR -DCMAKE_BUILD_TYPE=Release)" >&2
mkdir -p "$OUT"
exec "$PY" bench/scaling.py --hp "$BUILD_DIR/hp" --rounds "$ROUNDS" --steps "$STEPS" --warmup "$WARMUP" \
  --model "$MODEL" --seq-len "$SEQ" --batch-per-rank "$BATCH_PER_RANK" --json "$OUT/scaling.json" \
  "${torch_flag[@]}"
