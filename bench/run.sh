#!/usr/bin/env bash
# bench/run.sh - hyperpar's training step next to PyTorch eager's, same model, same machine,
# same thread count, same OpenBLAS kernels (core), in one run; prints the side-by-side table:
#   speed-up   = hyperpar tokens/s / PyTorch tokens/s      (target 1.25x at 1 thread, 1.8x at 2)
#   step/peak  = hyperpar achieved GFLOP/s / the FMA peak  (target >= 0.5 at 1 thread)
#   step/sgemm = hyperpar achieved GFLOP/s / sgemm GFLOP/s (target >= 0.60)
# PyTorch (Debian's, on the same libopenblas) runs with OPENBLAS_CORETYPE = the core hp bench
# reported, so neither side wins by its kernels: hp picks the core (hyperpar/blas.h), PyTorch
# gets the same one; an OPENBLAS_CORETYPE of your own goes to both.
#
#   bench/run.sh                      # threads 1 and 2, model bench, B 4 x S 512
#   THREADS="1" STEPS=5 bench/run.sh  # settings: THREADS, MODEL, SEQ, BATCH, STEPS, WARMUP, ROUNDS,
#                                     # BUILD_DIR (default build), OUT (default /tmp/hp-bench)
#   PRECISION=bf16 bench/run.sh       # hp --mixed-precision-param bfloat16 --gemm onednn against
#                                     # PyTorch's bf16 autocast (target 1.5x at 1 and 2 threads)
#   TORCH2=0 bench/run.sh             # only Debian's 1.13 (default 1: torch 2.x rows as well)
#   TORCH2_PYTHON=/path/python bench/run.sh   # the torch 2.x interpreter (default: the venv of
#                                     # scripts/setup_torch2.sh, made when missing; exit 77 there:
#                                     # one line, the torch 2 rows are skipped)
# Beside Debian's PyTorch 1.13 eager (on the system OpenBLAS), torch 2.x (PyPI's wheel: MKL and
# oneDNN inside) runs the same model and step eager and under torch.compile (inductor's C++ code
# for the CPU; the compile is one untimed step before the warm-up, its code cached under
# $OUT/inductor-t<threads>). A compile that fails shows its row as not run, with the line that
# stopped it.
# The machine may be shared: each round runs hyperpar then PyTorch back to back, ROUNDS times
# (default 2), and the best step of each side counts.
set -euo pipefail
cd "$(dirname "$0")/.."
THREADS=${THREADS:-"1 2"}
MODEL=${MODEL:-bench}
SEQ=${SEQ:-512}
BATCH=${BATCH:-4}
STEPS=${STEPS:-3}
WARMUP=${WARMUP:-2}   # PyTorch's first two steps are slow (allocator, AdamW state): both sides skip 2
ROUNDS=${ROUNDS:-2}
BUILD_DIR=${BUILD_DIR:-build}
OUT=${OUT:-${TMPDIR:-/tmp}/hp-bench}
PRECISION=${PRECISION:-fp32}
case "$PRECISION" in
  fp32) hp_precision=(); torch_precision=() ;;
  bf16) hp_precision=(--mixed-precision-param bfloat16 --gemm onednn); torch_precision=(--bf16) ;;
  *) echo "run.sh: PRECISION is fp32 or bf16, got '$PRECISION'" >&2; exit 2 ;;
esac
PY=/usr/bin/python3   # Debian's python3, the one python3-torch installs into
TORCH2=${TORCH2:-1}

if ! "$PY" -c 'import torch' 2>/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "run.sh: installing python3-torch (Debian) for the PyTorch side"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-torch >/dev/null
  else
    echo "run.sh: PyTorch is missing; as root: apt-get install -y python3-torch" >&2
    exit 1
  fi
fi
if [ ! -x "$BUILD_DIR/hp" ]; then
  cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$BUILD_DIR" -j"$(nproc)" --target hp >/dev/null
fi
# the published figures are of a Release build (-O3); `make build` / setup.sh configure
# RelWithDebInfo (-O2 -g), a few per cent slower: say which one is measured
build_type=$(sed -n 's/^CMAKE_BUILD_TYPE:STRING=//p' "$BUILD_DIR/CMakeCache.txt" 2>/dev/null)
[ "$build_type" = Release ] ||
  echo "run.sh: note: $BUILD_DIR is a ${build_type:-non-CMake} build; bench/README.md's figures are of a Release build (cmake -S . -B $BUILD_DIR -DCMAKE_BUILD_TYPE=Release)" >&2
mkdir -p "$OUT"
rm -f "$OUT"/torch2e_t*_r*.json "$OUT"/torch2c_t*_r*.json "$OUT"/torch2_skipped

# torch 2.x: the interpreter of scripts/setup_torch2.sh (or TORCH2_PYTHON); never a failure of
# this script when it is missing: one line, and those rows are skipped
PY2=
if [ "$TORCH2" != 0 ]; then
  if [ -n "${TORCH2_PYTHON:-}" ]; then
    PY2=$TORCH2_PYTHON
  else
    rc2=0
    PY2=$(sh scripts/setup_torch2.sh --python) || rc2=$?
    if [ "$rc2" != 0 ]; then
      why="scripts/setup_torch2.sh exit $rc2"
      [ "$rc2" = 77 ] && why="$why: torch 2 is not installable here"
      PY2=
    fi
  fi
  if [ -n "$PY2" ] && ! v2=$(OMP_NUM_THREADS=1 "$PY2" -c 'import sys, torch
v = torch.__version__; print(v); sys.exit(0 if int(v.split(".")[0]) >= 2 else 1)' 2>/dev/null); then
    why="$PY2 does not import torch >= 2"
    PY2=
  fi
  if [ -z "$PY2" ]; then
    echo "run.sh: torch 2 rows skipped: $why"
    echo "$why" >"$OUT/torch2_skipped"
  else
    echo "run.sh: torch 2 rows: torch $v2 ($PY2)"
  fi
else
  echo "torch 2 rows not asked for (TORCH2=0)" >"$OUT/torch2_skipped"
fi

for t in $THREADS; do
  for r in $(seq 1 "$ROUNDS"); do
    echo "== threads $t, round $r: hyperpar"
    OPENBLAS_NUM_THREADS=$t "$BUILD_DIR/hp" bench --model "$MODEL" --seq-len "$SEQ" --batch "$BATCH" \
      --steps "$STEPS" --warmup "$WARMUP" --threads "$t" ${hp_precision[@]+"${hp_precision[@]}"} \
      --json "$OUT/hp_t${t}_r${r}.json"
    core=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["blas_core"])' "$OUT/hp_t${t}_r${r}.json")
    echo "== threads $t, round $r: PyTorch eager (OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-$core})"
    # torch.set_num_threads does not reach OpenBLAS (torch's BLAS here): both get the count
    OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-$core} \
    OPENBLAS_NUM_THREADS=$t OMP_NUM_THREADS=$t "$PY" bench/bench_torch.py --model "$MODEL" \
      --seq-len "$SEQ" --batch "$BATCH" --steps "$STEPS" --warmup "$WARMUP" --threads "$t" \
      ${torch_precision[@]+"${torch_precision[@]}"} --json "$OUT/torch_t${t}_r${r}.json" >/dev/null
    if [ -n "$PY2" ]; then
      echo "== threads $t, round $r: torch 2 eager"
      OMP_NUM_THREADS=$t MKL_NUM_THREADS=$t "$PY2" bench/bench_torch.py --model "$MODEL" \
        --seq-len "$SEQ" --batch "$BATCH" --steps "$STEPS" --warmup "$WARMUP" --threads "$t" \
        ${torch_precision[@]+"${torch_precision[@]}"} --json "$OUT/torch2e_t${t}_r${r}.json" >/dev/null ||
        echo "run.sh: torch 2 eager, threads $t: exit $? (row not run)"
      echo "== threads $t, round $r: torch 2 torch.compile (inductor; compile step untimed)"
      # one cache per thread count: inductor's C++ kernels are built for the thread count
      TORCHINDUCTOR_CACHE_DIR="$OUT/inductor-t$t" OMP_NUM_THREADS=$t MKL_NUM_THREADS=$t \
        "$PY2" bench/bench_torch.py --model "$MODEL" --compile \
        --seq-len "$SEQ" --batch "$BATCH" --steps "$STEPS" --warmup "$WARMUP" --threads "$t" \
        ${torch_precision[@]+"${torch_precision[@]}"} --json "$OUT/torch2c_t${t}_r${r}.json" >/dev/null ||
        echo "run.sh: torch 2 torch.compile, threads $t: exit $? (row not run; reason in the table)"
    fi
  done
done

"$PY" - "$OUT" "$THREADS" "$ROUNDS" <<'EOF'
import json, sys, os, platform, subprocess
out, threads, rounds = sys.argv[1], sys.argv[2].split(), int(sys.argv[3])
def best(prefix, t):
    runs = [json.load(open(os.path.join(out, f"{prefix}_t{t}_r{r}.json"))) for r in range(1, rounds + 1)]
    b = min(runs, key=lambda j: j["ms_best"])
    b["sgemm_best"] = max(j.get("sgemm_gflops", 0) for j in runs)
    b["peak_best"] = max(j.get("peak_gflops", 0) for j in runs)
    return b
try:
    cpu = [l.split(":", 1)[1].strip() for l in subprocess.check_output(["lscpu"], text=True).splitlines()
           if l.startswith("Model name")][0]
except Exception:
    cpu = platform.processor()
h0 = best("hp", threads[0])
p0 = best("torch", threads[0])
print(f"\nmodel {h0['model']}, B {h0['batch']} x S {h0['seq_len']}, forward + backward + AdamW; "
      f"CPU {cpu}, {os.cpu_count()} cores; best step of {rounds} rounds; load average now "
      f"{os.getloadavg()[0]:.1f} (above ~0.5 other jobs share the cores)")
print(f"BLAS: hyperpar {h0.get('blas', '?')} core {h0.get('blas_core', '?')} ({h0.get('blas_core_origin', '')}); "
      f"PyTorch {p0.get('torch', '?')} core {p0.get('blas_core', '?')}")
print(f"{'threads':>7} | {'hyperpar ms':>11} {'tok/s':>7} {'GFLOP/s':>8} | {'PyTorch ms':>10} {'tok/s':>7} "
      f"{'GFLOP/s':>8} | {'sgemm':>7} {'peak':>7} | {'speed-up':>8} {'step/peak':>9} {'sgemm/peak':>10} "
      f"{'step/sgemm':>10}")
summary = []
for t in threads:
    h, p = best("hp", t), best("torch", t)
    # the sgemm rate: the best seen in any round at this thread count
    sg, pk = h["sgemm_best"], h["peak_best"]
    speed, frac = h["tokens_per_s"] / p["tokens_per_s"], h["gflops"] / sg
    of_peak, sg_peak = (h["gflops"] / pk, sg / pk) if pk > 0 else (0.0, 0.0)
    if p.get("blas_core") and p["blas_core"] != h.get("blas_core"):
        print(f"  (threads {t}: PyTorch ran core {p['blas_core']}, hyperpar {h.get('blas_core')})")
    print(f"{t:>7} | {h['ms_best']:>11.0f} {h['tokens_per_s']:>7.0f} {h['gflops']:>8.1f} | "
          f"{p['ms_best']:>10.0f} {p['tokens_per_s']:>7.0f} {p['gflops']:>8.1f} | {sg:>7.1f} {pk:>7.1f} | "
          f"{speed:>7.2f}x {of_peak:>9.2f} {sg_peak:>10.2f} {frac:>10.2f}")
    summary.append({"threads": int(t), "hyperpar": h, "torch": p, "sgemm_gflops": sg, "peak_gflops": pk,
                    "speedup_vs_torch": speed, "fraction_of_sgemm": frac, "fraction_of_peak": of_peak,
                    "sgemm_of_peak": sg_peak})
# torch 2.x eager and torch.compile beside Debian's 1.13: ms of the best step, and hyperpar's
# speed-up against each (hp tok/s / torch tok/s); a row that did not run says why
skipped = os.path.join(out, "torch2_skipped")
torch2 = {}
if os.path.exists(skipped):
    print(f"torch 2 rows skipped: {open(skipped).read().strip()}")
else:
    def best2(prefix, t):
        runs, errs = [], []
        for r in range(1, rounds + 1):
            f = os.path.join(out, f"{prefix}_t{t}_r{r}.json")
            if not os.path.exists(f):
                errs.append("no result (the program failed before writing one; see its output above)")
                continue
            j = json.load(open(f))
            (errs.append(j["error"]) if "error" in j else runs.append(j))
        if not runs:
            return None, errs[0] if errs else "not run"
        b = dict(min(runs, key=lambda j: j["ms_best"]))
        b["compile_s_rounds"] = [j["compile_s"] for j in runs if "compile_s" in j]
        return b, None
    print(f"\n{'threads':>7} | {'hyperpar ms':>11} | {'torch ' + p0.get('torch', '?') + ' eager':>22} | "
          f"{'torch 2 eager':>22} | {'torch 2 compile':>22} | compile s | cpu ms: hp / 1.13 / 2 eager / 2 compile")
    for i, t in enumerate(threads):
        h, p = best("hp", t), best("torch", t)
        cells, row = [], {"threads": int(t)}
        for key, (j, err) in (("eager", best2("torch2e", t)), ("compile", best2("torch2c", t))):
            if j is None:
                cells.append(f"{'not run':>22}")
                row[key] = {"error": err}
                print(f"  (threads {t}: torch 2 {key} not run: {err})")
            else:
                sp = h["tokens_per_s"] / j["tokens_per_s"]
                cells.append(f"{j['ms_best']:>9.0f} ms ({sp:>5.2f}x hp)")
                row[key] = j
                row[key + "_speedup_vs_hp"] = sp
        c = "/".join(f"{x:.0f}" for x in row["compile"].get("compile_s_rounds", []))
        cpu_ms = [h.get("cpu_ms_best"), p.get("cpu_ms_best"), row["eager"].get("cpu_ms_best"),
                  row["compile"].get("cpu_ms_best")]
        cpu_s = " / ".join("-" if x is None else f"{x:.0f}" for x in cpu_ms)
        print(f"{t:>7} | {h['ms_best']:>11.0f} | {p['ms_best']:>9.0f} ms "
              f"({h['tokens_per_s'] / p['tokens_per_s']:>5.2f}x hp) | {cells[0]} | {cells[1]} | "
              f"{c:>9} | {cpu_s}")
        torch2[t] = row
        summary[i]["torch2_eager"] = row["eager"]
        summary[i]["torch2_compile"] = row["compile"]
        for k in ("eager", "compile"):
            if k + "_speedup_vs_hp" in row:
                summary[i][f"speedup_vs_torch2_{k}"] = row[k + "_speedup_vs_hp"]
    print("(NNx hp = hyperpar tokens/s / that torch's tokens/s: above 1, hyperpar is faster; cpu ms: "
          "each side's least CPU time of a measured step, all its threads, which a shared machine moves "
          "less than the wall time; "
          "compile s: the untimed first step, round by round: the first builds the C++, later ones "
          "find it in inductor's cache)")
json.dump({"cpu": cpu, "cores": os.cpu_count(), "results": summary},
          open(os.path.join(out, "summary.json"), "w"), indent=1)
print(f"(targets: speed-up >= 1.25x at 1 thread and 1.8x at 2, step/peak >= 0.5, step/sgemm >= 0.60; "
      f"details in {out}/summary.json)")
EOF
