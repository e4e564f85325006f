// job.h - a training job as TorchTitan writes it: the TOML job file (docs/job_file.md) read into
// the configs the library trains with (hp_dims, hp_model_config, hp_run_config of config.h), the
// effective job written back as config.toml, and the notes hp prints about the keys it read.
// defines: hp_job, hp_job_load, hp_job_defaults, hp_job_apply_file, hp_job_resolve,
//          hp_job_print_notes, hp_job_write_config, hp_job_save_config, hp_job_print_schema,
//          hp_job_config_pin, hp_job_config_changed, hp_job_release
//
//   hp_job job;
//   if (hp_job_load(&job, "job.toml") != 0) exit(2);    // defaults, the file's keys, resolved
//   MPI_Init(&argc, &argv);
//   MPI_Comm_size(MPI_COMM_WORLD, &job.dims.world);
//   if (hp_dims_validate(&job.dims, &job.model, &job.run, err, sizeof err) != 0) exit(2);
//   if (rank == 0) {
//       hp_job_print_notes(&job, stderr);               // keys at TorchTitan's defaults, ...
//       hp_job_save_config(&job, argc, argv);           // {job.dump_folder}/config.toml
//   }
//   hp_trainer *tr = hp_trainer_init(MPI_COMM_WORLD, &job.model, &job.dims, &job.run, err, sizeof err);
//   for (int s = 0; s < job.run.steps; s++) { hp_step_stats st; hp_trainer_step(tr, &st); }
//   // metrics.h: the step line, metrics.jsonl and loss.svg of those steps
//
// Step by step (what `hp run --config FILE --key value` does): hp_job_defaults, hp_job_apply_file,
// then fields set by hand (hp's command line sets its keys through the flag table here,
// src/job/job_table.h), then hp_job_resolve once: the keys that combine (model.name and
// model.flavor, the batch keys, checkpoint.*, activation_checkpoint.*) are resolved after every
// key is read. Every key is also a flag `--section.key` of hp; hp_job_print_schema lists them
// (hp run --help-config). The strings a read makes live until exit (or hp_job_release).
#ifndef HYPERPAR_JOB_H
#define HYPERPAR_JOB_H
#include <stdio.h>
#include "config.h"
#include "dims.h"

// Flag ranges: sizes (seq_len, batch, ranks) and step counts an int and the memory check hold.
#define HP_JOB_MAX_SIZE  (1L << 24)
#define HP_JOB_MAX_STEPS 1000000000L
#define HP_JOB_MAX_ROWS  400            // rows of the flag table (job_table.c checks)
#ifndef HP_VERSION   // hp's version: config.toml's first comment, hp --version
#define HP_VERSION "0.1"
#endif

// The job: the value of every row of the flag table, each job key's (job_file.md's sections) and
// each of hp's own flags (how to launch, what to write, hp plan's), the keys as given, the notes.
typedef struct hp_job {
    hp_dims         dims;        // --dp-replicate --dp-shard --cp --tp --pp --ep --etp --no-sp
    hp_model_config model;       // --model NAME (default tiny)
    hp_run_config   run;         // --seq-len --batch --seed --steps --lr --optimizer --max-norm
                                 // --data FILE --cp-rotate allgather|ring --cp-no-balance
                                 // --dispatcher alltoall|allgather
    int   nproc;                 // --nproc N (world for plan; 0 = product of degrees)
    int   rank;                  // --rank N (plan: whose local shapes to show; default 0)
    int   verify;                // --verify
    int   verify_steps;          // --verify-steps N (loss trajectory length; default: an explicit
                                 // --steps, else 5: hp run)
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
                                 // openblas; tools/hp/run/gemm_choice.c)
    // metrics + validation (metrics branch): docs/metrics.md
    int   log_freq;              // --metrics.log_freq N: the step line every N steps (default 1)
    float peak_tflops;           // --metrics.peak_tflops X: one rank's peak for mfu (0 = measured once, kept)
    int   val_enable;            // --validation.enable
    const char *val_path;        // --validation.dataset_path F (NULL: the training data)
    const char *dataset;         // --training.dataset NAME: TorchTitan's named dataset (NULL: none given);
                                 // without training.dataset_path an error (hp reads token files only)
    const char *val_dataset;     // --validation.dataset NAME: the same, when validation.enable
    hp_data_format val_format;   // --validation.dataset_format (default HP_JOB_VAL_FORMAT_UNSET: the
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
    int   init_load_in_hf;       // checkpoint.initial_load_in_hf: initial_load_path is a Hugging Face folder
    const char *ac_mode;         // activation_checkpoint.mode: none | full | selective | every:N
    const char *ac_option;       // activation_checkpoint.selective_ac_option: N
    int   ckpt_alias_given;      // --checkpoint-every / --checkpoint-keep spelt so (they need a dir)
    // the tokenizer, generation and sampling during training (docs/model_io.md)
    const char *tokenizer_path;  // model.hf_assets_path / --tokenizer: a folder holding tokenizer.model,
                                 // or the file itself (NULL = none)
    int   sample_every;          // sample.every N: a sample after every N-th step (0 = never)
    const char *sample_prompt;   // sample.prompt / --prompt: the prompt text (NULL = none)
    const char *prompt_ids;      // --prompt-ids 1,2,3 (hp generate; NULL = none)
    int   sample_max_new;        // sample.max_new_tokens / --max-new-tokens (default 32)
    float sample_temperature;    // sample.temperature / --temperature (0 = greedy, the default)
    int   sample_top_k;          // sample.top_k / --top-k (0 = off)
    float sample_top_p;          // sample.top_p / --top-p (1 = off)
    // per row of the flag table (src/job/job_table.h): the value a job key was given, where, and
    // whether on the command line (NULL: hp's default); what config.toml is written from
    const char *key_text[HP_JOB_MAX_ROWS];
    const char *key_label[HP_JOB_MAX_ROWS];
    unsigned char key_cmdline[HP_JOB_MAX_ROWS];
    char  note_tt[1024];         // TorchTitan keys hp does not implement, given at TT's default
    char  note_ignored[1024];    // TorchTitan keys with no meaning here, given
    char  note_defaults[1024];   // keys a job file left at hp defaults that differ from TT's
    char  note_resume[8600];     // checkpoint.folder holds checkpoints: resumed from
    // positional arguments a command line left after the flags (hp's parser: subcommand-specific)
    int   n_rest;
    char *rest[16];
} hp_job;

#define HP_JOB_VAL_FORMAT_UNSET ((hp_data_format)-1)

// Reads the job file at path over hp's defaults and resolves it: hp_job_defaults, the file's
// keys (hp_job_apply_file), hp_job_resolve; job->config_file is (a copy of) path. Returns 0, or
// HP_EXIT_CONFIG after one line on stderr naming the file, the line and the key.
int  hp_job_load(hp_job *job, const char *path);
// hp's defaults (each key's hp default of the table; docs/job_file.md).
void hp_job_defaults(hp_job *job);
// A TOML job file's keys applied in file order (the same checks as their flags): an unknown
// section or key, a value of the wrong type, or one out of range is one line naming FILE:LINE
// and HP_EXIT_CONFIG; 0 otherwise. Does not resolve.
int  hp_job_apply_file(hp_job *job, const char *path);
// Once every key is applied: the model of model.name / flavor / hf_config / n_layers,
// activation_checkpoint.* into run.ac_every, training.local_batch_size and the microbatch keys
// into run.batch and run.microbatches, checkpoint.* into the folders to save to and load from,
// the notes. Returns 0, or HP_EXIT_CONFIG after one line.
int  hp_job_resolve(hp_job *job);
// The job file's schema: one row per key (section, key, type, hp default, TorchTitan default,
// alias flag), as docs/job_file.md tabulates it (hp run --help-config).
void hp_job_print_schema(FILE *out);
// The notes of a read (TorchTitan keys at their default, keys with no meaning here, a file's
// keys left at hp defaults that differ from TT's): one line each, "hp: note: ...". Printed by
// the process that launches (or world rank 0), after every check passed.
void hp_job_print_notes(const hp_job *job, FILE *out);
// The effective job file: every key of the table with its value (defaults too), paths absolute,
// a comment with hp's version and argv[0..argc). hp_job_save_config writes it to
// {dump_folder}/config.toml (temp + rename); 0, or HP_EXIT_FAIL after one line.
void hp_job_write_config(const hp_job *job, FILE *out, int argc, char **argv);
int  hp_job_save_config(const hp_job *job, int argc, char **argv);
// The ranks hp run launches parse its command line again, --config FILE included, so they read
// the file again. Before launching: the path in argv made absolute and the file's hash put in
// the environment (HP_CONFIG_HASH); in a launched rank: 1 when the file it read is not that one.
void hp_job_config_pin(const hp_job *job, int argc, char **argv);
int  hp_job_config_changed(const hp_job *job);
// Frees the strings every read so far kept (a job file's values and labels, the "--flag=value"
// words hp's parser put in rest[]; they are otherwise kept until exit). Only for a process that
// reads many jobs (tests/fuzz/fuzz_cli.c): every hp_job read before is invalid afterwards.
void hp_job_release(void);

#endif
