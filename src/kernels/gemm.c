// gemm.c - hp_gemm (gemm.h) on OpenBLAS: every matrix product of the kernels goes through
// here, so choosing another backend is a change to this file alone.
// defines: hp_gemm
#include <cblas.h>
#include "kernels/gemm.h"

void hp_gemm(hp_gemm_op ta, hp_gemm_op tb, int M, int N, int K, float alpha, const float *A,
             int lda, const float *B, int ldb, float beta, float *C, int ldc) {
    cblas_sgemm(CblasRowMajor, ta == HP_GEMM_T ? CblasTrans : CblasNoTrans,
                tb == HP_GEMM_T ? CblasTrans : CblasNoTrans, M, N, K, alpha, A, lda, B, ldb, beta, C,
                ldc);
}
