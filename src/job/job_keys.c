// job_keys.c - the values of the job's keys and flags (job_table.h): each row's value checked and
// set in hp_job (hp_job_apply_key: a job file's entry or a command-line flag alike), the defaults,
// and the keys that only mean something together, resolved once all are read (hp_job_resolve:
// the model, activation checkpointing, the batch, the checkpoint folders). The table is
// job_table.c, the file job_file.c; hp's argv parser (tools/hp/cli/cli.c) calls these.
// defines: hp_job_defaults, hp_job_resolve, hp_job_apply_key, hp_job_apply_value, hp_job_flag_find,
//          hp_job_flag_key_row, hp_job_keep, hp_job_keep_owned, hp_job_note, hp_job_release
//
// Values must parse fully ("--tp 2x" is an error, not 2). Boolean keys take true or false. A bad
// value prints one line naming the key (or the flag, or FILE:LINE) and returns HP_EXIT_CONFIG; the
// caller exits with it.
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "job_table.h"
#include "hyperpar/float8.h"
#include "hyperpar/pipeline.h"

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

static int parse_bool(const char *flag, const char *s, int *out) {
    if (!strcmp(s, "true")) { *out = 1; return 0; }
    if (!strcmp(s, "false")) { *out = 0; return 0; }
    fprintf(stderr, "hp: %s expects true or false, got '%s'\n", flag, s);
    return HP_EXIT_CONFIG;
}

// -1 ("unset": TOML has no null) or an integer in [lo, hi].
static int parse_int_or_unset(const char *flag, const char *s, long lo, long hi, int *out) {
    if (!strcmp(s, "-1")) { *out = -1; return 0; }
    return parse_int_in(flag, s, lo, hi, out);
}

// A string key's value: "" is none (NULL).
static const char *or_null(const char *v) { return *v ? v : NULL; }

static int same_ci(const char *a, const char *b) {
    for (; *a && *b; a++, b++)
        if ((*a | 0x20) != (*b | 0x20)) return 0;
    return *a == *b;
}

// TorchTitan's llama3 flavors (TT torchtitan/models/llama3/__init__.py) and hp's names for them.
static const char *const llama3_flavors[][2] = {
    { "debugmodel", NULL }, { "8B", "llama3-8b" }, { "70B", "llama3-70b" }, { "405B", "llama3-405b" },
};
static int llama3_flavor(const char *s) {
    for (int i = 0; i < 4; i++)
        if (!strcmp(s, llama3_flavors[i][0])) return i;
    return -1;
}

// TorchTitan's llama3 debugmodel: dim 256, 6 layers, 16 heads, vocab 2048, rope_theta 500000,
// FFN 4*dim*2/3 rounded up to a multiple of 256 = 768.
static void llama3_debugmodel(hp_model_config *m) {
    hp_model_config_by_name("llama3-8b", m);
    snprintf(m->name, sizeof m->name, "llama3-debugmodel");
    m->vocab_size = 2048;
    m->dim = 256;
    m->n_layers = 6;
    m->n_heads = 16;
    m->n_kv_heads = 16;
    m->ffn_hidden = 768;
}

static int check_model_name(const char *flag, const char *s) {
    if (llama3_flavor(s) >= 0) return 0;
    hp_model_config m;
    if (hp_model_config_by_name(s, &m) == 0) return 0;
    char known[256] = "";
    for (int i = 0; hp_model_config_names[i]; i++) {
        if (i) strncat(known, ", ", sizeof known - strlen(known) - 1);
        strncat(known, hp_model_config_names[i], sizeof known - strlen(known) - 1);
    }
    fprintf(stderr, "hp: %s: unknown model '%s' (known: %s; llama3: debugmodel, 8B, 70B, 405B)\n", flag, s, known);
    return HP_EXIT_CONFIG;
}

// TorchTitan's schedule names, or hp's (any case).
static int parse_schedule(const char *flag, const char *v, int *out) {
    static const char *const tt[] = { "GPipe", "1F1B", "Interleaved1F1B", "ZBVZeroBubble" };
    static const char *const hp[] = { "gpipe", "1f1b", "interleaved-1f1b", "zbv" };
    for (int i = 0; i < 4; i++)
        if (same_ci(v, tt[i]) || same_ci(v, hp[i])) { *out = hp_pp_schedule_parse(hp[i]); return *out < 0; }
    fprintf(stderr, "hp: %s expects gpipe, 1f1b, interleaved-1f1b or zbv, got '%s' (TorchTitan's GPipe, 1F1B, "
            "Interleaved1F1B, ZBVZeroBubble too)\n", flag, v);
    return HP_EXIT_CONFIG;
}

int hp_job_apply_value(hp_job *job, int id, const char *flag, const char *v) {
    int e = 0, choice = 0;
    switch ((hp_job_flag_id)id) {
    case F_DP_REPLICATE: return parse_int(flag, v, &job->dims.dp_replicate);
    case F_DP_SHARD:     return parse_int(flag, v, &job->dims.dp_shard);
    case F_CP:           return parse_int(flag, v, &job->dims.cp);
    case F_TP:           return parse_int(flag, v, &job->dims.tp);
    case F_PP:           return parse_int(flag, v, &job->dims.pp);
    case F_EP:           return parse_int(flag, v, &job->dims.ep);
    case F_ETP:          return parse_int(flag, v, &job->dims.etp);
    case F_SP:           return parse_bool(flag, v, &job->dims.sp);
    case F_MODEL:
        if ((e = check_model_name(flag, v))) return e;
        job->flavor = v;
        return 0;
    case F_MODEL_NAME:
        if (same_ci(v, "hp")) job->model_name = "hp";
        else if (same_ci(v, "llama3")) job->model_name = "llama3";
        else {
            fprintf(stderr, "hp: %s expects hp (any hp model) or llama3 (TorchTitan's shapes), got '%s'\n", flag, v);
            return HP_EXIT_CONFIG;
        }
        return 0;
    case F_SEQ_LEN:      return parse_int_in(flag, v, 1, HP_JOB_MAX_SIZE, &job->run.seq_len);
    case F_BATCH:   // -1: unset (TorchTitan's default: local_batch_size x dp)
        return !strcmp(v, "-1") ? 0 : parse_int_in(flag, v, 1, HP_JOB_MAX_SIZE, &job->run.batch);
    case F_LOCAL_BATCH:  return parse_int_or_unset(flag, v, 1, HP_JOB_MAX_SIZE, &job->local_batch);
    case F_SEED:         return parse_u64(flag, v, &job->run.seed);
    case F_STEPS:        return parse_int_in(flag, v, 1, HP_JOB_MAX_STEPS, &job->run.steps);
    case F_LR:           return parse_finite(flag, v, 1, &job->run.lr);
    case F_MAX_NORM:     return parse_finite(flag, v, 0, &job->run.max_norm);
    case F_DATA:   // --data keeps reading a headerless file as bytes (docs/data.md)
        job->run.data_path = or_null(v);
        if (!strcmp(flag, "--data") && job->run.data_format == HP_DATA_AUTO) job->run.data_format = HP_DATA_AUTO_BYTES;
        return 0;
    case F_DATA_FORMAT:
    case F_VAL_FORMAT: {
        char err[200];
        if (id == F_VAL_FORMAT && !*v) { job->val_format = HP_JOB_VAL_FORMAT_UNSET; return 0; }
        if (hp_data_format_parse(flag, v, id == F_VAL_FORMAT ? &job->val_format : &job->run.data_format, err,
                                 sizeof err) == 0)
            return 0;
        fprintf(stderr, "hp: %s\n", err);
        return HP_EXIT_CONFIG;
    }
    case F_OPTIMIZER:
        if (same_ci(v, "sgd")) job->run.optimizer = HP_OPT_SGD;
        else if (same_ci(v, "adamw")) job->run.optimizer = HP_OPT_ADAMW;
        else {
            fprintf(stderr, "hp: %s expects sgd or adamw, got '%s'%s\n", flag, v,
                    same_ci(v, "adam") ? " (TorchTitan's Adam is not implemented)" : "");
            return HP_EXIT_CONFIG;
        }
        return 0;
    case F_CP_ROTATE:   // TorchTitan's alltoall is hp's ring
        if (!strcmp(v, "alltoall")) { job->run.cp_rotate = HP_ROTATE_RING; return 0; }
        if ((e = parse_choice(flag, v, "allgather", "ring", &choice))) return e;
        job->run.cp_rotate = choice ? HP_ROTATE_RING : HP_ROTATE_ALLGATHER;
        return 0;
    case F_CP_BALANCE:   return parse_bool(flag, v, &job->run.cp_load_balance);
    case F_ASYNC_TP:     return parse_bool(flag, v, &job->run.async_tp);
    case F_DISPATCHER:
        if ((e = parse_choice(flag, v, "alltoall", "allgather", &choice))) return e;
        job->run.dispatcher = choice ? HP_DISPATCH_ALLGATHER : HP_DISPATCH_ALLTOALL;
        return 0;
    case F_NPROC:        return parse_int_in(flag, v, 1, HP_JOB_MAX_SIZE, &job->nproc);
    case F_RANK:         return parse_int_in(flag, v, 0, HP_JOB_MAX_SIZE - 1, &job->rank);
    case F_VERIFY:       job->verify = 1; return 0;
    case F_VERIFY_STEPS: job->verify_steps_given = 1; return parse_int_in(flag, v, 1, 1000, &job->verify_steps);
    case F_DUMP:         job->dump_dir = v; return 0;
    case F_JSON:         job->json_out = v; return 0;
    case F_QUIET:        job->quiet = 1; return 0;
    case F_TIMEOUT:      return parse_finite(flag, v, 1, &job->timeout);
    case F_MICROBATCHES: return parse_int_in(flag, v, 1, HP_JOB_MAX_SIZE, &job->microbatches);
    case F_PP_MICROBATCHES: return parse_int_in(flag, v, 1, HP_JOB_MAX_SIZE, &job->pp_microbatches);
    case F_PP_MB_SIZE:   return parse_int_or_unset(flag, v, 1, HP_JOB_MAX_SIZE, &job->pp_mb_size);
    case F_PP_VIRTUAL:
        if ((e = parse_int_or_unset(flag, v, 1, 64, &job->dims.pp_virtual))) return e;
        if (job->dims.pp_virtual < 0) job->dims.pp_virtual = 0;   // the schedule's own
        return 0;
    case F_LAYERS:       return parse_int_or_unset(flag, v, 1, 4096, &job->layers);
    case F_ULYSSES:      return parse_int(flag, v, &job->dims.ulysses);
    case F_PP_SCHEDULE:  return parse_schedule(flag, v, &job->dims.pp_schedule);
    case F_LIST_FAILPOINTS: job->list_failpoints = 1; return 0;
    case F_CKPT_ENABLE:  return parse_bool(flag, v, &job->ckpt_enable);
    case F_CKPT_FOLDER:
        if (!*v) { fprintf(stderr, "hp: %s must name a folder\n", flag); return HP_EXIT_CONFIG; }
        job->ckpt_folder = v;
        return 0;
    case F_CKPT_EVERY:   return parse_int_in(flag, v, 0, HP_JOB_MAX_STEPS, &job->ckpt_every);
    case F_CKPT_KEEP:    return parse_int_in(flag, v, 0, HP_JOB_MAX_STEPS, &job->ckpt_keep);
    case F_LOAD_STEP:    return parse_int_or_unset(flag, v, 0, HP_JOB_MAX_STEPS, &job->load_step);
    case F_INIT_LOAD:    job->init_load = or_null(v); return 0;
    case F_INIT_MODEL_ONLY: return parse_bool(flag, v, &job->init_model_only);
    case F_INIT_LOAD_HF: return parse_bool(flag, v, &job->init_load_in_hf);
    case F_MODEL_CONFIG: job->hf_config = or_null(v); return 0;
    case F_PLAN_MEMORY:  job->plan_memory = 1; return 0;
    case F_PLAN_PARAMS:
        if (strcmp(v, "all") && strcmp(v, "kinds")) {
            fprintf(stderr, "hp: --params expects kinds or all, got '%s'\n", v);
            return HP_EXIT_CONFIG;
        }
        job->plan_params_all = !strcmp(v, "all");
        return 0;
    case F_PLAN_SEARCH:  job->plan_search = 1; return 0;
    case F_PLAN_RANKS:   job->plan_ranks = 1; return 0;
    case F_PLAN_WORLD:   return parse_int_in(flag, v, 1, HP_JOB_MAX_SIZE, &job->plan_world);
    case F_MEM_PER_RANK: job->mem_per_rank = v; return 0;
    case F_HW:           job->hw = v; return 0;
    case F_AC: {   // none | full | selective (+ selective_ac_option) | hp's every:N
        char err[160];
        int every = 0;
        job->ac_given = 1;
        if (!strcmp(v, "selective")) { job->ac_mode = v; return 0; }
        if (hp_run_config_parse_ac(v, &every, err, sizeof err) != 0) {
            fprintf(stderr, "hp: %s\n", err);
            return HP_EXIT_CONFIG;
        }
        if (every > 1) {   // every:N is TorchTitan's selective with option N
            char n[24];
            snprintf(n, sizeof n, "%d", every);
            job->ac_mode = "selective";
            job->ac_option = hp_job_keep(n);
        } else {
            job->ac_mode = every ? "full" : "none";
        }
        return 0;
    }
    case F_AC_OPTION:    job->ac_option = v; return 0;
    case F_RESHARD: {
        char err[160];
        if (hp_run_config_parse_reshard(v, &job->run.reshard_after_forward, err, sizeof err) == 0) return 0;
        fprintf(stderr, "hp: %s\n", err);
        return HP_EXIT_CONFIG;
    }
    case F_MP_PARAM:
    case F_MP_REDUCE: {
        char err[160];
        if (hp_mp_dtype_parse(flag, v, id == F_MP_PARAM ? &job->run.mp_param : &job->run.mp_reduce, err,
                           sizeof err) == 0)
            return 0;
        fprintf(stderr, "hp: %s\n", err);
        return HP_EXIT_CONFIG;
    }
    case F_BETA1:        return parse_interval_f(flag, v, 0, 1, 1, &job->run.beta1);
    case F_BETA2:        return parse_interval_f(flag, v, 0, 1, 1, &job->run.beta2);
    case F_EPS:          return parse_finite(flag, v, 1, &job->run.eps);
    case F_WEIGHT_DECAY: return parse_finite(flag, v, 0, &job->run.weight_decay);
    case F_WARMUP:       return parse_int_in(flag, v, 0, HP_JOB_MAX_STEPS, &job->run.warmup_steps);
    case F_DECAY_RATIO:  return parse_interval(flag, v, 0, 1, 0, 1, &job->run.decay_ratio);
    case F_MIN_LR:       return parse_interval(flag, v, 0, 1, 0, 0, &job->run.min_lr_factor);
    case F_TOTAL_STEPS:  return parse_int_in(flag, v, -1, HP_JOB_MAX_STEPS, &job->run.total_steps);
    case F_DECAY_TYPE:
        if (!strcmp(v, "linear")) job->run.decay_type = HP_DECAY_LINEAR;
        else if (!strcmp(v, "sqrt")) job->run.decay_type = HP_DECAY_SQRT;
        else if (!strcmp(v, "cosine")) job->run.decay_type = HP_DECAY_COSINE;
        else {
            fprintf(stderr, "hp: %s expects linear, sqrt or cosine, got '%s'\n", flag, v);
            return HP_EXIT_CONFIG;
        }
        return 0;
    case F_GEMM:   // the names of src/kernels/gemm.h's hp_gemm_backend_parse (fuzz_cli links no kernels)
        if (strcmp(v, "openblas") && strcmp(v, "onednn") && strcmp(v, "auto")) {
            fprintf(stderr, "hp: --gemm expects openblas, onednn or auto, got '%s'\n", v);
            return HP_EXIT_CONFIG;
        }
        job->gemm = v;
        return 0;
    // metrics + validation (docs/metrics.md)
    case F_LOG_FREQ:     return parse_int_in(flag, v, 1, HP_JOB_MAX_STEPS, &job->log_freq);
    case F_PEAK_TFLOPS:
        if ((e = parse_float(flag, v, &job->peak_tflops))) return e;
        if (!isfinite(job->peak_tflops) || job->peak_tflops < 0.0f) {
            fprintf(stderr, "hp: %s must be a finite number >= 0 (0 = measure), got '%s'\n", flag, v);
            return HP_EXIT_CONFIG;
        }
        return 0;
    case F_VAL_ENABLE:   return parse_bool(flag, v, &job->val_enable);
    case F_VAL_PATH:     job->val_path = or_null(v); return 0;
    case F_DATASET:      job->dataset = or_null(v); return 0;
    case F_VAL_DATASET:  job->val_dataset = or_null(v); return 0;
    case F_VAL_FREQ:     return parse_int_in(flag, v, 1, HP_JOB_MAX_STEPS, &job->val_freq);
    case F_VAL_STEPS:
        if ((e = parse_int_in(flag, v, -1, HP_JOB_MAX_STEPS, &job->val_steps))) return e;
        if (job->val_steps == 0) {
            fprintf(stderr, "hp: %s must be -1 (every full batch once) or >= 1, got 0\n", flag);
            return HP_EXIT_CONFIG;
        }
        return 0;
    case F_CONFIG:       job->config_file = v; return 0;
    case F_DUMP_FOLDER:  job->dump_folder = or_null(v); return 0;
    case F_DESCRIPTION:  job->description = v; return 0;
    case F_PRINT_CONFIG: return parse_bool(flag, v, &job->print_config);
    case F_DETERMINISTIC: { int b; return parse_bool(flag, v, &b); }   // hp is always bitwise repeatable
    case F_HELP: case F_HELP_CONFIG: case F_TT_ONLY: case F_IGNORED: case F_COUNT_: return 0;
    case F_FLOAT8: {
        hp_float8_recipe r;
        if (hp_float8_recipe_parse(v, &r) == 0) { job->run.float8 = (int)r; return 0; }
        fprintf(stderr, "hp: %s takes tensorwise, rowwise, rowwise-gw-hp or off (torchao's recipe "
                "names): '%s'\n", flag, v);
        return HP_EXIT_CONFIG;
    }
    case F_FLOAT8_FILTER:
        if (strlen(v) < sizeof job->run.float8_filter) {
            snprintf(job->run.float8_filter, sizeof job->run.float8_filter, "%s", v);
            return 0;
        }
        fprintf(stderr, "hp: %s: the list is %zu characters, at most %zu\n", flag, strlen(v),
                sizeof job->run.float8_filter - 1);
        return HP_EXIT_CONFIG;
    case F_FLOAT8_FSDP_AG: return parse_bool(flag, v, &job->run.float8_fsdp_all_gather);
    case F_RANKS_PER_NODE: return parse_int_in(flag, v, 1, HP_JOB_MAX_SIZE, &job->ranks_per_node);
    // the tokenizer, generation and sampling during training (docs/model_io.md)
    case F_TOKENIZER:    job->tokenizer_path = or_null(v); return 0;
    case F_SAMPLE_EVERY: return parse_int_in(flag, v, 0, HP_JOB_MAX_STEPS, &job->sample_every);
    case F_SAMPLE_PROMPT: job->sample_prompt = or_null(v); return 0;
    case F_PROMPT_IDS:   job->prompt_ids = or_null(v); return 0;
    case F_SAMPLE_MAX_NEW: return parse_int_in(flag, v, 1, 1 << 20, &job->sample_max_new);
    case F_SAMPLE_TOP_K: return parse_int_in(flag, v, 0, 1 << 30, &job->sample_top_k);
    case F_SAMPLE_TEMPERATURE:
        if ((e = parse_float(flag, v, &job->sample_temperature))) return e;
        if (!isfinite(job->sample_temperature) || job->sample_temperature < 0.0f) {
            fprintf(stderr, "hp: %s must be a finite number >= 0 (0 = greedy), got '%s'\n", flag, v);
            return HP_EXIT_CONFIG;
        }
        return 0;
    case F_SAMPLE_TOP_P:
        if ((e = parse_float(flag, v, &job->sample_top_p))) return e;
        if (!(job->sample_top_p > 0.0f && job->sample_top_p <= 1.0f)) {
            fprintf(stderr, "hp: %s must be in (0, 1] (1 = off), got '%s'\n", flag, v);
            return HP_EXIT_CONFIG;
        }
        return 0;
    }
    return 0;
}

// Strings made while parsing ("--flag=value" for rest[], a job file's values and labels).
// hp_job has no free function, so they are kept on a process-wide list: they live as long as
// the process (or until hp_job_release) and are never reported as leaks.
static char **kept = NULL;
static int n_kept = 0, cap_kept = 0;

void hp_job_release(void) {
    for (int i = 0; i < n_kept; i++) free(kept[i]);
    free(kept);
    kept = NULL;
    n_kept = cap_kept = 0;
}

char *hp_job_keep_owned(char *s) {
    if (!s) { fprintf(stderr, "hp: out of memory\n"); exit(HP_EXIT_FAIL); }
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

char *hp_job_keep(const char *s) {
    const size_t n = strlen(s);
    char *d = malloc(n + 1);
    if (d) memcpy(d, s, n + 1);
    return hp_job_keep_owned(d);
}

void hp_job_note(char *list, size_t cap, const char *name) {
    const size_t n = strlen(list);
    if (strstr(list, name)) return;
    if (n + strlen(name) + 8 >= cap) {
        if (n + 4 < cap && !strstr(list, "...")) strcat(list, ", ...");
        return;
    }
    snprintf(list + n, cap - n, "%s%s", n ? ", " : "", name);
}

// '-' and '_' alike (training.seq-len = training.seq_len); the table's "x.*" rows match x.anything.
static int name_match(const char *row, const char *name) {
    for (; *row && *name; row++, name++) {
        if (*row == '*' && row[1] == '\0') return row[-1] == '.';
        const char a = *row == '-' ? '_' : *row, b = *name == '-' ? '_' : *name;
        if (a != b) return 0;
    }
    return *row == *name;
}

static int find_row(const char *name) {
    for (int k = 0; k < hp_job_n_flags; k++)   // exact rows first, then the sections' "x.*"
        if (!strchr(hp_job_flags[k].name, '*') && name_match(hp_job_flags[k].name, name)) return k;
    for (int k = 0; k < hp_job_n_flags; k++)
        if (strchr(hp_job_flags[k].name, '*') && name_match(hp_job_flags[k].name, name)) return k;
    return -1;
}

int hp_job_flag_find(const char *name, int *negated) {
    *negated = 0;
    int k = find_row(name);
    if (k >= 0) return k;
    // --s.no_key / --s.no-key: a boolean key turned off
    const char *dot = strrchr(name, '.');
    if (!dot || !(dot[1] == 'n' && dot[2] == 'o' && (dot[3] == '_' || dot[3] == '-'))) return -1;
    char plain[256];
    const size_t head = (size_t)(dot + 1 - name);
    if (snprintf(plain, sizeof plain, "%.*s%s", (int)head, name, dot + 4) >= (int)sizeof plain) return -1;
    k = find_row(plain);
    if (k < 0 || hp_job_flags[k].takes_value || !hp_job_flag_is_key(&hp_job_flags[k])) return -1;
    *negated = 1;
    return k;
}

int hp_job_flag_key_row(int id) {
    if (id == F_TT_ONLY || id == F_IGNORED) return -1;
    for (int k = 0; k < hp_job_n_flags; k++)
        if (hp_job_flags[k].id == id && hp_job_flag_is_key(&hp_job_flags[k])) return k;
    return -1;
}

int hp_job_flag_canonical(int row) {
    const hp_job_flag_def *f = &hp_job_flags[row];
    if (!hp_job_flag_is_key(f) || f->id == F_TT_ONLY || f->id == F_IGNORED) return row;
    const int k = hp_job_flag_key_row(f->id);
    return k >= 0 ? k : row;
}

// A TorchTitan key hp does not implement, at TT's default: "false", 0, "" or [] for a section's
// "x.*" keys; for a float the same number.
static int at_tt_default(const hp_job_flag_def *f, const char *v) {
    if (!f->tt_def) return !strcmp(v, "false") || !strcmp(v, "0") || !*v;
    if (f->type == V_FLOAT) {
        char *e1, *e2;
        const double a = strtod(v, &e1), b = strtod(f->tt_def, &e2);
        return *v && !*e1 && a == b;
    }
    return !strcmp(v, f->tt_def);
}

// A value of a TorchTitan-only or ignored key: of its type (the other keys' hp_job_apply_value checks).
static int check_type(const hp_job_flag_def *f, const char *label, const char *v) {
    char *end;
    int ok = 1;
    if (f->type == V_INT) { errno = 0; (void)strtoll(v, &end, 10); ok = *v && !*end && errno != ERANGE; }
    else if (f->type == V_FLOAT) { errno = 0; (void)strtod(v, &end); ok = *v && !*end && errno != ERANGE; }
    else if (f->type == V_BOOL) ok = !strcmp(v, "true") || !strcmp(v, "false");
    if (ok) return 0;
    fprintf(stderr, "hp: %s expects %s, got '%s'\n", label,
            f->type == V_INT ? "an integer" : f->type == V_FLOAT ? "a number" : "true or false", v);
    return HP_EXIT_CONFIG;
}

int hp_job_apply_key(hp_job *job, int row, const char *label, const char *value, int from_file) {
    row = hp_job_flag_canonical(row);   // an older name's value is the key's
    const hp_job_flag_def *f = &hp_job_flags[row];
    const char *key = f->name + 2;
    const char *name = from_file ? strrchr(label, ' ') + 1 : label + 2;   // "job.toml:3: x.y", "--x.y"
    int e = (f->id == F_TT_ONLY || f->id == F_IGNORED) ? check_type(f, label, value) : 0;
    if (e) return e;
    if (f->id == F_TT_ONLY) {
        if (!at_tt_default(f, value)) {
            char off[300];
            if (f->type == V_BOOL) snprintf(off, sizeof off, "false (--%.*sno_%s)", (int)(strrchr(key, '.') + 1 - key), key,
                                            strrchr(key, '.') + 1);
            else if (f->tt_def) snprintf(off, sizeof off, "%s%s%s", f->type == V_LIST ? "[" : "'", f->tt_def,
                                         f->type == V_LIST ? "]" : "'");
            else snprintf(off, sizeof off, "false, 0 or empty");
            fprintf(stderr, "hp: %s = %s: a TorchTitan feature hp does not implement; leave it at %s\n", label,
                    value, off);
            return HP_EXIT_CONFIG;
        }
        hp_job_note(job->note_tt, sizeof job->note_tt, name);
        return 0;
    }
    if (f->id == F_IGNORED) {
        hp_job_note(job->note_ignored, sizeof job->note_ignored, name);
        return 0;
    }
    if ((e = hp_job_apply_value(job, f->id, label, value))) return e;
    if (f->id == F_BATCH && !strcmp(value, "-1")) return 0;   // unset: as if not given
    job->key_text[row] = value;
    job->key_label[row] = label;
    return 0;
}

// The model of model.name, model.flavor, model.hf_config and model.n_layers.
static int resolve_model(hp_job *job) {
    const int fr = hp_job_flag_key_row(F_MODEL), hr = hp_job_flag_key_row(F_MODEL_CONFIG);
    if (job->hf_config) {
        if (job->key_text[fr] && *job->flavor) {
            fprintf(stderr, "hp: %s and %s: give one (a named model, or a Hugging Face config.json)\n",
                    job->key_label[fr], job->key_label[hr]);
            return HP_EXIT_CONFIG;
        }
        char err[512];
        if (hp_model_config_from_hf_file(job->hf_config, &job->model, err, sizeof err) != 0) {
            fprintf(stderr, "hp: %s %s\n", job->key_label[hr], err);
            return HP_EXIT_CONFIG;
        }
    } else {
        const char *label = job->key_text[fr] ? job->key_label[fr] : "model.flavor";
        const int l3 = llama3_flavor(job->flavor);
        if (!strcmp(job->model_name, "llama3")) {
            if (l3 < 0) {
                fprintf(stderr, "hp: %s '%s' is not a llama3 flavor (debugmodel, 8B, 70B, 405B; or model.name "
                        "\"hp\")\n", label, job->flavor);
                return HP_EXIT_CONFIG;
            }
            if (l3 == 0) llama3_debugmodel(&job->model);
            else hp_model_config_by_name(llama3_flavors[l3][1], &job->model);
        } else if (hp_model_config_by_name(job->flavor, &job->model) != 0) {
            fprintf(stderr, "hp: %s '%s' is a llama3 flavor: set model.name = \"llama3\"\n", label, job->flavor);
            return HP_EXIT_CONFIG;
        }
    }
    if (job->layers > 0) job->model.n_layers = job->layers;   // --layers deepens any model
    return 0;
}

// activation_checkpoint.mode and selective_ac_option -> run.ac_every.
static int resolve_ac(hp_job *job) {
    if (!strcmp(job->ac_mode, "none")) job->run.ac_every = 0;
    else if (!strcmp(job->ac_mode, "full")) job->run.ac_every = 1;
    else {
        char *end;
        const long n = strtol(job->ac_option, &end, 10);
        const int r = hp_job_flag_key_row(F_AC_OPTION);
        const char *label = job->key_text[r] ? job->key_label[r] : "activation_checkpoint.selective_ac_option";
        if (!strcmp(job->ac_option, "op")) {
            fprintf(stderr, "hp: %s 'op' (per-op selective AC) is not implemented; give a block interval N\n", label);
            return HP_EXIT_CONFIG;
        }
        if (!*job->ac_option || *end || n < 1 || n > 1000000) {
            fprintf(stderr, "hp: %s expects a block interval N in [1, 1000000] (every N-th block), got '%s'\n",
                    label, job->ac_option);
            return HP_EXIT_CONFIG;
        }
        job->run.ac_every = (int)n;
    }
    return 0;
}

// checkpoint.* -> the save folder, --load's model file or --resume's checkpoint.
static void resolve_checkpoint(hp_job *job) {
    job->ckpt_dir = NULL;
    if (job->ckpt_enable) {
        const char *f = job->ckpt_folder;
        if (job->dump_folder && f[0] != '/') {
            char *joined = malloc(strlen(job->dump_folder) + strlen(f) + 2);
            if (joined) sprintf(joined, "%s/%s", job->dump_folder, f);
            job->ckpt_dir = hp_job_keep_owned(joined);
        } else {
            job->ckpt_dir = f;
        }
    }
    job->load_file = job->resume = NULL;
    // TorchTitan's rule: a checkpoint folder that already holds checkpoints is resumed from
    // (load_step, else its latest) instead of initial_load_path. Only when checkpoint.enable is
    // a job key's: --checkpoint-dir D keeps hp's meaning (save into D, resume only by --resume).
    char latest[4200];
    if (job->ckpt_dir && job->key_label[hp_job_flag_key_row(F_CKPT_ENABLE)] &&
        snprintf(latest, sizeof latest, "%s/latest", job->ckpt_dir) < (int)sizeof latest && access(latest, F_OK) == 0) {
        char *at = malloc(strlen(job->ckpt_dir) + 32);
        if (at && job->load_step >= 0) sprintf(at, "%s/step-%d", job->ckpt_dir, job->load_step);
        else if (at) sprintf(at, "%s", job->ckpt_dir);
        job->resume = hp_job_keep_owned(at);
        snprintf(job->note_resume, sizeof job->note_resume, "checkpoint.folder %s holds checkpoints: resuming "
                 "from %s%s (TorchTitan's rule)", job->ckpt_dir, job->resume,
                 job->init_load ? ", not checkpoint.initial_load_path" : "");
        return;
    }
    if (!job->init_load) return;
    if (job->init_model_only) { job->load_file = job->init_load; return; }
    if (job->load_step < 0) { job->resume = job->init_load; return; }
    char *at = malloc(strlen(job->init_load) + 32);
    if (at) sprintf(at, "%s/step-%d", job->init_load, job->load_step);
    job->resume = hp_job_keep_owned(at);
}

// training.local_batch_size and pipeline_parallel_microbatch_size (TorchTitan's way of giving the
// batch and the pipeline's microbatches) against global_batch_size and the microbatch counts.
static int resolve_batch(hp_job *job) {
    const hp_dims *d = &job->dims;
    const int others = d->dp_replicate * d->ulysses * d->cp * d->tp * d->pp;
    const int shard = d->dp_shard > 0 ? d->dp_shard : (job->nproc > 0 && others > 0 && job->nproc % others == 0)
                                                         ? job->nproc / others : 1;
    const long dp = (long)d->dp_replicate * shard;
    const int gr = hp_job_flag_key_row(F_BATCH), lr = hp_job_flag_key_row(F_LOCAL_BATCH);
    if (job->local_batch > 0) {
        const long M = d->pp > 1 ? 1 : (job->microbatches ? job->microbatches : 1);
        const long want = (long)job->local_batch * dp * M;
        if (!job->key_text[gr] && want <= HP_JOB_MAX_SIZE) {
            job->run.batch = (int)want;
        } else if (job->key_text[gr] && d->pp == 1 && !job->microbatches && dp > 0 &&
                   job->run.batch % (job->local_batch * dp) == 0) {
            job->microbatches = (int)(job->run.batch / (job->local_batch * dp));   // TT's accumulation
        } else if (want != job->run.batch) {
            fprintf(stderr, "hp: %s (%d) must be %s (%d) x dp (%ld) x microbatches (%ld) = %ld\n",
                    job->key_text[gr] ? job->key_label[gr] : "training.global_batch_size", job->run.batch,
                    job->key_label[lr], job->local_batch, dp, M, want);
            return HP_EXIT_CONFIG;
        }
    }
    if (job->pp_mb_size > 0 && d->pp > 1) {
        const int mr = hp_job_flag_key_row(F_PP_MB_SIZE);
        const long local = dp > 0 ? job->run.batch / dp : 0;
        if (job->pp_microbatches) {
            fprintf(stderr, "hp: %s and parallelism.pipeline_parallel_microbatches: give one\n", job->key_label[mr]);
            return HP_EXIT_CONFIG;
        }
        if (local < 1 || local % job->pp_mb_size) {
            fprintf(stderr, "hp: %s (%d) must divide the local batch global_batch_size/dp = %d/%ld = %ld\n",
                    job->key_label[mr], job->pp_mb_size, job->run.batch, dp, local);
            return HP_EXIT_CONFIG;
        }
        job->pp_microbatches = (int)(local / job->pp_mb_size);
    }
    return 0;
}

// TorchTitan's named datasets (training.dataset = "c4_test"): TorchTitan downloads and tokenizes
// them; hp reads token files only, so a name without a dataset_path is an error, never
// synthetic data in silence. With a path the name is noted and the path read.
static int resolve_datasets(hp_job *job) {
    const int tr = hp_job_flag_key_row(F_DATASET), vr = hp_job_flag_key_row(F_VAL_DATASET);
    if (job->dataset && !job->run.data_path) {
        fprintf(stderr, "hp: %s = \"%s\": hp reads token files, not TorchTitan's named datasets: give "
                "training.dataset_path (docs/data.md)\n", job->key_label[tr] ? job->key_label[tr] : "training.dataset",
                job->dataset);
        return HP_EXIT_CONFIG;
    }
    if (job->val_enable && job->val_dataset && !job->val_path) {
        fprintf(stderr, "hp: %s = \"%s\": hp reads token files, not TorchTitan's named datasets: give "
                "validation.dataset_path (docs/data.md)\n", job->key_label[vr] ? job->key_label[vr] : "validation.dataset",
                job->val_dataset);
        return HP_EXIT_CONFIG;
    }
    if (job->dataset) hp_job_note(job->note_ignored, sizeof job->note_ignored, "training.dataset");
    if (job->val_dataset) hp_job_note(job->note_ignored, sizeof job->note_ignored, "validation.dataset");
    return 0;
}

// Two defaults alike: the same word (any case) or the same number (0 and 0.0).
static int same_value(const char *a, const char *b) {
    char *ea, *eb;
    const double x = strtod(a, &ea), y = strtod(b, &eb);
    if (*a && *b && !*ea && !*eb) return x == y;
    return same_ci(a, b);
}

// Flags that only mean something together, applied once all are read (any order).
int hp_job_resolve(hp_job *job) {
    int e;
    if ((e = resolve_model(job)) || (e = resolve_ac(job)) || (e = resolve_batch(job)) || (e = resolve_datasets(job)))
        return e;
    resolve_checkpoint(job);
    const int pp = job->dims.pp;
    if (job->pp_microbatches > 1 && pp <= 1) {   // 1 is every job file's default: harmless
        fprintf(stderr, "hp: --pp-microbatches needs --pp > 1 (pp = %d); use --microbatches for "
                "gradient accumulation\n", pp);
        return HP_EXIT_CONFIG;
    }
    if (job->microbatches > 1 && pp > 1) {
        fprintf(stderr, "hp: --microbatches is gradient accumulation at pp 1; with --pp %d use "
                "--pp-microbatches\n", pp);
        return HP_EXIT_CONFIG;
    }
    const int T = job->run.total_steps;
    if (T != -1 && T < job->run.steps) {
        fprintf(stderr, "hp: --lr_scheduler.total_steps (%d) must be -1 (= steps) or >= --steps (%d)\n", T,
                job->run.steps);
        return HP_EXIT_CONFIG;
    }
    job->run.microbatches = pp > 1 ? (job->pp_microbatches ? job->pp_microbatches : 1)
                                   : (job->microbatches ? job->microbatches : 1);
    if (job->config_file)   // the file's keys left at hp defaults that differ from TorchTitan's
        for (int k = 0; k < hp_job_n_flags; k++) {
            const hp_job_flag_def *f = &hp_job_flags[k];
            if (hp_job_flag_is_key(f) && f->hp_def && f->tt_def && !job->key_text[k] && f->id != F_CONFIG &&
                !(f->id == F_BATCH && job->local_batch > 0) &&   // derived from the local batch
                !same_value(f->hp_def, f->tt_def))
                hp_job_note(job->note_defaults, sizeof job->note_defaults, f->name + 2);
        }
    return 0;
}

void hp_job_defaults(hp_job *job) {
    memset(job, 0, sizeof *job);
    job->dims = hp_dims_default();
    hp_model_config_by_name("tiny", &job->model);
    hp_run_config_default(&job->run);
    job->verify_steps = 5;
    job->model_name = "hp";
    job->flavor = "tiny";
    job->local_batch = -1;
    job->pp_mb_size = -1;
    job->layers = -1;
    job->ckpt_folder = "checkpoint";
    job->ckpt_every = 500;
    job->ckpt_keep = 10;
    job->load_step = -1;
    job->init_model_only = 1;
    job->ac_mode = "none";
    job->ac_option = "2";
    job->log_freq = 1;        // metrics + validation: TorchTitan's defaults (docs/job_file.md)
    job->val_freq = 10;
    job->val_steps = -1;
    job->sample_max_new = 32;
    job->sample_top_p = 1.0f;
    job->val_format = HP_JOB_VAL_FORMAT_UNSET;
}
