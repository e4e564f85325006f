#!/bin/sh
# regen_tables.sh [HP] - rewrites the generated tables of docs/recipes.md ("recipes": hp matrix
# --markdown) and examples/README.md ("examples": hp matrix --examples-markdown; "features": hp
# matrix --features-markdown, the implemented and the refused features) from the
# library, between their "<!-- NAME:begin -->" and "<!-- NAME:end -->" lines. The CTests
# readme_recipes_table and examples_recipes_table check that they were.
set -eu
cd "$(dirname "$0")/.."
hp=${1:-build/hp}
regen() {   # FILE NAME FLAG
  tmp=$(mktemp) && "$hp" matrix "$3" >"$tmp.table"
  awk -v name="$2" -v table="$tmp.table" '
    $0 == "<!-- " name ":begin -->" { print; while ((getline line < table) > 0) print line; skip = 1; next }
    $0 == "<!-- " name ":end -->"   { skip = 0 }
    !skip' "$1" >"$tmp"
  mv "$tmp" "$1"; rm -f "$tmp.table"
}
regen docs/recipes.md recipes --markdown
regen examples/README.md examples --examples-markdown
regen examples/README.md features --features-markdown
sh scripts/flags_doc.sh "$hp" >docs/flags.md   # docs/flags.md: every command's --help
