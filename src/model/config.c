// config.c - the named model shapes and a run's default settings (spec: docs/model.md).
// defines: hp_model_config_names, hp_model_config_by_name, hp_run_config_default,
//          hp_run_config_parse_ac, hp_data_format_parse, hp_data_format_name
//
// "tiny" and "tiny-moe" are the test models of model.md's table, exactly; "small" is a wider
// dense model for quick experiments; "bench" and "bench-moe" are sized for throughput runs.
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "hyperpar/config.h"

const char *const hp_model_config_names[] = { "tiny", "tiny-moe", "tiny-moe-alt", "small", "bench", "bench-moe",
                                               "llama3-8b", "llama3-70b", "llama3-405b", "mixtral-8x7b", NULL };

// A dense model: every MoE field 0 (score_func/route_* keep TorchTitan's defaults).
static hp_model_config dense(const char *name, int V, int D, int L, int H, int Hkv, int F) {
    hp_model_config m;
    memset(&m, 0, sizeof m);
    snprintf(m.name, sizeof m.name, "%s", name);
    m.vocab_size = V; m.dim = D; m.n_layers = L; m.n_heads = H; m.n_kv_heads = Hkv;
    m.ffn_hidden = F;
    m.norm_eps = 1e-5f;
    m.rope_theta = 10000.0f;
    m.score_func = HP_SCORE_SOFTMAX;
    m.route_norm = 0;
    m.route_scale = 1.0f;
    return m;
}

static hp_model_config moe(hp_model_config m, int E, int K, int Fe, int n_shared) {
    m.num_experts = E; m.top_k = K; m.moe_hidden = Fe; m.n_shared_experts = n_shared;
    m.n_dense_layers = 0;
    return m;
}

int hp_model_config_by_name(const char *name, hp_model_config *out) {
    if (!name) return -1;
    //                               V    D    L  H  Hkv  F
    if (!strcmp(name, "tiny"))      { *out = dense(name, 256, 64, 2, 8, 4, 128); return 0; }
    if (!strcmp(name, "tiny-moe"))  { *out = moe(dense(name, 256, 64, 2, 8, 4, 128), 8, 2, 64, 1); return 0; }
    // the other MoE options: a dense first block, sigmoid scores renormalised and scaled,
    // no shared expert, and few experts so that efsdp*ep > E puts experts on Shard(1)
    if (!strcmp(name, "tiny-moe-alt")) {
        *out = moe(dense(name, 256, 64, 2, 8, 4, 128), 4, 2, 64, 0);
        out->n_dense_layers = 1;
        out->score_func = HP_SCORE_SIGMOID;
        out->route_norm = 1;
        out->route_scale = 2.0f;
        return 0;
    }
    if (!strcmp(name, "small"))     { *out = dense(name, 256, 128, 4, 8, 4, 256); return 0; }
    if (!strcmp(name, "bench"))     { *out = dense(name, 256, 512, 8, 8, 8, 1536); return 0; }
    if (!strcmp(name, "bench-moe")) { *out = moe(dense(name, 256, 256, 4, 8, 4, 512), 8, 2, 256, 1); return 0; }
    // Published shapes, for `hp plan` (far too big to run here: hp run's memory check refuses
    // them). Llama 3.1 (the HF config.json of meta-llama/Llama-3.1-{8B,70B,405B}); its
    // rope_scaling changes no shape and is left out. Mixtral-8x7B (mistralai/Mixtral-8x7B-v0.1):
    // softmax over 8 experts, top 2 renormalised to sum 1, no shared expert.
    //                                     V       D      L    H    Hkv  F
    if (!strcmp(name, "llama3-8b"))   { *out = dense(name, 128256, 4096,  32,  32, 8, 14336); }
    else if (!strcmp(name, "llama3-70b"))  { *out = dense(name, 128256, 8192,  80,  64, 8, 28672); }
    else if (!strcmp(name, "llama3-405b")) { *out = dense(name, 128256, 16384, 126, 128, 8, 53248); }
    else if (!strcmp(name, "mixtral-8x7b")) {
        *out = moe(dense(name, 32000, 4096, 32, 32, 8, 14336), 8, 2, 14336, 0);
        out->rope_theta = 1000000.0f;
        out->route_norm = 1;
        return 0;
    } else {
        return -1;
    }
    out->rope_theta = 500000.0f;
    return 0;
}

void hp_run_config_default(hp_run_config *rc) {
    memset(rc, 0, sizeof *rc);
    rc->seq_len = 32;
    rc->batch = 8;
    rc->seed = 1234;
    rc->steps = 1;
    rc->optimizer = HP_OPT_SGD;
    rc->lr = 1e-2f;
    rc->max_norm = 0.0f;
    rc->beta1 = 0.9f;
    rc->beta2 = 0.95f;
    rc->eps = 1e-8f;
    rc->weight_decay = 0.1f;
    rc->warmup_steps = 0;
    rc->decay_ratio = 0.0;
    rc->decay_type = HP_DECAY_LINEAR;
    rc->min_lr_factor = 0.0;
    rc->total_steps = -1;
    rc->data_path = NULL;
    rc->data_format = HP_DATA_AUTO;
    rc->cp_rotate = HP_ROTATE_ALLGATHER;
    rc->cp_load_balance = 1;
    rc->dispatcher = HP_DISPATCH_ALLTOALL;
    rc->microbatches = 1;
    rc->reshard_after_forward = HP_RESHARD_DEFAULT;
    rc->mp_param = HP_DTYPE_FLOAT32;
    rc->mp_reduce = HP_DTYPE_FLOAT32;
    rc->float8 = 0;
    rc->float8_filter[0] = '\0';
    rc->float8_fsdp_all_gather = 0;
    rc->async_tp = 0;
}

static const char *const dtype_names[] = { "float32", "bfloat16" };

const char *hp_mp_dtype_name(hp_mp_dtype dtype) {
    return (unsigned)dtype <= HP_DTYPE_BFLOAT16 ? dtype_names[dtype] : "?";
}

int hp_mp_dtype_parse(const char *flag, const char *s, hp_mp_dtype *dtype, char *err, size_t errlen) {
    for (int i = 0; i <= HP_DTYPE_BFLOAT16; i++)
        if (s && !strcmp(s, dtype_names[i])) { *dtype = (hp_mp_dtype)i; return 0; }
    snprintf(err, errlen, "%s expects float32 or bfloat16, got '%s'", flag, s ? s : "");
    return -1;
}

static const char *const data_format_names[] = { "auto", "llmc", "megatron", "uint16", "uint32", "bytes",
                                                 "auto_bytes" };

const char *hp_data_format_name(hp_data_format format) {
    return (unsigned)format <= HP_DATA_AUTO_BYTES ? data_format_names[format] : "?";
}

int hp_data_format_parse(const char *flag, const char *s, hp_data_format *format, char *err, size_t errlen) {
    for (int i = 0; i <= HP_DATA_AUTO_BYTES; i++)
        if (s && !strcmp(s, data_format_names[i])) { *format = (hp_data_format)i; return 0; }
    snprintf(err, errlen, "%s expects auto, llmc, megatron, uint16, uint32, bytes or auto_bytes, got '%s'", flag,
             s ? s : "");
    return -1;
}

static const char *const reshard_names[] = { "default", "always", "never" };

const char *hp_run_reshard_name(hp_reshard_policy policy) {
    return (unsigned)policy <= HP_RESHARD_NEVER ? reshard_names[policy] : "?";
}

int hp_run_config_parse_reshard(const char *s, hp_reshard_policy *policy, char *err, size_t errlen) {
    for (int i = 0; i <= HP_RESHARD_NEVER; i++)
        if (s && !strcmp(s, reshard_names[i])) { *policy = (hp_reshard_policy)i; return 0; }
    snprintf(err, errlen, "--reshard-after-forward expects default, always or never, got '%s'", s ? s : "");
    return -1;
}

int hp_run_config_parse_ac(const char *s, int *ac_every, char *err, size_t errlen) {
    if (s && !strcmp(s, "none")) { *ac_every = 0; return 0; }
    if (s && !strcmp(s, "full")) { *ac_every = 1; return 0; }
    if (s && !strncmp(s, "every:", 6) && s[6] >= '0' && s[6] <= '9') {
        char *end;
        errno = 0;
        const long n = strtol(s + 6, &end, 10);
        if (*end == '\0' && errno == 0) {
            if (n >= 1 && n <= 1000000) { *ac_every = (int)n; return 0; }
            snprintf(err, errlen, "--ac every:N checkpoints every N-th block and needs 1 <= N <= 1000000, "
                     "got N = %ld", n);
            return -1;
        }
    }
    snprintf(err, errlen, "--ac expects none, full or every:N (N >= 1), got '%s'", s ? s : "");
    return -1;
}
