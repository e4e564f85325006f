// dump.c - --dump and --load: full tensors in and out as safetensors (model.md Interchange).
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <cjson/cJSON.h>
#include "hyperpar/bf16.h"
#include "hyperpar/dump.h"
#include "hyperpar/safetensors.h"
#include "util/file_io.h"
#include "train/trainer_internal.h"

static int save_params(const hp_param_table *t, const float *full, const char *path,
                       char *err, size_t errlen) {
    hp_st_writer *w = hp_st_writer_init();
    for (int i = 0; i < t->n; i++) {
        const hp_param *p = &t->p[i];
        hp_st_writer_add(w, p->name, HP_DT_F32, p->ndim, p->shape, full + p->full_offset);
    }
    const int rc = hp_st_writer_save(w, path, err, errlen);
    hp_st_writer_free(w);
    return rc;
}

static int mkdir_p(const char *dir, char *err, size_t errlen) {
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", dir);
    for (char *s = buf + 1; *s; s++) {
        if (*s != '/') continue;
        *s = 0;
        if (mkdir(buf, 0755) != 0 && errno != EEXIST) break;
        *s = '/';
    }
    if (mkdir(buf, 0755) != 0 && errno != EEXIST) {
        snprintf(err, errlen, "cannot create directory '%s': %s", dir, strerror(errno));
        return -1;
    }
    return 0;
}

static cJSON *config_json(const hp_trainer *tr, double loss) {
    const hp_model_config *m = &tr->m;
    cJSON *j = cJSON_CreateObject();
    cJSON_AddNumberToObject(j, "loss", loss);
    cJSON_AddStringToObject(j, "framework", "hyperpar");
    cJSON_AddStringToObject(j, "precision", hp_mp_dtype_name(tr->rc.mp_param));
    cJSON *mj = cJSON_AddObjectToObject(j, "model");
    cJSON_AddStringToObject(mj, "name", m->name);
    cJSON_AddNumberToObject(mj, "vocab_size", m->vocab_size);
    cJSON_AddNumberToObject(mj, "dim", m->dim);
    cJSON_AddNumberToObject(mj, "n_layers", m->n_layers);
    cJSON_AddNumberToObject(mj, "n_heads", m->n_heads);
    cJSON_AddNumberToObject(mj, "n_kv_heads", m->n_kv_heads);
    cJSON_AddNumberToObject(mj, "ffn_hidden", m->ffn_hidden);
    cJSON_AddNumberToObject(mj, "norm_eps", m->norm_eps);
    cJSON_AddNumberToObject(mj, "rope_theta", m->rope_theta);
    cJSON_AddNumberToObject(mj, "num_experts", m->num_experts);
    cJSON_AddNumberToObject(mj, "top_k", m->top_k);
    cJSON_AddNumberToObject(mj, "moe_hidden", m->moe_hidden);
    cJSON_AddNumberToObject(mj, "n_shared_experts", m->n_shared_experts);
    cJSON_AddNumberToObject(mj, "n_dense_layers", m->n_dense_layers);
    cJSON_AddStringToObject(mj, "score_func", m->score_func == HP_SCORE_SIGMOID ? "sigmoid" : "softmax");
    cJSON_AddBoolToObject(mj, "route_norm", m->route_norm);
    cJSON_AddNumberToObject(mj, "route_scale", m->route_scale);
    if (m->rope_factor != 0.0f) {   // Llama 3.1's RoPE rescale (absent: plain RoPE)
        cJSON *rj = cJSON_AddObjectToObject(mj, "rope_scaling");
        cJSON_AddStringToObject(rj, "rope_type", "llama3");
        cJSON_AddNumberToObject(rj, "factor", m->rope_factor);
        cJSON_AddNumberToObject(rj, "low_freq_factor", m->rope_low_freq_factor);
        cJSON_AddNumberToObject(rj, "high_freq_factor", m->rope_high_freq_factor);
        cJSON_AddNumberToObject(rj, "original_max_position_embeddings", m->rope_original_max_positions);
    }
    cJSON *dj = cJSON_AddObjectToObject(j, "parallel");
    cJSON_AddNumberToObject(dj, "dp_replicate", tr->d.dp_replicate);
    cJSON_AddNumberToObject(dj, "dp_shard", tr->d.dp_shard);
    cJSON_AddNumberToObject(dj, "cp", tr->d.cp);
    cJSON_AddNumberToObject(dj, "tp", tr->d.tp);
    cJSON_AddNumberToObject(dj, "pp", tr->d.pp);
    cJSON_AddNumberToObject(dj, "ep", tr->d.ep);
    cJSON_AddNumberToObject(dj, "etp", tr->d.etp);
    cJSON_AddBoolToObject(dj, "sequence_parallel", tr->sh.sp);
    cJSON_AddNumberToObject(dj, "world", tr->d.world);
    cJSON *rj = cJSON_AddObjectToObject(j, "run");
    cJSON_AddNumberToObject(rj, "seq_len", tr->rc.seq_len);
    cJSON_AddNumberToObject(rj, "batch", tr->rc.batch);
    cJSON_AddNumberToObject(rj, "seed", (double)tr->rc.seed);
    cJSON_AddStringToObject(rj, "data", tr->rc.data_path ? tr->rc.data_path : "synthetic");
    return j;
}

int hp_dump_step1(hp_trainer *tr, const char *dir, const float *init, const float *grads,
                  double loss, char *err, size_t errlen) {
    if (tr->rank != 0) return 0;
    if (mkdir_p(dir, err, errlen) != 0) return -1;
    char path[1200];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    if (save_params(&tr->pt, init, path, err, errlen) != 0) return -1;
    snprintf(path, sizeof path, "%s/grads.safetensors", dir);
    if (save_params(&tr->pt, grads, path, err, errlen) != 0) return -1;

    // the global batch of step 1, regenerated from the data source
    const int B = tr->rc.batch, S = tr->rc.seq_len;
    int *tok = malloc((size_t)B * S * sizeof(int)), *lab = malloc((size_t)B * S * sizeof(int));
    int *ids = malloc((size_t)(S + 1) * sizeof(int));
    for (int g = 0; g < B; g++) {
        hp_trainer_sequence(tr, ids, 1, g);
        memcpy(tok + (size_t)g * S, ids, (size_t)S * sizeof(int));
        memcpy(lab + (size_t)g * S, ids + 1, (size_t)S * sizeof(int));
    }
    hp_st_writer *w = hp_st_writer_init();
    const int64_t shape[2] = { B, S };
    hp_st_writer_add(w, "tokens", HP_DT_I32, 2, shape, tok);
    hp_st_writer_add(w, "labels", HP_DT_I32, 2, shape, lab);
    snprintf(path, sizeof path, "%s/batch.safetensors", dir);
    int rc = hp_st_writer_save(w, path, err, errlen);
    hp_st_writer_free(w);
    free(tok); free(lab); free(ids);
    if (rc != 0) return -1;

    cJSON *j = config_json(tr, loss);
    snprintf(path, sizeof path, "%s/result.json", dir);
    if (hp_json_save(j, path) != 0) {
        snprintf(err, errlen, "cannot write '%s': %s", path, strerror(errno));
        rc = -1;
    }
    cJSON_Delete(j);
    return rc;
}

int hp_load_full(const char *path, const hp_param_table *t, float *full, char *err, size_t errlen) {
    char e[512];
    hp_st *f = hp_st_open(path, e, sizeof e);
    if (!f) { snprintf(err, errlen, "%s", e); return -1; }
    int rc = 0;
    for (int i = 0; i < t->n && rc == 0; i++) {
        const hp_param *p = &t->p[i];
        const hp_st_tensor *x = hp_st_get(f, p->name);
        if (!x) {
            snprintf(err, errlen, "%s: tensor '%s' is missing", path, p->name);
            rc = -1;
        } else if (x->dtype != HP_DT_F32 && x->dtype != HP_DT_BF16) {
            snprintf(err, errlen, "%s: tensor '%s' is neither F32 nor BF16", path, p->name);
            rc = -1;
        } else {
            int same = x->ndim == p->ndim;
            for (int k = 0; same && k < p->ndim; k++) same = x->shape[k] == p->shape[k];
            if (!same) {
                char want[64] = "", got[64] = "";
                for (int k = 0; k < p->ndim; k++)
                    snprintf(want + strlen(want), sizeof want - strlen(want), "%s%lld", k ? "," : "",
                             (long long)p->shape[k]);
                for (int k = 0; k < x->ndim && k < 8; k++)
                    snprintf(got + strlen(got), sizeof got - strlen(got), "%s%lld", k ? "," : "",
                             (long long)x->shape[k]);
                snprintf(err, errlen, "%s: tensor '%s' has shape [%s], the model needs [%s]", path,
                         p->name, got, want);
                rc = -1;
            } else if (x->dtype == HP_DT_BF16) {   // `hp export --export-dtype bfloat16`: widening is exact
                hp_bf16_unpack(full + p->full_offset, x->data, (size_t)p->full_numel);
            } else {
                memcpy(full + p->full_offset, x->data, (size_t)p->full_numel * sizeof(float));
            }
        }
    }
    hp_st_close(f);
    return rc;
}
