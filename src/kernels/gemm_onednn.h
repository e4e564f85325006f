// gemm_onednn.h - the oneDNN backend of hp_gemm (gemm.h), called only by gemm.c.
// defines: hp_gemm_onednn, hp_gemm_onednn_bf16_packed, hp_gemm_onednn_version, hp_gemm_onednn_isa, hp_gemm_onednn_impl,
//          hp_gemm_onednn_shutdown, hp_gemm_onednn_supports, hp_gemm_onednn_apply_cap
#ifndef HP_KERNELS_GEMM_ONEDNN_H
#define HP_KERNELS_GEMM_ONEDNN_H
#include <stddef.h>
#include "hyperpar/bf16.h"
#include "kernels/gemm.h"

// C = alpha op(A) op(B) + beta C through a cached oneDNN matmul on `threads` OpenMP threads;
// bf16 != 0: A and B are packed to bf16 first (bf16 x bf16 -> f32).
void hp_gemm_onednn(int bf16, hp_gemm_op ta, hp_gemm_op tb, int M, int N, int K, float alpha,
                    const float *A, int lda, const float *B, int ldb, float beta, float *C, int ldc,
                    int threads);

// The bf16 product on operands already in 2-byte form (lda, ldb in bf16 elements): the matmul
// alone, without hp_gemm_bf16's packing (hp bench measures both).
void hp_gemm_onednn_bf16_packed(hp_gemm_op ta, hp_gemm_op tb, int M, int N, int K, float alpha,
                                const hp_bf16 *A, int lda, const hp_bf16 *B, int ldb, float beta,
                                float *C, int ldc, int threads);

// "2.6.3"; returns buf.
char *hp_gemm_onednn_version(char *buf, size_t n);
// oneDNN's name of the widest ISA it dispatches to here: "avx512_core_bf16", "avx512_core_amx",
// "avx2" ... (dnnl_get_effective_cpu_isa, as oneDNN's DNNL_MAX_CPU_ISA spells them).
const char *hp_gemm_onednn_isa(void);
// The implementation oneDNN picks for a matmul of this shape ("brg:avx512_core_bf16",
// "gemm:jit"), or "none" where it has none, into buf; returns buf.
char *hp_gemm_onednn_impl(int bf16, int M, int N, int K, int threads, char *buf, size_t n);

// 1 when oneDNN has a matmul of this dtype on this CPU (bf16: only from avx512_core on in 2.6),
// asked once by making a small primitive descriptor. No call fails after a 1 for lack of an ISA.
int hp_gemm_onednn_supports(int bf16);

// HP_CPU_ISA as oneDNN's maximal ISA (dnnl_set_max_cpu_isa) unless ONEDNN_MAX_CPU_ISA or
// DNNL_MAX_CPU_ISA is set; the backend calls it once before its first oneDNN call.
void hp_gemm_onednn_apply_cap(void);

void hp_gemm_onednn_shutdown(void);

#endif
