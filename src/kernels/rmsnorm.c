// rmsnorm.c - RMSNorm: out = x * rstd * w, rstd = 1/sqrt(mean(x^2) + eps), per row.
// The mean of squares is summed in double so the result does not depend on D's size
// much; rstd is saved per row for the backward.
// Rows are independent, so row ranges run in parallel (kernels/parallel.h); dw sums over the
// rows, so it runs as column ranges instead, each adding the rows in order: the same bits at
// any thread count.
// defines: hp_rmsnorm_forward, hp_rmsnorm_backward
#include <math.h>
#include "hyperpar/kernels.h"
#include "kernels/parallel.h"

#define RMS_MIN_ROWS 64  // rows per thread below which a job runs inline
#define RMS_COLS 64      // columns of dw per parallel item

typedef struct {
    float *out, *rstd, *dx, *dw;
    const float *x, *w, *dout, *rstd_in;
    float eps;
    int N, D;
} rms_job;

static void forward_rows(void *ctx, int lo, int hi) {
    const rms_job *J = ctx;
    float *out = J->out, *rstd = J->rstd;
    const float *x = J->x, *w = J->w;
    const float eps = J->eps;
    const int D = J->D;
    for (int i = lo; i < hi; i++) {
        const float *xi = x + (size_t)i * D;
        float *oi = out + (size_t)i * D;
        double ss = 0.0;
        for (int d = 0; d < D; d++) ss += (double)xi[d] * xi[d];
        float r = (float)(1.0 / sqrt(ss / D + (double)eps));
        rstd[i] = r;
        for (int d = 0; d < D; d++) oi[d] = xi[d] * r * w[d];
    }
}

void hp_rmsnorm_forward(float *out,        // (N, D)
                        float *rstd,       // (N)
                        const float *x,    // (N, D)
                        const float *w,    // (D)
                        float eps, int N, int D) {
    rms_job J = { .out = out, .rstd = rstd, .x = x, .w = w, .eps = eps, .N = N, .D = D };
    hp_par_for(N, RMS_MIN_ROWS, 0, forward_rows, &J);
}

// y_k = x_k r w_k with r = (mean(x^2)+eps)^(-1/2), dr/dx_k = -r^3 x_k / D, so
// dx_k = r * (w_k g_k - x_k * r^2 * mean_i(g_i w_i x_i)), dw_k = sum_rows g_k x_k r.
// Rows [lo, hi): dx, and dw row by row when J->dw is set (the serial loop).
static void backward_rows(const rms_job *J, int lo, int hi) {
    const float *x = J->x, *dout = J->dout, *w = J->w, *rstd = J->rstd_in;
    float *dx = J->dx, *dw = J->dw;
    const int D = J->D;
    for (int i = lo; i < hi; i++) {
        const float *xi = x + (size_t)i * D;
        const float *gi = dout + (size_t)i * D;
        float r = rstd[i];
        if (dx) {
            double dot = 0.0; // sum_i g_i w_i x_i
            for (int d = 0; d < D; d++) dot += (double)gi[d] * w[d] * xi[d];
            float c = (float)(dot / D) * r * r;
            float *dxi = dx + (size_t)i * D;
            for (int d = 0; d < D; d++) dxi[d] += r * (w[d] * gi[d] - xi[d] * c);
        }
        if (dw) for (int d = 0; d < D; d++) dw[d] += gi[d] * xi[d] * r;
    }
}

static void backward_dx_rows(void *ctx, int lo, int hi) {
    rms_job J = *(const rms_job *)ctx;
    J.dw = NULL; // dw goes by columns (backward_dw_cols)
    backward_rows(&J, lo, hi);
}

// Items = column chunks of dw; every row is added in order, as the serial loop does.
static void backward_dw_cols(void *ctx, int lo, int hi) {
    const rms_job *J = ctx;
    const float *x = J->x, *dout = J->dout, *rstd = J->rstd_in;
    const int N = J->N, D = J->D;
    const int d0 = lo * RMS_COLS, d1 = hi * RMS_COLS < D ? hi * RMS_COLS : D;
    float *dw = J->dw;
    for (int i = 0; i < N; i++) {
        const float *xi = x + (size_t)i * D;
        const float *gi = dout + (size_t)i * D;
        const float r = rstd[i];
        for (int d = d0; d < d1; d++) dw[d] += gi[d] * xi[d] * r;
    }
}

void hp_rmsnorm_backward(float *dx,          // (N, D) +=
                         float *dw,          // (D)    +=
                         const float *dout,  // (N, D)
                         const float *x,     // (N, D)
                         const float *w,     // (D)
                         const float *rstd,  // (N)
                         int N, int D) {
    rms_job J = { .dx = dx, .dw = dw, .dout = dout, .x = x, .w = w, .rstd_in = rstd, .N = N, .D = D };
    if (hp_par_threads() == 1 || N < 2 * RMS_MIN_ROWS) { // one pass over the rows
        backward_rows(&J, 0, N);
        return;
    }
    if (dx) hp_par_for(N, RMS_MIN_ROWS, 0, backward_dx_rows, &J);
    if (dw) hp_par_for((D + RMS_COLS - 1) / RMS_COLS, 1, 0, backward_dw_cols, &J);
}
