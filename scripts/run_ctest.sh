#!/bin/sh
# run_ctest.sh BUILD_DIR [CTEST ARGS...] - `make test`: ctest with the given arguments, then the
# number of tests skipped and why (a test skips, exit 77, where the machine lacks what it needs:
# an ISA, a backend's op, a package; each prints one line "...: skipped: <what is missing>").
# Exits with ctest's code.
set -u
dir=$1; shift
log=$dir/ctest-last.log
rcfile=$dir/ctest-last.rc
{ ctest --test-dir "$dir" "$@"; echo $? >"$rcfile"; } 2>&1 | tee "$log"
rc=$(cat "$rcfile" 2>/dev/null || echo 1)
n=$(grep -c ' (Skipped)$' "$log" || true)
echo "make test: $n test(s) skipped"
if [ "$n" -gt 0 ]; then
  grep ' (Skipped)$' "$log" | sed 's/^[[:space:]]*[0-9]* - /  /'
  # the reasons, as the tests printed them (CTest keeps every test's output in LastTest.log)
  grep -hE '^([A-Za-z0-9_.-]+( [a-z0-9-]+)?: )?skipped: ' "$dir"/Testing/Temporary/LastTest*.log 2>/dev/null | sort -u | sed 's/^/  why: /'
fi
exit "$rc"
