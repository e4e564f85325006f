// embedding.c - token embedding lookup over a vocab slice [v0, v0+Vl).
// With row-wise tensor parallelism each rank holds a slice of the table; ids outside
// the slice give zero rows here, and the all-reduce over the tp group completes them.
// defines: hp_embedding_forward, hp_embedding_backward
#include <string.h>
#include "hyperpar/kernels.h"

void hp_embedding_forward(float *out,         // (N, D)
                          const int *tokens,  // (N)
                          const float *table, // (Vl, D)
                          int v0, int Vl, int N, int D) {
    for (int i = 0; i < N; i++) {
        float *o = out + (size_t)i * D;
        int r = tokens[i] - v0; // row within this slice
        if (r >= 0 && r < Vl) memcpy(o, table + (size_t)r * D, (size_t)D * sizeof(float));
        else memset(o, 0, (size_t)D * sizeof(float));
    }
}

void hp_embedding_backward(float *dtable,     // (Vl, D) +=
                           const float *dout, // (N, D)
                           const int *tokens, // (N)
                           int v0, int Vl, int N, int D) {
    // fixed order over tokens: a row hit by several tokens sums them in token order
    for (int i = 0; i < N; i++) {
        int r = tokens[i] - v0;
        if (r < 0 || r >= Vl) continue;
        float *dt = dtable + (size_t)r * D;
        const float *g = dout + (size_t)i * D;
        for (int d = 0; d < D; d++) dt[d] += g[d];
    }
}
