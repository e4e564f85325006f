#!/bin/sh
# check_readme_table.sh HP FILE [NAME FLAG] - the generated table of FILE (between its
# "<!-- NAME:begin -->" and "<!-- NAME:end -->" lines) is `hp matrix FLAG`
# (default: docs/recipes.md's "recipes" block, `hp matrix --markdown`).
hp=$1 readme=$2 name=${3:-recipes} flag=${4:---markdown}
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
"$hp" matrix "$flag" >"$tmp/want" || { echo "FAIL: hp matrix $flag exited $?"; exit 1; }
sed -n "/<!-- $name:begin -->/,/<!-- $name:end -->/p" "$readme" | sed '1d;$d' >"$tmp/have"
[ -s "$tmp/have" ] || { echo "FAIL: $readme has no $name:begin/end block"; exit 1; }
diff -u "$tmp/want" "$tmp/have" && echo "PASS: $readme's $name table is the library's" && exit 0
echo "FAIL: $readme's $name table drifted from the library (regenerate: hp matrix $flag)"
exit 1
