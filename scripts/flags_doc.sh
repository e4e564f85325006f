#!/bin/sh
# flags_doc.sh [HP] - prints docs/flags.md: every command's flags as `hp CMD --help` prints them
# from hp's flag table, and the job file's keys (`hp run --help-config`). The CTest flags_doc
# checks that docs/flags.md is this output; scripts/regen_tables.sh rewrites it.
set -eu
hp=${1:-build/hp}
cat <<'HEAD'
# Flags of every `hp` command

Generated from hp's flag table (`scripts/flags_doc.sh`, which runs `hp CMD --help` for each
command); the CTest `flags_doc` fails when this page and `hp` differ. docs/cli.md says what each
command is for, and docs/job_file.md how the job file's keys map to these flags.
HEAD
for cmd in run plan generate export import eval matrix bench compare tokenize; do
  printf '\n## hp %s\n\n```text\n' "$cmd"
  "$hp" "$cmd" --help
  printf '```\n'
done
printf '\n## The job file'"'"'s keys (`hp run --help-config`)\n\n'
"$hp" run --help-config
