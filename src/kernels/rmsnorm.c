// rmsnorm.c - RMSNorm: out = x * rstd * w, rstd = 1/sqrt(mean(x^2) + eps), per row.
// The mean of squares is summed in double so the result does not depend on D's size
// much; rstd is saved per row for the backward.
// defines: hp_rmsnorm_forward, hp_rmsnorm_backward
#include <math.h>
#include "hyperpar/kernels.h"

void hp_rmsnorm_forward(float *out,        // (N, D)
                        float *rstd,       // (N)
                        const float *x,    // (N, D)
                        const float *w,    // (D)
                        float eps, int N, int D) {
    for (int i = 0; i < N; i++) {
        const float *xi = x + (size_t)i * D;
        float *oi = out + (size_t)i * D;
        double ss = 0.0;
        for (int d = 0; d < D; d++) ss += (double)xi[d] * xi[d];
        float r = (float)(1.0 / sqrt(ss / D + (double)eps));
        rstd[i] = r;
        for (int d = 0; d < D; d++) oi[d] = xi[d] * r * w[d];
    }
}

// y_k = x_k r w_k with r = (mean(x^2)+eps)^(-1/2), dr/dx_k = -r^3 x_k / D, so
// dx_k = r * (w_k g_k - x_k * r^2 * mean_i(g_i w_i x_i)), dw_k = sum_rows g_k x_k r.
void hp_rmsnorm_backward(float *dx,          // (N, D) +=
                         float *dw,          // (D)    +=
                         const float *dout,  // (N, D)
                         const float *x,     // (N, D)
                         const float *w,     // (D)
                         const float *rstd,  // (N)
                         int N, int D) {
    for (int i = 0; i < N; i++) {
        const float *xi = x + (size_t)i * D;
        const float *gi = dout + (size_t)i * D;
        float r = rstd[i];
        double dot = 0.0; // sum_i g_i w_i x_i
        for (int d = 0; d < D; d++) dot += (double)gi[d] * w[d] * xi[d];
        float c = (float)(dot / D) * r * r;
        if (dx) {
            float *dxi = dx + (size_t)i * D;
            for (int d = 0; d < D; d++) dxi[d] += r * (w[d] * gi[d] - xi[d] * c);
        }
        if (dw) for (int d = 0; d < D; d++) dw[d] += gi[d] * xi[d] * r;
    }
}
