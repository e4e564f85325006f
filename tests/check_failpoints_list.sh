#!/bin/sh
# check_failpoints_list.sh - the failpoint registry and tests/failpoints.cmake agree.
#   check_failpoints_list.sh HP CMAKE_LIST
# Passes when `hp run --list-failpoints` (columns name, recipe, flags, touches) equals the
# CMake list, there are at least 16 failpoints, every name is unique, and a failpoint whose
# recipe is a matrix recipe runs with exactly that recipe's flags (`hp matrix --list`).
[ $# -eq 2 ] || { echo "usage: check_failpoints_list.sh HP CMAKE_LIST" >&2; exit 2; }
hp=$1; want=$2
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
"$hp" run --list-failpoints >"$tmp/list" || { echo "FAIL: hp run --list-failpoints exited $?"; exit 1; }
"$hp" matrix --list >"$tmp/matrix" || { echo "FAIL: hp matrix --list exited $?"; exit 1; }
ok=1
cut -f1-4 "$tmp/list" >"$tmp/cols"
diff -u "$want" "$tmp/cols" || { echo "FAIL: tests/failpoints.cmake and the registry differ (above)"; ok=0; }
n=$(wc -l <"$tmp/list")
[ "$n" -ge 16 ] || { echo "FAIL: $n failpoints, want at least 16"; ok=0; }
dup=$(cut -f1 "$tmp/list" | sort | uniq -d)
[ -z "$dup" ] || { echo "FAIL: duplicate failpoint names: $dup"; ok=0; }
tab=$(printf '\t')
while IFS="$tab" read -r name recipe flags rest; do
  mflags=$(awk -F "$tab" -v id="$recipe" '$1 == "recipe" && $2 == id { print $5 }' "$tmp/matrix")
  if [ -n "$mflags" ] && [ "$mflags" != "$flags" ]; then
    echo "FAIL: $name runs '$flags' but recipe $recipe is '$mflags'"; ok=0
  fi
done <"$tmp/list"
[ $ok = 1 ] && echo "failpoints_list_sync: $n failpoints; tests/failpoints.cmake matches the registry" && exit 0
exit 1
