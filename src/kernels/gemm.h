// gemm.h - the one matrix product of the kernels (and so of the model): row-major fp32
//   C (M, N) = alpha * op(A) (M, K) @ op(B) (K, N) + beta * C,   op(X) = X or X^T,
// with leading dimensions lda, ldb, ldc as BLAS has them. Today it is OpenBLAS's cblas_sgemm
// with the same arguments (so the same bits); a second backend plugs in behind it (gemm.c)
// without touching linear.c, attention.c or the model.
// defines: hp_gemm_op, hp_gemm
//
//   hp_gemm(HP_GEMM_N, HP_GEMM_T, N, out, in, 1.0f, x, in, w, in, 0.0f, y, out);   // y = x w^T
#ifndef HP_KERNELS_GEMM_H
#define HP_KERNELS_GEMM_H

typedef enum { HP_GEMM_N = 0, HP_GEMM_T = 1 } hp_gemm_op;   // op(X) = X, op(X) = X^T

void hp_gemm(hp_gemm_op ta, hp_gemm_op tb, int M, int N, int K, float alpha, const float *A,
             int lda, const float *B, int ldb, float beta, float *C, int ldc);

#endif
