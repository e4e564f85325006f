// linear.c - fully connected layer without bias, torch.nn.Linear layout (w is [out, in]).
// All three products go to hp_gemm (kernels/gemm.h), or under the bf16 policy to hp_gemm_bf16
// (the _bf16 forms: operands already bf16-valued, fp32 accumulation and output); backward
// accumulates (beta = 1) so that grads of a weight used several times (experts) add up.
// defines: hp_linear_forward(_bf16), hp_linear_backward(_first)(_bf16)
#include <string.h>
#include "hyperpar/kernels.h"
#include "kernels/gemm.h"

typedef void gemm_fn(hp_gemm_op ta, hp_gemm_op tb, int M, int N, int K, float alpha, const float *A,
                     int lda, const float *B, int ldb, float beta, float *C, int ldc);

static void forward(gemm_fn *gemm, float *y, const float *x, const float *w, int N, int in, int out) {
    if (N <= 0 || out <= 0) return;
    if (in <= 0) { memset(y, 0, (size_t)N * out * sizeof(float)); return; }
    // y = x @ w^T
    gemm(HP_GEMM_N, HP_GEMM_T, N, out, in,
         1.0f, x, in, w, in, 0.0f, y, out);
}

void hp_linear_forward(float *y,            // (N, out)
                       const float *x,      // (N, in)
                       const float *w,      // (out, in)
                       int N, int in, int out) {
    forward(hp_gemm, y, x, w, N, in, out);
}

void hp_linear_forward_bf16(float *y, const float *x, const float *w, int N, int in, int out) {
    forward(hp_gemm_bf16, y, x, w, N, in, out);
}

// dx (beta = 1) += or (beta = 0) = dy @ w; dw += dy^T @ x
static void backward(gemm_fn *gemm, float *dx, float *dw, const float *dy, const float *x, const float *w,
                     int N, int in, int out, float dx_beta) {
    if (N <= 0 || in <= 0) return;   // an empty product adds nothing
    if (out <= 0) {                  // nor does an empty sum; a written dx is its zeros
        if (dx && dx_beta == 0.0f) memset(dx, 0, (size_t)N * in * sizeof(float));
        return;
    }
    if (dx)
        gemm(HP_GEMM_N, HP_GEMM_N, N, in, out,
             1.0f, dy, out, w, in, dx_beta, dx, in);
    if (dw) // dw += dy^T @ x
        gemm(HP_GEMM_T, HP_GEMM_N, out, in, N,
             1.0f, dy, out, x, in, 1.0f, dw, in);
}

void hp_linear_backward(float *dx,          // (N, in)   +=
                        float *dw,          // (out, in) +=
                        const float *dy,    // (N, out)
                        const float *x,     // (N, in)
                        const float *w,     // (out, in)
                        int N, int in, int out) {
    backward(hp_gemm, dx, dw, dy, x, w, N, in, out, 1.0f);
}

void hp_linear_backward_first(float *dx,    // (N, in)   =
                              float *dw,    // (out, in) +=
                              const float *dy, const float *x, const float *w,
                              int N, int in, int out) {
    backward(hp_gemm, dx, dw, dy, x, w, N, in, out, 0.0f);
}

void hp_linear_backward_bf16(float *dx, float *dw, const float *dy, const float *x, const float *w,
                             int N, int in, int out) {
    backward(hp_gemm_bf16, dx, dw, dy, x, w, N, in, out, 1.0f);
}

void hp_linear_backward_first_bf16(float *dx, float *dw, const float *dy, const float *x, const float *w,
                                   int N, int in, int out) {
    backward(hp_gemm_bf16, dx, dw, dy, x, w, N, in, out, 0.0f);
}
