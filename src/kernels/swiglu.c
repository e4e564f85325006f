// swiglu.c - the SwiGLU gate of the FFN: h = silu(a) * b, silu(z) = z * sigmoid(z).
// a = w1 x and b = w3 x come from two linears; this file is only the elementwise part.
// defines: hp_swiglu_forward, hp_swiglu_backward
#include <math.h>
#include "hyperpar/kernels.h"

static inline float sigmoidf(float z) { return 1.0f / (1.0f + expf(-z)); } // exp overflow -> 0, fine

void hp_swiglu_forward(float *h, const float *a, const float *b, size_t n) {
    for (size_t i = 0; i < n; i++) h[i] = a[i] * sigmoidf(a[i]) * b[i];
}

// d silu / dz = sig(z) * (1 + z * (1 - sig(z)))
void hp_swiglu_backward(float *da, float *db,   // (n) +=
                        const float *dh, const float *a, const float *b, size_t n) {
    for (size_t i = 0; i < n; i++) {
        float s = sigmoidf(a[i]);
        float silu = a[i] * s;
        if (da) da[i] += dh[i] * b[i] * s * (1.0f + a[i] * (1.0f - s));
        if (db) db[i] += dh[i] * silu;
    }
}
