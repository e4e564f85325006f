// swiglu.c - the SwiGLU gate of the FFN: h = silu(a) * b, silu(z) = z * sigmoid(z).
// a = w1 x and b = w3 x come from two linears; this file is only the elementwise part.
// Elementwise, so contiguous ranges run in parallel (kernels/parallel.h) with the very same
// result per element whatever the thread count; exp(-a) of a block goes through hp_expf_n
// (kernels/vexpf.h: vectorised, the same bits as expf), the rest is the scalar formula.
// defines: hp_swiglu_forward, hp_swiglu_backward
#include <math.h>
#include "hyperpar/kernels.h"
#include "kernels/parallel.h"
#include "kernels/vexpf.h"

#define SWIGLU_CHUNK 4096 // elements per parallel item
#define SWIGLU_BLOCK 256  // elements whose exp(-a) is computed at once (a stack buffer)

// e[k] = expf(-a[k]) for k < n (n <= SWIGLU_BLOCK); sigmoid(a) = 1 / (1 + e), exp overflow -> 0
static void exp_neg(float *e, const float *a, int n) {
    for (int k = 0; k < n; k++) e[k] = -a[k];
    hp_expf_n(e, e, n);
}

typedef struct { float *h, *da, *db; const float *dh, *a, *b; size_t n; } swiglu_job;

static void items(const swiglu_job *J, int lo, int hi, size_t *i0, size_t *i1) {
    *i0 = (size_t)lo * SWIGLU_CHUNK;
    *i1 = (size_t)hi * SWIGLU_CHUNK < J->n ? (size_t)hi * SWIGLU_CHUNK : J->n;
}

static void forward_items(void *ctx, int lo, int hi) {
    const swiglu_job *J = ctx;
    size_t i0, i1;
    items(J, lo, hi, &i0, &i1);
    float *h = J->h;
    const float *a = J->a, *b = J->b;
    float e[SWIGLU_BLOCK];
    for (size_t i = i0; i < i1; i += SWIGLU_BLOCK) {
        const int n = i1 - i < SWIGLU_BLOCK ? (int)(i1 - i) : SWIGLU_BLOCK;
        exp_neg(e, a + i, n);
        for (int k = 0; k < n; k++) h[i + k] = a[i + k] * (1.0f / (1.0f + e[k])) * b[i + k];
    }
}

void hp_swiglu_forward(float *h, const float *a, const float *b, size_t n) {
    swiglu_job J = { .h = h, .a = a, .b = b, .n = n };
    hp_par_for((int)((n + SWIGLU_CHUNK - 1) / SWIGLU_CHUNK), 8, 0, forward_items, &J);
}

// d silu / dz = sig(z) * (1 + z * (1 - sig(z)))
static void backward_items(void *ctx, int lo, int hi) {
    const swiglu_job *J = ctx;
    size_t i0, i1;
    items(J, lo, hi, &i0, &i1);
    float *da = J->da, *db = J->db;
    const float *dh = J->dh, *a = J->a, *b = J->b;
    float e[SWIGLU_BLOCK];
    for (size_t i0b = i0; i0b < i1; i0b += SWIGLU_BLOCK) {
        const int n = i1 - i0b < SWIGLU_BLOCK ? (int)(i1 - i0b) : SWIGLU_BLOCK;
        exp_neg(e, a + i0b, n);
        for (int k = 0; k < n; k++) {
            const size_t i = i0b + k;
            float s = 1.0f / (1.0f + e[k]);
            float silu = a[i] * s;
            if (da) da[i] = dh[i] * b[i] * s * (1.0f + a[i] * (1.0f - s));
            if (db) db[i] = dh[i] * silu;
        }
    }
}

void hp_swiglu_backward(float *da, float *db,   // (n) written
                        const float *dh, const float *a, const float *b, size_t n) {
    swiglu_job J = { .da = da, .db = db, .dh = dh, .a = a, .b = b, .n = n };
    hp_par_for((int)((n + SWIGLU_CHUNK - 1) / SWIGLU_CHUNK), 8, 0, backward_items, &J);
}
