// hf_weights.c - the Hugging Face Llama layout both ways (hyperpar/hf.h): names, the q/k
// permutation between hp's interleaved RoPE pairs and HF's halves, dtypes, shards and their
// index, config.json and generation_config.json.
// defines: hp_hf_name, hp_hf_export, hp_hf_import
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <cjson/cJSON.h>
#include "hyperpar/bf16.h"
#include "hyperpar/dims.h"
#include "hyperpar/hf.h"
#include "hyperpar/safetensors.h"
#include "model_io/model_tensors.h"
#include "util/file_io.h"

int hp_hf_name(const char *name, char *out, size_t n) { return hp_tensor_name_map(name, 1, out, n); }

// Rows of a (heads * hd, cols) weight of es-byte elements, from hp's order to HF's (to_hf) or
// back: hp row h*hd + 2i + s is HF row h*hd + s*hd/2 + i.
static void permute_rows(unsigned char *dst, const unsigned char *src, int heads, int64_t rows,
                         int64_t cols, size_t es, int to_hf) {
    const int64_t hd = rows / heads, half = hd / 2;
    const size_t row_bytes = (size_t)cols * es;
    for (int h = 0; h < heads; h++)
        for (int64_t i = 0; i < half; i++)
            for (int s = 0; s < 2; s++) {
                const int64_t hp_row = h * hd + 2 * i + s, hf_row = h * hd + s * half + i;
                const int64_t from = to_hf ? hp_row : hf_row, to = to_hf ? hf_row : hp_row;
                memcpy(dst + (size_t)to * row_bytes, src + (size_t)from * row_bytes, row_bytes);
            }
}

static size_t dtype_bytes(hp_dtype d) { return d == HP_DT_BF16 ? 2 : 4; }

static cJSON *config_json(const hp_model_config *m, hp_mp_dtype dtype, int bos, int eos) {
    cJSON *c = cJSON_CreateObject();
    cJSON *arch = cJSON_AddArrayToObject(c, "architectures");
    cJSON_AddItemToArray(arch, cJSON_CreateString("LlamaForCausalLM"));
    cJSON_AddStringToObject(c, "model_type", "llama");
    cJSON_AddNumberToObject(c, "hidden_size", m->dim);
    cJSON_AddNumberToObject(c, "intermediate_size", m->ffn_hidden);
    cJSON_AddNumberToObject(c, "num_hidden_layers", m->n_layers);
    cJSON_AddNumberToObject(c, "num_attention_heads", m->n_heads);
    cJSON_AddNumberToObject(c, "num_key_value_heads", m->n_kv_heads);
    cJSON_AddNumberToObject(c, "head_dim", m->dim / m->n_heads);
    cJSON_AddNumberToObject(c, "rms_norm_eps", m->norm_eps);
    cJSON_AddNumberToObject(c, "rope_theta", m->rope_theta);
    cJSON_AddNumberToObject(c, "vocab_size", m->vocab_size);
    cJSON_AddNumberToObject(c, "max_position_embeddings",
                            m->rope_original_max_positions > 0 && m->rope_factor > 0.0f
                                ? (double)m->rope_original_max_positions * m->rope_factor : 2048.0);
    cJSON_AddStringToObject(c, "hidden_act", "silu");
    cJSON_AddBoolToObject(c, "tie_word_embeddings", 0);
    cJSON_AddBoolToObject(c, "attention_bias", 0);
    cJSON_AddBoolToObject(c, "mlp_bias", 0);
    cJSON_AddStringToObject(c, "torch_dtype", dtype == HP_DTYPE_BFLOAT16 ? "bfloat16" : "float32");
    if (bos >= 0) cJSON_AddNumberToObject(c, "bos_token_id", bos);
    if (eos >= 0) cJSON_AddNumberToObject(c, "eos_token_id", eos);
    if (m->rope_factor > 0.0f) {
        cJSON *r = cJSON_AddObjectToObject(c, "rope_scaling");
        cJSON_AddStringToObject(r, "rope_type", "llama3");
        cJSON_AddNumberToObject(r, "factor", m->rope_factor);
        cJSON_AddNumberToObject(r, "low_freq_factor", m->rope_low_freq_factor);
        cJSON_AddNumberToObject(r, "high_freq_factor", m->rope_high_freq_factor);
        cJSON_AddNumberToObject(r, "original_max_position_embeddings", m->rope_original_max_positions);
    }
    return c;
}

static int save_json(cJSON *j, const char *dir, const char *name, char *err, size_t errlen) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    const int rc = hp_json_save(j, path);
    cJSON_Delete(j);
    if (rc != 0) snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
    return rc;
}

// One HF tensor in dtype: the hp tensor t widened to floats, permuted, then cast (RNE) or kept.
static void *to_hf(const hp_st_tensor *t, const hp_tensor_spec *s, hp_mp_dtype dtype) {
    const int64_t n = hp_tensor_spec_numel(s);
    float *f = malloc((size_t)n * sizeof(float) + 1), *p = malloc((size_t)n * sizeof(float) + 1);
    if (!f || !p) { free(f); free(p); return NULL; }
    if (t->dtype == HP_DT_BF16) {
        for (int64_t i = 0; i < n; i++) {
            hp_bf16 b;
            memcpy(&b, (const unsigned char *)t->data + 2 * i, sizeof b);
            f[i] = hp_bf16_to_float(b);
        }
    } else {
        memcpy(f, t->data, (size_t)n * sizeof(float));
    }
    if (s->perm_heads) permute_rows((unsigned char *)p, (const unsigned char *)f, s->perm_heads, s->shape[0], s->shape[1], sizeof(float), 1);
    else memcpy(p, f, (size_t)n * sizeof(float));
    free(f);
    if (dtype != HP_DTYPE_BFLOAT16) return p;
    hp_bf16 *b = malloc((size_t)n * sizeof(hp_bf16) + 1);
    if (b) for (int64_t i = 0; i < n; i++) b[i] = hp_bf16_from_float(p[i]);
    free(p);
    return b;
}

int hp_hf_export(const char *hp_file, const hp_model_config *m, const char *out_dir,
                 hp_mp_dtype dtype, size_t shard_bytes, int bos, int eos, char *err, size_t errlen) {
    if (m->num_experts > 0) {
        snprintf(err, errlen, "hp export --format hf: %s is a MoE model; no Hugging Face class computes "
                 "hp's router, so only dense models are exported", m->name);
        return HP_EXIT_CONFIG;
    }
    hp_tensor_spec *specs = NULL;
    int n = 0;
    hp_st *f = NULL;
    int rc = hp_model_file_open(hp_file, m, &f, &specs, &n, err, errlen);
    if (rc != 0) return rc;
    if (rc == 0 && hp_make_dir(out_dir, err, errlen) != 0) rc = HP_EXIT_FAIL;
    // shards: tensors in order, a new shard when the next would pass the size (never empty)
    const size_t es = dtype == HP_DTYPE_BFLOAT16 ? 2 : 4, limit = shard_bytes ? shard_bytes : HP_HF_SHARD_BYTES;
    int *shard = rc == 0 ? calloc((size_t)n, sizeof *shard) : NULL;
    int n_shards = 1;
    size_t in_shard = 0, total = 0;
    for (int i = 0; shard && i < n; i++) {
        const size_t b = (size_t)hp_tensor_spec_numel(&specs[i]) * es;
        if (in_shard > 0 && in_shard + b > limit) { n_shards++; in_shard = 0; }
        shard[i] = n_shards - 1;
        in_shard += b;
        total += b;
    }
    if (rc == 0 && !shard) rc = HP_EXIT_FAIL;
    cJSON *map = cJSON_CreateObject();
    for (int s = 0; rc == 0 && s < n_shards; s++) {
        char name[64], path[4096];
        if (n_shards == 1) snprintf(name, sizeof name, "model.safetensors");
        else snprintf(name, sizeof name, "model-%05d-of-%05d.safetensors", s + 1, n_shards);
        snprintf(path, sizeof path, "%s/%s", out_dir, name);
        hp_st_writer *w = hp_st_writer_init();
        hp_st_writer_metadata(w, "format", "pt");
        for (int i = 0; rc == 0 && i < n; i++) {
            if (shard[i] != s) continue;
            void *data = to_hf(hp_st_get(f, specs[i].hp), &specs[i], dtype);
            if (!data) { snprintf(err, errlen, "out of memory (hf export)"); rc = HP_EXIT_FAIL; break; }
            hp_st_writer_add(w, specs[i].hf, dtype == HP_DTYPE_BFLOAT16 ? HP_DT_BF16 : HP_DT_F32, specs[i].ndim,
                             specs[i].shape, data);
            free(data);
            cJSON_AddStringToObject(map, specs[i].hf, name);
        }
        if (rc == 0 && hp_st_writer_save(w, path, err, errlen) != 0) rc = HP_EXIT_FAIL;
        hp_st_writer_free(w);
    }
    if (rc == 0 && n_shards > 1) {
        cJSON *ix = cJSON_CreateObject(), *meta = cJSON_AddObjectToObject(ix, "metadata");
        cJSON_AddNumberToObject(meta, "total_size", (double)total);
        cJSON_AddItemToObject(ix, "weight_map", map);
        map = NULL;
        if (save_json(ix, out_dir, "model.safetensors.index.json", err, errlen) != 0) rc = HP_EXIT_FAIL;
    }
    cJSON_Delete(map);
    if (rc == 0 && save_json(config_json(m, dtype, bos, eos), out_dir, "config.json", err, errlen) != 0) rc = HP_EXIT_FAIL;
    if (rc == 0) {
        cJSON *g = cJSON_CreateObject();
        if (bos >= 0) cJSON_AddNumberToObject(g, "bos_token_id", bos);
        if (eos >= 0) cJSON_AddNumberToObject(g, "eos_token_id", eos);
        if (save_json(g, out_dir, "generation_config.json", err, errlen) != 0) rc = HP_EXIT_FAIL;
    }
    free(shard);
    free(specs);
    hp_st_close(f);
    return rc;
}

// ---------------------------------------------------------------------------------------
// import

// Field by field: the HF config against the model hp will train. 0, or one line in err.
static int same_model(const hp_model_config *hf, const hp_model_config *m, const char *dir, char *err, size_t errlen) {
    struct { const char *hf_key, *hp_key; double a, b; } f[] = {
        { "hidden_size", "dim", hf->dim, m->dim },
        { "num_hidden_layers", "n_layers", hf->n_layers, m->n_layers },
        { "num_attention_heads", "n_heads", hf->n_heads, m->n_heads },
        { "num_key_value_heads", "n_kv_heads", hf->n_kv_heads, m->n_kv_heads },
        { "intermediate_size", "ffn_hidden", hf->ffn_hidden, m->ffn_hidden },
        { "vocab_size", "vocab_size", hf->vocab_size, m->vocab_size },
        { "rms_norm_eps", "norm_eps", hf->norm_eps, m->norm_eps },
        { "rope_theta", "rope_theta", hf->rope_theta, m->rope_theta },
        { "rope_scaling.factor", "rope_factor", hf->rope_factor, m->rope_factor },
        { "num_local_experts", "num_experts", hf->num_experts, m->num_experts },
    };
    for (size_t i = 0; i < sizeof f / sizeof *f; i++)
        if (f[i].a != f[i].b) {
            snprintf(err, errlen, "%s/config.json: %s is %.9g, the model's %s is %.9g", dir, f[i].hf_key,
                     f[i].a, f[i].hp_key, f[i].b);
            return -1;
        }
    return 0;
}

// The safetensors files of an HF folder: the index's shards, or model.safetensors.
enum { MAX_SHARDS = 256 };
static int open_weights(const char *dir, hp_st **files, char (*names)[HP_HF_SHARD_NAME], int *n, char *err,
                        size_t errlen) {
    char path[4096];
    snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
    unsigned char *text = NULL;
    size_t len = 0;
    const char *why = NULL;
    struct stat sb;
    *n = 0;
    if (stat(path, &sb) != 0) {
        snprintf(names[0], HP_HF_SHARD_NAME, "model.safetensors");
        *n = 1;
    } else if (hp_file_read(path, &text, &len, &why) != 0) {
        snprintf(err, errlen, "cannot read %s: %s", path, why);
        return -1;
    } else {
        const int rc = hp_hf_index_shards((const char *)text, len, path, names, MAX_SHARDS, n, err, errlen);
        free(text);
        if (rc) return -1;
    }
    for (int i = 0; i < *n; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        if (!(files[i] = hp_st_open(path, err, errlen))) return -1;
    }
    return 0;
}

int hp_hf_import(const char *hf_dir, const hp_model_config *m, const char *out_file, char *err, size_t errlen) {
    char path[4096];
    snprintf(path, sizeof path, "%s/config.json", hf_dir);
    hp_model_config hf;
    char why[256];
    if (hp_model_config_from_hf_file(path, &hf, why, sizeof why) != 0) {
        snprintf(err, errlen, "%s", why);
        return HP_EXIT_CONFIG;
    }
    if (same_model(&hf, m, hf_dir, err, errlen) != 0) return HP_EXIT_CONFIG;
    if (m->num_experts > 0) {
        snprintf(err, errlen, "%s: a MoE model; hp imports dense Llama folders only", hf_dir);
        return HP_EXIT_CONFIG;
    }
    hp_st **files = calloc(MAX_SHARDS, sizeof *files);
    char (*names)[HP_HF_SHARD_NAME] = calloc(MAX_SHARDS, sizeof *names);
    int n_files = 0;
    int rc = files && names ? 0 : HP_EXIT_FAIL;
    if (rc == 0 && open_weights(hf_dir, files, names, &n_files, err, errlen) != 0) rc = HP_EXIT_CONFIG;
    hp_tensor_spec *specs = NULL;
    const int n = rc == 0 ? hp_model_tensor_specs(m, &specs) : 0;
    if (n < 0) rc = HP_EXIT_FAIL;
    hp_st_writer *w = hp_st_writer_init();
    for (int i = 0; rc == 0 && i < n; i++) {
        const hp_st_tensor *t = NULL;
        int in = -1;
        for (int k = 0; k < n_files && !t; k++)
            if (hp_st_get(files[k], specs[i].hf)) { t = hp_st_get(files[k], specs[i].hf); in = k; }
        snprintf(path, sizeof path, "%s/%s", hf_dir, in >= 0 ? names[in] : names[0]);
        if (!hp_tensor_checked(in >= 0 ? files[in] : files[0], path, specs[i].hf, &specs[i], err, errlen)) { rc = HP_EXIT_CONFIG; break; }
        const size_t es = dtype_bytes(t->dtype), bytes = (size_t)hp_tensor_spec_numel(&specs[i]) * es;
        unsigned char *data = malloc(bytes + 1);
        if (!data) { snprintf(err, errlen, "out of memory (hf import)"); rc = HP_EXIT_FAIL; break; }
        if (specs[i].perm_heads) permute_rows(data, t->data, specs[i].perm_heads, specs[i].shape[0], specs[i].shape[1], es, 0);
        else memcpy(data, t->data, bytes);
        hp_st_writer_add(w, specs[i].hp, t->dtype, specs[i].ndim, specs[i].shape, data);
        free(data);
    }
    // a tensor the model has no place for (biases, another architecture's) is refused by name
    for (int k = 0; rc == 0 && k < n_files; k++)
        for (int j = 0; j < hp_st_count(files[k]) && rc == 0; j++) {
            const char *name = hp_st_at(files[k], j)->name;
            int known = strstr(name, "rotary_emb.inv_freq") != NULL;   // (a buffer older exports saved)
            for (int i = 0; i < n && !known; i++) known = !strcmp(name, specs[i].hf);
            if (!known) {
                snprintf(err, errlen, "%s/%s: tensor %s is not a weight of %s (a Llama model without biases)",
                         hf_dir, names[k], name, m->name);
                rc = HP_EXIT_CONFIG;
            }
        }
    if (rc == 0) {
        hp_st_writer_metadata(w, "model", m->name);
        hp_st_writer_metadata(w, "from", "huggingface");
        if (hp_st_writer_save(w, out_file, err, errlen) != 0) rc = HP_EXIT_FAIL;
    }
    hp_st_writer_free(w);
    for (int k = 0; files && k < MAX_SHARDS; k++) if (files[k]) hp_st_close(files[k]);
    free(files); free(names); free(specs);
    return rc;
}
