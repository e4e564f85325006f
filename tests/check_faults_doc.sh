#!/bin/sh
# check_faults_doc.sh - docs/verification.md shows the faults-caught table as `hp matrix`
# produces it (and docs/torch.md the one examples/torch/torch_column.py --faults produces): the
# same failpoints, recipes, first failed checks and verdicts, row for row.
#   check_faults_doc.sh FAULTS_MD DOC_MD
# (The error figures are not compared: they may move in their last digit with the BLAS.)
[ $# -eq 2 ] || { echo "usage: check_faults_doc.sh FAULTS_MD DOC_MD" >&2; exit 2; }
rows() {   # failpoint | recipe | first failed check | caught
  grep -E '^\| [a-z0-9_-]+ \| [A-Za-z0-9-]+ \| ' "$1" | grep -Ev '^\| (failpoint|fault) \|' |
    awk -F ' [|] ' 'NF == 5 { c = $3; sub(/;.*/, "", c); print $1 " | " $2 " | " c " | " $5 }'
}
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
rows "$1" >"$tmp/made"
rows "$2" >"$tmp/doc"
[ -s "$tmp/made" ] || { echo "FAIL: no table rows in $1"; exit 1; }
if ! diff -u "$tmp/doc" "$tmp/made"; then
  echo "FAIL: the table in $2 is not the one that made $1 (hp matrix --faults-only, or torch_column.py --faults): paste it again"
  exit 1
fi
echo "check_faults_doc: $(wc -l <"$tmp/made") rows of $2 match $1"
