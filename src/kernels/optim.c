// optim.c - optimiser updates on flat buffers (a rank's shard of the parameters).
// Elementwise, so sharding them (FSDP, ZeRO) gives the same values as the full update.
// defines: hp_sgd_update, hp_adamw_update
#include <math.h>
#include <stdio.h>
#include "hyperpar/kernels.h"

void hp_sgd_update(float *p, const float *g, size_t n, float lr) {
    for (size_t i = 0; i < n; i++) p[i] -= lr * g[i];
}

// AdamW as torch.optim.AdamW (decoupled weight decay, bias-corrected, eps outside sqrt):
//   m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g^2;  mhat = m/(1-b1^t);  vhat = v/(1-b2^t)
//   p = p - lr*wd*p - lr*mhat/(sqrt(vhat)+eps), both terms computed from the OLD p
// (torch scales p by (1 - lr*wd) first and then adds the Adam step: the same thing).
void hp_adamw_update(float *p, const float *g, float *m, float *v, size_t n,
                     float lr, float beta1, float beta2, float eps, float weight_decay, int t) {
    if (t < 1) { // the bias correction 1 - beta^t would divide by zero
        fprintf(stderr, "hp_adamw_update: step t must be >= 1, got %d\n", t);
        return;
    }
    float bc1 = (float)(1.0 - pow((double)beta1, t)); // bias corrections in double, then fp32
    float bc2 = (float)(1.0 - pow((double)beta2, t));
    for (size_t i = 0; i < n; i++) {
        float gi = g[i];
        float mi = beta1 * m[i] + (1.0f - beta1) * gi;
        float vi = beta2 * v[i] + (1.0f - beta2) * gi * gi;
        m[i] = mi;
        v[i] = vi;
        float mhat = mi / bc1, vhat = vi / bc2;
        float pi = p[i];
        p[i] = pi - lr * weight_decay * pi - lr * mhat / (sqrtf(vhat) + eps);
    }
}
