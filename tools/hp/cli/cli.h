// cli.h - the flags every `hp` subcommand shares, and the subcommands main.c dispatches to.
// defines: tool_cli, tool_cli_parse, tool_cli_print_common_help, tool_cli_check_*, tool_cmd_*
#ifndef HP_TOOL_CLI_H
#define HP_TOOL_CLI_H
#include <stdio.h>
#include "hyperpar/config.h"
#include "hyperpar/dims.h"

// Flag ranges: sizes (seq_len, batch, ranks) and step counts an int and the memory check hold.
#define TOOL_CLI_MAX_SIZE  (1L << 24)
#define TOOL_CLI_MAX_STEPS 1000000000L
#define TOOL_CLI_MAX_ROWS  400            // rows of the flag table (cli.c checks)
#ifndef HP_VERSION
#define HP_VERSION "0.1"
#endif

typedef struct tool_cli {
    hp_dims         dims;        // --dp-replicate --dp-shard --cp --tp --pp --ep --etp --no-sp
    hp_model_config model;       // --model NAME (default tiny)
    hp_run_config   run;         // --seq-len --batch --seed --steps --lr --optimizer --max-norm
                                 // --data FILE --cp-rotate allgather|ring --cp-no-balance
                                 // --dispatcher alltoall|allgather
    int   nproc;                 // --nproc N (world for plan; 0 = product of degrees)
    int   rank;                  // --rank N (plan: whose local shapes to show; default 0)
    int   verify;                // --verify
    int   verify_steps;          // --verify-steps N (loss trajectory length; default: an explicit
                                 // --steps, else 5: tool_cmd_run)
    int   verify_steps_given;    // --verify-steps was on the command line
    const char *dump_dir;        // --dump DIR
    const char *load_file;       // --load FILE (checkpoint.initial_load_path, model only)
    const char *json_out;        // --json FILE (machine-readable result of run/verify)
    int   quiet;                 // --quiet
    int   microbatches;          // --microbatches M (pp 1; 0 = not given)
    int   pp_microbatches;       // --pp-microbatches M (pp > 1; 0 = not given)
    int   layers;                // --layers N (0 = the model's own)
    int   list_failpoints;       // --list-failpoints (run: print the failpoint registry)
    float timeout;               // --timeout S (watchdog; 0 = HP_TIMEOUT or the default)
    const char *ckpt_dir;        // checkpoint.enable: checkpoint.folder, under job.dump_folder when
                                 // relative (--checkpoint-dir D: D) (save D/step-K; checkpoint.h)
    int   ckpt_every;            // --checkpoint-every N (and after the last step; 0 = last only)
    int   ckpt_keep;             // --checkpoint-keep K (newest step folders kept; 0 = all)
    const char *resume;          // --resume D | D/step-K (latest complete, or that one):
                                 // checkpoint.initial_load_path with initial_load_model_only false
    // hp plan (--model-config FILE loads a Hugging Face config.json into model above):
    int   plan_memory;           // --memory: per-rank memory, traffic, FLOPs (and --hw time)
    int   plan_search;           // --search: every legal layout of --world N that fits
    int   plan_ranks;            // --ranks: the full rank and group tables beyond 64 ranks
    int   plan_params_all;       // --params all: every parameter on its own row (default: kinds)
    int   plan_world;            // --world N (search; 0 = not given)
    const char *mem_per_rank;    // --mem-per-rank SIZE, e.g. 80GiB (parsed by plan)
    const char *hw;              // --hw h100|h200|mi300x|cpu (checked by plan)
    int   ranks_per_node;        // --ranks-per-node N (plan: nodes of N consecutive ranks; 0 = not given)
    int   ac_given;              // --ac was given (run.ac_every holds it; --search tries only it)
    const char *gemm;            // --gemm openblas|onednn|auto (run, bench; NULL: HP_GEMM, else
                                 // openblas; gemm_choice.c)
    // metrics + validation (metrics branch): docs/metrics.md
    int   log_freq;              // --metrics.log_freq N: the step line every N steps (default 1)
    float peak_tflops;           // --metrics.peak_tflops X: one rank's peak for mfu (0 = measured once, kept)
    int   val_enable;            // --validation.enable
    const char *val_path;        // --validation.dataset_path F (NULL: the training data)
    hp_data_format val_format;   // --validation.dataset_format (default TOOL_VAL_FORMAT_UNSET: the
                                 // training data's format, auto reading a headerless file as bytes)
    int   val_freq;              // --validation.freq N: a round after every N-th step (default 10)
    int   val_steps;             // --validation.steps N batches (-1 = every full batch once; default)
    // the job file (docs/job_file.md): --config FILE applies its keys first
    const char *config_file;     // --config FILE / --job.config_file FILE
    const char *dump_folder;     // job.dump_folder (NULL = none): config.toml, metrics, checkpoints
    const char *description;     // job.description
    int   print_config;          // job.print_config: print the effective config.toml
    const char *model_name;      // model.name: hp | llama3
    const char *flavor;          // model.flavor (--model): an hp model, or llama3's debugmodel, 8B ...
    const char *hf_config;       // model.hf_config (--model-config FILE)
    int   local_batch;           // training.local_batch_size (-1 = unset)
    int   pp_mb_size;            // parallelism.pipeline_parallel_microbatch_size (-1 = unset)
    int   ckpt_enable;           // checkpoint.enable
    const char *ckpt_folder;     // checkpoint.folder
    int   load_step;             // checkpoint.load_step (-1 = latest)
    const char *init_load;       // checkpoint.initial_load_path (NULL = none)
    int   init_model_only;       // checkpoint.initial_load_model_only
    const char *ac_mode;         // activation_checkpoint.mode: none | full | selective | every:N
    const char *ac_option;       // activation_checkpoint.selective_ac_option: N
    int   ckpt_alias_given;      // --checkpoint-every / --checkpoint-keep spelt so (they need a dir)
    // per row of the flag table (cli_table.h): the value a job key was given, where, and whether
    // on the command line (NULL: hp's default); what config.toml is written from
    const char *key_text[TOOL_CLI_MAX_ROWS];
    const char *key_label[TOOL_CLI_MAX_ROWS];
    unsigned char key_cmdline[TOOL_CLI_MAX_ROWS];
    char  note_tt[1024];         // TorchTitan keys hp does not implement, given at TT's default
    char  note_ignored[1024];    // TorchTitan keys with no meaning here, given
    char  note_defaults[1024];   // keys a job file left at hp defaults that differ from TT's
    char  note_resume[8600];     // checkpoint.folder holds checkpoints: resumed from
    // positional arguments left after the flags (subcommand-specific)
    int   n_rest;
    char *rest[16];
} tool_cli;

#define TOOL_VAL_FORMAT_UNSET ((hp_data_format)-1)

// Parses argv[first..argc) into *cli (defaults first). Unknown flags, missing or
// malformed values -> one line on stderr naming the flag, returns HP_EXIT_CONFIG.
// Returns 0 on success, and -1 after printing help for --help/-h.
// `extra` lists subcommand flags (e.g. "--level", "--report") that take a value and are
// stored into rest[] as "--flag=value"; NULL for none.
int tool_cli_parse(tool_cli *cli, int argc, char **argv, int first, const char *const *extra,
                 const char *usage);
void tool_cli_print_common_help(FILE *out);
// The job file's schema: one row per key (section, key, type, hp default, TorchTitan default,
// alias flag), as docs/job_file.md tabulates it (hp run --help-config).
void tool_cli_print_schema(FILE *out);
// The notes of a parse (TorchTitan keys at their default, keys with no meaning here, a file's
// keys left at hp defaults that differ from TT's): one line each, "hp: note: ...". Printed by
// the process that launches (or world rank 0), after every check passed.
void tool_cli_print_notes(const tool_cli *cli, FILE *out);
// The effective job file: every key of the table with its value (defaults too), paths absolute,
// a comment with hp's version and argv[0..argc). tool_cli_save_config writes it to
// {dump_folder}/config.toml (temp + rename); 0, or HP_EXIT_FAIL after one line.
void tool_cli_write_config(const tool_cli *cli, FILE *out, int argc, char **argv);
int  tool_cli_save_config(const tool_cli *cli, int argc, char **argv);
// The ranks hp run launches parse its command line again, --config FILE included, so they read
// the file again. Before launching: the path in argv made absolute and the file's hash put in
// the environment (HP_CONFIG_HASH); in a launched rank: 1 when the file it read is not that one.
void tool_cli_config_pin(const tool_cli *cli, int argc, char **argv);
int  tool_cli_config_changed(const tool_cli *cli);
// Whether the command-line word arg ("--tp", "--dump=D") is a flag hp run takes: 1 yes, 0 a
// flag of another command (plan's --memory), -1 not a flag of the table. *takes_value: whether
// the next word is its value.
int  tool_cli_run_flag(const char *arg, int *takes_value);
// Frees the "--flag=value" strings every tool_cli_parse so far put in rest[] (they are otherwise
// kept until exit). Only for a process that parses many command lines (tests/fuzz/fuzz_cli.c);
// the rest[] of every earlier parse is invalid afterwards.
void tool_cli_release(void);

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
int tool_cmd_matrix(int argc, char **argv);
int tool_cmd_bench(int argc, char **argv);
int tool_cmd_export(int argc, char **argv);   // cmd_export.c: checkpoint -> safetensors
int tool_cmd_compare(int argc, char **argv);  // cmd_compare.c: two dumps of step 1

#endif
