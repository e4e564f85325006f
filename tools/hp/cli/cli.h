// cli.h - the flags every `hp` subcommand shares, and the subcommands main.c dispatches to.
// defines: tool_cli (hp_job), tool_cli_parse, tool_cli_run_flag, tool_cli_print_common_help,
//          tool_cli_check_*, tool_cmd_*
#ifndef HP_TOOL_CLI_H
#define HP_TOOL_CLI_H
#include <stdio.h>
#include "hyperpar/job.h"

// The command line parsed is the job: every row of the flag table (src/job/job_table.c), the
// plain flags too, lands in hp_job (include/hyperpar/job.h); tool_cli is the tool's name for it.
typedef hp_job tool_cli;

// Parses argv[first..argc) into *cli (defaults first). Unknown flags, missing or
// malformed values -> one line on stderr naming the flag, returns HP_EXIT_CONFIG.
// Returns 0 on success, and -1 after printing help for --help/-h.
// `extra` lists subcommand flags (e.g. "--level", "--report") that take a value and are
// stored into rest[] as "--flag=value"; NULL for none.
int tool_cli_parse(tool_cli *cli, int argc, char **argv, int first, const char *const *extra,
                 const char *usage);
void tool_cli_print_common_help(FILE *out);
// Whether the command-line word arg ("--tp", "--dump=D") is a flag hp run takes: 1 yes, 0 a
// flag of another command (plan's --memory), -1 not a flag of the table. *takes_value: whether
// the next word is its value.
int  tool_cli_run_flag(const char *arg, int *takes_value);
// Checks that can only run once every flag is known, before any rank starts (cli_check.c).
// Each prints one line naming the rule and the numbers and returns HP_EXIT_CONFIG, or 0.
// Output paths: --dump DIR is created (if needed) and written to, --json FILE can be created.
int tool_cli_check_outputs(const tool_cli *cli);
// An output folder (--dump, --report): created if needed and written to; flag names it.
int tool_cli_check_dir(const char *flag, const char *dir);
// Memory: the per-rank estimate of dims (validated) against what this machine has available
// for `local_ranks` ranks; with --verify world rank 0 also holds the reference and the full
// tensors of both runs.
int tool_cli_check_memory(const tool_cli *cli, const hp_dims *dims, int local_ranks);

// Subcommands (each its own file).
int tool_cmd_plan(int argc, char **argv);
int tool_cmd_run(int argc, char **argv);
int tool_cmd_eval(int argc, char **argv);     // cmd_run.c: hp run with its validation round alone
// cmd_eval.c: hp eval's argv as hp run's, and the evaluation on every rank
char **tool_eval_argv(int argc, char **argv, int *out_argc);
int tool_eval(const tool_cli *cli, const float *init, int rank);
int tool_cmd_generate(int argc, char **argv); // cmd_generate.c: a model writes
int tool_cmd_matrix(int argc, char **argv);
int tool_cmd_bench(int argc, char **argv);
int tool_cmd_export(int argc, char **argv);   // cmd_export.c: checkpoint -> safetensors
int tool_cmd_compare(int argc, char **argv);  // cmd_compare.c: two dumps of step 1
int tool_cmd_tokenize(int argc, char **argv); // data/cmd_tokenize.c: text -> tokenizer + shards
int tool_cmd_import(int argc, char **argv);   // cmd_import.c: a llama GGUF -> an HF folder

#endif
