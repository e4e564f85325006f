// model_tensors.c - the full tensors of a dense model under hp's, Hugging Face's and llama.cpp's
// names (model_tensors.h), and the checks a reader of a full model makes.
// defines: hp_model_tensor_specs, hp_tensor_spec_numel, hp_tensor_name_map, hp_tensor_checked,
//          hp_model_file_open, hp_make_dir
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "hyperpar/dims.h"
#include "model_io/model_tensors.h"

// A layer's tensors: hp's, HF's and llama.cpp's names, in HF's order of a layer.
static const char *const layer_names[][3] = {
    { "attention.wq.weight", "self_attn.q_proj.weight", "attn_q.weight" },
    { "attention.wk.weight", "self_attn.k_proj.weight", "attn_k.weight" },
    { "attention.wv.weight", "self_attn.v_proj.weight", "attn_v.weight" },
    { "attention.wo.weight", "self_attn.o_proj.weight", "attn_output.weight" },
    { "feed_forward.w1.weight", "mlp.gate_proj.weight", "ffn_gate.weight" },
    { "feed_forward.w3.weight", "mlp.up_proj.weight", "ffn_up.weight" },
    { "feed_forward.w2.weight", "mlp.down_proj.weight", "ffn_down.weight" },
    { "attention_norm.weight", "input_layernorm.weight", "attn_norm.weight" },
    { "ffn_norm.weight", "post_attention_layernorm.weight", "ffn_norm.weight" },
};
enum { N_LAYER = sizeof layer_names / sizeof *layer_names };
static const char *const top_names[][3] = {
    { "tok_embeddings.weight", "model.embed_tokens.weight", "token_embd.weight" },
    { "norm.weight", "model.norm.weight", "output_norm.weight" },
    { "output.weight", "lm_head.weight", "output.weight" },
};

int hp_tensor_name_map(const char *name, int hf, char *out, size_t n) {
    const int col = hf ? 1 : 2;
    for (size_t i = 0; i < sizeof top_names / sizeof *top_names; i++)
        if (!strcmp(name, top_names[i][0])) return snprintf(out, n, "%s", top_names[i][col]) < (int)n ? 0 : -1;
    int l = -1, at = 0;
    if (sscanf(name, "layers.%d.%n", &l, &at) != 1 || at == 0 || l < 0) return -1;
    for (int k = 0; k < N_LAYER; k++)
        if (!strcmp(name + at, layer_names[k][0]))
            return snprintf(out, n, hf ? "model.layers.%d.%s" : "blk.%d.%s", l, layer_names[k][col]) < (int)n ? 0 : -1;
    return -1;
}

int hp_model_tensor_specs(const hp_model_config *m, hp_tensor_spec **out) {
    const int n = 3 + m->n_layers * N_LAYER;
    hp_tensor_spec *t = calloc((size_t)n, sizeof *t);
    if (!t) return -1;
    const int64_t D = m->dim, V = m->vocab_size, F = m->ffn_hidden, hd = m->dim / m->n_heads;
    const int64_t q = (int64_t)m->n_heads * hd, kv = (int64_t)m->n_kv_heads * hd;
    const int64_t shapes[N_LAYER][2] = { { q, D }, { kv, D }, { kv, D }, { D, q }, { F, D },
                                         { F, D }, { D, F }, { D, 0 }, { D, 0 } };
    int i = 0;
    snprintf(t[i].hp, sizeof t[i].hp, "%s", top_names[0][0]);
    t[i].shape[0] = V; t[i].shape[1] = D; t[i++].ndim = 2;
    for (int l = 0; l < m->n_layers; l++)
        for (int k = 0; k < N_LAYER; k++, i++) {
            snprintf(t[i].hp, sizeof t[i].hp, "layers.%d.%s", l, layer_names[k][0]);
            t[i].shape[0] = shapes[k][0]; t[i].shape[1] = shapes[k][1];
            t[i].ndim = shapes[k][1] ? 2 : 1;
            t[i].perm_heads = k == 0 ? m->n_heads : k == 1 ? m->n_kv_heads : 0;
        }
    snprintf(t[i].hp, sizeof t[i].hp, "%s", top_names[1][0]);
    t[i].shape[0] = D; t[i++].ndim = 1;
    snprintf(t[i].hp, sizeof t[i].hp, "%s", top_names[2][0]);
    t[i].shape[0] = V; t[i].shape[1] = D; t[i++].ndim = 2;
    for (int j = 0; j < n; j++) {
        hp_tensor_name_map(t[j].hp, 1, t[j].hf, sizeof t[j].hf);
        hp_tensor_name_map(t[j].hp, 0, t[j].gguf, sizeof t[j].gguf);
    }
    *out = t;
    return n;
}

int64_t hp_tensor_spec_numel(const hp_tensor_spec *s) { return s->ndim == 2 ? s->shape[0] * s->shape[1] : s->shape[0]; }

// The tensor `want` names in f, checked: F32 or BF16, want's shape. NULL with one line in err.
const hp_st_tensor *hp_tensor_checked(const hp_st *f, const char *file, const char *name,
                                   const hp_tensor_spec *want, char *err, size_t errlen) {
    const hp_st_tensor *t = hp_st_get(f, name);
    if (!t) {
        snprintf(err, errlen, "%s has no tensor %s: the model's weights are missing", file, name);
        return NULL;
    }
    if (t->dtype != HP_DT_F32 && t->dtype != HP_DT_BF16) {
        snprintf(err, errlen, "%s: tensor %s is neither F32 nor BF16", file, name);
        return NULL;
    }
    const int ok = t->ndim == want->ndim && t->shape[0] == want->shape[0] &&
                   (want->ndim == 1 || t->shape[1] == want->shape[1]);
    if (!ok) {
        char have[64] = "", need[64];
        for (int d = 0; d < t->ndim && d < 4; d++)
            snprintf(have + strlen(have), sizeof have - strlen(have), "%s%lld", d ? " x " : "", (long long)t->shape[d]);
        if (want->ndim == 2) snprintf(need, sizeof need, "%lld x %lld", (long long)want->shape[0], (long long)want->shape[1]);
        else snprintf(need, sizeof need, "%lld", (long long)want->shape[0]);
        snprintf(err, errlen, "%s: tensor %s is %s, the model's is %s", file, name, have, need);
        return NULL;
    }
    return t;
}

int hp_make_dir(const char *dir, char *err, size_t errlen) {
    if (mkdir(dir, 0777) == 0 || errno == EEXIST) return 0;
    snprintf(err, errlen, "cannot make %s: %s", dir, strerror(errno));
    return -1;
}

int hp_model_file_open(const char *path, const hp_model_config *m, hp_st **f, hp_tensor_spec **specs,
                       int *n, char *err, size_t errlen) {
    *f = hp_st_open(path, err, errlen);
    if (!*f) return HP_EXIT_CONFIG;
    *n = hp_model_tensor_specs(m, specs);
    int rc = *n < 0 ? HP_EXIT_FAIL : 0;
    for (int i = 0; rc == 0 && i < *n; i++)
        if (!hp_tensor_checked(*f, path, (*specs)[i].hp, &(*specs)[i], err, errlen)) rc = HP_EXIT_CONFIG;
    if (rc == 0) return 0;
    if (*n >= 0) free(*specs);
    *specs = NULL;
    hp_st_close(*f);
    *f = NULL;
    return rc;
}
