// test_gguf.c - the GGUF reader, dequantiser and import (hyperpar/gguf.h) on the tiny model:
//   - hp's own GGUF export (F32) imported back is an HF folder that hp_hf_import reads into
//     the original model bit for bit (q/k: GGUF in hp's order, the folder in HF's); BF16 and F16
//     exports come back as the roundings of the original;
//   - hand-built blocks of Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 dequantise to the values they encode;
//   - a GGUF without output.weight gets lm_head = the embedding, and a note;
//   - bad files, one line each naming the rule: not GGUF, version 1, counts the file cannot
//     hold, a string past the end, a tensor past the end, misaligned, a bad alignment, a key
//     twice, an unknown type, a row of partial blocks, overlapping tensors, arrays nested too
//     deep, every truncation of a good file; another architecture; a type hp cannot dequantise.
//   test_gguf dequant FILE TENSOR OUT  (the outside check): TENSOR as raw float32 into OUT.
//   test_gguf seeds DIR: the fuzz seeds of tests/fuzz/corpus/gguf (hp's export of a model of
//   width 8, F16; the hand-made block file).
// Exit 0 only when every check passed.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "hyperpar/bf16.h"
#include "hyperpar/dims.h"
#include "hyperpar/gguf.h"
#include "hyperpar/hf.h"
#include "hyperpar/safetensors.h"
#include "test_check.h"

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static float uniform(void) {
    rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
    return (float)((double)(rng >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

// the tiny model's tensors, random, under hp's names
static void write_model(const hp_model_config *m, const char *path) {
    const int64_t D = m->dim, V = m->vocab_size, F = m->ffn_hidden, hd = D / m->n_heads;
    const int64_t q = m->n_heads * hd, kv = m->n_kv_heads * hd;
    hp_st_writer *w = hp_st_writer_init();
    float *buf = malloc((size_t)(V * D > F * D ? V * D : F * D) * sizeof(float));
    const char *r[] = { "attention.wq", "attention.wk", "attention.wv", "attention.wo", "feed_forward.w1",
                        "feed_forward.w2", "feed_forward.w3", "attention_norm", "ffn_norm" };
    const int64_t sh[][2] = { { q, D }, { kv, D }, { kv, D }, { D, q }, { F, D }, { D, F }, { F, D }, { D, 0 }, { D, 0 } };
    for (int l = -1; l <= m->n_layers; l++)
        for (int k = 0; k < (l < 0 || l == m->n_layers ? 2 : 9); k++) {
            char nm[96];
            int64_t shape[2];
            if (l < 0) { snprintf(nm, sizeof nm, k ? "output.weight" : "tok_embeddings.weight"); shape[0] = V; shape[1] = D; }
            else if (l == m->n_layers) { if (k) break; snprintf(nm, sizeof nm, "norm.weight"); shape[0] = D; shape[1] = 0; }
            else { snprintf(nm, sizeof nm, "layers.%d.%s.weight", l, r[k]); shape[0] = sh[k][0]; shape[1] = sh[k][1]; }
            const int64_t numel = shape[1] ? shape[0] * shape[1] : shape[0];
            for (int64_t i = 0; i < numel; i++) buf[i] = uniform();
            hp_st_writer_add(w, nm, HP_DT_F32, shape[1] ? 2 : 1, shape, buf);
        }
    char err[256];
    CHECK(hp_st_writer_save(w, path, err, sizeof err) == 0, "write %s: %s", path, err);
    hp_st_writer_free(w);
    free(buf);
}

// a (0) or b's tensors compared: 0 bit for bit; 1 bf16 rounding of a; 2 f16 rounding (2^-11)
static int compare(const char *a_path, const char *b_path, int mode) {
    char err[256];
    hp_st *a = hp_st_open(a_path, err, sizeof err), *b = hp_st_open(b_path, err, sizeof err);
    int ok = a && b && hp_st_count(a) == hp_st_count(b);
    for (int i = 0; ok && i < hp_st_count(a); i++) {
        const hp_st_tensor *x = hp_st_at(a, i), *y = hp_st_get(b, x->name);
        ok = y && x->numel == y->numel && x->dtype == HP_DT_F32 && y->dtype == HP_DT_F32;
        const float *u = x->data, *v = ok ? y->data : NULL;
        const int norm = strstr(x->name, "norm") != NULL;   // the norms stay F32 in every GGUF
        for (int64_t k = 0; ok && k < x->numel; k++) {
            if (mode == 0 || norm) ok = !memcmp(&u[k], &v[k], 4);
            else if (mode == 1) ok = hp_bf16_round_float(u[k]) == v[k];
            else ok = fabsf(u[k] - v[k]) <= ldexpf(fabsf(u[k]), -11) + ldexpf(1.0f, -24);
            if (!ok) printf("  %s[%lld]: %.9g vs %.9g\n", x->name, (long long)k, u[k], v[k]);
        }
    }
    if (a) hp_st_close(a);
    if (b) hp_st_close(b);
    return ok;
}

// ------------------------------------------------------------------------------------
// a GGUF built byte by byte

typedef struct { unsigned char *p; size_t n, cap; } buf_t;
static void put(buf_t *b, const void *d, size_t n) {
    if (b->n + n > b->cap) { b->cap = (b->n + n) * 2 + 64; b->p = realloc(b->p, b->cap); }
    memcpy(b->p + b->n, d, n);
    b->n += n;
}
static void u32(buf_t *b, uint32_t v) { put(b, &v, 4); }
static void u64(buf_t *b, uint64_t v) { put(b, &v, 8); }
static void str(buf_t *b, const char *s) { u64(b, strlen(s)); put(b, s, strlen(s)); }
static void kv_u32(buf_t *b, const char *k, uint32_t v) { str(b, k); u32(b, HP_GGUF_KV_UINT32); u32(b, v); }
static void kv_f32(buf_t *b, const char *k, float v) { str(b, k); u32(b, HP_GGUF_KV_FLOAT32); put(b, &v, 4); }
static void kv_str(buf_t *b, const char *k, const char *v) { str(b, k); u32(b, HP_GGUF_KV_STRING); str(b, v); }
static void pad(buf_t *b, size_t a) { while (b->n % a) put(b, "", 1); }
static void header(buf_t *b, uint32_t version, uint64_t n_tensors, uint64_t n_kv) {
    b->n = 0;
    put(b, "GGUF", 4); u32(b, version); u64(b, n_tensors); u64(b, n_kv);
}
static void info(buf_t *b, const char *name, int nd, const int64_t *ne, int type, uint64_t off) {
    str(b, name); u32(b, (uint32_t)nd);
    for (int d = 0; d < nd; d++) u64(b, (uint64_t)ne[d]);
    u32(b, (uint32_t)type); u64(b, off);
}

static hp_gguf *parse(const buf_t *b, char *err, size_t n) { return hp_gguf_parse(b->p, b->n, "t.gguf", err, n); }

// a bad file: refused, one line, with `want` in it
static void refused(const buf_t *b, const char *want, const char *what) {
    char err[512] = "";
    hp_gguf *g = parse(b, err, sizeof err);
    CHECK(!g && strstr(err, want) && !strchr(err, '\n') && !strncmp(err, "t.gguf: ", 8),
          "%s: want a refusal with \"%s\", got %s: %s", what, want, g ? "accepted" : "refused", err);
    hp_gguf_close(g);
}

static const char *seed_dir;   // test_gguf seeds DIR: where the block file is written

static void test_blocks(void) {
    buf_t b = { 0 };
    const int64_t ne32[1] = { 32 };
    const int types[] = { HP_GGML_Q4_0, HP_GGML_Q4_1, HP_GGML_Q5_0, HP_GGML_Q5_1, HP_GGML_Q8_0, HP_GGML_F16, HP_GGML_BF16 };
    const char *names[] = { "q4_0", "q4_1", "q5_0", "q5_1", "q8_0", "f16", "bf16" };
    const int bytes[] = { 18, 20, 22, 24, 34, 64, 64 };
    header(&b, 3, 7, 1);
    kv_str(&b, "general.architecture", "test");
    uint64_t off = 0;
    for (int i = 0; i < 7; i++) { info(&b, names[i], 1, ne32, types[i], off); off += (uint64_t)bytes[i]; off = (off + 31) / 32 * 32; }
    pad(&b, 32);
    const size_t data = b.n;
    const unsigned char d_half[2] = { 0x00, 0x38 }, m_neg1[2] = { 0x00, 0xBC };   // 0.5, -1
    unsigned char qs[16];
    for (int j = 0; j < 16; j++) qs[j] = (unsigned char)(j | ((15 - j) << 4));
    const unsigned char qh[4] = { 0x0F, 0xF0, 0x00, 0xFF };   // the 5th bit: elements 0-3, 12-15, 24-31
    // q4_0: d, qs; q4_1: d, m, qs; q5_0: d, qh, qs; q5_1: d, m, qh, qs
    put(&b, d_half, 2); put(&b, qs, 16); pad(&b, 32);
    put(&b, d_half, 2); put(&b, m_neg1, 2); put(&b, qs, 16); pad(&b, 32);
    put(&b, d_half, 2); put(&b, qh, 4); put(&b, qs, 16); pad(&b, 32);
    put(&b, d_half, 2); put(&b, m_neg1, 2); put(&b, qh, 4); put(&b, qs, 16); pad(&b, 32);
    put(&b, d_half, 2);
    for (int j = 0; j < 32; j++) { const signed char q = (signed char)(j * 7 - 100); put(&b, &q, 1); }
    pad(&b, 32);
    const uint16_t h[4] = { 0x3C00, 0xC000, 0x0001, 0x7BFF }, bf[4] = { 0x3F80, 0xC040, 0x0001, 0x7F7F };   // f16: 1, -2, 2^-24, 65504
    for (int j = 0; j < 32; j++) put(&b, &h[j % 4], 2);
    for (int j = 0; j < 32; j++) put(&b, &bf[j % 4], 2);
    CHECK(b.n == data + 4 * 32 + 64 + 64 + 64, "the block file is %zu bytes", b.n);
    if (seed_dir) {
        char path[512];
        snprintf(path, sizeof path, "%s/blocks.gguf", seed_dir);
        FILE *f = fopen(path, "wb");
        if (f) { fwrite(b.p, 1, b.n, f); fclose(f); }
    }
    char err[512] = "";
    hp_gguf *g = parse(&b, err, sizeof err);
    CHECK(g != NULL, "the block file: %s", err);
    for (int i = 0; g && i < 7; i++) {
        const hp_gguf_tensor *t = hp_gguf_find_tensor(g, names[i]);
        float y[32];
        CHECK(t && hp_gguf_dequantize(g, t, y, 0, err, sizeof err) == 0, "%s: %s", names[i], err);
        int bad = -1;
        float got = 0.0f;
        for (int j = 0; t && j < 32 && bad < 0; j++) {
            const int nib = j < 16 ? j : 15 - (j - 16);
            const int hib = (qh[j / 8] >> (j % 8)) & 1;   // Q5: element j's 5th bit is bit j of qh
            const float want = i == 0 ? (float)(nib - 8) * 0.5f
                             : i == 1 ? (float)nib * 0.5f - 1.0f
                             : i == 2 ? (float)((nib | (hib << 4)) - 16) * 0.5f
                             : i == 3 ? (float)(nib | (hib << 4)) * 0.5f - 1.0f
                             : i == 4 ? (float)(j * 7 - 100) * 0.5f
                             : i == 5 ? (float[]){ 1.0f, -2.0f, ldexpf(1.0f, -24), 65504.0f }[j % 4]
                                      : (float[]){ 1.0f, -3.0f, ldexpf(1.0f, -133), 3.3895314e38f }[j % 4];
            if (y[j] != want) { bad = j; got = y[j]; }
        }
        CHECK(bad < 0, "%s: element %d is %.9g", names[i], bad, (double)got);
    }
    if (g) {
        const hp_gguf_tensor *t = hp_gguf_find_tensor(g, "q4_1");
        float y[32];
        hp_gguf_dequantize(g, t, y, HP_GGUF_BUG_Q4_1_NO_MIN, err, sizeof err);
        CHECK(y[0] == 0.0f && y[1] == 0.5f, "the injected bug drops Q4_1's min: %g %g", y[0], y[1]);
        CHECK(g->version == 3 && g->alignment == 32 && g->data_offset == data, "version %u, alignment %llu, data at %llu",
              g->version, (unsigned long long)g->alignment, (unsigned long long)g->data_offset);
        char s[16];
        CHECK(hp_gguf_kv_str(g, "general.architecture", s, sizeof s) == 0 && !strcmp(s, "test"), "the architecture key");
    }
    hp_gguf_close(g);
    // every truncation of this good file is refused in one line
    int truncs = 0;
    for (size_t n = 0; n < b.n; n++) {
        hp_gguf *t = hp_gguf_parse(b.p, n, "t.gguf", err, sizeof err);
        truncs += t == NULL && err[0] && !strchr(err, '\n');
        hp_gguf_close(t);
    }
    CHECK(truncs == (int)b.n, "%d of %zu truncations refused", truncs, b.n);
    free(b.p);
}

static void test_bad_files(void) {
    buf_t b = { 0 };
    const int64_t ne[2] = { 32, 2 };
    put(&b, "GGUZ", 4); u32(&b, 3); u64(&b, 0); u64(&b, 0);
    refused(&b, "not a GGUF file", "magic");
    header(&b, 1, 0, 0);
    refused(&b, "GGUF version 1", "version 1");
    header(&b, 3, 1000, 0);
    refused(&b, "the header says 1000 tensors", "tensor count");
    header(&b, 3, 0, 1u << 20);
    refused(&b, "metadata pairs", "key count");
    header(&b, 3, 0, 1); u64(&b, 1000); put(&b, "general", 7);
    refused(&b, "a string of 1000 bytes", "key past the end");
    header(&b, 3, 0, 1); str(&b, "k"); u32(&b, 13); u32(&b, 0);
    refused(&b, "value type 13 is not a GGUF type", "value type");
    header(&b, 3, 0, 2); kv_u32(&b, "a", 1); kv_u32(&b, "a", 2);
    refused(&b, "key a appears twice", "duplicate key");
    header(&b, 3, 0, 1); str(&b, "k"); u32(&b, HP_GGUF_KV_ARRAY); u32(&b, HP_GGUF_KV_UINT32); u64(&b, 1u << 30);
    refused(&b, "an array of 1073741824 4-byte values", "array count");
    header(&b, 3, 0, 1); str(&b, "k");
    u32(&b, HP_GGUF_KV_ARRAY);
    for (int d = 0; d < 6; d++) { u32(&b, HP_GGUF_KV_ARRAY); u64(&b, 1); }   // arrays of one array ...
    u32(&b, HP_GGUF_KV_UINT8); u64(&b, 1); put(&b, "x", 1);                 // ... of one u8
    refused(&b, "arrays nested deeper than 4", "nesting");
    header(&b, 3, 0, 1); kv_u32(&b, "general.alignment", 3);
    refused(&b, "general.alignment 3 is not a power of two", "alignment");
    header(&b, 3, 1, 0); info(&b, "w", 2, ne, HP_GGML_F32, 0); pad(&b, 32); put(&b, (char[200]){ 0 }, 200);
    refused(&b, "tensor w: offset 0 + 256 bytes past the file's", "tensor past the end");
    header(&b, 3, 1, 0); info(&b, "w", 2, ne, HP_GGML_F32, 8); pad(&b, 32); put(&b, (char[300]){ 0 }, 300);
    refused(&b, "offset 8 is not a multiple of the alignment 32", "misaligned");
    header(&b, 3, 1, 0); info(&b, "w", 2, ne, 99, 0); pad(&b, 32);
    refused(&b, "ggml type type 99 (id 99)", "unknown type");
    header(&b, 3, 1, 0); info(&b, "w", 2, ne, 16, 0); pad(&b, 32);
    refused(&b, "ggml type IQ2_XXS (id 16), which hp does not read", "an IQ type");
    header(&b, 3, 1, 0); info(&b, "w", 2, (int64_t[]){ 16, 2 }, HP_GGML_Q4_0, 0); pad(&b, 32);
    refused(&b, "a row of 16 elements is not a whole number of Q4_0 blocks of 32", "partial block");
    header(&b, 3, 2, 0); info(&b, "a", 2, ne, HP_GGML_F32, 0); info(&b, "b", 2, ne, HP_GGML_F32, 128); pad(&b, 32);
    put(&b, (char[512]){ 0 }, 512);
    refused(&b, "tensor a (offset 0, 256 bytes) overlaps tensor b at offset 128", "overlap");
    header(&b, 3, 2, 0); info(&b, "a", 2, ne, HP_GGML_F32, 0); info(&b, "a", 2, ne, HP_GGML_F32, 256); pad(&b, 32);
    put(&b, (char[512]){ 0 }, 512);
    refused(&b, "tensor a appears twice", "duplicate tensor");
    header(&b, 3, 1, 0); info(&b, "w", 5, (int64_t[]){ 1, 1, 1, 1, 1 }, HP_GGML_F32, 0);
    refused(&b, "tensor w: 5 dims (1..4)", "dims");
    header(&b, 3, 1, 0); info(&b, "w", 2, (int64_t[]){ (int64_t)1 << 40, (int64_t)1 << 40 }, HP_GGML_F32, 0);
    refused(&b, "the element count passes 2^63", "element overflow");
    free(b.p);
}

// a small llama GGUF by hand: arch, no output.weight (tied), Q8_0 embedding, F32 rest
static void tiny_llama(buf_t *b, const char *arch, int with_q2k) {
    const int D = 32, H = 2, KV = 1, F = 256, V = 64, hd = D / H;
    struct { const char *name; int64_t ne0, ne1; int type; } t[] = {
        { "token_embd.weight", D, V, HP_GGML_Q8_0 }, { "output_norm.weight", D, 1, HP_GGML_F32 },
        { "blk.0.attn_norm.weight", D, 1, HP_GGML_F32 }, { "blk.0.ffn_norm.weight", D, 1, HP_GGML_F32 },
        { "blk.0.attn_q.weight", D, H * hd, HP_GGML_F32 }, { "blk.0.attn_k.weight", D, KV * hd, HP_GGML_F32 },
        { "blk.0.attn_v.weight", D, KV * hd, HP_GGML_F32 }, { "blk.0.attn_output.weight", H * hd, D, HP_GGML_F16 },
        { "blk.0.ffn_gate.weight", D, F, HP_GGML_F32 }, { "blk.0.ffn_up.weight", D, F, HP_GGML_BF16 },
        { "blk.0.ffn_down.weight", F, D, with_q2k ? HP_GGML_Q2_K : HP_GGML_F32 },
    };
    const int n = (int)(sizeof t / sizeof *t);
    header(b, 3, (uint64_t)n, 8);
    kv_str(b, "general.architecture", arch);
    kv_u32(b, "llama.embedding_length", D); kv_u32(b, "llama.block_count", 1);
    kv_u32(b, "llama.attention.head_count", H); kv_u32(b, "llama.attention.head_count_kv", KV);
    kv_u32(b, "llama.feed_forward_length", F); kv_f32(b, "llama.attention.layer_norm_rms_epsilon", 1e-5f);
    kv_u32(b, "general.alignment", 64);
    uint64_t off = 0, sizes[16];
    for (int i = 0; i < n; i++) {
        const int es = t[i].type == HP_GGML_F32 ? 4 : t[i].type == HP_GGML_Q8_0 ? 0 : 2;
        const int64_t numel = t[i].ne0 * t[i].ne1;
        sizes[i] = t[i].type == HP_GGML_Q8_0 ? (uint64_t)numel / 32 * 34 : t[i].type == HP_GGML_Q2_K ? (uint64_t)numel / 256 * 84 : (uint64_t)(numel * es);
        const int nd = t[i].ne1 > 1 ? 2 : 1;
        info(b, t[i].name, nd, (int64_t[]){ t[i].ne0, t[i].ne1 }, t[i].type, off);
        off += sizes[i]; off = (off + 63) / 64 * 64;
    }
    pad(b, 64);
    for (int i = 0; i < n; i++) {
        for (uint64_t k = 0; k < sizes[i]; k += 2) { const uint16_t v = (uint16_t)(0x3000 + (k * 37) % 0x0800); put(b, &v, 2); }
        pad(b, 64);
    }
}

static void test_import(const char *dir) {
    char gg[512], out[512], back[512], err[1024] = "", note[1024] = "";
    buf_t b = { 0 };
    hp_model_config m;
    memset(&m, 0, sizeof m);
    snprintf(m.name, sizeof m.name, "t");
    m.dim = 32; m.n_layers = 1; m.n_heads = 2; m.n_kv_heads = 1; m.ffn_hidden = 256; m.vocab_size = 64;
    m.norm_eps = 1e-5f; m.rope_theta = 10000.0f;
    snprintf(gg, sizeof gg, "%s/t.gguf", dir);
    snprintf(out, sizeof out, "%s/t-hf", dir);
    snprintf(back, sizeof back, "%s/t-back.safetensors", dir);
    tiny_llama(&b, "llama", 0);
    FILE *f = fopen(gg, "wb"); fwrite(b.p, 1, b.n, f); fclose(f);
    int rc = hp_gguf_import(gg, out, HP_DTYPE_FLOAT32, 0, note, sizeof note, err, sizeof err);
    CHECK(rc == 0, "the hand-made llama GGUF: %s", err);
    CHECK(strstr(note, "no output.weight (tied embeddings)") != NULL, "the tied note: %s", note);
    rc = rc ? rc : hp_hf_import(out, &m, back, err, sizeof err);
    CHECK(rc == 0, "its HF folder read back: %s", err);
    if (rc == 0) {
        hp_st *s = hp_st_open(back, err, sizeof err);
        const hp_st_tensor *e = s ? hp_st_get(s, "tok_embeddings.weight") : NULL, *o = s ? hp_st_get(s, "output.weight") : NULL;
        CHECK(e && o && e->numel == o->numel && !memcmp(e->data, o->data, (size_t)e->numel * 4), "lm_head = the embedding");
        if (s) hp_st_close(s);
    }
    tiny_llama(&b, "qwen2", 0);
    f = fopen(gg, "wb"); fwrite(b.p, 1, b.n, f); fclose(f);
    rc = hp_gguf_import(gg, out, HP_DTYPE_FLOAT32, 0, note, sizeof note, err, sizeof err);
    CHECK(rc == HP_EXIT_CONFIG && strstr(err, "general.architecture is \"qwen2\"; hp imports \"llama\" only"), "qwen2: %d %s", rc, err);
    tiny_llama(&b, "llama", 1);
    f = fopen(gg, "wb"); fwrite(b.p, 1, b.n, f); fclose(f);
    rc = hp_gguf_import(gg, out, HP_DTYPE_FLOAT32, 0, note, sizeof note, err, sizeof err);
    CHECK(rc == HP_EXIT_CONFIG && strstr(err, "tensor blk.0.ffn_down.weight is Q2_K, which hp cannot dequantise"), "Q2_K: %d %s", rc, err);
    free(b.p);
}

int main(int argc, char **argv) {
    if (argc == 5 && !strcmp(argv[1], "dequant")) {   // test_gguf dequant FILE TENSOR OUT
        char err[1024];
        hp_gguf *g = hp_gguf_open(argv[2], err, sizeof err);
        if (!g) { printf("test_gguf: %s\n", err); return 2; }
        const hp_gguf_tensor *t = hp_gguf_find_tensor(g, argv[3]);
        float *y = t ? malloc((size_t)t->numel * sizeof *y + 1) : NULL;
        int rc = !t ? 2 : hp_gguf_dequantize(g, t, y, 0, err, sizeof err);
        if (rc) printf("test_gguf: %s\n", t ? err : "no such tensor");
        FILE *f = rc ? NULL : fopen(argv[4], "wb");
        if (f) { fwrite(y, sizeof *y, (size_t)t->numel, f); fclose(f); }
        free(y);
        hp_gguf_close(g);
        return rc;
    }
    char dir[256], cmd[600], model[300], gg[300], hf[300], back[300], err[1024];
    if (argc == 3 && !strcmp(argv[1], "seeds")) {   // test_gguf seeds DIR
        hp_model_config s;
        hp_model_config_by_name("tiny", &s);
        s.dim = 8; s.n_heads = 2; s.n_kv_heads = 1; s.ffn_hidden = 16; s.n_layers = 1;
        snprintf(model, sizeof model, "%s/seed-model.safetensors", argv[2]);
        write_model(&s, model);
        snprintf(gg, sizeof gg, "%s/hp_export_f16.gguf", argv[2]);
        const int rc = hp_gguf_export(model, &s, gg, HP_GGUF_F16, NULL, err, sizeof err);
        if (rc) printf("test_gguf seeds: %s\n", err);
        unlink(model);
        seed_dir = argv[2];
        test_blocks();
        return rc || check_failed;
    }
    snprintf(dir, sizeof dir, "/tmp/hp_test_gguf_%d", (int)getpid());
    snprintf(cmd, sizeof cmd, "rm -rf %s && mkdir -p %s", dir, dir);
    CHECK(system(cmd) == 0, "make %s", dir);
    hp_model_config m;
    hp_model_config_by_name("tiny", &m);
    snprintf(model, sizeof model, "%s/model.safetensors", dir);
    write_model(&m, model);
    const struct { hp_gguf_dtype d; const char *name; int mode; } rt[] = {
        { HP_GGUF_F32, "F32", 0 }, { HP_GGUF_BF16, "BF16", 1 }, { HP_GGUF_F16, "F16", 2 } };
    for (int i = 0; i < 3; i++) {
        snprintf(gg, sizeof gg, "%s/tiny-%s.gguf", dir, rt[i].name);
        snprintf(hf, sizeof hf, "%s/hf-%s", dir, rt[i].name);
        snprintf(back, sizeof back, "%s/back-%s.safetensors", dir, rt[i].name);
        int rc = hp_gguf_export(model, &m, gg, rt[i].d, NULL, err, sizeof err);
        CHECK(rc == 0, "export %s: %s", rt[i].name, err);
        char note[512];
        if (rc == 0) { rc = hp_gguf_import(gg, hf, HP_DTYPE_FLOAT32, 0, note, sizeof note, err, sizeof err); CHECK(rc == 0, "import %s: %s", rt[i].name, err); }
        if (rc == 0) { rc = hp_hf_import(hf, &m, back, err, sizeof err); CHECK(rc == 0, "the folder of %s: %s", rt[i].name, err); }
        if (rc == 0) CHECK(compare(model, back, rt[i].mode), "%s: hp -> GGUF -> hp import -> HF -> hp is not the model (%s)",
                           rt[i].name, rt[i].mode ? "its rounding" : "bit for bit");
        if (i == 0) CHECK(note[0] == '\0', "a GGUF with output.weight gets no note: %s", note);
    }
    // the bug that reads q/k in HF's order moves the rows
    snprintf(gg, sizeof gg, "%s/tiny-F32.gguf", dir);
    snprintf(hf, sizeof hf, "%s/hf-bug", dir);
    snprintf(back, sizeof back, "%s/back-bug.safetensors", dir);
    if (hp_gguf_import(gg, hf, HP_DTYPE_FLOAT32, HP_GGUF_BUG_QK_ORDER, NULL, 0, err, sizeof err) == 0 &&
        hp_hf_import(hf, &m, back, err, sizeof err) == 0) {
        printf("(the injected qk_order bug, expected to differ:)\n");
        CHECK(!compare(model, back, 0), "the qk_order bug left the model as it was");
    }
    test_blocks();
    test_bad_files();
    test_import(dir);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) printf("(could not remove %s)\n", dir);
    return test_summary("test_gguf");
}
