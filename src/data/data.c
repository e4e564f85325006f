// data.c - the training data of model.md: synthetic ids from the counter hash of rng.h, or
// the bytes of a text file (vocab 256) cut into consecutive windows of S+1 bytes.
// Every rank calls hp_data_sequence for the global sequences it owns; the result depends
// only on (seed, step, g), never on which rank asks or in what order.
// defines: hp_data_open, hp_data_close, hp_data_windows, hp_data_sequence
#include "hyperpar/data.h"
#include "util/file_io.h"
#include "hyperpar/rng.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct hp_data {
    int            vocab_size; // V
    unsigned char *bytes;      // (len,) the whole text file; NULL for synthetic data
    int64_t        len;
};

hp_data *hp_data_open(const char *path, int vocab_size, char *err, size_t errlen) {
    if (errlen) err[0] = '\0';
    if (vocab_size < 1) {
        snprintf(err, errlen, "data: vocab_size must be >= 1, got %d", vocab_size);
        return NULL;
    }
    if (path && vocab_size < 256) {
        snprintf(err, errlen, "%s: text data are bytes and need vocab_size >= 256, got %d", path, vocab_size);
        return NULL;
    }
    hp_data *d = calloc(1, sizeof *d);
    if (!d) { snprintf(err, errlen, "data: out of memory"); return NULL; }
    d->vocab_size = vocab_size;
    if (!path) return d;
    size_t len;
    const char *why;
    if (hp_file_read(path, &d->bytes, &len, &why) != 0) {
        snprintf(err, errlen, "%s: cannot open data file: %s", path, why);
        free(d);
        return NULL;
    }
    d->len = (int64_t)len;
    if (d->len == 0) {
        snprintf(err, errlen, "%s: data file is empty", path);
        hp_data_close(d);
        return NULL;
    }
    return d;
}

void hp_data_close(hp_data *data) {
    if (!data) return;
    free(data->bytes);
    free(data);
}

int64_t hp_data_windows(const hp_data *data, int S) {
    if (!data || S < 0) return 0;
    if (!data->bytes) return INT64_MAX;
    return data->len / ((int64_t)S + 1);
}

void hp_data_sequence(const hp_data *data, int *ids, uint64_t seed, int step, int g, int B, int S) {
    if (!data || !ids || S < 0) return;
    if (!data->bytes) {
        uint64_t V = (uint64_t)data->vocab_size;
        for (int i = 0; i <= S; i++)
            ids[i] = (int)(hp_hash64(seed, (uint64_t)(int64_t)step, (uint64_t)(int64_t)g, (uint64_t)i) % V);
        return;
    }
    int64_t windows = hp_data_windows(data, S);
    if (windows <= 0) { // the caller should have checked hp_data_windows; never read past the file
        memset(ids, 0, sizeof(int) * ((size_t)S + 1));
        return;
    }
    // steps are 1-based; the epoch wraps around, and a step before 1 still maps inside the file
    int64_t w = (((int64_t)step - 1) * (int64_t)B + (int64_t)g) % windows;
    if (w < 0) w += windows;
    const unsigned char *src = data->bytes + w * ((int64_t)S + 1);
    for (int i = 0; i <= S; i++) ids[i] = (int)src[i];
}
