// test_safetensors.c - the interchange file format: a write/read round trip (order, shapes,
// values, metadata, layout), then every kind of malformed file the reader must refuse with
// NULL and one line naming the file and the tensor, then truncations at every cut point,
// flipped header bytes and random files, none of which may crash (run it under ASan too).
#include "hyperpar/safetensors.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "test_check.h"


static char dir[64], path[128];

static void write_bytes(const char *p, const void *bytes, size_t n) {
    unlink(p); // a fresh file: truncating one in place makes ext4 flush it on close (slow)
    FILE *f = fopen(p, "wb");
    if (!f || fwrite(bytes, 1, n, f) != n || fclose(f) != 0) { perror(p); exit(2); }
}

static unsigned char *read_bytes(const char *p, size_t *n) {
    FILE *f = fopen(p, "rb");
    if (!f) { perror(p); exit(2); }
    fseek(f, 0, SEEK_END);
    *n = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc(*n + 1);
    if (fread(b, 1, *n, f) != *n) { perror(p); exit(2); }
    fclose(f);
    return b;
}

// a file with header length hlen (as stored), the JSON text, then data_len bytes of data
static void write_raw(const char *p, uint64_t hlen, const char *json, size_t data_len) {
    size_t jl = strlen(json);
    size_t n = 8 + jl + data_len;
    unsigned char *b = calloc(n, 1);
    for (int i = 0; i < 8; i++) b[i] = (unsigned char)(hlen >> (8 * i));
    memcpy(b + 8, json, jl);
    for (size_t i = 0; i < data_len; i++) b[8 + jl + i] = (unsigned char)i;
    write_bytes(p, b, n);
    free(b);
}

// a malformed file: open must fail with one line that contains every one of the wanted words
static void expect_bad(const char *what, const char *json, size_t data_len, const char *want1, const char *want2) {
    char err[512] = "";
    write_raw(path, strlen(json), json, data_len);
    hp_st *f = hp_st_open(path, err, sizeof err);
    CHECK(f == NULL, "%s: accepted", what);
    CHECK(strstr(err, path) && strstr(err, want1) && (!want2 || strstr(err, want2)) && !strchr(err, '\n'),
          "%s: message '%s' lacks '%s'/'%s'", what, err, want1, want2 ? want2 : "");
    hp_st_close(f);
}

static uint64_t rng_state = 88172645463325252ULL;
static uint64_t xorshift(void) {
    rng_state ^= rng_state << 13; rng_state ^= rng_state >> 7; rng_state ^= rng_state << 17;
    return rng_state;
}

// whatever open says about a damaged file, it must be coherent: NULL plus one line, or tensors inside it
static int coherent(const char *p, size_t file_len) {
    char err[512] = "";
    hp_st *f = hp_st_open(p, err, sizeof err);
    if (!f) return err[0] != '\0' && !strchr(err, '\n');
    int ok = 1;
    for (int i = 0; i < hp_st_count(f); i++) {
        const hp_st_tensor *t = hp_st_at(f, i);
        ok &= t && t->name && t->ndim >= 0 && t->ndim <= 8 && t->numel >= 0 && (int64_t)file_len >= t->numel;
        ok &= hp_st_get(f, t->name) != NULL;
    }
    hp_st_close(f);
    return ok;
}

int main(void) {
    char err[512];
    strcpy(dir, "/tmp/hp_test_st_XXXXXX");
    if (!mkdtemp(dir)) { perror("mkdtemp"); return 2; }
    snprintf(path, sizeof path, "%s/model.safetensors", dir);

    // ---- round trip
    float a[6] = {1.5f, -2.0f, 3.25f, 0.0f, -0.0f, 1e-30f};
    int32_t ids[4] = {0, -7, 255, 2147483647};
    float scalar = 42.0f;
    float big[3 * 5 * 7];
    for (int i = 0; i < 105; i++) big[i] = (float)i * 0.5f - 3.0f;
    hp_st_writer *w = hp_st_writer_init();
    hp_st_writer_metadata(w, "format", "pt");
    hp_st_writer_metadata(w, "step", "0");
    hp_st_writer_metadata(w, "step", "1"); // overwrites
    hp_st_writer_add(w, "layers.0.attention.wq.weight", HP_DT_F32, 2, (int64_t[]){2, 3}, a);
    hp_st_writer_add(w, "tokens", HP_DT_I32, 1, (int64_t[]){4}, ids);
    hp_st_writer_add(w, "scalar", HP_DT_F32, 0, NULL, &scalar);
    hp_st_writer_add(w, "empty", HP_DT_F32, 2, (int64_t[]){0, 5}, NULL);
    hp_st_writer_add(w, "a \"quoted\" name", HP_DT_F32, 3, (int64_t[]){3, 5, 7}, big);
    a[0] = 99.0f; // the writer copied the data
    CHECK(hp_st_writer_save(w, path, err, sizeof err) == 0, "save: %s", err);
    hp_st_writer_free(w);
    a[0] = 1.5f;

    size_t flen;
    unsigned char *file = read_bytes(path, &flen);
    uint64_t N = 0;
    for (int i = 7; i >= 0; i--) N = (N << 8) | file[i];
    size_t data_bytes = 6 * 4 + 4 * 4 + 4 + 0 + 105 * 4;
    CHECK(N % 8 == 0, "header length %llu not a multiple of 8", (unsigned long long)N);
    CHECK(flen == 8 + N + data_bytes, "file is %zu bytes, want %zu", flen, (size_t)(8 + N + data_bytes));
    CHECK(file[8] == '{' && file[8 + N - 1] != '\0', "header must be a JSON object padded with spaces");

    hp_st *f = hp_st_open(path, err, sizeof err);
    CHECK(f != NULL, "open: %s", err);
    if (f) {
        CHECK(hp_st_count(f) == 5, "count %d", hp_st_count(f));
        const char *order[5] = {"layers.0.attention.wq.weight", "tokens", "scalar", "empty", "a \"quoted\" name"};
        int in_order = 1;
        for (int i = 0; i < 5; i++) in_order &= hp_st_at(f, i) && strcmp(hp_st_at(f, i)->name, order[i]) == 0;
        CHECK(in_order, "tensors not in the order added");
        CHECK(hp_st_at(f, 5) == NULL && hp_st_at(f, -1) == NULL, "hp_st_at out of range");
        const hp_st_tensor *t = hp_st_get(f, "layers.0.attention.wq.weight");
        CHECK(t && t->dtype == HP_DT_F32 && t->ndim == 2 && t->shape[0] == 2 && t->shape[1] == 3 && t->numel == 6 &&
              memcmp(t->data, a, sizeof a) == 0, "wq round trip");
        t = hp_st_get(f, "tokens");
        CHECK(t && t->dtype == HP_DT_I32 && t->ndim == 1 && t->numel == 4 && memcmp(t->data, ids, sizeof ids) == 0,
              "tokens round trip");
        t = hp_st_get(f, "scalar");
        CHECK(t && t->ndim == 0 && t->numel == 1 && *(const float *)t->data == 42.0f, "scalar round trip");
        t = hp_st_get(f, "empty");
        CHECK(t && t->ndim == 2 && t->shape[0] == 0 && t->shape[1] == 5 && t->numel == 0, "empty round trip");
        t = hp_st_get(f, "a \"quoted\" name");
        CHECK(t && t->ndim == 3 && t->shape[2] == 7 && t->numel == 105 && memcmp(t->data, big, sizeof big) == 0 &&
              (uintptr_t)t->data % 4 == 0, "3-d tensor with an escaped name");
        CHECK(hp_st_get(f, "nope") == NULL && hp_st_get(f, "") == NULL, "absent name found");
        CHECK(hp_st_metadata(f, "format") && strcmp(hp_st_metadata(f, "format"), "pt") == 0, "metadata format");
        CHECK(hp_st_metadata(f, "step") && strcmp(hp_st_metadata(f, "step"), "1") == 0, "metadata overwrite");
        CHECK(hp_st_metadata(f, "missing") == NULL, "absent metadata found");
    }
    hp_st_close(f);

    // ---- foreign but valid: other dtypes, a header length that misaligns the data, no metadata
    {
        const char *json = "{\"h\":{\"dtype\":\"BF16\",\"shape\":[3],\"data_offsets\":[0,6]},"
                           "\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]}}";
        size_t jl = strlen(json); // odd length: data start is not 4-byte aligned
        unsigned char buf[512] = {0};
        for (int i = 0; i < 8; i++) buf[i] = (unsigned char)((uint64_t)jl >> (8 * i));
        memcpy(buf + 8, json, jl);
        float xv[2] = {0.25f, -8.0f};
        memcpy(buf + 8 + jl + 8, xv, 8);
        write_bytes(path, buf, 8 + jl + 16);
        f = hp_st_open(path, err, sizeof err);
        CHECK(f != NULL, "foreign file: %s", err);
        const hp_st_tensor *h = f ? hp_st_get(f, "h") : NULL, *x = f ? hp_st_get(f, "x") : NULL;
        CHECK(h && h->dtype == HP_DT_BF16 && h->numel == 3 && (uintptr_t)h->data % 2 == 0,
              "BF16 tensor is HP_DT_BF16 with 3 elements, 2-byte aligned");
        CHECK(x && (uintptr_t)x->data % 4 == 0 && memcmp(x->data, xv, 8) == 0, "misaligned F32 data must be an aligned copy");
        hp_st_close(f);
        write_raw(path, 2, "{}", 0);
        f = hp_st_open(path, err, sizeof err);
        CHECK(f && hp_st_count(f) == 0 && hp_st_metadata(f, "x") == NULL, "empty header '{}': %s", err);
        hp_st_close(f);
    }

    // ---- malformed files, one rule each
    expect_bad("size mismatch", "{\"norm.weight\":{\"dtype\":\"F32\",\"shape\":[64],\"data_offsets\":[0,260]}}", 260,
               "tensor 'norm.weight': data_offsets [0, 260] do not match shape [64] of F32 (256 bytes)", NULL);
    expect_bad("past the data", "{\"w\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", 12, "'w'", "past");
    expect_bad("reversed offsets", "{\"w\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[8,4]}}", 12, "'w'", "[8, 4]");
    expect_bad("one offset", "{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0]}}", 4, "'w'", "data_offsets");
    expect_bad("negative offset", "{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[-4,0]}}", 4, "'w'", "data_offsets");
    expect_bad("string offset", "{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[\"0\",4]}}", 4, "'w'", "data_offsets");
    expect_bad("no offsets", "{\"w\":{\"dtype\":\"F32\",\"shape\":[1]}}", 4, "'w'", "data_offsets");
    expect_bad("no dtype", "{\"w\":{\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "'w'", "dtype");
    expect_bad("dtype not a string", "{\"w\":{\"dtype\":4,\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "'w'", "dtype");
    expect_bad("unknown dtype", "{\"w\":{\"dtype\":\"F33\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "'w'", "F33");
    expect_bad("no shape", "{\"w\":{\"dtype\":\"F32\",\"data_offsets\":[0,4]}}", 4, "'w'", "shape");
    expect_bad("negative dim", "{\"w\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}}", 4, "'w'", "shape");
    expect_bad("fractional dim", "{\"w\":{\"dtype\":\"F32\",\"shape\":[1.5],\"data_offsets\":[0,4]}}", 4, "'w'", "shape");
    expect_bad("infinite dim", "{\"w\":{\"dtype\":\"F32\",\"shape\":[1e400],\"data_offsets\":[0,4]}}", 4, "'w'", "shape");
    expect_bad("nine dims", "{\"w\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,4]}}", 4,
               "'w'", "9 dims");
    expect_bad("huge shape", "{\"w\":{\"dtype\":\"F32\",\"shape\":[4503599627370496,4503599627370496],"
               "\"data_offsets\":[0,4]}}", 4, "'w'", "too large");
    expect_bad("entry not an object", "{\"w\":[1,2]}", 0, "'w'", "object");
    expect_bad("second tensor bad", "{\"ok\":{\"dtype\":\"I32\",\"shape\":[1],\"data_offsets\":[0,4]},"
               "\"bad.one\":{\"dtype\":\"I32\",\"shape\":[2],\"data_offsets\":[4,8]}}", 8, "'bad.one'", "[2] of I32 (8 bytes)");
    expect_bad("overlap", "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
               "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", 12, "'b'", "overlap");
    expect_bad("duplicate", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
               "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8, "'a'", "twice");
    expect_bad("metadata not object", "{\"__metadata__\":[1]}", 0, "__metadata__", NULL);
    expect_bad("metadata value", "{\"__metadata__\":{\"k\":1}}", 0, "__metadata__", "'k'");
    expect_bad("control char name", "{\"a\\nb\":5}", 0, "'a?b'", NULL); // one line even then
    expect_bad("header an array", "[1,2,3]", 0, "'{'", NULL);
    expect_bad("header a string", "\"{}\"", 0, "'{'", NULL);
    expect_bad("broken JSON", "{\"w\":{\"dtype\":", 0, "not valid JSON", NULL);
    expect_bad("trailing garbage", "{} x", 0, "not valid JSON", NULL);
    {
        char deep[4200];
        strcpy(deep, "{\"w\":");
        for (int i = 0; i < 2000; i++) strcat(deep, "[");
        expect_bad("deep nesting", deep, 0, "not valid JSON", NULL);
    }
    // lengths
    write_bytes(path, "\x02\x00\x00", 3);
    f = hp_st_open(path, err, sizeof err);
    CHECK(!f && strstr(err, "too short"), "3-byte file: '%s'", err);
    write_bytes(path, "", 0);
    f = hp_st_open(path, err, sizeof err);
    CHECK(!f && strstr(err, "too short"), "empty file: '%s'", err);
    write_raw(path, 0xffffffffffffffffULL, "{}", 0);
    f = hp_st_open(path, err, sizeof err);
    CHECK(!f && strstr(err, "exceeds"), "huge header length: '%s'", err);
    write_raw(path, 100, "{}", 10);
    f = hp_st_open(path, err, sizeof err);
    CHECK(!f && strstr(err, "100") && strstr(err, "exceeds"), "header past the end: '%s'", err);
    write_raw(path, 0, "", 0);
    f = hp_st_open(path, err, sizeof err);
    CHECK(!f && err[0], "zero header length: '%s'", err);
    write_bytes(path, "\x04\0\0\0\0\0\0\0{\0}  ", 13);
    f = hp_st_open(path, err, sizeof err);
    CHECK(!f && strstr(err, "NUL"), "NUL in header: '%s'", err);
    f = hp_st_open("/nonexistent/model.safetensors", err, sizeof err);
    CHECK(!f && strstr(err, "/nonexistent/model.safetensors") && strstr(err, "cannot open"), "missing file: '%s'", err);

    // ---- damage at scale: every truncation of the round-trip file, flipped header bytes, random files
    int all_refused = 1, all_coherent = 1;
    for (size_t cut = 0; cut < flen; cut++) {
        write_bytes(path, file, cut);
        f = hp_st_open(path, err, sizeof err);
        all_refused &= f == NULL && err[0] && !strchr(err, '\n');
        hp_st_close(f);
    }
    CHECK(all_refused, "a truncated file was accepted");
    unsigned char *mut = malloc(flen);
    for (int trial = 0; trial < 1500; trial++) {
        memcpy(mut, file, flen);
        int flips = 1 + (int)(xorshift() % 3);
        for (int k = 0; k < flips; k++) {
            size_t at = (size_t)(xorshift() % (8 + N)); // length field and header
            mut[at] = trial % 4 == 0 ? (unsigned char)"{}[]\",:0123456789-e."[xorshift() % 20] : (unsigned char)xorshift();
        }
        write_bytes(path, mut, flen);
        all_coherent &= coherent(path, flen);
    }
    for (int trial = 0; trial < 300; trial++) {
        size_t n = (size_t)(xorshift() % 200);
        for (size_t i = 0; i < n; i++) mut[i] = (unsigned char)xorshift();
        if (trial % 2 && n >= 8) { // a plausible length so the JSON parser sees the garbage
            uint64_t h = n - 8 - (n > 8 ? xorshift() % (n - 8) : 0);
            for (int i = 0; i < 8; i++) mut[i] = (unsigned char)(h >> (8 * i));
            mut[8 % n] = '{';
        }
        write_bytes(path, mut, n);
        all_coherent &= coherent(path, n);
    }
    CHECK(all_coherent, "a damaged file gave an incoherent result");
    free(mut);

    // ---- BF16 written as 2-byte patterns, read back as the same patterns under dtype "BF16"
    {
        const uint16_t pat[3] = { 0x3f80, 0xc000, 0x7f80 };   // 1, -2, +inf
        w = hp_st_writer_init();
        hp_st_writer_add(w, "b", HP_DT_BF16, 1, (int64_t[]){3}, pat);
        CHECK(hp_st_writer_save(w, path, err, sizeof err) == 0, "BF16 save: %s", err);
        hp_st_writer_free(w);
        f = hp_st_open(path, err, sizeof err);
        const hp_st_tensor *b = f ? hp_st_get(f, "b") : NULL;
        CHECK(b && b->dtype == HP_DT_BF16 && b->numel == 3 && memcmp(b->data, pat, sizeof pat) == 0,
              "BF16 round trip: %s", f ? "data or dtype differ" : err);
        hp_st_close(f);
    }

    // ---- writer misuse: NULL from save with the first problem named
    const char *bad_names[4] = {"dup", "other", "nulldata", "dims"};
    for (int c = 0; c < 4; c++) {
        w = hp_st_writer_init();
        float one = 1.0f;
        hp_st_writer_add(w, "dup", HP_DT_F32, 1, (int64_t[]){1}, &one);
        if (c == 0) hp_st_writer_add(w, "dup", HP_DT_F32, 1, (int64_t[]){1}, &one);
        if (c == 1) hp_st_writer_add(w, "other", HP_DT_OTHER, 1, (int64_t[]){1}, &one);
        if (c == 2) hp_st_writer_add(w, "nulldata", HP_DT_F32, 1, (int64_t[]){3}, NULL);
        if (c == 3) hp_st_writer_add(w, "dims", HP_DT_F32, 9, (int64_t[]){1, 1, 1, 1, 1, 1, 1, 1, 1}, &one);
        int rc = hp_st_writer_save(w, path, err, sizeof err);
        CHECK(rc != 0 && strstr(err, bad_names[c]), "writer case %s: rc %d '%s'", bad_names[c], rc, err);
        hp_st_writer_free(w);
    }
    w = hp_st_writer_init();
    CHECK(hp_st_writer_save(w, "/nonexistent/dir/x.safetensors", err, sizeof err) != 0 && strstr(err, "/nonexistent"),
          "unwritable path: '%s'", err);
    hp_st_writer_free(w);
    w = hp_st_writer_init(); // an empty writer makes a valid empty file
    CHECK(hp_st_writer_save(w, path, err, sizeof err) == 0, "empty save: %s", err);
    hp_st_writer_free(w);
    f = hp_st_open(path, err, sizeof err);
    CHECK(f && hp_st_count(f) == 0, "empty file round trip: %s", err);
    hp_st_close(f);

    free(file);
    unlink(path);
    rmdir(dir);
    return test_summary("test_safetensors");
}
