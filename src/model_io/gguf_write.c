// gguf_write.c - hp's full model as GGUF v3 for llama.cpp (hyperpar/gguf.h): the header, the
// metadata (the llama architecture's keys, the vocabulary), the tensor infos, then the tensors,
// each at an offset aligned to general.alignment. Little-endian throughout, as the format is.
// defines: hp_gguf_export
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "hyperpar/bf16.h"
#include "hyperpar/dims.h"
#include "hyperpar/gguf.h"
#include "hyperpar/safetensors.h"
#include "model_io/model_tensors.h"

enum { GGUF_VERSION = 3, ALIGN = 32 };
enum { T_UINT32 = 4, T_INT32 = 5, T_FLOAT32 = 6, T_STRING = 8, T_ARRAY = 9 };   // value types

typedef struct { FILE *f; int bad; } out_t;
static void put(out_t *o, const void *p, size_t n) { if (!o->bad && fwrite(p, 1, n, o->f) != n) o->bad = 1; }
static void put_u32(out_t *o, uint32_t v) { put(o, &v, 4); }
static void put_u64(out_t *o, uint64_t v) { put(o, &v, 8); }
static void put_str(out_t *o, const char *s) { put_u64(o, strlen(s)); put(o, s, strlen(s)); }
static void kv_u32(out_t *o, const char *k, uint32_t v) { put_str(o, k); put_u32(o, T_UINT32); put_u32(o, v); }
static void kv_f32(out_t *o, const char *k, float v) { put_str(o, k); put_u32(o, T_FLOAT32); put(o, &v, 4); }
static void kv_str(out_t *o, const char *k, const char *v) { put_str(o, k); put_u32(o, T_STRING); put_str(o, v); }
static void pad_to(out_t *o, uint64_t *at, uint64_t align) {
    static const char zeros[ALIGN];
    const uint64_t n = (align - *at % align) % align;
    put(o, zeros, n);
    *at += n;
}

// IEEE binary16 of f, round to nearest even (overflow to infinity, NaN kept a NaN).
static uint16_t f16_from_float(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    const uint32_t sign = (x >> 16) & 0x8000u, exp = (x >> 23) & 0xFFu;
    uint32_t mant = x & 0x7FFFFFu;
    if (exp == 0xFF) return (uint16_t)(sign | 0x7C00u | (mant ? 0x200u : 0));
    const int e = (int)exp - 127 + 15;
    if (e >= 31) return (uint16_t)(sign | 0x7C00u);
    uint32_t h, rem, mid;
    if (e <= 0) {   // a subnormal half (or zero): units of 2^-24
        if (e < -10) return (uint16_t)sign;
        mant |= 0x800000u;
        const int shift = 14 - e;
        h = mant >> shift; rem = mant & ((1u << shift) - 1); mid = 1u << (shift - 1);
    } else {
        h = ((uint32_t)e << 10) | (mant >> 13); rem = mant & 0x1FFFu; mid = 0x1000u;
    }
    if (rem > mid || (rem == mid && (h & 1u))) h++;   // (a carry into the exponent is right)
    return (uint16_t)(sign | h);
}

static float value_at(const hp_st_tensor *t, int64_t i) {
    if (t->dtype == HP_DT_F32) { float v; memcpy(&v, (const unsigned char *)t->data + 4 * i, 4); return v; }
    hp_bf16 b;
    memcpy(&b, (const unsigned char *)t->data + 2 * i, 2);
    return hp_bf16_to_float(b);
}

// The type a tensor is written in: the 2-D weights in dtype, the norms (1-D) in F32.
static hp_gguf_dtype type_of(const hp_tensor_spec *s, hp_gguf_dtype dtype) { return s->ndim == 2 ? dtype : HP_GGUF_F32; }
static size_t type_bytes(hp_gguf_dtype t) { return t == HP_GGUF_F32 ? 4 : 2; }

static void put_tensor(out_t *o, const hp_st_tensor *t, int64_t n, hp_gguf_dtype type) {
    enum { CHUNK = 4096 };
    unsigned char buf[CHUNK * 4];
    for (int64_t i0 = 0; i0 < n; i0 += CHUNK) {
        const int64_t m = n - i0 < CHUNK ? n - i0 : CHUNK;
        for (int64_t i = 0; i < m; i++) {
            const float v = value_at(t, i0 + i);
            if (type == HP_GGUF_F32) memcpy(buf + 4 * i, &v, 4);
            else {
                const uint16_t h = type == HP_GGUF_F16 ? f16_from_float(v) : hp_bf16_from_float(v);
                memcpy(buf + 2 * i, &h, 2);
            }
        }
        put(o, buf, (size_t)m * type_bytes(type));
    }
}

int hp_gguf_export(const char *hp_file, const hp_model_config *m, const char *out_path,
                   hp_gguf_dtype dtype, const hp_gguf_vocab *vocab, char *err, size_t errlen) {
    if (m->num_experts > 0 || m->rope_factor > 0.0f) {
        snprintf(err, errlen, "hp export --format gguf: %s %s; only dense models with plain RoPE are "
                 "written to GGUF", m->name, m->num_experts > 0 ? "is a MoE model" : "rescales RoPE (rope_scaling)");
        return HP_EXIT_CONFIG;
    }
    if (dtype != HP_GGUF_F32 && dtype != HP_GGUF_F16 && dtype != HP_GGUF_BF16) {
        snprintf(err, errlen, "hp export --format gguf: dtype %d is not F32, F16 or BF16", (int)dtype);
        return HP_EXIT_CONFIG;
    }
    if (vocab ? vocab->n != m->vocab_size : m->vocab_size != 256) {
        snprintf(err, errlen, "hp export --format gguf: the vocabulary has %d pieces, the model's vocab_size "
                 "is %d (a byte vocabulary needs 256; give the tokenizer)", vocab ? vocab->n : 256, m->vocab_size);
        return HP_EXIT_CONFIG;
    }
    hp_tensor_spec *specs = NULL;
    int n = 0;
    hp_st *f = NULL;
    int rc = hp_model_file_open(hp_file, m, &f, &specs, &n, err, errlen);
    if (rc != 0) return rc;
    out_t o = { rc == 0 ? fopen(out_path, "wb") : NULL, 0 };
    if (rc == 0 && !o.f) { snprintf(err, errlen, "cannot write %s", out_path); rc = HP_EXIT_FAIL; }
    if (rc == 0) {
        const uint64_t n_kv = 20 + (vocab ? 1 : 0);   // (the keys below, one by one)
        put(&o, "GGUF", 4);
        put_u32(&o, GGUF_VERSION);
        put_u64(&o, (uint64_t)n);
        put_u64(&o, n_kv);
        kv_str(&o, "general.architecture", "llama");
        kv_str(&o, "general.name", m->name);
        kv_u32(&o, "general.file_type", dtype == HP_GGUF_F32 ? 0 : dtype == HP_GGUF_F16 ? 1 : 32);
        kv_u32(&o, "general.alignment", ALIGN);
        kv_u32(&o, "llama.vocab_size", (uint32_t)m->vocab_size);
        kv_u32(&o, "llama.context_length", 2048);
        kv_u32(&o, "llama.embedding_length", (uint32_t)m->dim);
        kv_u32(&o, "llama.block_count", (uint32_t)m->n_layers);
        kv_u32(&o, "llama.feed_forward_length", (uint32_t)m->ffn_hidden);
        kv_u32(&o, "llama.rope.dimension_count", (uint32_t)(m->dim / m->n_heads));
        kv_u32(&o, "llama.attention.head_count", (uint32_t)m->n_heads);
        kv_u32(&o, "llama.attention.head_count_kv", (uint32_t)m->n_kv_heads);
        kv_f32(&o, "llama.attention.layer_norm_rms_epsilon", m->norm_eps);
        kv_f32(&o, "llama.rope.freq_base", m->rope_theta);
        kv_str(&o, "tokenizer.ggml.model", "llama");
        char piece[16];
        put_str(&o, "tokenizer.ggml.tokens"); put_u32(&o, T_ARRAY); put_u32(&o, T_STRING); put_u64(&o, (uint64_t)m->vocab_size);
        for (int i = 0; i < m->vocab_size; i++) {
            if (vocab) put_str(&o, vocab->pieces[i]);
            else { snprintf(piece, sizeof piece, "<0x%02X>", i); put_str(&o, piece); }
        }
        put_str(&o, "tokenizer.ggml.scores"); put_u32(&o, T_ARRAY); put_u32(&o, T_FLOAT32); put_u64(&o, (uint64_t)m->vocab_size);
        for (int i = 0; i < m->vocab_size; i++) { const float s = vocab ? vocab->scores[i] : 0.0f; put(&o, &s, 4); }
        put_str(&o, "tokenizer.ggml.token_type"); put_u32(&o, T_ARRAY); put_u32(&o, T_INT32); put_u64(&o, (uint64_t)m->vocab_size);
        for (int i = 0; i < m->vocab_size; i++) { const int32_t t = vocab ? vocab->types[i] : 6; put(&o, &t, 4); }
        kv_u32(&o, "tokenizer.ggml.bos_token_id", (uint32_t)(vocab ? vocab->bos : 1));
        kv_u32(&o, "tokenizer.ggml.eos_token_id", (uint32_t)(vocab ? vocab->eos : 2));
        if (vocab) kv_u32(&o, "tokenizer.ggml.unknown_token_id", (uint32_t)vocab->unk);
        // the tensor infos: name, dims (the shape reversed), type, offset in the data section
        uint64_t off = 0;
        for (int i = 0; i < n; i++) {
            const hp_tensor_spec *s = &specs[i];
            put_str(&o, s->gguf);
            put_u32(&o, (uint32_t)s->ndim);
            if (s->ndim == 2) { put_u64(&o, (uint64_t)s->shape[1]); put_u64(&o, (uint64_t)s->shape[0]); }
            else put_u64(&o, (uint64_t)s->shape[0]);
            put_u32(&o, (uint32_t)type_of(s, dtype));
            put_u64(&o, off);
            off += (uint64_t)hp_tensor_spec_numel(s) * type_bytes(type_of(s, dtype));
            off += (ALIGN - off % ALIGN) % ALIGN;
        }
        uint64_t at = (uint64_t)ftell(o.f);
        pad_to(&o, &at, ALIGN);
        for (int i = 0; i < n; i++) {
            const int64_t numel = hp_tensor_spec_numel(&specs[i]);
            put_tensor(&o, hp_st_get(f, specs[i].hp), numel, type_of(&specs[i], dtype));
            at += (uint64_t)numel * type_bytes(type_of(&specs[i], dtype));
            pad_to(&o, &at, ALIGN);
        }
        if (fclose(o.f) != 0) o.bad = 1;
        if (o.bad) { snprintf(err, errlen, "cannot write %s", out_path); rc = HP_EXIT_FAIL; }
    }
    free(specs);
    hp_st_close(f);
    return rc;
}
