// gemm_invariant.c - the batch-invariant product behind hp_gemm (gemm.h, hp_gemm_set_invariant):
// an element of C is the same bits whatever the call's M and N, the row or column it sits at,
// and the thread count. No BLAS promises that: OpenBLAS's value for one element follows the
// call's shape and the element's place in its micro-kernel (measured on a Zen 3: rows 0..63 of
// an M = 64 sgemm differ from the same rows of an M = 2048 call; two threads splitting N changed
// 1040 of 2048 rows; here even fixed 96 x 96 tiles of OpenBLAS's Haswell and SkylakeX kernels
// gave bits that depend on the row's place in the tile). So the product is written out, with
// one order for every element:
//   acc = 0;  for k = 0 .. K-1:  acc = acc + op(A)[i][k] * op(B)[k][j]   (a rounded product, then
//   a rounded sum: no fused multiply-add, the file is built with -ffp-contract=off)
//   C[i][j] = alpha * acc + beta * C[i][j]   (C not read when beta is 0)
// The loops run over a block of columns with j innermost, so a compiler's vector lanes do the
// same arithmetic as the scalar code, lane by lane. K is the caller's: a sum over K split
// across calls (or ranks) is the caller's reduction tree.
// defines: hp_gemm_invariant_product
#include <stdlib.h>
#include <string.h>
#include "hyperpar/comm.h"   // hp_fail_line_and_abort
#include "kernels/gemm.h"

enum { COLS = 256 };   // the columns one pass keeps: a row of accumulators in L1

void hp_gemm_invariant_product(hp_gemm_op ta, hp_gemm_op tb, int M, int N, int K, float alpha,
                               const float *A, int lda, const float *B, int ldb, float beta,
                               float *C, int ldc) {
    if (M <= 0 || N <= 0) return;
    const size_t k_n = K > 0 ? (size_t)K : 1;
    float *b = malloc(k_n * COLS * sizeof(float)), *a = malloc(k_n * sizeof(float));
    if (!a || !b) hp_fail_line_and_abort(1, "hp: out of memory (batch-invariant GEMM)");
    float acc[COLS];
    for (int j0 = 0; j0 < N; j0 += COLS) {
        const int n = N - j0 < COLS ? N - j0 : COLS;
        for (int k = 0; k < K; k++)   // op(B)[k][j0 .. j0+n), contiguous
            for (int j = 0; j < n; j++)
                b[(size_t)k * COLS + j] = tb == HP_GEMM_N ? B[(size_t)k * ldb + j0 + j] : B[(size_t)(j0 + j) * ldb + k];
        for (int i = 0; i < M; i++) {
            for (int k = 0; k < K; k++) a[k] = ta == HP_GEMM_N ? A[(size_t)i * lda + k] : A[(size_t)k * lda + i];
            for (int j = 0; j < n; j++) acc[j] = 0.0f;
            for (int k = 0; k < K; k++) {
                const float x = a[k];
                const float *row = b + (size_t)k * COLS;
                for (int j = 0; j < n; j++) acc[j] = acc[j] + x * row[j];
            }
            float *c = C + (size_t)i * ldc + j0;
            if (beta == 0.0f)
                for (int j = 0; j < n; j++) c[j] = alpha * acc[j];
            else
                for (int j = 0; j < n; j++) c[j] = alpha * acc[j] + beta * c[j];
        }
    }
    free(a); free(b);
}
