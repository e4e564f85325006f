// job_table.h - the one table of hp's flags and job-file keys (job_table.c), shared by the
// values' checks (job_keys.c), the job file's reader and writer (job_file.c) and hp's argv parser
// and help (tools/hp/cli/). The job they fill is hp_job (include/hyperpar/job.h).
// defines: hp_job_flag_id, hp_job_value_type, hp_job_flag_def, hp_job_flags, hp_job_flag_*,
//          hp_job_apply_key, hp_job_apply_value, hp_job_note, hp_job_keep, hp_job_keep_owned
//
// A row whose name has a '.' ("--training.steps") is a job key: the TOML key training.steps of
// a job file and the flag --training.steps. A row without one is a flag; when a job key has the
// same id, the flag is an alias of it (--steps), else a plain flag (--nproc, --verify).
#ifndef HP_JOB_TABLE_H
#define HP_JOB_TABLE_H
#include <string.h>
#include "hyperpar/job.h"

typedef enum {
    F_DP_REPLICATE, F_DP_SHARD, F_CP, F_TP, F_PP, F_EP, F_ETP, F_SP,
    F_MODEL, F_SEQ_LEN, F_BATCH, F_SEED, F_STEPS, F_LR, F_OPTIMIZER, F_MAX_NORM, F_DATA,
    F_CP_ROTATE, F_CP_BALANCE, F_DISPATCHER,
    F_NPROC, F_RANK, F_VERIFY, F_VERIFY_STEPS, F_DUMP, F_JSON, F_QUIET, F_HELP, F_HELP_CONFIG,
    F_TIMEOUT, F_LIST_FAILPOINTS,
    F_MODEL_CONFIG, F_PLAN_PARAMS, F_PLAN_MEMORY, F_PLAN_SEARCH, F_PLAN_RANKS, F_PLAN_WORLD, F_MEM_PER_RANK, F_HW,
    F_MICROBATCHES, F_PP_SCHEDULE, F_PP_MICROBATCHES, F_PP_VIRTUAL, F_LAYERS, F_ULYSSES,
    F_CKPT_ENABLE, F_CKPT_FOLDER, F_CKPT_EVERY, F_CKPT_KEEP, F_LOAD_STEP, F_INIT_LOAD, F_INIT_LOAD_HF, F_INIT_MODEL_ONLY,
    F_AC, F_AC_OPTION, F_RESHARD,
    F_BETA1, F_BETA2, F_EPS, F_WEIGHT_DECAY, F_WARMUP, F_DECAY_RATIO, F_DECAY_TYPE, F_MIN_LR, F_TOTAL_STEPS,
    F_MP_PARAM, F_MP_REDUCE, F_GEMM,
    // the job file (docs/job_file.md)
    F_CONFIG, F_DUMP_FOLDER, F_DESCRIPTION, F_PRINT_CONFIG, F_MODEL_NAME, F_LOCAL_BATCH, F_PP_MB_SIZE,
    F_DETERMINISTIC,
    F_TT_ONLY,     // a TorchTitan key hp does not implement: noted at TT's default, else refused
    F_IGNORED,     // a TorchTitan key with no meaning here: accepted at any value, noted
    // new ids of other features go here, above F_COUNT_
    F_DATA_FORMAT,
    F_LOG_FREQ, F_PEAK_TFLOPS, F_VAL_ENABLE, F_VAL_PATH, F_VAL_FORMAT, F_VAL_FREQ, F_VAL_STEPS,
    F_RANKS_PER_NODE,
    F_FLOAT8, F_FLOAT8_FILTER, F_FLOAT8_FSDP_AG,
    F_ASYNC_TP,
    F_TOKENIZER, F_SAMPLE_EVERY, F_SAMPLE_PROMPT, F_SAMPLE_MAX_NEW, F_SAMPLE_TEMPERATURE,
    F_SAMPLE_TOP_K, F_SAMPLE_TOP_P, F_PROMPT_IDS,
    F_DATASET, F_VAL_DATASET,
    F_COUNT_
} hp_job_flag_id;

// A job key's TOML type. V_ANY (a row that gives none): any scalar, read as its text.
typedef enum { V_ANY = 0, V_INT, V_FLOAT, V_STRING, V_PATH, V_BOOL, V_LIST } hp_job_value_type;

// Which commands take a flag: a flag of another command is refused with one line and exit 2
// (`hp run --memory` must not train and ignore it), and hp plan's launch line keeps run's only.
enum { FOR_PLAN = 1, FOR_RUN = 2, FOR_BENCH = 4, FOR_ALL = 7 };

typedef struct hp_job_flag_def {
    const char *name;         // "--training.steps" (a job key), "--steps" (its alias), "--nproc"
    int id;                   // hp_job_flag_id
    int takes_value;          // 0: a switch (a boolean key: --s.key, --s.no_key, --s.key=false)
    int scope;                // FOR_*
    hp_job_value_type type;     // job keys: the TOML type
    const char *hp_def;       // job keys: hp's default, as TOML would write it (unquoted)
    const char *tt_def;       // job keys: TorchTitan's default ("" for a list: []; NULL: hp's own key)
    const char *fixed;        // an alias switch: the value it gives its key ("true", "false")
} hp_job_flag_def;

extern const hp_job_flag_def hp_job_flags[];
extern const int hp_job_n_flags;

static inline int hp_job_flag_is_key(const hp_job_flag_def *f) { return strchr(f->name, '.') != NULL; }
// The job key row with id, or -1 (F_TT_ONLY and F_IGNORED rows are many: not looked up by id).
// A key's first row is its name; later key rows of the same id are TorchTitan's older names of it
// (checkpoint.enable_checkpoint), read as the first.
int  hp_job_flag_key_row(int id);
// The row a key's value is kept in: the key's first row for an older name, else row itself.
int  hp_job_flag_canonical(int row);
// The row named name ("--training.steps", "--steps"; '-' and '_' alike), or -1. For a boolean
// key spelt "--s.no_key" the key's row, with *negated = 1.
int  hp_job_flag_find(const char *name, int *negated);
// Sets job key `row` to the text value (a number, true/false, a string, a list a,b), checking it
// as the command line does; label names it in errors ("--steps", "job.toml:3: training.steps").
// from_file: the entry came from a job file. Returns 0 or HP_EXIT_CONFIG after one line. value
// and label are kept by pointer (hp_job_keep them when they do not live as long as the job).
int  hp_job_apply_key(hp_job *job, int row, const char *label, const char *value, int from_file);
// The value of row id (a key's, or a plain flag's: --nproc, --verify) checked and set; flag names
// it in errors. hp_job_apply_key's own step after its TorchTitan-only and ignored keys. Returns 0
// or HP_EXIT_CONFIG after one line.
int  hp_job_apply_value(hp_job *job, int id, const char *flag, const char *value);
// Appends "name" to one of the job's note lists (comma-separated).
void hp_job_note(char *list, size_t cap, const char *name);
// Keeps a string for the process's lifetime (or until hp_job_release); NULL: out of memory exit.
char *hp_job_keep(const char *s);
// The same for a string already malloc'ed (owned from now on; NULL: out of memory exit).
char *hp_job_keep_owned(char *s);

#endif
