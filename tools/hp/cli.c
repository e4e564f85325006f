// cli.c - the flags every `hp` subcommand shares: one table, one parser, one help text.
// defines: tool_cli_parse, tool_cli_print_common_help, tool_cli_run_flag
//
// Flags are `--name value` or `--name=value`; names must match exactly (no prefixes), values
// must parse fully ("--tp 2x" is an error, not 2). Anything that does not start with '-' is a
// positional argument and lands in rest[]. A bad flag prints one line and returns
// HP_EXIT_CONFIG; the caller exits with it.
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "hyperpar/pipeline.h"

typedef enum {
    F_DP_REPLICATE, F_DP_SHARD, F_CP, F_TP, F_PP, F_EP, F_ETP, F_NO_SP, F_SP,
    F_MODEL, F_SEQ_LEN, F_BATCH, F_SEED, F_STEPS, F_LR, F_OPTIMIZER, F_MAX_NORM, F_DATA,
    F_CP_ROTATE, F_CP_NO_BALANCE, F_DISPATCHER,
    F_NPROC, F_RANK, F_VERIFY, F_VERIFY_STEPS, F_DUMP, F_LOAD, F_JSON, F_QUIET, F_HELP,
    F_TIMEOUT, F_LIST_FAILPOINTS,
    F_MODEL_CONFIG, F_PLAN_PARAMS, F_PLAN_MEMORY, F_PLAN_SEARCH, F_PLAN_RANKS, F_PLAN_WORLD, F_MEM_PER_RANK, F_HW,
    F_MICROBATCHES, F_PP_SCHEDULE, F_PP_MICROBATCHES, F_PP_VIRTUAL, F_LAYERS, F_ULYSSES,
    F_CKPT_DIR, F_CKPT_EVERY, F_CKPT_KEEP, F_RESUME, F_AC, F_RESHARD,
    F_BETA1, F_BETA2, F_EPS, F_WEIGHT_DECAY, F_WARMUP, F_DECAY_RATIO, F_DECAY_TYPE, F_MIN_LR, F_TOTAL_STEPS,
    F_MP_PARAM, F_MP_REDUCE, F_GEMM,
    F_DATA_FORMAT,   // data formats (dataformats branch)
    F_RANKS_PER_NODE,
} flag_id;

// Which commands take a flag: a flag of another command is refused with one line and exit 2
// (`hp run --memory` must not train and ignore it), and hp plan's launch line keeps run's only.
enum { FOR_PLAN = 1, FOR_RUN = 2, FOR_BENCH = 4, FOR_ALL = 7 };

typedef struct { const char *name; flag_id id; int takes_value; int scope; } flag_def;

static const flag_def flags[] = {
    { "--dp-replicate", F_DP_REPLICATE, 1, FOR_ALL }, { "--dp-shard", F_DP_SHARD, 1, FOR_ALL },
    { "--cp", F_CP, 1, FOR_ALL }, { "--tp", F_TP, 1, FOR_ALL }, { "--pp", F_PP, 1, FOR_ALL },
    { "--ep", F_EP, 1, FOR_ALL }, { "--etp", F_ETP, 1, FOR_ALL },
    { "--no-sp", F_NO_SP, 0, FOR_ALL }, { "--sp", F_SP, 0, FOR_ALL },
    { "--model", F_MODEL, 1, FOR_ALL }, { "--seq-len", F_SEQ_LEN, 1, FOR_ALL }, { "--batch", F_BATCH, 1, FOR_ALL },
    { "--seed", F_SEED, 1, FOR_ALL }, { "--steps", F_STEPS, 1, FOR_ALL }, { "--lr", F_LR, 1, FOR_ALL },
    { "--optimizer", F_OPTIMIZER, 1, FOR_ALL }, { "--max-norm", F_MAX_NORM, 1, FOR_ALL }, { "--data", F_DATA, 1, FOR_ALL },
    { "--cp-rotate", F_CP_ROTATE, 1, FOR_ALL }, { "--cp-no-balance", F_CP_NO_BALANCE, 0, FOR_ALL },
    { "--dispatcher", F_DISPATCHER, 1, FOR_ALL }, { "--ac", F_AC, 1, FOR_ALL },
    { "--reshard-after-forward", F_RESHARD, 1, FOR_ALL },
    { "--mixed-precision-param", F_MP_PARAM, 1, FOR_ALL }, { "--mixed-precision-reduce", F_MP_REDUCE, 1, FOR_ALL },
    { "--nproc", F_NPROC, 1, FOR_ALL }, { "--rank", F_RANK, 1, FOR_PLAN }, { "--verify", F_VERIFY, 0, FOR_RUN },
    { "--verify-steps", F_VERIFY_STEPS, 1, FOR_RUN }, { "--dump", F_DUMP, 1, FOR_RUN }, { "--load", F_LOAD, 1, FOR_RUN },
    { "--json", F_JSON, 1, FOR_ALL }, { "--quiet", F_QUIET, 0, FOR_ALL }, { "--timeout", F_TIMEOUT, 1, FOR_ALL },
    { "--microbatches", F_MICROBATCHES, 1, FOR_ALL }, { "--pp-schedule", F_PP_SCHEDULE, 1, FOR_ALL },
    { "--pp-microbatches", F_PP_MICROBATCHES, 1, FOR_ALL }, { "--pp-virtual", F_PP_VIRTUAL, 1, FOR_ALL },
    { "--layers", F_LAYERS, 1, FOR_ALL }, { "--ulysses", F_ULYSSES, 1, FOR_ALL },
    { "--list-failpoints", F_LIST_FAILPOINTS, 0, FOR_RUN },
    { "--checkpoint-dir", F_CKPT_DIR, 1, FOR_RUN }, { "--checkpoint-every", F_CKPT_EVERY, 1, FOR_RUN },
    { "--checkpoint-keep", F_CKPT_KEEP, 1, FOR_RUN }, { "--resume", F_RESUME, 1, FOR_RUN },
    { "--model-config", F_MODEL_CONFIG, 1, FOR_ALL }, { "--memory", F_PLAN_MEMORY, 0, FOR_PLAN },
    { "--params", F_PLAN_PARAMS, 1, FOR_PLAN },
    { "--search", F_PLAN_SEARCH, 0, FOR_PLAN }, { "--ranks", F_PLAN_RANKS, 0, FOR_PLAN }, { "--world", F_PLAN_WORLD, 1, FOR_PLAN },
    { "--mem-per-rank", F_MEM_PER_RANK, 1, FOR_PLAN }, { "--hw", F_HW, 1, FOR_PLAN },
    { "--gemm", F_GEMM, 1, FOR_RUN | FOR_BENCH },
    // TorchTitan's job-file keys, as its command line spells them (training-job.md §2)
    { "--optimizer.beta1", F_BETA1, 1, FOR_ALL }, { "--optimizer.beta2", F_BETA2, 1, FOR_ALL },
    { "--optimizer.eps", F_EPS, 1, FOR_ALL }, { "--optimizer.weight_decay", F_WEIGHT_DECAY, 1, FOR_ALL },
    { "--lr_scheduler.warmup_steps", F_WARMUP, 1, FOR_ALL },
    { "--lr_scheduler.decay_ratio", F_DECAY_RATIO, 1, FOR_ALL },
    { "--lr_scheduler.decay_type", F_DECAY_TYPE, 1, FOR_ALL },
    { "--lr_scheduler.min_lr_factor", F_MIN_LR, 1, FOR_ALL },
    { "--lr_scheduler.total_steps", F_TOTAL_STEPS, 1, FOR_ALL },
    // data formats (dataformats branch): training-job.md §4, docs/data.md
    { "--training.dataset_path", F_DATA, 1, FOR_ALL }, { "--training.dataset_format", F_DATA_FORMAT, 1, FOR_ALL },
    // compare + multi-host (compare branch)
    { "--ranks-per-node", F_RANKS_PER_NODE, 1, FOR_PLAN },
    { "--help", F_HELP, 0, FOR_ALL }, { "-h", F_HELP, 0, FOR_ALL },
};

// The --model line, from the library's table of named configs (config.h), so that it cannot
// miss one; wrapped under its own column.
static void print_model_names(FILE *out) {
    int col = fprintf(out, "  --model NAME       ");
    for (int i = 0; hp_model_config_names[i]; i++) {
        const char *name = hp_model_config_names[i], *sep = i ? " | " : "";
        if (i && col + (int)(strlen(sep) + strlen(name)) > 96) {   // wrap: " |" ends the line
            fputs(" |\n", out);
            col = fprintf(out, "%21s", "");
            sep = "";
        }
        col += fprintf(out, "%s%s", sep, name);
    }
    fputs("\n                     (default tiny; the published shapes are for plan: run's memory\n"
          "                     check refuses them)\n", out);
}

void tool_cli_print_common_help(FILE *out) {
    fputs(
        "parallel degrees (world = dp_replicate*dp_shard*cp*tp*pp; ep and etp re-use those ranks):\n"
        "  --dp-replicate N   HSDP replication / DDP degree (default 1)\n"
        "  --dp-shard N       FSDP shard degree; -1 = world / (dp_replicate*cp*tp*pp) (default -1)\n"
        "  --ulysses N        Ulysses sequence parallel degree: heads <-> tokens all-to-all\n"
        "                     around attention; between dp_shard and cp in the mesh (default 1)\n"
        "  --cp N             context parallel degree (default 1)\n"
        "  --tp N             tensor parallel degree (default 1)\n"
        "  --pp N             pipeline parallel degree, outermost (default 1)\n"
        "  --pp-schedule S    gpipe | 1f1b | interleaved-1f1b | zbv (default 1f1b)\n"
        "  --pp-microbatches M  microbatches per step under pp (default 1)\n"
        "  --pp-virtual V     stages per pp rank (default 1; 2 for interleaved-1f1b and zbv)\n"
        "  --ep N             expert parallel degree; divides dp_shard*cp*tp (default 1)\n"
        "  --etp N            expert tensor parallel degree: 1 or tp, needs ep > 1 (default 1)\n"
        "  --no-sp / --sp     sequence parallel off / on (default: on iff tp > 1)\n"
        "model and run:\n",
        out);
    print_model_names(out);
    fputs(
        "  --model-config F   the model of a Hugging Face config.json (instead of --model)\n"
        "  --seq-len N        tokens per sequence (default 32)\n"
        "  --batch N          global batch, in sequences (default 8)\n"
        "  --seed N           seed of init and synthetic data (default 1234)\n"
        "  --steps N          optimiser steps (default 1)\n"
        "  --optimizer NAME   sgd | adamw (default sgd)\n"
        "  --lr X             learning rate (default 0.01)\n"
        "  --max-norm X       clip the global grad norm to X; 0 = off (default 0)\n"
        "  --optimizer.beta1 B, --optimizer.beta2 B, --optimizer.eps E, --optimizer.weight_decay W\n"
        "                     AdamW as torch.optim.AdamW (default 0.9, 0.95, 1e-8, 0.1)\n"
        "  --lr_scheduler.warmup_steps W  --lr_scheduler.decay_ratio R  --lr_scheduler.decay_type T\n"
        "  --lr_scheduler.min_lr_factor M  --lr_scheduler.total_steps N\n"
        "                     TorchTitan's schedule: W linear warmup steps, then stable, then a\n"
        "                     linear | sqrt | cosine decay over round(N*R) steps (R -1: from warmup)\n"
        "                     to lr*M; N = -1: --steps (default 0, 0, linear, 0, -1: a constant lr)\n"
        "  --microbatches M   gradient accumulation: M microbatches per step, grads reduced once\n"
        "                     (M divides batch/(dp_replicate*dp_shard); default 1)\n"
        "  --data FILE        train on FILE: an llm.c shard, a Megatron PREFIX, a glob of shards,\n"
        "                     or a headerless file's bytes (default: synthetic tokens; docs/data.md)\n"
        "  --training.dataset_path FILE  the same, but a headerless file needs a format:\n"
        "  --training.dataset_format F   auto | llmc | megatron | uint16 | uint32 | bytes (default auto)\n"
        "  --cp-rotate NAME   allgather | ring (default allgather)\n"
        "  --cp-no-balance    contiguous CP split instead of head-tail chunks\n"
        "  --dispatcher NAME  alltoall | allgather expert dispatch (default alltoall)\n"
        "  --ac MODE          activation checkpointing: none | full | every:N (block l when\n"
        "                     (l+1) % N == 0; docs/planner.md; default none)\n"
        "  --reshard-after-forward POLICY\n"
        "                     FSDP units after their forward: default (pp: kept for the step;\n"
        "                     else [norm, output] kept to its backward, others freed) | always\n"
        "                     (freed, gathered again; pp 1) | never (kept to their backward)\n"
        "  --mixed-precision-param DTYPE\n"
        "                     float32 | bfloat16: FSDP2's policy on every layout (fp32 master and\n"
        "                     optimizer, bf16 all-gather, ops and local grads; default float32)\n"
        "  --mixed-precision-reduce DTYPE\n"
        "                     float32 | bfloat16: the gradient reduction and accumulation\n"
        "                     (bfloat16 needs bfloat16 params; default float32)\n"
        "launch and output:\n"
        "  --nproc N          ranks to launch (plan: the world; default: the product of degrees)\n"
        "  --rank N           plan: the rank whose local shapes are shown (default 0)\n"
        "  --verify           compare with the single-process reference\n"
        "  --verify-steps N   length of the compared loss trajectory (default 5)\n"
        "  --dump DIR         write tensors to DIR\n"
        "  --load FILE        load parameters from a safetensors FILE\n"
        "  --json FILE        write the machine-readable result to FILE\n"
        "  --quiet            print less\n"
        "  --list-failpoints  run: list the fault-injection points of HP_FAILPOINT=name[,name]\n"
        "  --timeout S        watchdog: a collective waiting longer than S seconds aborts the job\n"
        "                     (default: environment HP_TIMEOUT, else 600)\n"
        "checkpoints (run; docs/checkpoints.md):\n"
        "  --checkpoint-dir D    save D/step-K every --checkpoint-every steps and after the last\n"
        "  --checkpoint-every N  steps between saves (default 0: after the last step only)\n"
        "  --checkpoint-keep K   keep the newest K step folders (default 0: all)\n"
        "  --resume D            continue from D's latest checkpoint (or D/step-K), any layout;\n"
        "                        --steps stays the step to train up to\n"
        "  -h, --help         this help\n",
        out);
}

// ---------------------------------------------------------------------------------------------
// value parsers: each prints one line naming the flag on failure

static int parse_int(const char *flag, const char *s, int *out) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (*s == '\0' || *end != '\0' || errno == ERANGE || v < INT_MIN || v > INT_MAX) {
        fprintf(stderr, "hp: %s expects an integer, got '%s'\n", flag, s);
        return HP_EXIT_CONFIG;
    }
    *out = (int)v;
    return 0;
}

static int parse_u64(const char *flag, const char *s, uint64_t *out) {
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (*s == '\0' || *s == '-' || *end != '\0' || errno == ERANGE) {
        fprintf(stderr, "hp: %s expects a non-negative integer, got '%s'\n", flag, s);
        return HP_EXIT_CONFIG;
    }
    *out = (uint64_t)v;
    return 0;
}

static int parse_float(const char *flag, const char *s, float *out) {
    char *end;
    errno = 0;
    float v = strtof(s, &end);
    if (*s == '\0' || *end != '\0' || errno == ERANGE || v != v) {
        fprintf(stderr, "hp: %s expects a number, got '%s'\n", flag, s);
        return HP_EXIT_CONFIG;
    }
    *out = v;
    return 0;
}

// An integer within [lo, hi]: the ranges keep every size the code derives from a flag
// inside what an int (and the memory check) can hold.
static int parse_int_in(const char *flag, const char *s, long lo, long hi, int *out) {
    int v = 0, e = parse_int(flag, s, &v);
    if (e) return e;
    if (v < lo || v > hi) {
        fprintf(stderr, "hp: %s must be in [%ld, %ld], got %d\n", flag, lo, hi, v);
        return HP_EXIT_CONFIG;
    }
    *out = v;
    return 0;
}

// A finite number, > 0 (positive) or >= 0 (!positive).
static int parse_finite(const char *flag, const char *s, int positive, float *out) {
    float v = 0.0f;
    int e = parse_float(flag, s, &v);
    if (e) return e;
    if (!isfinite(v) || (positive ? !(v > 0.0f) : !(v >= 0.0f))) {
        fprintf(stderr, "hp: %s must be a finite number %s, got '%s'\n", flag,
                positive ? "> 0" : ">= 0 (0 = off)", s);
        return HP_EXIT_CONFIG;
    }
    *out = v;
    return 0;
}

// A number in [lo, hi] ([lo, hi) when hi_open); unset_ok also takes -1 ("unset", as TOML has no null).
// Read as a double (the schedule's ratios are doubles, as in Python: 10 * 0.35 rounds to 4 decay
// steps there, and would give 3 through a float).
static int parse_interval(const char *flag, const char *s, double lo, double hi, int hi_open, int unset_ok,
                          double *out) {
    char *end;
    errno = 0;
    const double v = strtod(s, &end);
    if (*s == '\0' || *end != '\0' || errno == ERANGE || v != v) {
        fprintf(stderr, "hp: %s expects a number, got '%s'\n", flag, s);
        return HP_EXIT_CONFIG;
    }
    if (unset_ok && v == -1.0) { *out = -1.0; return 0; }
    if (!isfinite(v) || v < lo || (hi_open ? v >= hi : v > hi)) {
        fprintf(stderr, "hp: %s must be in [%g, %g%c%s, got '%s'\n", flag, lo, hi, hi_open ? ')' : ']',
                unset_ok ? " or -1 (unset)" : "", s);
        return HP_EXIT_CONFIG;
    }
    *out = v;
    return 0;
}

static int parse_interval_f(const char *flag, const char *s, double lo, double hi, int hi_open, float *out) {
    double v = 0.0;
    int e = parse_interval(flag, s, lo, hi, hi_open, 0, &v);
    if (!e) *out = (float)v;
    return e;
}

// One of two names -> 0 or 1.
static int parse_choice(const char *flag, const char *s, const char *a, const char *b, int *out) {
    if (!strcmp(s, a)) { *out = 0; return 0; }
    if (!strcmp(s, b)) { *out = 1; return 0; }
    fprintf(stderr, "hp: %s expects %s or %s, got '%s'\n", flag, a, b, s);
    return HP_EXIT_CONFIG;
}

static int parse_model(const char *s, hp_model_config *m) {
    if (hp_model_config_by_name(s, m) == 0) return 0;
    char known[256] = "";
    for (int i = 0; hp_model_config_names[i]; i++) {
        if (i) strncat(known, ", ", sizeof known - strlen(known) - 1);
        strncat(known, hp_model_config_names[i], sizeof known - strlen(known) - 1);
    }
    fprintf(stderr, "hp: --model: unknown model '%s' (known: %s)\n", s, known);
    return HP_EXIT_CONFIG;
}

static int parse_model_config(const char *path, hp_model_config *m) {
    char err[512];
    if (hp_model_config_from_hf_file(path, m, err, sizeof err) == 0) return 0;
    fprintf(stderr, "hp: --model-config %s\n", err);
    return HP_EXIT_CONFIG;
}

static int apply(tool_cli *cli, flag_id id, const char *flag, const char *v) {
    int e = 0, choice = 0;
    switch (id) {
    case F_DP_REPLICATE: return parse_int(flag, v, &cli->dims.dp_replicate);
    case F_DP_SHARD:     return parse_int(flag, v, &cli->dims.dp_shard);
    case F_CP:           return parse_int(flag, v, &cli->dims.cp);
    case F_TP:           return parse_int(flag, v, &cli->dims.tp);
    case F_PP:           return parse_int(flag, v, &cli->dims.pp);
    case F_EP:           return parse_int(flag, v, &cli->dims.ep);
    case F_ETP:          return parse_int(flag, v, &cli->dims.etp);
    case F_NO_SP:        cli->dims.sp = 0; return 0;
    case F_SP:           cli->dims.sp = 1; return 0;
    case F_MODEL:        return parse_model(v, &cli->model);
    case F_SEQ_LEN:      return parse_int_in(flag, v, 1, TOOL_CLI_MAX_SIZE, &cli->run.seq_len);
    case F_BATCH:        return parse_int_in(flag, v, 1, TOOL_CLI_MAX_SIZE, &cli->run.batch);
    case F_SEED:         return parse_u64(flag, v, &cli->run.seed);
    case F_STEPS:        return parse_int_in(flag, v, 1, TOOL_CLI_MAX_STEPS, &cli->run.steps);
    case F_LR:           return parse_finite(flag, v, 1, &cli->run.lr);
    case F_MAX_NORM:     return parse_finite(flag, v, 0, &cli->run.max_norm);
    case F_DATA:   // data formats (dataformats branch): --data keeps reading a headerless file as bytes
        cli->run.data_path = v;
        if (!strcmp(flag, "--data") && cli->run.data_format == HP_DATA_AUTO) cli->run.data_format = HP_DATA_AUTO_BYTES;
        return 0;
    case F_DATA_FORMAT: {   // data formats (dataformats branch)
        char err[160];
        if (hp_data_format_parse(flag, v, &cli->run.data_format, err, sizeof err) == 0) return 0;
        fprintf(stderr, "hp: %s\n", err);
        return HP_EXIT_CONFIG;
    }
    case F_OPTIMIZER:
        if ((e = parse_choice(flag, v, "sgd", "adamw", &choice))) return e;
        cli->run.optimizer = choice ? HP_OPT_ADAMW : HP_OPT_SGD;
        return 0;
    case F_CP_ROTATE:
        if ((e = parse_choice(flag, v, "allgather", "ring", &choice))) return e;
        cli->run.cp_rotate = choice ? HP_ROTATE_RING : HP_ROTATE_ALLGATHER;
        return 0;
    case F_CP_NO_BALANCE: cli->run.cp_load_balance = 0; return 0;
    case F_DISPATCHER:
        if ((e = parse_choice(flag, v, "alltoall", "allgather", &choice))) return e;
        cli->run.dispatcher = choice ? HP_DISPATCH_ALLGATHER : HP_DISPATCH_ALLTOALL;
        return 0;
    case F_NPROC:        return parse_int_in(flag, v, 1, TOOL_CLI_MAX_SIZE, &cli->nproc);
    case F_RANK:         return parse_int_in(flag, v, 0, TOOL_CLI_MAX_SIZE - 1, &cli->rank);
    case F_VERIFY:       cli->verify = 1; return 0;
    case F_VERIFY_STEPS: return parse_int_in(flag, v, 1, 1000, &cli->verify_steps);
    case F_DUMP:         cli->dump_dir = v; return 0;
    case F_LOAD:         cli->load_file = v; return 0;
    case F_JSON:         cli->json_out = v; return 0;
    case F_QUIET:        cli->quiet = 1; return 0;
    case F_TIMEOUT:      return parse_finite(flag, v, 1, &cli->timeout);
    case F_MICROBATCHES: return parse_int_in(flag, v, 1, TOOL_CLI_MAX_SIZE, &cli->microbatches);
    case F_PP_MICROBATCHES: return parse_int_in(flag, v, 1, TOOL_CLI_MAX_SIZE, &cli->pp_microbatches);
    case F_PP_VIRTUAL:   return parse_int_in(flag, v, 1, 64, &cli->dims.pp_virtual);
    case F_LAYERS:       return parse_int_in(flag, v, 1, 4096, &cli->layers);
    case F_ULYSSES:      return parse_int(flag, v, &cli->dims.ulysses);
    case F_PP_SCHEDULE:
        if ((cli->dims.pp_schedule = hp_pp_schedule_parse(v)) < 0) {
            fprintf(stderr, "hp: --pp-schedule expects gpipe, 1f1b, interleaved-1f1b or zbv, got '%s'\n", v);
            return HP_EXIT_CONFIG;
        }
        return 0;
    case F_LIST_FAILPOINTS: cli->list_failpoints = 1; return 0;
    case F_CKPT_DIR:     cli->ckpt_dir = v; return 0;
    case F_CKPT_EVERY:   return parse_int_in(flag, v, 0, TOOL_CLI_MAX_STEPS, &cli->ckpt_every);
    case F_CKPT_KEEP:    return parse_int_in(flag, v, 0, TOOL_CLI_MAX_STEPS, &cli->ckpt_keep);
    case F_RESUME:       cli->resume = v; return 0;
    case F_MODEL_CONFIG: return parse_model_config(v, &cli->model);
    case F_PLAN_MEMORY:  cli->plan_memory = 1; return 0;
    case F_PLAN_PARAMS:
        if (strcmp(v, "all") && strcmp(v, "kinds")) {
            fprintf(stderr, "hp: --params expects kinds or all, got '%s'\n", v);
            return HP_EXIT_CONFIG;
        }
        cli->plan_params_all = !strcmp(v, "all");
        return 0;
    case F_PLAN_SEARCH:  cli->plan_search = 1; return 0;
    case F_PLAN_RANKS:   cli->plan_ranks = 1; return 0;
    case F_PLAN_WORLD:   return parse_int_in(flag, v, 1, TOOL_CLI_MAX_SIZE, &cli->plan_world);
    case F_MEM_PER_RANK: cli->mem_per_rank = v; return 0;
    case F_HW:           cli->hw = v; return 0;
    case F_AC: {
        char err[160];
        cli->ac_given = 1;
        if (hp_run_config_parse_ac(v, &cli->run.ac_every, err, sizeof err) == 0) return 0;
        fprintf(stderr, "hp: %s\n", err);
        return HP_EXIT_CONFIG;
    }
    case F_RESHARD: {
        char err[160];
        if (hp_run_config_parse_reshard(v, &cli->run.reshard_after_forward, err, sizeof err) == 0) return 0;
        fprintf(stderr, "hp: %s\n", err);
        return HP_EXIT_CONFIG;
    }
    case F_MP_PARAM:
    case F_MP_REDUCE: {
        char err[160];
        if (hp_mp_dtype_parse(flag, v, id == F_MP_PARAM ? &cli->run.mp_param : &cli->run.mp_reduce, err,
                           sizeof err) == 0)
            return 0;
        fprintf(stderr, "hp: %s\n", err);
        return HP_EXIT_CONFIG;
    }
    case F_BETA1:        return parse_interval_f(flag, v, 0, 1, 1, &cli->run.beta1);
    case F_BETA2:        return parse_interval_f(flag, v, 0, 1, 1, &cli->run.beta2);
    case F_EPS:          return parse_finite(flag, v, 1, &cli->run.eps);
    case F_WEIGHT_DECAY: return parse_finite(flag, v, 0, &cli->run.weight_decay);
    case F_WARMUP:       return parse_int_in(flag, v, 0, TOOL_CLI_MAX_STEPS, &cli->run.warmup_steps);
    case F_DECAY_RATIO:  return parse_interval(flag, v, 0, 1, 0, 1, &cli->run.decay_ratio);
    case F_MIN_LR:       return parse_interval(flag, v, 0, 1, 0, 0, &cli->run.min_lr_factor);
    case F_TOTAL_STEPS:  return parse_int_in(flag, v, -1, TOOL_CLI_MAX_STEPS, &cli->run.total_steps);
    case F_DECAY_TYPE:
        if (!strcmp(v, "linear")) cli->run.decay_type = HP_DECAY_LINEAR;
        else if (!strcmp(v, "sqrt")) cli->run.decay_type = HP_DECAY_SQRT;
        else if (!strcmp(v, "cosine")) cli->run.decay_type = HP_DECAY_COSINE;
        else {
            fprintf(stderr, "hp: %s expects linear, sqrt or cosine, got '%s'\n", flag, v);
            return HP_EXIT_CONFIG;
        }
        return 0;
    case F_GEMM:   // the names of src/kernels/gemm.h's hp_gemm_backend_parse (cli.c links no kernels)
        if (strcmp(v, "openblas") && strcmp(v, "onednn") && strcmp(v, "auto")) {
            fprintf(stderr, "hp: --gemm expects openblas, onednn or auto, got '%s'\n", v);
            return HP_EXIT_CONFIG;
        }
        cli->gemm = v;
        return 0;
    case F_RANKS_PER_NODE: return parse_int_in(flag, v, 1, TOOL_CLI_MAX_SIZE, &cli->ranks_per_node);
    case F_HELP:         return 0;
    }
    return 0;
}

static int push_rest(tool_cli *cli, char *s) {
    if (cli->n_rest >= (int)(sizeof cli->rest / sizeof cli->rest[0])) {
        fprintf(stderr, "hp: too many arguments (at most %d positional or subcommand flags)\n",
                (int)(sizeof cli->rest / sizeof cli->rest[0]));
        return HP_EXIT_CONFIG;
    }
    cli->rest[cli->n_rest++] = s;
    return 0;
}

// "--flag" + "=" + "value" for rest[]. tool_cli has no free function, so the strings are kept on
// a process-wide list: they live as long as the process (or until tool_cli_release) and are never
// reported as leaks.
static char **kept = NULL;
static int n_kept = 0, cap_kept = 0;

void tool_cli_release(void) {
    for (int i = 0; i < n_kept; i++) free(kept[i]);
    free(kept);
    kept = NULL;
    n_kept = cap_kept = 0;
}

static char *keep_joined(const char *name, const char *value) {
    size_t nn = strlen(name), nv = strlen(value);
    char *s = malloc(nn + nv + 2);
    if (!s) { fprintf(stderr, "hp: out of memory\n"); exit(HP_EXIT_FAIL); }
    memcpy(s, name, nn);
    s[nn] = '=';
    memcpy(s + nn + 1, value, nv + 1);
    if (n_kept == cap_kept) {
        int cap = cap_kept ? 2 * cap_kept : 16;
        char **k = realloc(kept, (size_t)cap * sizeof *k);
        if (!k) { fprintf(stderr, "hp: out of memory\n"); exit(HP_EXIT_FAIL); }
        kept = k;
        cap_kept = cap;
    }
    kept[n_kept++] = s;
    return s;
}

// The flag of the table that the word arg ("--tp", "--dump=D") names, or NULL; its name is
// copied into name (truncated to cap) and *eq points at its "=value" part (NULL when none).
static const flag_def *find_flag(const char *arg, char *name, size_t cap, const char **eq) {
    *eq = strchr(arg, '=');
    size_t n = *eq ? (size_t)(*eq - arg) : strlen(arg);
    if (n >= cap) n = cap - 1;
    memcpy(name, arg, n);
    name[n] = '\0';
    for (size_t k = 0; k < sizeof flags / sizeof flags[0]; k++)
        if (!strcmp(flags[k].name, name)) return &flags[k];
    return NULL;
}

int tool_cli_run_flag(const char *arg, int *takes_value) {
    char name[64];
    const char *eq;
    const flag_def *f = find_flag(arg, name, sizeof name, &eq);
    if (!f) return -1;
    *takes_value = f->takes_value && !eq;
    return (f->scope & FOR_RUN) != 0;
}

// Flags that only mean something together, applied once all are read (any order).
static int combine_flags(tool_cli *cli) {
    if (cli->layers > 0) cli->model.n_layers = cli->layers;   // --layers deepens any model
    const int pp = cli->dims.pp;
    if (cli->pp_microbatches && pp <= 1) {
        fprintf(stderr, "hp: --pp-microbatches needs --pp > 1 (pp = %d); use --microbatches for "
                "gradient accumulation\n", pp);
        return HP_EXIT_CONFIG;
    }
    if (cli->microbatches && pp > 1) {
        fprintf(stderr, "hp: --microbatches is gradient accumulation at pp 1; with --pp %d use "
                "--pp-microbatches\n", pp);
        return HP_EXIT_CONFIG;
    }
    const int T = cli->run.total_steps;
    if (T != -1 && T < cli->run.steps) {
        fprintf(stderr, "hp: --lr_scheduler.total_steps (%d) must be -1 (= steps) or >= --steps (%d)\n", T,
                cli->run.steps);
        return HP_EXIT_CONFIG;
    }
    cli->run.microbatches = pp > 1 ? (cli->pp_microbatches ? cli->pp_microbatches : 1)
                                   : (cli->microbatches ? cli->microbatches : 1);
    return 0;
}

int tool_cli_parse(tool_cli *cli, int argc, char **argv, int first, const char *const *extra,
                 const char *usage) {
    memset(cli, 0, sizeof *cli);
    cli->dims = hp_dims_default();
    hp_model_config_by_name("tiny", &cli->model);
    hp_run_config_default(&cli->run);
    cli->verify_steps = 5;
    const char *cmd = (first >= 1 && first - 1 < argc && argv[first - 1][0] != '-') ? argv[first - 1] : "<cmd>";
    const int scope = !strcmp(cmd, "plan") ? FOR_PLAN : !strcmp(cmd, "run") ? FOR_RUN
                    : !strcmp(cmd, "bench") ? FOR_BENCH : FOR_ALL;

    int only_positional = 0;
    for (int i = first; i < argc; i++) {
        char *arg = argv[i];
        if (only_positional || arg[0] != '-' || !strcmp(arg, "-")) {
            int e = push_rest(cli, arg);
            if (e) return e;
            continue;
        }
        if (!strcmp(arg, "--")) { only_positional = 1; continue; }
        char name[64];
        const char *eq;   // "--name=value"
        const flag_def *f = find_flag(arg, name, sizeof name, &eq);
        int is_extra = 0;
        for (int k = 0; !f && extra && extra[k]; k++)
            if (!strcmp(extra[k], name)) { is_extra = 1; break; }
        if (!f && !is_extra) {
            fprintf(stderr, "hp: unknown flag '%s' (see hp %s --help)\n", name, cmd);
            return HP_EXIT_CONFIG;
        }
        if (f && !(f->scope & scope)) {
            fprintf(stderr, "hp: %s is a flag of hp %s, not of hp %s (see hp %s --help)\n", name,
                    f->scope == FOR_PLAN ? "plan" : "run", cmd, cmd);
            return HP_EXIT_CONFIG;
        }
        int takes_value = is_extra || f->takes_value;
        const char *value = NULL;
        if (takes_value) {
            if (eq) value = eq + 1;
            else if (i + 1 < argc) value = argv[++i];
            else {
                fprintf(stderr, "hp: %s expects a value\n", name);
                return HP_EXIT_CONFIG;
            }
        } else if (eq) {
            fprintf(stderr, "hp: %s takes no value, got '%s'\n", name, arg);
            return HP_EXIT_CONFIG;
        }
        if (is_extra) {
            int e = push_rest(cli, keep_joined(name, value));
            if (e) return e;
            continue;
        }
        if (f->id == F_HELP) {
            if (usage) fputs(usage, stdout);
            tool_cli_print_common_help(stdout);
            return -1;
        }
        int e = apply(cli, f->id, name, value);
        if (e) return e;
    }
    return combine_flags(cli);
}
