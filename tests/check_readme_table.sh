#!/bin/sh
# check_readme_table.sh HP README - the recipe table of README.md (between its
# "<!-- recipes:begin -->" and "<!-- recipes:end -->" lines) is `hp matrix --markdown`.
hp=$1 readme=$2
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
"$hp" matrix --markdown >"$tmp/want" || { echo "FAIL: hp matrix --markdown exited $?"; exit 1; }
sed -n '/<!-- recipes:begin -->/,/<!-- recipes:end -->/p' "$readme" | sed '1d;$d' >"$tmp/have"
[ -s "$tmp/have" ] || { echo "FAIL: README.md has no recipes:begin/end block"; exit 1; }
diff -u "$tmp/want" "$tmp/have" && echo "PASS: README's recipe table is the library's" && exit 0
echo "FAIL: README.md's recipe table drifted from the library (regenerate: hp matrix --markdown)"
exit 1
