// cross_entropy.c - cross-entropy split over vocab slices (loss parallel / tp on the
// output layer). Each rank holds logits (N, Vl) for ids [v0, v0+Vl); the caller combines:
//   m  = max over slices of hp_ce_local_max
//   se = sum over slices of hp_ce_local_sumexp(m)      (with the GLOBAL m)
//   tl = sum over slices of hp_ce_local_target         (only the owning slice adds)
//   loss_i = log(se_i) + m_i - tl_i for labels != -100.
// defines: hp_ce_local_max, hp_ce_local_sumexp, hp_ce_local_target, hp_ce_backward
#include <math.h>
#include "hyperpar/kernels.h"

#define CE_IGNORE (-100)

void hp_ce_local_max(float *m,             // (N)
                     const float *logits,  // (N, Vl)
                     int N, int Vl) {
    for (int i = 0; i < N; i++) {
        const float *l = logits + (size_t)i * Vl;
        float mx = -INFINITY; // an empty slice contributes -inf to the max
        for (int j = 0; j < Vl; j++) if (l[j] > mx) mx = l[j];
        m[i] = mx;
    }
}

void hp_ce_local_sumexp(float *se,            // (N)
                        const float *logits,  // (N, Vl)
                        const float *m,       // (N) global max
                        int N, int Vl) {
    for (int i = 0; i < N; i++) {
        const float *l = logits + (size_t)i * Vl;
        double sum = 0.0;
        for (int j = 0; j < Vl; j++) sum += expf(l[j] - m[i]);
        se[i] = (float)sum;
    }
}

void hp_ce_local_target(float *tl,            // (N)
                        const float *logits,  // (N, Vl)
                        const int *labels,    // (N)
                        int v0, int N, int Vl) {
    for (int i = 0; i < N; i++) {
        int c = labels[i] - v0;
        tl[i] = (labels[i] != CE_IGNORE && c >= 0 && c < Vl) ? logits[(size_t)i * Vl + c] : 0.0f;
    }
}

void hp_ce_backward(float *dlogits,        // (N, Vl) =, may be logits
                    const float *logits,   // (N, Vl)
                    const float *m,        // (N) global max
                    const float *se,       // (N) global sumexp
                    const int *labels,     // (N)
                    int v0, float scale, int N, int Vl) {
    for (int i = 0; i < N; i++) {
        float *dl = dlogits + (size_t)i * Vl;
        if (labels[i] == CE_IGNORE) {
            for (int j = 0; j < Vl; j++) dl[j] = 0.0f;
            continue;
        }
        const float *l = logits + (size_t)i * Vl;
        float inv = 1.0f / se[i];
        // (each element read before it is written: in place is safe)
        for (int j = 0; j < Vl; j++) dl[j] = scale * (expf(l[j] - m[i]) * inv);
        int c = labels[i] - v0;
        if (c >= 0 && c < Vl) dl[c] -= scale;
    }
}
