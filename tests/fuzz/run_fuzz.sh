#!/bin/sh
# run_fuzz.sh - runs every libFuzzer target built in BUILD_DIR (fuzz.cmake), FUZZ_JOBS at once
# (default: the CPUs, as each target is one single-threaded process), with leak detection on, and prints per target the executions, exec/s and peak memory.
#   tests/fuzz/run_fuzz.sh build-fuzz -runs=1000000          # make fuzz
#   tests/fuzz/run_fuzz.sh build-fuzz -max_total_time=30     # make fuzz-ci
#   FUZZ_TARGETS="cli safetensors" tests/fuzz/run_fuzz.sh build-fuzz -runs=1000
# Each target starts from its seeds (tests/fuzz/corpus/NAME, plus for safetensors the files the
# writer makes now) and its old crashers (tests/fuzz/regress/NAME); what it learns stays in
# BUILD_DIR/corpus/NAME for the next run. An input that crashes, leaks, runs out of memory or
# times out is copied to tests/fuzz/regress/NAME/, where CTest fuzz_regress_NAME replays it on
# every test run from then on (fix the bug, keep the file). Exit 1 when any target failed.
set -eu
cd "$(dirname "$0")/../.."
[ $# -ge 2 ] || { echo "usage: $0 BUILD_DIR -runs=N|-max_total_time=S [libFuzzer flags]" >&2; exit 2; }
B=$1; shift
targets=${FUZZ_TARGETS:-$(cd "$B" && ls fuzz_* 2>/dev/null | grep -v '^fuzz_write_seeds$' | grep -v '^fuzz_regress_' | sed 's/^fuzz_//')}
[ -n "$targets" ] || { echo "run_fuzz.sh: no fuzz_* executables in $B (build the target hp_fuzz with -DHP_FUZZ=ON)" >&2; exit 2; }

# Leaks are errors; Open MPI is not linked in, so no suppressions are needed.
ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}; export ASAN_OPTIONS
UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}; export UBSAN_OPTIONS

summary="$B/fuzz-summary.md"
mkdir -p "$B/fuzz-logs"

# one target; its summary row goes to $B/fuzz-logs/NAME.row; exit 1 when it failed
run_one() {
  t=$1; shift
  exe="$B/fuzz_$t"
  row="$B/fuzz-logs/$t.row"
  rm -f "$row"
  [ -x "$exe" ] || { echo "run_fuzz.sh: $exe is missing" >&2; return 1; }
  work="$B/corpus/$t"; art="$B/artifacts/$t"; log="$B/fuzz-logs/$t.log"
  mkdir -p "$work" "$art"
  if [ "$t" = safetensors ] && [ -x "$B/fuzz_write_seeds" ]; then "$B/fuzz_write_seeds" "$work"; fi
  dirs="$work tests/fuzz/corpus/$t"
  [ -d "tests/fuzz/regress/$t" ] && dirs="$dirs tests/fuzz/regress/$t"
  echo "run_fuzz.sh: $t: $exe $* ..."
  start=$(date +%s)
  rc=0
  # -close_fd_mask=3: the parsers' own one-line errors would flood the log (libFuzzer keeps
  # its and the sanitizers' reports); -timeout: one input may take at most 10 s.
  # shellcheck disable=SC2086
  "$exe" "$@" -print_final_stats=1 -close_fd_mask=3 -timeout=10 -rss_limit_mb=2560 \
         -artifact_prefix="$art/" $dirs > "$log" 2>&1 || rc=$?
  secs=$(( $(date +%s) - start ))
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  rss=$(sed -n 's/^stat::peak_rss_mb: *//p' "$log" | tail -1)
  ncorp=$(ls "$work" | wc -l)
  result=clean
  if [ "$rc" != 0 ]; then
    result="FAILED (exit $rc)"
    mkdir -p "tests/fuzz/regress/$t"
    for a in "$art"/crash-* "$art"/leak-* "$art"/oom-* "$art"/timeout-*; do
      [ -f "$a" ] || continue
      cp "$a" "tests/fuzz/regress/$t/"
      result="$result, kept tests/fuzz/regress/$t/$(basename "$a")"
    done
    grep -m3 -E 'ERROR|SUMMARY|runtime error' "$log" >&2 || true
  fi
  echo "run_fuzz.sh: $t: ${execs:-?} executions in ${secs} s, ${rate:-?} exec/s, peak ${rss:-?} MB: $result"
  printf '| %s | %s | %s | %s | %s | %s | %s |\n' "$t" "${execs:-?}" "$secs" "${rate:-?}" "$ncorp" "${rss:-?}" "$result" > "$row"
  [ "$rc" = 0 ]
}

# FUZZ_JOBS targets at once (default: the CPUs; each target is one single-threaded process)
jobs=${FUZZ_JOBS:-$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1)}
failed=0
pids=""
running=0
for t in $targets; do
  run_one "$t" "$@" &
  pids="$pids $!"
  running=$((running + 1))
  if [ "$running" -ge "$jobs" ]; then
    for p in $pids; do wait "$p" || failed=1; done
    pids=""
    running=0
  fi
done
for p in $pids; do wait "$p" || failed=1; done

printf '| target | executions | seconds | exec/s | corpus | peak RSS MB | result |\n|---|--:|--:|--:|--:|--:|---|\n' > "$summary"
for t in $targets; do
  if [ -f "$B/fuzz-logs/$t.row" ]; then cat "$B/fuzz-logs/$t.row" >> "$summary"
  else printf '| %s | - | - | - | - | - | not run |\n' "$t" >> "$summary"; fi
done
cat "$summary"
[ "$failed" = 0 ] || { echo "run_fuzz.sh: a target failed; its input is under tests/fuzz/regress/ (logs: $B/fuzz-logs/)" >&2; exit 1; }
