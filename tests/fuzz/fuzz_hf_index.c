// fuzz_hf_index.c - model.safetensors.index.json's reader (src/model_io/hf_index.c) on any bytes,
// as a file read leaves them (no NUL after them).
// Invariants (abort when broken): a refusal is one non-empty line and no names; an accepted index
// names 1..max distinct files, each a plain non-empty name of the folder (no '/', not . or ..).
#include <stdlib.h>
#include <string.h>
#include "model_io/model_tensors.h"
#include "fuzz_target.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = malloc(size ? size : 1);   // exactly size bytes: an over-read is an ASan report
    if (!text) return 0;
    if (size) memcpy(text, data, size);
    enum { MAX = 8 };
    char names[MAX][HP_HF_SHARD_NAME], err[512] = "";
    int n = -1;
    const int rc = hp_hf_index_shards(text, size, "index.json", names, MAX, &n, err, sizeof err);
    free(text);
    if (rc != 0) {
        if (!err[0] || strchr(err, '\n') || n != 0) abort();
        return 0;
    }
    if (n < 1 || n > MAX) abort();
    for (int i = 0; i < n; i++) {
        if (!memchr(names[i], '\0', HP_HF_SHARD_NAME) || !names[i][0] || strchr(names[i], '/') ||
            !strcmp(names[i], ".") || !strcmp(names[i], ".."))
            abort();
        for (int j = 0; j < i; j++) if (!strcmp(names[i], names[j])) abort();
    }
    return 0;
}
