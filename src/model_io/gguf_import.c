// gguf_import.c - a llama-architecture GGUF made a Hugging Face Llama folder (hyperpar/gguf.h,
// `hp import`): the llama.* keys become hp's model config, every tensor is dequantised to
// float32 under hp's name (llama.cpp's q and k are already in hp's interleaved-pair RoPE order:
// its converter undid HF's permutation, and hp's GGUF export writes none), the whole model is
// written as hp's file, then hp_hf_export permutes q and k to HF's halves and writes the folder.
// defines: hp_gguf_import
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cjson/cJSON.h>
#include "hyperpar/dims.h"
#include "hyperpar/gguf.h"
#include "hyperpar/hf.h"
#include "hyperpar/safetensors.h"
#include "model_io/model_tensors.h"
#include "util/file_io.h"

// a required (req) or optional llama.* integer in [1, 2^31): 0, 1 absent (optional), -1 error
static int key_int(const hp_gguf *g, const char *key, int req, int *out, char *err, size_t errlen) {
    int64_t v = 0;
    const int rc = hp_gguf_kv_int(g, key, &v);
    if (rc == 1 && !req) return 1;
    if (rc == 1) { snprintf(err, errlen, "%s: no %s: not a llama model's GGUF", g->file, key); return -1; }
    if (rc != 0) { snprintf(err, errlen, "%s: %s is not an integer scalar (type %d)", g->file, key, hp_gguf_find_kv(g, key)->type); return -1; }
    if (v < 1 || v > 0x7FFFFFFF) { snprintf(err, errlen, "%s: %s is %lld, not in [1, 2^31)", g->file, key, (long long)v); return -1; }
    *out = (int)v;
    return 0;
}
static int key_float(const hp_gguf *g, const char *key, int req, float *out, char *err, size_t errlen) {
    double v = 0;
    const int rc = hp_gguf_kv_float(g, key, &v);
    if (rc == 1 && !req) return 1;
    if (rc == 1) { snprintf(err, errlen, "%s: no %s: not a llama model's GGUF", g->file, key); return -1; }
    if (rc != 0 || !(v > 0.0) || v > 1e30) { snprintf(err, errlen, "%s: %s is not a positive number", g->file, key); return -1; }
    *out = (float)v;
    return 0;
}

// The model of the llama.* keys, named after the file. 0, or HP_EXIT_CONFIG with one line.
static int model_of(const hp_gguf *g, const char *path, hp_model_config *m, int *ctx, char *err, size_t errlen) {
    char arch[64];
    const int a = hp_gguf_kv_str(g, "general.architecture", arch, sizeof arch);
    if (a != 0) {
        snprintf(err, errlen, "%s: %s: not a model's GGUF", g->file, a == 1 ? "no general.architecture" : "general.architecture is not a string");
        return HP_EXIT_CONFIG;
    }
    if (strcmp(arch, "llama")) {
        snprintf(err, errlen, "%s: general.architecture is \"%s\"; hp imports \"llama\" only", g->file, arch);
        return HP_EXIT_CONFIG;
    }
    memset(m, 0, sizeof *m);
    const char *base = strrchr(path, '/');
    snprintf(m->name, sizeof m->name, "%s", base ? base + 1 : path);
    char *dot = strstr(m->name, ".gguf");
    if (dot) *dot = '\0';
    int experts = 0, rope_dims = 0;
    *ctx = 2048;
    m->rope_theta = 10000.0f;
    if (key_int(g, "llama.embedding_length", 1, &m->dim, err, errlen) < 0 ||
        key_int(g, "llama.block_count", 1, &m->n_layers, err, errlen) < 0 ||
        key_int(g, "llama.attention.head_count", 1, &m->n_heads, err, errlen) < 0 ||
        key_int(g, "llama.feed_forward_length", 1, &m->ffn_hidden, err, errlen) < 0 ||
        key_float(g, "llama.attention.layer_norm_rms_epsilon", 1, &m->norm_eps, err, errlen) < 0 ||
        key_float(g, "llama.rope.freq_base", 0, &m->rope_theta, err, errlen) < 0 ||
        key_int(g, "llama.context_length", 0, ctx, err, errlen) < 0 ||
        key_int(g, "llama.expert_count", 0, &experts, err, errlen) < 0 ||
        key_int(g, "llama.rope.dimension_count", 0, &rope_dims, err, errlen) < 0)
        return HP_EXIT_CONFIG;
    m->n_kv_heads = m->n_heads;
    if (key_int(g, "llama.attention.head_count_kv", 0, &m->n_kv_heads, err, errlen) < 0) return HP_EXIT_CONFIG;
    if (experts > 0) {
        snprintf(err, errlen, "%s: llama.expert_count is %d: a MoE model; hp imports dense llama models only", g->file, experts);
        return HP_EXIT_CONFIG;
    }
    if (m->dim % m->n_heads || (m->dim / m->n_heads) % 2 || m->n_heads % m->n_kv_heads) {
        snprintf(err, errlen, "%s: embedding_length %d, head_count %d, head_count_kv %d: hp needs heads dividing the "
                 "width into even head dims, and kv heads dividing the heads", g->file, m->dim, m->n_heads, m->n_kv_heads);
        return HP_EXIT_CONFIG;
    }
    if (rope_dims && rope_dims != m->dim / m->n_heads) {
        snprintf(err, errlen, "%s: llama.rope.dimension_count %d is not the head dim %d (partial RoPE): hp rotates "
                 "whole heads", g->file, rope_dims, m->dim / m->n_heads);
        return HP_EXIT_CONFIG;
    }
    char scaling[32] = "none";
    if (hp_gguf_kv_str(g, "llama.rope.scaling.type", scaling, sizeof scaling) < 0 || strcmp(scaling, "none") ||
        hp_gguf_find_tensor(g, "rope_freqs.weight")) {
        snprintf(err, errlen, "%s: the RoPE is rescaled (%s); hp imports plain RoPE only", g->file,
                 strcmp(scaling, "none") ? "llama.rope.scaling.type" : "rope_freqs.weight: Llama 3.1's rule");
        return HP_EXIT_CONFIG;
    }
    // the vocabulary: llama.vocab_size, else the token list, else the embedding's rows
    const hp_gguf_tensor *emb = hp_gguf_find_tensor(g, "token_embd.weight");
    const hp_gguf_kv *toks = hp_gguf_find_kv(g, "tokenizer.ggml.tokens");
    if (key_int(g, "llama.vocab_size", 0, &m->vocab_size, err, errlen) < 0) return HP_EXIT_CONFIG;
    if (!m->vocab_size && toks && toks->type == HP_GGUF_KV_ARRAY && toks->n > 0 && toks->n < 0x7FFFFFFF) m->vocab_size = (int)toks->n;
    if (!m->vocab_size && emb && emb->n_dims == 2 && emb->ne[1] > 0 && emb->ne[1] < 0x7FFFFFFF) m->vocab_size = (int)emb->ne[1];
    if (!m->vocab_size) {
        snprintf(err, errlen, "%s: no llama.vocab_size, token list or token_embd.weight: the vocabulary size is unknown", g->file);
        return HP_EXIT_CONFIG;
    }
    return 0;
}

static int shape_ok(const hp_gguf_tensor *t, const hp_tensor_spec *s) {
    if (s->ndim == 2) return t->n_dims == 2 && t->ne[0] == s->shape[1] && t->ne[1] == s->shape[0];
    return t->n_dims == 1 && t->ne[0] == s->shape[0];
}

// The injected bug HP_GGUF_BUG_QK_ORDER: q/k read as if in HF's halves order (permuted once more)
static void hf_rows_to_hp(float *w, int heads, int64_t rows, int64_t cols) {
    float *src = malloc((size_t)(rows * cols) * sizeof *src + 1);
    if (!src) return;
    memcpy(src, w, (size_t)(rows * cols) * sizeof *src);
    const int64_t hd = rows / heads, half = hd / 2;
    for (int h = 0; h < heads; h++)
        for (int64_t i = 0; i < half; i++)
            for (int s = 0; s < 2; s++)
                memcpy(w + (h * hd + 2 * i + s) * cols, src + (h * hd + s * half + i) * cols, (size_t)cols * sizeof *w);
    free(src);
}

// Every tensor of m from g into hp's file tmp (F32). *tied: output.weight was the embedding's copy.
static int write_hp_file(const hp_gguf *g, const hp_model_config *m, const char *tmp, int flags, int *tied,
                         char *err, size_t errlen) {
    hp_tensor_spec *specs = NULL;
    const int n = hp_model_tensor_specs(m, &specs);
    if (n < 0) { snprintf(err, errlen, "out of memory (gguf import)"); return HP_EXIT_FAIL; }
    int rc = 0;
    *tied = 0;
    hp_st_writer *w = hp_st_writer_init();
    for (int i = 0; rc == 0 && i < n; i++) {
        const hp_tensor_spec *s = &specs[i];
        const hp_gguf_tensor *t = hp_gguf_find_tensor(g, s->gguf);
        if (!t && !strcmp(s->gguf, "output.weight")) { t = hp_gguf_find_tensor(g, "token_embd.weight"); *tied = 1; }
        if (!t) { snprintf(err, errlen, "%s: no tensor %s: the model's weights are missing", g->file, s->gguf); rc = HP_EXIT_CONFIG; break; }
        if (!shape_ok(t, s)) {
            char have[80] = "";
            for (int d = 0; d < t->n_dims; d++)
                snprintf(have + strlen(have), sizeof have - strlen(have), "%s%lld", d ? " x " : "", (long long)t->ne[d]);
            char need[64];
            if (s->ndim == 2) snprintf(need, sizeof need, "%lld x %lld", (long long)s->shape[1], (long long)s->shape[0]);
            else snprintf(need, sizeof need, "%lld", (long long)s->shape[0]);
            snprintf(err, errlen, "%s: tensor %s has ggml dims %s, the model (from the llama.* keys) needs %s", g->file,
                     t->name, have, need);
            rc = HP_EXIT_CONFIG;
            break;
        }
        float *data = malloc((size_t)t->numel * sizeof *data + 1);
        if (!data) { snprintf(err, errlen, "out of memory (gguf import, %s)", t->name); rc = HP_EXIT_FAIL; break; }
        rc = hp_gguf_dequantize(g, t, data, flags, err, errlen);
        if (rc == 0 && (flags & HP_GGUF_BUG_QK_ORDER) && s->perm_heads) hf_rows_to_hp(data, s->perm_heads, s->shape[0], s->shape[1]);
        if (rc == 0) hp_st_writer_add(w, s->hp, HP_DT_F32, s->ndim, s->shape, data);
        free(data);
    }
    // a tensor the model has no place for (biases, another layout's) is refused by name
    for (int64_t j = 0; rc == 0 && j < g->n_tensors; j++) {
        int known = 0;
        for (int i = 0; i < n && !known; i++) known = !strcmp(g->tensors[j].name, specs[i].gguf);
        if (!known) {
            snprintf(err, errlen, "%s: tensor %s is not a weight of a llama model without biases (hp's %s)", g->file,
                     g->tensors[j].name, m->name);
            rc = HP_EXIT_CONFIG;
        }
    }
    if (rc == 0) {
        hp_st_writer_metadata(w, "model", m->name);
        hp_st_writer_metadata(w, "from", "gguf");
        if (hp_st_writer_save(w, tmp, err, errlen) != 0) rc = HP_EXIT_FAIL;
    }
    hp_st_writer_free(w);
    free(specs);
    return rc;
}

int hp_gguf_import(const char *gguf_path, const char *out_dir, hp_mp_dtype dtype, int flags,
                   char *note, size_t note_len, char *err, size_t errlen) {
    if (note && note_len) note[0] = '\0';
    hp_gguf *g = hp_gguf_open(gguf_path, err, errlen);
    if (!g) return HP_EXIT_CONFIG;
    hp_model_config m;
    int ctx = 0, tied = 0;
    int rc = model_of(g, gguf_path, &m, &ctx, err, errlen);
    int64_t bos = -1, eos = -1;
    if (hp_gguf_kv_int(g, "tokenizer.ggml.bos_token_id", &bos) != 0 || bos >= m.vocab_size) bos = -1;
    if (hp_gguf_kv_int(g, "tokenizer.ggml.eos_token_id", &eos) != 0 || eos >= m.vocab_size) eos = -1;
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s/.hp-import-%d.safetensors", out_dir, (int)getpid());
    if (rc == 0 && hp_make_dir(out_dir, err, errlen) != 0) rc = HP_EXIT_FAIL;
    if (rc == 0) rc = write_hp_file(g, &m, tmp, flags, &tied, err, errlen);
    hp_gguf_close(g);   // (the file's bytes: freed before the export reads the model back)
    if (rc == 0) rc = hp_hf_export(tmp, &m, out_dir, dtype, 0, (int)bos, (int)eos, err, errlen);
    unlink(tmp);
    if (rc == 0) {   // the context length the GGUF states, for transformers' generate
        char path[4300];
        snprintf(path, sizeof path, "%s/config.json", out_dir);
        cJSON *c = hp_json_load(path);
        if (c) {
            cJSON_ReplaceItemInObject(c, "max_position_embeddings", cJSON_CreateNumber(ctx));
            if (hp_json_save(c, path) != 0) { snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno)); rc = HP_EXIT_FAIL; }
            cJSON_Delete(c);
        }
    }
    if (rc == 0 && tied && note && note_len)
        snprintf(note, note_len, "%s has no output.weight (tied embeddings); hp has no tying, so lm_head.weight "
                 "is a copy of the embedding (they part once trained)", gguf_path);
    return rc;
}
