// test_hf.c - the Hugging Face layout both ways (hyperpar/hf.h) on the tiny model's shapes:
//   - export then import gives back every tensor byte for byte (F32; and sharded, past a small
//     shard size, through model.safetensors.index.json);
//   - the names are transformers' and q/k are permuted: HF row h*hd + s*hd/2 + i of q_proj
//     (k_proj: kv heads) is hp's row h*hd + 2i + s; v_proj is not permuted;
//   - a BF16 export holds the RNE casts; config.json says what the model is;
//   - bad folders, one line and HP_EXIT_CONFIG each: a config.json that disagrees with the model,
//     a missing tensor, a tensor of the wrong shape, an extra tensor (a bias); a MoE export.
// Exit 0 only when every check passed.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cjson/cJSON.h>
#include "hyperpar/bf16.h"
#include "hyperpar/dims.h"
#include "hyperpar/gguf.h"
#include "hyperpar/hf.h"
#include "hyperpar/safetensors.h"
#include "test_check.h"

static uint64_t rng = 88172645463325252ull;
static float uniform(void) {
    rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
    return (float)((double)(rng >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

// The tiny model's full tensors in hp's names, random, into path (skip: one name left out).
static void write_model(const hp_model_config *m, const char *path, const char *skip) {
    const int64_t D = m->dim, V = m->vocab_size, F = m->ffn_hidden, hd = D / m->n_heads;
    const int64_t q = m->n_heads * hd, kv = m->n_kv_heads * hd;
    hp_st_writer *w = hp_st_writer_init();
    float *buf = malloc((size_t)(V * D > F * D ? V * D : F * D) * sizeof(float));
    struct { char name[96]; int64_t s0, s1; } t[64];
    int n = 0;
#define ADD(nm, a, b) do { snprintf(t[n].name, sizeof t[n].name, "%s", nm); t[n].s0 = a; t[n].s1 = b; n++; } while (0)
    ADD("tok_embeddings.weight", V, D);
    for (int l = 0; l < m->n_layers; l++) {
        const char *r[] = { "attention.wq", "attention.wk", "attention.wv", "attention.wo", "feed_forward.w1",
                            "feed_forward.w2", "feed_forward.w3", "attention_norm", "ffn_norm" };
        const int64_t sh[][2] = { { q, D }, { kv, D }, { kv, D }, { D, q }, { F, D }, { D, F }, { F, D }, { D, 0 }, { D, 0 } };
        for (int k = 0; k < 9; k++) {
            char nm[96];
            snprintf(nm, sizeof nm, "layers.%d.%s.weight", l, r[k]);
            ADD(nm, sh[k][0], sh[k][1]);
        }
    }
    ADD("norm.weight", D, 0);
    ADD("output.weight", V, D);
    for (int i = 0; i < n; i++) {
        if (skip && !strcmp(skip, t[i].name)) continue;
        const int64_t numel = t[i].s1 ? t[i].s0 * t[i].s1 : t[i].s0;
        for (int64_t k = 0; k < numel; k++) buf[k] = uniform();
        const int64_t shape[2] = { t[i].s0, t[i].s1 };
        hp_st_writer_add(w, t[i].name, HP_DT_F32, t[i].s1 ? 2 : 1, shape, buf);
    }
    char err[256];
    CHECK(hp_st_writer_save(w, path, err, sizeof err) == 0, "write %s: %s", path, err);
    hp_st_writer_free(w);
    free(buf);
}

static int same_tensors(const char *a_path, const char *b_path) {
    char err[256];
    hp_st *a = hp_st_open(a_path, err, sizeof err), *b = hp_st_open(b_path, err, sizeof err);
    int ok = a && b && hp_st_count(a) == hp_st_count(b);
    for (int i = 0; ok && i < hp_st_count(a); i++) {
        const hp_st_tensor *x = hp_st_at(a, i), *y = hp_st_get(b, x->name);
        ok = y && x->dtype == y->dtype && x->numel == y->numel &&
             !memcmp(x->data, y->data, (size_t)x->numel * (x->dtype == HP_DT_BF16 ? 2 : 4));
    }
    if (a) hp_st_close(a);
    if (b) hp_st_close(b);
    return ok;
}

static void edit_config(const char *dir, const char *key, double value) {
    char path[512];
    snprintf(path, sizeof path, "%s/config.json", dir);
    FILE *f = fopen(path, "rb");
    char text[8192];
    const size_t len = f ? fread(text, 1, sizeof text - 1, f) : 0;
    if (f) fclose(f);
    text[len] = 0;
    cJSON *c = cJSON_Parse(text);
    cJSON_ReplaceItemInObject(c, key, cJSON_CreateNumber(value));
    char *out = cJSON_Print(c);
    f = fopen(path, "wb");
    fputs(out, f);
    fclose(f);
    free(out);
    cJSON_Delete(c);
}

int main(int argc, char **argv) {
    hp_model_config m;
    // test_hf export IN MODEL OUT [bf16]: the export alone, for the outside check against
    // transformers (tests/check_hf_transformers.py)
    if (argc >= 5 && !strcmp(argv[1], "export")) {
        char e[512];
        if (hp_model_config_by_name(argv[3], &m) != 0) { printf("test_hf: no model %s\n", argv[3]); return 2; }
        const int rc = hp_hf_export(argv[2], &m, argv[4], argc > 5 && !strcmp(argv[5], "bf16") ? HP_DTYPE_BFLOAT16
                                    : HP_DTYPE_FLOAT32, 0, -1, -1, e, sizeof e);
        if (rc) printf("test_hf export: %s\n", e);
        return rc;
    }
    // test_hf gguf IN MODEL OUT [f32|f16|bf16]: the GGUF export alone (tests/check_gguf_llamacpp.py)
    if (argc >= 5 && !strcmp(argv[1], "gguf")) {
        char e[512];
        if (hp_model_config_by_name(argv[3], &m) != 0) { printf("test_hf: no model %s\n", argv[3]); return 2; }
        const char *t = argc > 5 ? argv[5] : "f32";
        const hp_gguf_dtype d = !strcmp(t, "f16") ? HP_GGUF_F16 : !strcmp(t, "bf16") ? HP_GGUF_BF16 : HP_GGUF_F32;
        const int rc = hp_gguf_export(argv[2], &m, argv[4], d, NULL, e, sizeof e);
        if (rc) printf("test_hf gguf: %s\n", e);
        return rc;
    }
    hp_model_config_by_name("tiny", &m);
    char err[512], dir[256], cmd[600];
    snprintf(dir, sizeof dir, "/tmp/hp_test_hf_%d", (int)getpid());
    snprintf(cmd, sizeof cmd, "rm -rf %s && mkdir -p %s", dir, dir);
    CHECK(system(cmd) == 0, "make %s", dir);
    char model[300], hf[300], back[300];
    snprintf(model, sizeof model, "%s/model.safetensors", dir);
    snprintf(hf, sizeof hf, "%s/hf", dir);
    snprintf(back, sizeof back, "%s/back.safetensors", dir);
    write_model(&m, model, NULL);

    int rc = hp_hf_export(model, &m, hf, HP_DTYPE_FLOAT32, 0, -1, -1, err, sizeof err);
    CHECK(rc == 0, "export: %s", err);
    rc = hp_hf_import(hf, &m, back, err, sizeof err);
    CHECK(rc == 0, "import: %s", err);
    CHECK(same_tensors(model, back), "export then import: every tensor byte for byte");

    // the names and the permutation
    char path[400];
    snprintf(path, sizeof path, "%s/model.safetensors", hf);
    hp_st *a = hp_st_open(model, err, sizeof err), *h = hp_st_open(path, err, sizeof err);
    CHECK(a && h, "open the model and its export: %s", err);
    if (a && h) {
        const int hd = m.dim / m.n_heads, half = hd / 2;
        const char *pairs[][2] = { { "layers.1.attention.wq.weight", "model.layers.1.self_attn.q_proj.weight" },
                                   { "layers.1.attention.wk.weight", "model.layers.1.self_attn.k_proj.weight" } };
        const int heads[] = { m.n_heads, m.n_kv_heads };
        for (int p = 0; p < 2; p++) {
            const hp_st_tensor *x = hp_st_get(a, pairs[p][0]), *y = hp_st_get(h, pairs[p][1]);
            int bad = !x || !y;
            for (int hh = 0; !bad && hh < heads[p]; hh++)
                for (int i = 0; i < half && !bad; i++)
                    for (int s = 0; s < 2 && !bad; s++)
                        bad = memcmp((const float *)y->data + ((size_t)hh * hd + s * half + i) * m.dim,
                                     (const float *)x->data + ((size_t)hh * hd + 2 * i + s) * m.dim, m.dim * sizeof(float)) != 0;
            CHECK(!bad, "%s is %s with its rows permuted (interleaved pairs -> halves)", pairs[p][1], pairs[p][0]);
        }
        const hp_st_tensor *v = hp_st_get(a, "layers.0.attention.wv.weight"), *hv = hp_st_get(h, "model.layers.0.self_attn.v_proj.weight");
        CHECK(v && hv && !memcmp(v->data, hv->data, (size_t)v->numel * 4), "v_proj is wv unpermuted");
        CHECK(hp_st_get(h, "lm_head.weight") && hp_st_get(h, "model.embed_tokens.weight") &&
              hp_st_get(h, "model.layers.1.mlp.down_proj.weight") && hp_st_get(h, "model.norm.weight") &&
              hp_st_get(h, "model.layers.0.post_attention_layernorm.weight"), "transformers' names");
    }
    if (h) hp_st_close(h);
    char name[96];
    CHECK(hp_hf_name("layers.3.feed_forward.w3.weight", name, sizeof name) == 0 &&
          !strcmp(name, "model.layers.3.mlp.up_proj.weight"), "hp_hf_name: w3 -> up_proj (%s)", name);
    CHECK(hp_hf_name("layers.0.moe.router.gate.weight", name, sizeof name) == -1, "hp_hf_name: a router has no HF name");

    // config.json
    snprintf(path, sizeof path, "%s/config.json", hf);
    FILE *f = fopen(path, "rb");
    char text[8192] = "";
    if (f) { text[fread(text, 1, sizeof text - 1, f)] = 0; fclose(f); }
    cJSON *c = cJSON_Parse(text);
    const cJSON *hs = cJSON_GetObjectItem(c, "hidden_size"), *mt = cJSON_GetObjectItem(c, "model_type");
    CHECK(c && cJSON_IsNumber(hs) && hs->valueint == m.dim && cJSON_IsString(mt) && !strcmp(mt->valuestring, "llama"),
          "config.json: model_type llama, hidden_size %d", m.dim);
    cJSON_Delete(c);

    // sharded: a shard size below one tensor's bytes makes an index and several files
    char hf2[300];
    snprintf(hf2, sizeof hf2, "%s/hf-sharded", dir);
    rc = hp_hf_export(model, &m, hf2, HP_DTYPE_FLOAT32, 40000, -1, -1, err, sizeof err);
    snprintf(path, sizeof path, "%s/model.safetensors.index.json", hf2);
    f = fopen(path, "rb");
    CHECK(rc == 0 && f, "sharded export writes its index: %s", err);
    if (f) fclose(f);
    rc = hp_hf_import(hf2, &m, back, err, sizeof err);
    CHECK(rc == 0 && same_tensors(model, back), "sharded: export then import, byte for byte (%s)", err);

    // BF16: the RNE casts
    char hf3[300];
    snprintf(hf3, sizeof hf3, "%s/hf-bf16", dir);
    rc = hp_hf_export(model, &m, hf3, HP_DTYPE_BFLOAT16, 0, 1, 2, err, sizeof err);
    snprintf(path, sizeof path, "%s/model.safetensors", hf3);
    h = hp_st_open(path, err, sizeof err);
    if (h && a) {
        const hp_st_tensor *x = hp_st_get(a, "norm.weight"), *y = hp_st_get(h, "model.norm.weight");
        int ok = x && y && y->dtype == HP_DT_BF16;
        for (int64_t i = 0; ok && i < x->numel; i++) {
            hp_bf16 b;
            memcpy(&b, (const unsigned char *)y->data + 2 * i, 2);
            ok = b == hp_bf16_from_float(((const float *)x->data)[i]);
        }
        CHECK(ok, "a BF16 export holds the RNE casts");
        hp_st_close(h);
    } else {
        CHECK(0, "BF16 export: %s", err);
    }
    if (a) hp_st_close(a);

    // bad folders: one line each, HP_EXIT_CONFIG
    edit_config(hf3, "num_hidden_layers", m.n_layers + 1);
    rc = hp_hf_import(hf3, &m, back, err, sizeof err);
    CHECK(rc == HP_EXIT_CONFIG && strstr(err, "num_hidden_layers is") && !strchr(err, '\n'), "config disagrees: %s", err);
    char bad_model[300], hf4[300];
    snprintf(bad_model, sizeof bad_model, "%s/short.safetensors", dir);
    write_model(&m, bad_model, "layers.1.feed_forward.w2.weight");
    rc = hp_hf_export(bad_model, &m, hf4, HP_DTYPE_FLOAT32, 0, -1, -1, err, sizeof err);
    CHECK(rc == HP_EXIT_CONFIG && strstr(err, "layers.1.feed_forward.w2.weight"), "a model missing a tensor: %s", err);
    hp_model_config wide = m;
    wide.ffn_hidden *= 2;
    rc = hp_hf_import(hf, &wide, back, err, sizeof err);
    CHECK(rc == HP_EXIT_CONFIG && strstr(err, "intermediate_size"), "another model's folder: %s", err);
    hp_model_config moe;
    hp_model_config_by_name("tiny-moe", &moe);
    rc = hp_hf_export(model, &moe, hf4, HP_DTYPE_FLOAT32, 0, -1, -1, err, sizeof err);
    CHECK(rc == HP_EXIT_CONFIG && strstr(err, "MoE"), "a MoE export is refused: %s", err);
    // a folder whose weights have a bias, and one whose q_proj has the wrong shape
    snprintf(path, sizeof path, "%s/model.safetensors", hf);
    hp_st *src = hp_st_open(path, err, sizeof err);
    for (int variant = 0; src && variant < 2; variant++) {
        hp_st_writer *w = hp_st_writer_init();
        for (int i = 0; i < hp_st_count(src); i++) {
            const hp_st_tensor *t = hp_st_at(src, i);
            int64_t shape[2] = { t->shape[0], t->ndim > 1 ? t->shape[1] : 0 };
            if (variant == 1 && !strcmp(t->name, "model.layers.0.self_attn.q_proj.weight")) shape[0] /= 2;
            hp_st_writer_add(w, t->name, t->dtype, t->ndim, shape, t->data);
        }
        if (variant == 0) hp_st_writer_add(w, "model.layers.0.self_attn.q_proj.bias", HP_DT_F32, 1, (int64_t[]){ 64 }, hp_st_at(src, 0)->data);
        CHECK(hp_st_writer_save(w, path, err, sizeof err) == 0, "rewrite %s", path);
        hp_st_writer_free(w);
        rc = hp_hf_import(hf, &m, back, err, sizeof err);
        CHECK(rc == HP_EXIT_CONFIG && strstr(err, variant ? "q_proj.weight is" : "q_proj.bias"), "bad tensor %d: %s", variant, err);
    }
    if (src) hp_st_close(src);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0, "remove %s", dir);
    return test_summary("test_hf");
}
