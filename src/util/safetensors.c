// safetensors.c - reader and writer of the safetensors format, the interchange of model.md:
//   [u64 little-endian N][N bytes of UTF-8 JSON][data section]
//   JSON: {"__metadata__": {str: str}, name: {"dtype": "F32", "shape": [..],
//          "data_offsets": [begin, end]}, ...}, offsets relative to the data section.
// The reader trusts nothing in the file: every length, offset and shape is checked before any
// byte of data is touched, and a bad file gives NULL plus one line naming the tensor and the
// problem. The writer lays tensors out in the order added, back to back, and pads the header
// with spaces to a multiple of 8 bytes (allowed by the format) so F32/I32 data stay aligned.
// defines: hp_st_open/open_mem/close/count/at/get/metadata, hp_st_writer_init/add/metadata/save/free
#include "hyperpar/safetensors.h"
#include "util/file_io.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// data are copied to and from memory as is, and the format is little-endian
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "safetensors.c assumes a little-endian host"
#endif

#define ST_MAX_DIMS 8
#define ST_MAX_INT  9007199254740992.0 // 2^53: JSON numbers are doubles in cJSON

// ----------------------------------------------------------------------------
// dtypes of the format; F32, I32 and BF16 map to an hp_dtype of their own

static const struct { const char *name; int size; hp_dtype dt; } st_dtypes[] = {
    {"F32", 4, HP_DT_F32},    {"I32", 4, HP_DT_I32},
    {"F64", 8, HP_DT_OTHER},  {"I64", 8, HP_DT_OTHER}, {"U64", 8, HP_DT_OTHER},
    {"F16", 2, HP_DT_OTHER},  {"BF16", 2, HP_DT_BF16}, {"I16", 2, HP_DT_OTHER},
    {"U16", 2, HP_DT_OTHER},  {"U32", 4, HP_DT_OTHER},  {"I8", 1, HP_DT_OTHER},
    {"U8", 1, HP_DT_OTHER},   {"BOOL", 1, HP_DT_OTHER}, {"F8_E4M3", 1, HP_DT_OTHER},
    {"F8_E5M2", 1, HP_DT_OTHER},
};
#define ST_N_DTYPES ((int)(sizeof st_dtypes / sizeof st_dtypes[0]))

static int dtype_lookup(const char *name) {
    for (int i = 0; i < ST_N_DTYPES; i++)
        if (strcmp(st_dtypes[i].name, name) == 0) return i;
    return -1;
}

// A name from the file, safe to print on one line: control bytes become '?', long names are cut.
static const char *printable(const char *s, char *buf, size_t n) {
    size_t i = 0;
    for (; s && s[i] && i + 4 < n; i++) buf[i] = ((unsigned char)s[i] < 32 || s[i] == 127) ? '?' : s[i];
    if (s && s[i]) { buf[i++] = '.'; buf[i++] = '.'; buf[i++] = '.'; }
    buf[i] = '\0';
    return buf;
}

static void format_shape(char *buf, size_t n, int ndim, const int64_t *shape) {
    size_t off = (size_t)snprintf(buf, n, "[");
    for (int d = 0; d < ndim && off < n; d++)
        off += (size_t)snprintf(buf + off, n - off, d ? ", %lld" : "%lld", (long long)shape[d]);
    if (off < n) snprintf(buf + off, n - off, "]");
}

// ----------------------------------------------------------------------------
// reader

struct hp_st {
    unsigned char *raw;        // (file_len,) the whole file
    hp_st_tensor  *tensors;    // (n,) in file order
    void         **copies;     // (n,) aligned copies of misaligned tensors, else NULL
    int           *by_name;    // (n,) indices sorted by name, for hp_st_get
    int            n;
    char         **meta_keys, **meta_vals; // (n_meta,)
    int            n_meta;
};

// one line "<path>: <message>" into err
static void st_fail(char *err, size_t errlen, const char *path, const char *fmt, ...) {
    if (!errlen) return;
    int off = snprintf(err, errlen, "%s: ", path);
    if (off < 0 || (size_t)off >= errlen) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err + off, errlen - (size_t)off, fmt, ap);
    va_end(ap);
}


// A JSON number that is an exact integer in [0, 2^53].
static int json_uint(const cJSON *item, int64_t *out) {
    if (!cJSON_IsNumber(item)) return -1;
    double v = item->valuedouble;
    if (!isfinite(v) || v < 0 || v > ST_MAX_INT || v != floor(v)) return -1;
    *out = (int64_t)v;
    return 0;
}

void hp_st_close(hp_st *f) {
    if (!f) return;
    for (int i = 0; i < f->n; i++) {
        free((char *)f->tensors[i].name);
        if (f->copies) free(f->copies[i]);
    }
    for (int i = 0; i < f->n_meta; i++) { free(f->meta_keys[i]); free(f->meta_vals[i]); }
    free(f->meta_keys); free(f->meta_vals);
    free(f->tensors); free(f->copies); free(f->by_name);
    free(f->raw);
    free(f);
}

static char *dup_str(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

// (name, byte range, index) of one tensor: sorted by name to find repeats and serve hp_st_get,
// and by offset to find overlaps, without a file-level pointer for qsort to compare through.
typedef struct { const char *name; int64_t begin, end; int i; } st_key;
static int cmp_name(const void *a, const void *b) {
    return strcmp(((const st_key *)a)->name, ((const st_key *)b)->name);
}
static int cmp_begin(const void *a, const void *b) {
    const st_key *x = a, *y = b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    return x->end < y->end ? -1 : (x->end > y->end);
}

// Parses one tensor entry into t. 0 ok; else one line in err.
static int parse_tensor(const cJSON *entry, hp_st_tensor *t, int64_t *begin, int64_t *end,
                        int64_t data_size, const unsigned char *data, const char *path,
                        char *err, size_t errlen) {
    char nb[96];
    const char *nm = printable(entry->string, nb, sizeof nb);
    if (!cJSON_IsObject(entry)) {
        st_fail(err, errlen, path, "tensor '%s': entry is not a JSON object", nm);
        return -1;
    }
    const cJSON *jd = cJSON_GetObjectItemCaseSensitive(entry, "dtype");
    const cJSON *js = cJSON_GetObjectItemCaseSensitive(entry, "shape");
    const cJSON *jo = cJSON_GetObjectItemCaseSensitive(entry, "data_offsets");
    if (!cJSON_IsString(jd) || !jd->valuestring) {
        st_fail(err, errlen, path, "tensor '%s': missing \"dtype\" string", nm);
        return -1;
    }
    int di = dtype_lookup(jd->valuestring);
    if (di < 0) {
        char db[40];
        st_fail(err, errlen, path, "tensor '%s': unknown dtype '%s'", nm, printable(jd->valuestring, db, sizeof db));
        return -1;
    }
    if (!cJSON_IsArray(js)) {
        st_fail(err, errlen, path, "tensor '%s': missing \"shape\" array", nm);
        return -1;
    }
    int ndim = cJSON_GetArraySize(js);
    if (ndim > ST_MAX_DIMS) {
        st_fail(err, errlen, path, "tensor '%s': shape has %d dims, at most %d are supported", nm, ndim, ST_MAX_DIMS);
        return -1;
    }
    t->dtype = st_dtypes[di].dt;
    t->ndim = ndim;
    t->numel = 1;
    int d = 0;
    int overflow = 0;
    for (const cJSON *x = js->child; x; x = x->next, d++) {
        if (json_uint(x, &t->shape[d]) != 0) {
            st_fail(err, errlen, path, "tensor '%s': shape entry %d is not a non-negative integer", nm, d);
            return -1;
        }
        // bytes must fit in int64: a shape is too big long before that matters
        if (t->shape[d] > 0 && t->numel > (INT64_MAX / 16) / t->shape[d]) overflow = 1;
        else t->numel *= t->shape[d];
    }
    char sb[200];
    format_shape(sb, sizeof sb, ndim, t->shape);
    if (overflow) {
        st_fail(err, errlen, path, "tensor '%s': shape %s is too large", nm, sb);
        return -1;
    }
    int64_t b, e;
    if (!cJSON_IsArray(jo) || cJSON_GetArraySize(jo) != 2 ||
        json_uint(cJSON_GetArrayItem(jo, 0), &b) != 0 || json_uint(cJSON_GetArrayItem(jo, 1), &e) != 0) {
        st_fail(err, errlen, path, "tensor '%s': \"data_offsets\" must be [begin, end] of non-negative integers", nm);
        return -1;
    }
    if (b > e) {
        st_fail(err, errlen, path, "tensor '%s': data_offsets [%lld, %lld] end before they begin", nm,
                (long long)b, (long long)e);
        return -1;
    }
    if (e > data_size) {
        st_fail(err, errlen, path, "tensor '%s': data_offsets [%lld, %lld] run past the %lld-byte data section "
                "(truncated file?)", nm, (long long)b, (long long)e, (long long)data_size);
        return -1;
    }
    int64_t nbytes = t->numel * st_dtypes[di].size;
    if (e - b != nbytes) {
        st_fail(err, errlen, path, "tensor '%s': data_offsets [%lld, %lld] do not match shape %s of %s (%lld bytes)",
                nm, (long long)b, (long long)e, sb, st_dtypes[di].name, (long long)nbytes);
        return -1;
    }
    t->data = data + b;
    *begin = b; *end = e;
    return 0;
}

// Validates f->raw (len bytes, owned by f) and fills f; `path` only names the file in err.
// Returns f, or NULL after freeing f. The one parser behind hp_st_open and hp_st_open_mem.
static hp_st *st_parse(hp_st *f, size_t len, const char *path, char *err, size_t errlen) {
    cJSON *root = NULL;
    char *hdr = NULL;
    st_key *keys = NULL;
    if (len < 8) {
        st_fail(err, errlen, path, "file is %zu bytes, too short for the 8-byte header length "
                "(truncated or not a safetensors file)", len);
        goto fail;
    }
    uint64_t N = 0;
    for (int i = 7; i >= 0; i--) N = (N << 8) | f->raw[i];
    if (N > len - 8) {
        st_fail(err, errlen, path, "header length %llu exceeds the %zu bytes after it "
                "(truncated or not a safetensors file)", (unsigned long long)N, len - 8);
        goto fail;
    }
    if (N < 2 || f->raw[8] != '{') {
        st_fail(err, errlen, path, "header does not start with '{' (not a safetensors file)");
        goto fail;
    }
    hdr = malloc(N + 1);
    if (!hdr) { st_fail(err, errlen, path, "out of memory"); goto fail; }
    memcpy(hdr, f->raw + 8, N);
    hdr[N] = '\0';
    if (memchr(hdr, '\0', N)) {
        st_fail(err, errlen, path, "header contains a NUL byte (not a safetensors file)");
        goto fail;
    }
    const char *stop = NULL;
    root = cJSON_ParseWithOpts(hdr, &stop, 1); // 1: only whitespace (the padding) may follow
    if (!root) {
        long at = stop ? (long)(stop - hdr) : -1;
        st_fail(err, errlen, path, "header is not valid JSON (error near byte %ld of %llu)", at,
                (unsigned long long)N);
        goto fail;
    }
    if (!cJSON_IsObject(root)) {
        st_fail(err, errlen, path, "header JSON is not an object");
        goto fail;
    }
    const unsigned char *data = f->raw + 8 + N;
    int64_t data_size = (int64_t)(len - 8 - N);

    int cap = cJSON_GetArraySize(root);
    f->tensors = calloc((size_t)cap + 1, sizeof *f->tensors);
    f->copies = calloc((size_t)cap + 1, sizeof *f->copies);
    keys = calloc((size_t)cap + 1, sizeof *keys);
    if (!f->tensors || !f->copies || !keys) { st_fail(err, errlen, path, "out of memory"); goto fail; }
    int seen_meta = 0;
    for (const cJSON *it = root->child; it; it = it->next) {
        if (strcmp(it->string, "__metadata__") == 0) {
            if (seen_meta++ || !cJSON_IsObject(it)) {
                st_fail(err, errlen, path, "\"__metadata__\" must appear once and be an object");
                goto fail;
            }
            int nm = cJSON_GetArraySize(it);
            f->meta_keys = calloc((size_t)nm + 1, sizeof(char *));
            f->meta_vals = calloc((size_t)nm + 1, sizeof(char *));
            if (!f->meta_keys || !f->meta_vals) { st_fail(err, errlen, path, "out of memory"); goto fail; }
            for (const cJSON *m = it->child; m; m = m->next) {
                char kb[96];
                if (!cJSON_IsString(m) || !m->valuestring) {
                    st_fail(err, errlen, path, "\"__metadata__\" key '%s' has a value that is not a string",
                            printable(m->string, kb, sizeof kb));
                    goto fail;
                }
                f->meta_keys[f->n_meta] = dup_str(m->string);
                f->meta_vals[f->n_meta] = dup_str(m->valuestring);
                f->n_meta++;
                if (!f->meta_keys[f->n_meta - 1] || !f->meta_vals[f->n_meta - 1]) {
                    st_fail(err, errlen, path, "out of memory");
                    goto fail;
                }
            }
            continue;
        }
        hp_st_tensor *t = &f->tensors[f->n];
        st_key *k = &keys[f->n];
        if (parse_tensor(it, t, &k->begin, &k->end, data_size, data, path, err, errlen) != 0) goto fail;
        t->name = dup_str(it->string);
        f->n++; // counted now so that close() frees the name
        if (!t->name) { st_fail(err, errlen, path, "out of memory"); goto fail; }
        k->name = t->name;
        k->i = f->n - 1;
    }

    // no two tensors may share a name (cJSON keeps both copies of a repeated key)
    qsort(keys, (size_t)f->n, sizeof *keys, cmp_name);
    for (int i = 1; i < f->n; i++) {
        if (strcmp(keys[i - 1].name, keys[i].name) == 0) {
            char nb[96];
            st_fail(err, errlen, path, "tensor '%s': name appears twice in the header", printable(keys[i].name, nb, sizeof nb));
            goto fail;
        }
    }
    f->by_name = malloc(((size_t)f->n + 1) * sizeof *f->by_name);
    if (!f->by_name) { st_fail(err, errlen, path, "out of memory"); goto fail; }
    for (int i = 0; i < f->n; i++) f->by_name[i] = keys[i].i;

    // no two tensors may share bytes (empty tensors take none)
    qsort(keys, (size_t)f->n, sizeof *keys, cmp_begin);
    int prev = -1;
    for (int i = 0; i < f->n; i++) {
        if (keys[i].begin == keys[i].end) continue;
        if (prev >= 0 && keys[i].begin < keys[prev].end) {
            char na[96], nb[96];
            st_fail(err, errlen, path, "tensor '%s': bytes [%lld, %lld) overlap tensor '%s' bytes [%lld, %lld)",
                    printable(keys[i].name, na, sizeof na), (long long)keys[i].begin, (long long)keys[i].end,
                    printable(keys[prev].name, nb, sizeof nb), (long long)keys[prev].begin, (long long)keys[prev].end);
            goto fail;
        }
        prev = i;
    }

    // a header length that is not a multiple of 4 (other writers) can leave data misaligned;
    // callers read F32/I32 data as float*/int* and BF16 as uint16_t*, so such tensors get an
    // aligned copy
    for (int i = 0; i < f->n; i++) {
        hp_st_tensor *t = &f->tensors[i];
        const size_t width = t->dtype == HP_DT_BF16 ? 2 : 4;
        if (t->dtype == HP_DT_OTHER || t->numel == 0 || (uintptr_t)t->data % width == 0) continue;
        size_t nbytes = (size_t)t->numel * width;
        f->copies[i] = malloc(nbytes);
        if (!f->copies[i]) { st_fail(err, errlen, path, "out of memory"); goto fail; }
        memcpy(f->copies[i], t->data, nbytes);
        t->data = f->copies[i];
    }

    free(keys);
    free(hdr);
    cJSON_Delete(root);
    return f;
fail:
    free(keys);
    free(hdr);
    cJSON_Delete(root);
    hp_st_close(f);
    return NULL;
}

hp_st *hp_st_open(const char *path, char *err, size_t errlen) {
    if (errlen) err[0] = '\0';
    if (!path) { st_fail(err, errlen, "(null)", "no path given"); return NULL; }
    hp_st *f = calloc(1, sizeof *f);
    if (!f) { st_fail(err, errlen, path, "out of memory"); return NULL; }
    size_t len = 0;
    const char *why;
    if (hp_file_read(path, &f->raw, &len, &why) != 0) {
        st_fail(err, errlen, path, strcmp(why, "read error") ? "cannot open: %s" : "%s", why);
        hp_st_close(f);
        return NULL;
    }
    return st_parse(f, len, path, err, errlen);
}

hp_st *hp_st_open_mem(const void *buf, size_t len, const char *name, char *err, size_t errlen) {
    if (errlen) err[0] = '\0';
    if (!name) name = "(memory)";
    if (!buf && len) { st_fail(err, errlen, name, "no buffer given"); return NULL; }
    hp_st *f = calloc(1, sizeof *f);
    // our own copy: tensors point into it, and malloc's alignment is what the file read gives
    if (f) f->raw = malloc(len + 1);
    if (!f || !f->raw) { st_fail(err, errlen, name, "out of memory"); hp_st_close(f); return NULL; }
    if (len) memcpy(f->raw, buf, len);
    f->raw[len] = '\0';
    return st_parse(f, len, name, err, errlen);
}

int hp_st_count(const hp_st *f) { return f ? f->n : 0; }

const hp_st_tensor *hp_st_at(const hp_st *f, int i) {
    return (f && i >= 0 && i < f->n) ? &f->tensors[i] : NULL;
}

const hp_st_tensor *hp_st_get(const hp_st *f, const char *name) {
    if (!f || !name) return NULL;
    int lo = 0, hi = f->n - 1;
    while (lo <= hi) { // binary search over the names, sorted at open
        int mid = lo + (hi - lo) / 2;
        const hp_st_tensor *t = &f->tensors[f->by_name[mid]];
        int c = strcmp(name, t->name);
        if (c == 0) return t;
        if (c < 0) hi = mid - 1; else lo = mid + 1;
    }
    return NULL;
}

const char *hp_st_metadata(const hp_st *f, const char *key) {
    if (!f || !key) return NULL;
    for (int i = 0; i < f->n_meta; i++)
        if (strcmp(f->meta_keys[i], key) == 0) return f->meta_vals[i];
    return NULL;
}

// ----------------------------------------------------------------------------
// writer

typedef struct {
    char    *name;
    hp_dtype dtype;
    int      ndim;
    int64_t  shape[ST_MAX_DIMS];
    void    *data;    // (nbytes,) our copy
    size_t   nbytes;
} st_entry;

struct hp_st_writer {
    st_entry *entries;
    int       n, cap;
    char    **meta_keys, **meta_vals;
    int       n_meta, cap_meta;
    char      err[320]; // the first misuse of add/metadata, reported by save
};

hp_st_writer *hp_st_writer_init(void) { return calloc(1, sizeof(hp_st_writer)); }

void hp_st_writer_free(hp_st_writer *w) {
    if (!w) return;
    for (int i = 0; i < w->n; i++) { free(w->entries[i].name); free(w->entries[i].data); }
    for (int i = 0; i < w->n_meta; i++) { free(w->meta_keys[i]); free(w->meta_vals[i]); }
    free(w->entries); free(w->meta_keys); free(w->meta_vals);
    free(w);
}

// keeps the first error only: it is the cause, later ones are usually consequences
static void w_fail(hp_st_writer *w, const char *fmt, ...) {
    if (w->err[0]) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->err, sizeof w->err, fmt, ap);
    va_end(ap);
}

void hp_st_writer_add(hp_st_writer *w, const char *name, hp_dtype dtype, int ndim,
                      const int64_t *shape, const void *data) {
    if (!w) return;
    char nb[96];
    if (!name) { w_fail(w, "tensor with a NULL name"); return; }
    const char *nm = printable(name, nb, sizeof nb);
    if (strcmp(name, "__metadata__") == 0) { w_fail(w, "tensor '%s': the name is reserved", nm); return; }
    if (dtype != HP_DT_F32 && dtype != HP_DT_I32 && dtype != HP_DT_BF16) {
        w_fail(w, "tensor '%s': only F32, I32 and BF16 can be written", nm);
        return;
    }
    if (ndim < 0 || ndim > ST_MAX_DIMS || (ndim > 0 && !shape)) {
        w_fail(w, "tensor '%s': ndim %d is not in [0, %d] (or shape is NULL)", nm, ndim, ST_MAX_DIMS);
        return;
    }
    int64_t numel = 1;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] < 0 || (shape[d] > 0 && numel > (INT64_MAX / 16) / shape[d])) {
            w_fail(w, "tensor '%s': dim %d of size %lld is invalid", nm, d, (long long)shape[d]);
            return;
        }
        numel *= shape[d];
    }
    if (numel > 0 && !data) { w_fail(w, "tensor '%s': NULL data for %lld elements", nm, (long long)numel); return; }
    for (int i = 0; i < w->n; i++)
        if (strcmp(w->entries[i].name, name) == 0) { w_fail(w, "tensor '%s': added twice", nm); return; }
    if (w->n == w->cap) {
        int cap = w->cap ? 2 * w->cap : 16;
        st_entry *e = realloc(w->entries, (size_t)cap * sizeof *e);
        if (!e) { w_fail(w, "out of memory"); return; }
        w->entries = e; w->cap = cap;
    }
    st_entry *e = &w->entries[w->n];
    memset(e, 0, sizeof *e);
    e->nbytes = (size_t)numel * (dtype == HP_DT_BF16 ? 2 : 4);
    e->name = dup_str(name);
    e->data = malloc(e->nbytes ? e->nbytes : 1);
    if (!e->name || !e->data) { free(e->name); free(e->data); w_fail(w, "out of memory"); return; }
    if (e->nbytes) memcpy(e->data, data, e->nbytes);
    e->dtype = dtype;
    e->ndim = ndim;
    for (int d = 0; d < ndim; d++) e->shape[d] = shape[d];
    w->n++;
}

void hp_st_writer_metadata(hp_st_writer *w, const char *key, const char *value) {
    if (!w) return;
    if (!key || !value) { w_fail(w, "metadata with a NULL key or value"); return; }
    char *v = dup_str(value);
    if (!v) { w_fail(w, "out of memory"); return; }
    for (int i = 0; i < w->n_meta; i++) {
        if (strcmp(w->meta_keys[i], key) == 0) { free(w->meta_vals[i]); w->meta_vals[i] = v; return; } // last wins
    }
    if (w->n_meta == w->cap_meta) {
        int cap = w->cap_meta ? 2 * w->cap_meta : 8;
        char **k = realloc(w->meta_keys, (size_t)cap * sizeof *k);
        if (k) w->meta_keys = k;
        char **vv = k ? realloc(w->meta_vals, (size_t)cap * sizeof *vv) : NULL;
        if (vv) w->meta_vals = vv;
        if (!k || !vv) { free(v); w_fail(w, "out of memory"); return; }
        w->cap_meta = cap;
    }
    w->meta_keys[w->n_meta] = dup_str(key);
    if (!w->meta_keys[w->n_meta]) { free(v); w_fail(w, "out of memory"); return; }
    w->meta_vals[w->n_meta++] = v;
}

static const char *dtype_name(hp_dtype dt) {
    for (int i = 0; i < ST_N_DTYPES; i++)
        if (st_dtypes[i].dt == dt) return st_dtypes[i].name;
    return "?";
}

// integers go in as raw JSON text: cJSON numbers are doubles and print large ones as 1e+15
static int add_int(cJSON *arr, int64_t v) {
    char buf[32];
    snprintf(buf, sizeof buf, "%lld", (long long)v);
    cJSON *x = cJSON_CreateRaw(buf);
    return x && cJSON_AddItemToArray(arr, x) ? 0 : -1;
}

// The header JSON, unformatted; NULL when out of memory.
static char *build_header(const hp_st_writer *w) {
    cJSON *root = cJSON_CreateObject();
    int ok = root != NULL;
    if (ok && w->n_meta) {
        cJSON *meta = cJSON_AddObjectToObject(root, "__metadata__");
        ok = meta != NULL;
        for (int i = 0; ok && i < w->n_meta; i++)
            ok = cJSON_AddStringToObject(meta, w->meta_keys[i], w->meta_vals[i]) != NULL;
    }
    int64_t off = 0;
    for (int i = 0; ok && i < w->n; i++) {
        const st_entry *e = &w->entries[i];
        cJSON *t = cJSON_AddObjectToObject(root, e->name);
        cJSON *shape = t ? cJSON_CreateArray() : NULL;
        cJSON *offs = t ? cJSON_CreateArray() : NULL;
        ok = t && shape && offs &&
             cJSON_AddStringToObject(t, "dtype", dtype_name(e->dtype)) != NULL;
        for (int d = 0; ok && d < e->ndim; d++) ok = add_int(shape, e->shape[d]) == 0;
        ok = ok && add_int(offs, off) == 0 && add_int(offs, off + (int64_t)e->nbytes) == 0;
        if (ok) {
            cJSON_AddItemToObject(t, "shape", shape);
            cJSON_AddItemToObject(t, "data_offsets", offs);
        } else {
            cJSON_Delete(shape);
            cJSON_Delete(offs);
        }
        off += (int64_t)e->nbytes;
    }
    char *s = ok ? cJSON_PrintUnformatted(root) : NULL;
    cJSON_Delete(root);
    return s;
}

int hp_st_writer_save(hp_st_writer *w, const char *path, char *err, size_t errlen) {
    if (errlen) err[0] = '\0';
    if (!w || !path) { st_fail(err, errlen, path ? path : "(null)", "no writer or no path"); return -1; }
    if (w->err[0]) { st_fail(err, errlen, path, "%s", w->err); return -1; }
    char *hdr = build_header(w);
    if (!hdr) { st_fail(err, errlen, path, "out of memory building the header"); return -1; }
    size_t hlen = strlen(hdr);
    size_t padded = (hlen + 7) & ~(size_t)7; // keeps the data section 8-byte aligned
    unsigned char len8[8];
    for (int i = 0; i < 8; i++) len8[i] = (unsigned char)((uint64_t)padded >> (8 * i));
    FILE *f = fopen(path, "wb");
    if (!f) {
        st_fail(err, errlen, path, "cannot open for writing: %s", strerror(errno));
        free(hdr);
        return -1;
    }
    static const char spaces[8] = {' ', ' ', ' ', ' ', ' ', ' ', ' ', ' '};
    int ok = fwrite(len8, 1, 8, f) == 8 && fwrite(hdr, 1, hlen, f) == hlen &&
             fwrite(spaces, 1, padded - hlen, f) == padded - hlen;
    for (int i = 0; ok && i < w->n; i++)
        ok = fwrite(w->entries[i].data, 1, w->entries[i].nbytes, f) == w->entries[i].nbytes;
    int saved_errno = errno;
    if (fclose(f) != 0 && ok) { ok = 0; saved_errno = errno; }
    free(hdr);
    if (!ok) {
        st_fail(err, errlen, path, "write failed: %s", strerror(saved_errno));
        return -1;
    }
    return 0;
}
