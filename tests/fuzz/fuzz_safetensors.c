// fuzz_safetensors.c - the safetensors reader on any bytes: hp_st_open_mem (the parser behind
// hp_st_open), then every accessor on every tensor, reading every byte each tensor claims.
// Invariants checked (abort when broken): each tensor's numel is the product of its shape,
// F32/I32 data are 4-byte aligned, hp_st_get(name) finds the same tensor hp_st_at gives, and a
// refused file leaves a one-line error. hp_st_open_mem copies the input, so the bytes it was
// given are freed before any tensor is read: a tensor pointing outside its own copy is caught.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "hyperpar/safetensors.h"
#include "fuzz_target.h"

static volatile unsigned sink;   // keeps the data reads from being optimised away

// Inputs are files as they are, except those starting with '{': "<header JSON>\0<data>", to
// which the 8-byte header length is prepended here. Random mutations almost never keep that
// length right, so without this mode the fuzzer would rarely get past the first check.
static unsigned char *with_length(const uint8_t *data, size_t size, size_t *len) {
    const uint8_t *nul = memchr(data, '\0', size);
    const size_t hlen = nul ? (size_t)(nul - data) : size;
    const size_t rest = nul ? size - hlen - 1 : 0;
    unsigned char *b = malloc(8 + hlen + rest + 1);
    if (!b) return NULL;
    for (int i = 0; i < 8; i++) b[i] = (unsigned char)((uint64_t)hlen >> (8 * i));
    memcpy(b + 8, data, hlen);
    if (rest) memcpy(b + 8 + hlen, nul + 1, rest);
    *len = 8 + hlen + rest;
    return b;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char err[512];
    unsigned char *file = NULL;
    if (size && data[0] == '{') {
        if (!(file = with_length(data, size, &size))) return 0;
        data = file;
    }
    hp_st *f = hp_st_open_mem(data, size, "fuzz", err, sizeof err);
    free(file);
    if (!f) {
        if (!err[0] || strchr(err, '\n')) abort();   // refused: one line, never silent
        return 0;
    }
    const int n = hp_st_count(f);
    for (int i = 0; i < n; i++) {
        const hp_st_tensor *t = hp_st_at(f, i);
        if (!t || !t->name || t->ndim < 0 || t->ndim > 8) abort();
        int64_t numel = 1;
        for (int d = 0; d < t->ndim; d++)   // an accepted shape whose product overflows is a bug
            if (t->shape[d] < 0 || __builtin_mul_overflow(numel, t->shape[d], &numel)) abort();
        if (numel != t->numel) abort();
        if (hp_st_get(f, t->name) != t) abort();
        if (t->dtype != HP_DT_OTHER && t->numel > 0) {
            const int width = t->dtype == HP_DT_BF16 ? 2 : 4;
            if ((uintptr_t)t->data % width) abort();
            const unsigned char *b = t->data;
            unsigned acc = 0;
            for (int64_t k = 0; k < t->numel * width; k++) acc += b[k];   // ASan: every byte in bounds
            sink += acc;
        }
    }
    if (hp_st_at(f, -1) || hp_st_at(f, n) || hp_st_get(f, NULL)) abort();
    hp_st_get(f, "");
    const char *v = hp_st_metadata(f, "format");
    if (v) sink += (unsigned)strlen(v);
    hp_st_close(f);
    return 0;
}
