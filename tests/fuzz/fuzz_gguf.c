// fuzz_gguf.c - the GGUF reader (src/model_io/gguf_read.c) and dequantiser (gguf_dequant.c) on
// any bytes, as a file read leaves them (exactly size bytes: an over-read is an ASan report).
// Invariants (abort when broken): a refusal is one non-empty line starting "fuzz.gguf: "; an
// accepted file has its pairs' values and every tensor's data inside the bytes, data_offset a
// multiple of the alignment, numel = the product of the dims; every tensor of a type hp
// dequantises converts without reading past its bytes.
#include <stdlib.h>
#include <string.h>
#include "hyperpar/gguf.h"
#include "fuzz_target.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    unsigned char *bytes = malloc(size ? size : 1);
    if (!bytes) return 0;
    if (size) memcpy(bytes, data, size);
    char err[512] = "";
    hp_gguf *g = hp_gguf_parse(bytes, size, "fuzz.gguf", err, sizeof err);
    if (!g) {
        if (!err[0] || strchr(err, '\n') || strncmp(err, "fuzz.gguf: ", 11)) abort();
        free(bytes);
        return 0;
    }
    const unsigned char *end = bytes + size;
    if (g->alignment == 0 || (g->alignment & (g->alignment - 1)) || g->data_offset > size) abort();
    if (g->n_tensors > 0 && g->data_offset % g->alignment) abort();
    for (int64_t i = 0; i < g->n_kv; i++)
        if (g->kv[i].key < (const char *)bytes || g->kv[i].key + g->kv[i].key_len > (const char *)end ||
            g->kv[i].val < bytes || g->kv[i].val > end)
            abort();
    for (int64_t i = 0; i < g->n_tensors; i++) {
        const hp_gguf_tensor *t = &g->tensors[i];
        int64_t n = 1;
        for (int d = 0; d < 4; d++) n *= t->ne[d];
        if (n != t->numel || t->data < bytes || t->nbytes > (uint64_t)(end - t->data)) abort();
        if (!hp_gguf_can_dequantize(t->type) || t->numel > (1 << 22)) continue;
        float *y = malloc((size_t)t->numel * sizeof *y + 1);
        if (y && hp_gguf_dequantize(g, t, y, 0, err, sizeof err) != 0) abort();
        free(y);
    }
    hp_gguf_close(g);
    free(bytes);
    return 0;
}
