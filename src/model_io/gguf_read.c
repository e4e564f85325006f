// gguf_read.c - a GGUF v2/v3 file read (hyperpar/gguf.h): the header, every metadata pair (all 13
// value types, arrays of them, arrays of arrays), the tensor infos, general.alignment and the
// data section. Nothing is trusted: each count, length and offset is checked against the bytes
// left before it is used, so a bad file is one line naming the rule and the numbers.
// Little-endian throughout, as the format is (a big-endian GGUF shows an absurd version).
// defines: hp_gguf_parse, hp_gguf_open, hp_gguf_close, hp_gguf_find_kv, hp_gguf_find_tensor,
//          hp_gguf_kv_int, hp_gguf_kv_float, hp_gguf_kv_str, hp_gguf_type_name
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "hyperpar/gguf.h"
#include "util/file_io.h"

enum { MAX_NEST = 4, MAX_NAME = 96 };

// ggml's block sizes: elements per block and bytes per block (0: a type this reader refuses)
typedef struct { const char *name; int blck, bytes; } type_info;
static const type_info types[] = {
    [HP_GGML_F32] = { "F32", 1, 4 },      [HP_GGML_F16] = { "F16", 1, 2 },
    [HP_GGML_Q4_0] = { "Q4_0", 32, 18 },  [HP_GGML_Q4_1] = { "Q4_1", 32, 20 },
    [HP_GGML_Q5_0] = { "Q5_0", 32, 22 },  [HP_GGML_Q5_1] = { "Q5_1", 32, 24 },
    [HP_GGML_Q8_0] = { "Q8_0", 32, 34 },  [HP_GGML_Q8_1] = { "Q8_1", 32, 36 },
    [HP_GGML_Q2_K] = { "Q2_K", 256, 84 }, [HP_GGML_Q3_K] = { "Q3_K", 256, 110 },
    [HP_GGML_Q4_K] = { "Q4_K", 256, 144 }, [HP_GGML_Q5_K] = { "Q5_K", 256, 176 },
    [HP_GGML_Q6_K] = { "Q6_K", 256, 210 }, [HP_GGML_Q8_K] = { "Q8_K", 256, 292 },
    [HP_GGML_I8] = { "I8", 1, 1 },        [HP_GGML_I16] = { "I16", 1, 2 },
    [HP_GGML_I32] = { "I32", 1, 4 },      [HP_GGML_I64] = { "I64", 1, 8 },
    [HP_GGML_F64] = { "F64", 1, 8 },      [HP_GGML_BF16] = { "BF16", 1, 2 },
};
enum { N_TYPES = sizeof types / sizeof *types };
// the ids ggml has that this reader does not size (IQ*, TQ*, ...): named in the refusal
static const char *const other_types[][2] = {
    { "16", "IQ2_XXS" }, { "17", "IQ2_XS" }, { "18", "IQ3_XXS" }, { "19", "IQ1_S" }, { "20", "IQ4_NL" },
    { "21", "IQ3_S" }, { "22", "IQ2_S" }, { "23", "IQ4_XS" }, { "29", "IQ1_M" }, { "34", "TQ1_0" }, { "35", "TQ2_0" },
};

const char *hp_gguf_type_name(int type) {
    if (type >= 0 && type < N_TYPES && types[type].name) return types[type].name;
    char id[16];
    snprintf(id, sizeof id, "%d", type);
    for (size_t i = 0; i < sizeof other_types / sizeof *other_types; i++)
        if (!strcmp(id, other_types[i][0])) return other_types[i][1];
    static _Thread_local char buf[32];
    snprintf(buf, sizeof buf, "type %d", type);
    return buf;
}

static int scalar_bytes(int type) {
    switch (type) {
    case HP_GGUF_KV_UINT8: case HP_GGUF_KV_INT8: case HP_GGUF_KV_BOOL: return 1;
    case HP_GGUF_KV_UINT16: case HP_GGUF_KV_INT16: return 2;
    case HP_GGUF_KV_UINT32: case HP_GGUF_KV_INT32: case HP_GGUF_KV_FLOAT32: return 4;
    case HP_GGUF_KV_UINT64: case HP_GGUF_KV_INT64: case HP_GGUF_KV_FLOAT64: return 8;
    default: return 0;
    }
}

typedef struct {
    const unsigned char *p;
    size_t size, at;
    const char *file;
    char *err;
    size_t errlen;
} cursor;

static int fail(cursor *c, const char *fmt, ...) {
    char line[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    snprintf(c->err, c->errlen, "%s: %s", c->file, line);
    return -1;
}

static size_t left(const cursor *c) { return c->size - c->at; }

static int rd(cursor *c, void *out, size_t n, const char *what) {
    if (n > left(c))
        return fail(c, "%s: %zu bytes at offset %zu past the file's %zu", what, n, c->at, c->size);
    memcpy(out, c->p + c->at, n);
    c->at += n;
    return 0;
}
static int rd_u32(cursor *c, uint32_t *v, const char *what) { return rd(c, v, 4, what); }
static int rd_u64(cursor *c, uint64_t *v, const char *what) { return rd(c, v, 8, what); }

// A gguf_string: u64 length, then the bytes (checked to be in the file). *s points at them.
static int rd_str(cursor *c, const char **s, uint64_t *len, const char *what) {
    if (rd_u64(c, len, what) != 0) return -1;
    if (*len > left(c))
        return fail(c, "%s: a string of %llu bytes at offset %zu past the file's %zu", what,
                    (unsigned long long)*len, c->at, c->size);
    *s = (const char *)c->p + c->at;
    c->at += (size_t)*len;
    return 0;
}

// Steps over a value of `type` (its key names it in errors), arrays nested at most MAX_NEST.
static int skip_value(cursor *c, int type, const char *key, int depth) {
    const int sb = scalar_bytes(type);
    if (sb) {
        if ((size_t)sb > left(c))
            return fail(c, "key %s: a %d-byte value at offset %zu past the file's %zu", key, sb, c->at, c->size);
        c->at += (size_t)sb;
        return 0;
    }
    if (type == HP_GGUF_KV_STRING) {
        const char *s = NULL;
        uint64_t n = 0;
        return rd_str(c, &s, &n, key);
    }
    if (type != HP_GGUF_KV_ARRAY) return fail(c, "key %s: value type %d is not a GGUF type (0..12)", key, type);
    if (depth >= MAX_NEST) return fail(c, "key %s: arrays nested deeper than %d", key, MAX_NEST);
    uint32_t et = 0;
    uint64_t n = 0;
    if (rd_u32(c, &et, key) != 0 || rd_u64(c, &n, key) != 0) return -1;
    const int eb = scalar_bytes((int)et);
    if (eb) {
        if (n > left(c) / (size_t)eb)
            return fail(c, "key %s: an array of %llu %d-byte values past the file's %zu (offset %zu)", key,
                        (unsigned long long)n, eb, c->size, c->at);
        c->at += (size_t)n * (size_t)eb;
        return 0;
    }
    if (et != HP_GGUF_KV_STRING && et != HP_GGUF_KV_ARRAY)
        return fail(c, "key %s: array element type %u is not a GGUF type (0..12)", key, et);
    const size_t least = et == HP_GGUF_KV_STRING ? 8 : 12;   // a length / a type and a count
    if (n > left(c) / least)
        return fail(c, "key %s: an array of %llu elements of at least %zu bytes past the file's %zu (offset %zu)",
                    key, (unsigned long long)n, least, c->size, c->at);
    for (uint64_t i = 0; i < n; i++)
        if (skip_value(c, (int)et, key, depth + 1) != 0) return -1;
    return 0;
}

// A key or a name shown in an error line: at most 64 bytes, control bytes as '?'.
static const char *shown(const char *s, uint64_t n, char *buf, size_t bn) {
    size_t k = 0;
    for (uint64_t i = 0; i < n && k + 1 < bn && i < 64; i++) {
        const unsigned char ch = (unsigned char)s[i];
        buf[k++] = ch < 32 || ch == 127 ? '?' : (char)ch;
    }
    buf[k] = '\0';
    return buf;
}

static int cmp_kv(const void *a, const void *b) {
    const hp_gguf_kv *x = *(const hp_gguf_kv *const *)a, *y = *(const hp_gguf_kv *const *)b;
    const size_t n = x->key_len < y->key_len ? x->key_len : y->key_len;
    const int r = memcmp(x->key, y->key, n);
    return r ? r : (x->key_len > y->key_len) - (x->key_len < y->key_len);
}
static int cmp_name(const void *a, const void *b) {
    return strcmp((*(const hp_gguf_tensor *const *)a)->name, (*(const hp_gguf_tensor *const *)b)->name);
}
static int cmp_offset(const void *a, const void *b) {
    const hp_gguf_tensor *x = *(const hp_gguf_tensor *const *)a, *y = *(const hp_gguf_tensor *const *)b;
    return (x->offset > y->offset) - (x->offset < y->offset);
}

static int parse_kvs(cursor *c, hp_gguf *g) {
    char kb[80];
    for (int64_t i = 0; i < g->n_kv; i++) {
        hp_gguf_kv *kv = &g->kv[i];
        const char *key = NULL;
        uint64_t klen = 0;
        char what[48];
        snprintf(what, sizeof what, "metadata pair %lld's key", (long long)i);
        if (rd_str(c, &key, &klen, what) != 0) return -1;
        if (klen == 0) return fail(c, "metadata pair %lld: an empty key", (long long)i);
        shown(key, klen, kb, sizeof kb);
        uint32_t type = 0;
        if (rd_u32(c, &type, kb) != 0) return -1;
        kv->key = key; kv->key_len = (size_t)klen; kv->type = (int)type; kv->arr_type = -1; kv->n = 1;
        const size_t start = c->at;
        if (type == HP_GGUF_KV_ARRAY) {   // the element type and count, then the walk checks it all
            uint32_t et = 0;
            uint64_t n = 0;
            if (rd_u32(c, &et, kb) != 0 || rd_u64(c, &n, kb) != 0) return -1;
            kv->arr_type = (int)et; kv->n = n; kv->val = c->p + c->at;
            c->at = start;
        } else if (type == HP_GGUF_KV_STRING) {
            uint64_t n = 0;
            if (rd_u64(c, &n, kb) != 0) return -1;
            kv->n = n; kv->val = c->p + c->at;
            c->at = start;
        } else {
            kv->val = c->p + c->at;
        }
        if (skip_value(c, (int)type, kb, 0) != 0) return -1;
    }
    if (g->n_kv > 1) {   // unique keys
        const hp_gguf_kv **s = malloc((size_t)g->n_kv * sizeof *s);
        if (!s) return fail(c, "out of memory (%lld keys)", (long long)g->n_kv);
        for (int64_t i = 0; i < g->n_kv; i++) s[i] = &g->kv[i];
        qsort(s, (size_t)g->n_kv, sizeof *s, cmp_kv);
        for (int64_t i = 1; i < g->n_kv; i++)
            if (!cmp_kv(&s[i - 1], &s[i])) {
                shown(s[i]->key, s[i]->key_len, kb, sizeof kb);
                free(s);
                return fail(c, "key %s appears twice", kb);
            }
        free(s);
    }
    return 0;
}

static int parse_tensor_infos(cursor *c, hp_gguf *g) {
    char nb[80];
    for (int64_t i = 0; i < g->n_tensors; i++) {
        hp_gguf_tensor *t = &g->tensors[i];
        const char *name = NULL;
        uint64_t len = 0;
        char what[48];
        snprintf(what, sizeof what, "tensor info %lld's name", (long long)i);
        if (rd_str(c, &name, &len, what) != 0) return -1;
        shown(name, len, nb, sizeof nb);
        if (len == 0 || len >= MAX_NAME)
            return fail(c, "tensor info %lld: a name of %llu bytes (1..%d)", (long long)i, (unsigned long long)len, MAX_NAME - 1);
        for (uint64_t k = 0; k < len; k++)   // (so that an error line naming it stays one line)
            if ((unsigned char)name[k] < 32 || name[k] == 127)
                return fail(c, "tensor info %lld: a control byte in the name %s", (long long)i, nb);
        memcpy(t->name, name, (size_t)len);
        t->name[len] = '\0';
        uint32_t nd = 0, type = 0;
        if (rd_u32(c, &nd, t->name) != 0) return -1;
        if (nd < 1 || nd > 4) return fail(c, "tensor %s: %u dims (1..4)", t->name, nd);
        t->n_dims = (int)nd;
        for (int d = 0; d < 4; d++) t->ne[d] = 1;
        uint64_t numel = 1;
        for (uint32_t d = 0; d < nd; d++) {
            uint64_t ne = 0;
            if (rd_u64(c, &ne, t->name) != 0) return -1;
            if (ne > (uint64_t)INT64_MAX || (ne && numel > (uint64_t)INT64_MAX / ne))
                return fail(c, "tensor %s: dim %u of %llu: the element count passes 2^63", t->name, d, (unsigned long long)ne);
            t->ne[d] = (int64_t)ne;
            numel *= ne;
        }
        if (rd_u32(c, &type, t->name) != 0 || rd_u64(c, &t->offset, t->name) != 0) return -1;
        t->type = (int)type;
        t->numel = (int64_t)numel;
        if (type >= N_TYPES || !types[type].name)
            return fail(c, "tensor %s: ggml type %s (id %u), which hp does not read", t->name, hp_gguf_type_name((int)type), type);
        const type_info *ti = &types[type];
        if (t->ne[0] % ti->blck != 0)
            return fail(c, "tensor %s: a row of %lld elements is not a whole number of %s blocks of %d", t->name,
                        (long long)t->ne[0], ti->name, ti->blck);
        // bytes = blocks of a row * block bytes * rows; the element count < 2^63 bounds the blocks
        const uint64_t blocks = numel / (uint64_t)ti->blck;
        if (blocks > (uint64_t)INT64_MAX / (uint64_t)ti->bytes)
            return fail(c, "tensor %s: %llu %s blocks pass 2^63 bytes", t->name, (unsigned long long)blocks, ti->name);
        t->nbytes = blocks * (uint64_t)ti->bytes;
        if (t->offset % g->alignment != 0)
            return fail(c, "tensor %s: offset %llu is not a multiple of the alignment %llu", t->name,
                        (unsigned long long)t->offset, (unsigned long long)g->alignment);
    }
    return 0;
}

// general.alignment before the tensors need it: a UINT32 power of two (32 when absent)
static int read_alignment(cursor *c, hp_gguf *g) {
    g->alignment = 32;
    const hp_gguf_kv *kv = hp_gguf_find_kv(g, "general.alignment");
    if (!kv) return 0;
    if (kv->type != HP_GGUF_KV_UINT32) return fail(c, "general.alignment has value type %d, not UINT32 (4)", kv->type);
    uint32_t a;
    memcpy(&a, kv->val, 4);
    if (a == 0 || (a & (a - 1)) != 0) return fail(c, "general.alignment %u is not a power of two", a);
    g->alignment = a;
    return 0;
}

static int place_tensors(cursor *c, hp_gguf *g) {
    const uint64_t at = c->at, pad = (g->alignment - at % g->alignment) % g->alignment;
    if (pad > left(c) && g->n_tensors > 0)
        return fail(c, "the data section starts at %llu (aligned to %llu), past the file's %zu",
                    (unsigned long long)(at + pad), (unsigned long long)g->alignment, c->size);
    g->data_offset = at + pad > c->size ? c->size : at + pad;
    const uint64_t room = c->size - g->data_offset;
    for (int64_t i = 0; i < g->n_tensors; i++) {
        hp_gguf_tensor *t = &g->tensors[i];
        if (t->offset > room || t->nbytes > room - t->offset)
            return fail(c, "tensor %s: offset %llu + %llu bytes past the file's %zu (data at %llu)", t->name,
                        (unsigned long long)t->offset, (unsigned long long)t->nbytes, c->size,
                        (unsigned long long)g->data_offset);
        t->data = c->p + g->data_offset + t->offset;
    }
    if (g->n_tensors < 2) return 0;
    hp_gguf_tensor **s = malloc((size_t)g->n_tensors * sizeof *s);
    if (!s) return fail(c, "out of memory (%lld tensors)", (long long)g->n_tensors);
    for (int64_t i = 0; i < g->n_tensors; i++) s[i] = &g->tensors[i];
    int rc = 0;
    qsort(s, (size_t)g->n_tensors, sizeof *s, cmp_name);
    for (int64_t i = 1; i < g->n_tensors && !rc; i++)
        if (!strcmp(s[i - 1]->name, s[i]->name)) rc = fail(c, "tensor %s appears twice", s[i]->name);
    qsort(s, (size_t)g->n_tensors, sizeof *s, cmp_offset);
    for (int64_t i = 1; i < g->n_tensors && !rc; i++)
        if (s[i - 1]->nbytes > 0 && s[i]->nbytes > 0 && s[i - 1]->offset + s[i - 1]->nbytes > s[i]->offset)
            rc = fail(c, "tensor %s (offset %llu, %llu bytes) overlaps tensor %s at offset %llu", s[i - 1]->name,
                      (unsigned long long)s[i - 1]->offset, (unsigned long long)s[i - 1]->nbytes, s[i]->name,
                      (unsigned long long)s[i]->offset);
    free(s);
    return rc;
}

hp_gguf *hp_gguf_parse(const unsigned char *data, size_t size, const char *file, char *err, size_t errlen) {
    cursor c = { data, size, 0, file ? file : "gguf", err, errlen };
    if (size < 4 || memcmp(data, "GGUF", 4) != 0) {
        fail(&c, "not a GGUF file (its first 4 bytes are not \"GGUF\"; %zu bytes)", size);
        return NULL;
    }
    c.at = 4;
    uint32_t version = 0;
    uint64_t n_tensors = 0, n_kv = 0;
    if (rd_u32(&c, &version, "the header's version") != 0) return NULL;
    if (version != 2 && version != 3) {
        fail(&c, "GGUF version %u; hp reads versions 2 and 3%s", version,
             version == 1 ? " (v1's 32-bit counts are obsolete)" : version > 0xFFFF ? " (a big-endian file?)" : "");
        return NULL;
    }
    if (rd_u64(&c, &n_tensors, "the header's tensor count") != 0 || rd_u64(&c, &n_kv, "the header's key count") != 0)
        return NULL;
    // each pair takes at least 13 bytes (key length, 1 byte of key, type, 0 bytes of string
    // length... a u8 value), each tensor info at least 33 (name length + 1, dims, one dim, type, offset)
    if (n_kv > left(&c) / 13) {
        fail(&c, "the header says %llu metadata pairs; the %zu bytes left hold at most %zu", (unsigned long long)n_kv,
             left(&c), left(&c) / 13);
        return NULL;
    }
    if (n_tensors > left(&c) / 33) {
        fail(&c, "the header says %llu tensors; the %zu bytes left hold at most %zu tensor infos",
             (unsigned long long)n_tensors, left(&c), left(&c) / 33);
        return NULL;
    }
    hp_gguf *g = calloc(1, sizeof *g);
    if (!g) { fail(&c, "out of memory"); return NULL; }
    snprintf(g->file, sizeof g->file, "%s", c.file);
    g->version = version; g->n_kv = (int64_t)n_kv; g->n_tensors = (int64_t)n_tensors;
    g->bytes = data; g->size = size;
    g->kv = calloc(n_kv ? n_kv : 1, sizeof *g->kv);
    g->tensors = calloc(n_tensors ? n_tensors : 1, sizeof *g->tensors);
    int rc = g->kv && g->tensors ? 0 : fail(&c, "out of memory (%llu pairs, %llu tensors)",
                                             (unsigned long long)n_kv, (unsigned long long)n_tensors);
    if (rc == 0) rc = parse_kvs(&c, g);
    if (rc == 0) rc = read_alignment(&c, g);
    if (rc == 0) rc = parse_tensor_infos(&c, g);
    if (rc == 0) rc = place_tensors(&c, g);
    if (rc != 0) { hp_gguf_close(g); return NULL; }
    return g;
}

hp_gguf *hp_gguf_open(const char *path, char *err, size_t errlen) {
    unsigned char *buf = NULL;
    size_t len = 0;
    const char *why = NULL;
    if (hp_file_read(path, &buf, &len, &why) != 0) {
        snprintf(err, errlen, "cannot read %s: %s", path, why ? why : "read error");
        return NULL;
    }
    hp_gguf *g = hp_gguf_parse(buf, len, path, err, errlen);
    if (!g) { free(buf); return NULL; }
    g->owned = buf;
    return g;
}

void hp_gguf_close(hp_gguf *g) {
    if (!g) return;
    free(g->kv);
    free(g->tensors);
    free(g->owned);
    free(g);
}

const hp_gguf_kv *hp_gguf_find_kv(const hp_gguf *g, const char *key) {
    const size_t n = strlen(key);
    for (int64_t i = 0; i < g->n_kv; i++)
        if (g->kv[i].key_len == n && !memcmp(g->kv[i].key, key, n)) return &g->kv[i];
    return NULL;
}

const hp_gguf_tensor *hp_gguf_find_tensor(const hp_gguf *g, const char *name) {
    for (int64_t i = 0; i < g->n_tensors; i++)
        if (!strcmp(g->tensors[i].name, name)) return &g->tensors[i];
    return NULL;
}

int hp_gguf_kv_int(const hp_gguf *g, const char *key, int64_t *out) {
    const hp_gguf_kv *kv = hp_gguf_find_kv(g, key);
    if (!kv) return 1;
    const unsigned char *p = kv->val;
    uint8_t u8; int8_t i8; uint16_t u16; int16_t i16; uint32_t u32; int32_t i32; uint64_t u64; int64_t i64;
    switch (kv->type) {
    case HP_GGUF_KV_UINT8: case HP_GGUF_KV_BOOL: memcpy(&u8, p, 1); *out = u8; return 0;
    case HP_GGUF_KV_INT8: memcpy(&i8, p, 1); *out = i8; return 0;
    case HP_GGUF_KV_UINT16: memcpy(&u16, p, 2); *out = u16; return 0;
    case HP_GGUF_KV_INT16: memcpy(&i16, p, 2); *out = i16; return 0;
    case HP_GGUF_KV_UINT32: memcpy(&u32, p, 4); *out = u32; return 0;
    case HP_GGUF_KV_INT32: memcpy(&i32, p, 4); *out = i32; return 0;
    case HP_GGUF_KV_UINT64: memcpy(&u64, p, 8); if (u64 > (uint64_t)INT64_MAX) return -1; *out = (int64_t)u64; return 0;
    case HP_GGUF_KV_INT64: memcpy(&i64, p, 8); *out = i64; return 0;
    default: return -1;
    }
}

int hp_gguf_kv_float(const hp_gguf *g, const char *key, double *out) {
    const hp_gguf_kv *kv = hp_gguf_find_kv(g, key);
    if (!kv) return 1;
    if (kv->type == HP_GGUF_KV_FLOAT32) { float f; memcpy(&f, kv->val, 4); *out = f; return 0; }
    if (kv->type == HP_GGUF_KV_FLOAT64) { memcpy(out, kv->val, 8); return 0; }
    int64_t i;
    if (kv->type != HP_GGUF_KV_BOOL && hp_gguf_kv_int(g, key, &i) == 0) { *out = (double)i; return 0; }
    return -1;
}

int hp_gguf_kv_str(const hp_gguf *g, const char *key, char *buf, size_t n) {
    const hp_gguf_kv *kv = hp_gguf_find_kv(g, key);
    if (!kv) return 1;
    if (kv->type != HP_GGUF_KV_STRING || n == 0) return -1;
    const size_t k = kv->n < n - 1 ? (size_t)kv->n : n - 1;
    memcpy(buf, kv->val, k);
    buf[k] = '\0';
    return 0;
}
