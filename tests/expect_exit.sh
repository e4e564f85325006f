#!/bin/sh
# expect_exit.sh - run a command and check its exit code and what it printed.
#   expect_exit.sh CODE ERR_REGEX [OUT_REGEX ...] -- cmd args...
# Passes when cmd exits with CODE, its stderr matches ERR_REGEX ('' or - = anything) and its
# stdout matches every OUT_REGEX (grep -E, each on some line; a pattern written F:text is a
# fixed string, handy for messages full of * ( ) { }; one written !PATTERN must match no line
# of stdout, PATTERN again a regex or F:text). With HP_EXPECT_ONE_LINE=1 the
# stderr must also be exactly one line (the "one clear line" rule of bad-input errors).
# Prints what the command printed, so a failing test shows why.
if [ $# -lt 3 ]; then echo "usage: expect_exit.sh CODE ERR_REGEX [OUT_REGEX ...] -- cmd..." >&2; exit 2; fi
code=$1; err_re=$2; shift 2
n_out=0
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
  n_out=$((n_out + 1)); eval "out_re_$n_out=\$1"; shift
done
[ "$1" = "--" ] || { echo "expect_exit.sh: missing -- before the command" >&2; exit 2; }
shift
# match FILE PATTERN: grep -E, or grep -F for F:text
match() {
  case "$2" in
    F:*) grep -Fq -- "${2#F:}" "$1" ;;
    *)   grep -Eq -- "$2" "$1" ;;
  esac
}
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
"$@" >"$tmp/out" 2>"$tmp/err"
rc=$?
echo "--- stdout"; cat "$tmp/out"; echo "--- stderr"; cat "$tmp/err"; echo "--- exit code $rc"
ok=1
[ "$rc" -eq "$code" ] || { echo "FAIL: exit code $rc, want $code"; ok=0; }
if [ -n "$err_re" ] && [ "$err_re" != "-" ] && ! match "$tmp/err" "$err_re"; then
  echo "FAIL: stderr does not match: $err_re"; ok=0
fi
if [ "${HP_EXPECT_ONE_LINE:-0}" = 1 ] && [ "$(wc -l <"$tmp/err")" -ne 1 ]; then
  echo "FAIL: stderr is $(wc -l <"$tmp/err") lines, want 1"; ok=0
fi
i=1
while [ $i -le $n_out ]; do
  eval "re=\$out_re_$i"
  case "$re" in
    !*) ! match "$tmp/out" "${re#!}" || { echo "FAIL: stdout has a line it must not: ${re#!}"; ok=0; } ;;
    *)  match "$tmp/out" "$re" || { echo "FAIL: stdout does not match: $re"; ok=0; } ;;
  esac
  i=$((i + 1))
done
[ $ok = 1 ] && echo "PASS" && exit 0
exit 1
