// gemm_bench.c - `hp bench`'s GEMM microbenchmark (gemm_bench.h): OpenBLAS sgemm, oneDNN f32
// and oneDNN bf16 on one shape, the bf16 peak beside them.
// defines: tool_gemm_measure
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "gemm_bench.h"
#include "metrics/fma_peak.h"
#include "hyperpar/bf16.h"
#include "kernels/gemm.h"
#include "kernels/gemm_onednn.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

// GFLOP/s of y = x w^T on backend b (bf16: hp_gemm_bf16), best of 3 after a warm-up
static double rate(hp_gemm_backend b, int bf16, int M, int N, int K, const float *x, const float *w, float *y) {
    hp_gemm_set_backend(b);
    double best = 0.0;
    for (int r = 0; r < 4; r++) {
        const double t0 = now_s();
        (bf16 ? hp_gemm_bf16 : hp_gemm)(HP_GEMM_N, HP_GEMM_T, M, N, K, 1.0f, x, K, w, K, 0.0f, y, N);
        const double dt = now_s() - t0;
        const double g = dt > 0 ? 2.0 * M * N * K / dt * 1e-9 : 0.0;
        if (r > 0 && g > best) best = g;
    }
    return best;
}

void tool_gemm_measure(int threads, tool_gemm_rates *r) {
    memset(r, 0, sizeof *r);
    r->M = 2048; r->N = 1024; r->K = 1024; r->threads = threads;
    const int M = r->M, N = r->N, K = r->K;
    float *x = malloc(sizeof(float) * (size_t)M * K), *w = malloc(sizeof(float) * (size_t)N * K),
          *y = malloc(sizeof(float) * (size_t)M * N);
    if (!x || !w || !y) { free(x); free(w); free(y); return; }
    // bf16-valued operands: the same inputs serve both precisions
    for (size_t i = 0; i < (size_t)M * K; i++) x[i] = hp_bf16_round_float((float)((int)(i % 13) - 6) * 0.01f);
    for (size_t i = 0; i < (size_t)N * K; i++) w[i] = hp_bf16_round_float((float)((int)(i % 7) - 3) * 0.01f);
    const hp_gemm_backend was = hp_gemm_get_backend();
    r->openblas_sgemm = rate(HP_GEMM_OPENBLAS, 0, M, N, K, x, w, y);
    // what oneDNN lacks here (bf16 below avx512_core) is skipped and named, never run
    r->onednn_has_f32 = hp_gemm_backend_supports(HP_GEMM_ONEDNN, 0);
    r->onednn_has_bf16 = hp_gemm_backend_supports(HP_GEMM_ONEDNN, 1);
    if (r->onednn_has_f32) r->onednn_f32 = rate(HP_GEMM_ONEDNN, 0, M, N, K, x, w, y);
    if (r->onednn_has_bf16) r->onednn_bf16 = rate(HP_GEMM_ONEDNN, 1, M, N, K, x, w, y);
    hp_gemm_set_backend(was);
    hp_bf16 *xb = NULL, *wb = NULL;
    if (r->onednn_has_bf16) {
        xb = malloc(sizeof(hp_bf16) * (size_t)M * K);
        wb = malloc(sizeof(hp_bf16) * (size_t)N * K);
    }
    if (xb && wb) {   // the matmul alone, on operands already in 2-byte form
        hp_bf16_pack(xb, x, (size_t)M * K);
        hp_bf16_pack(wb, w, (size_t)N * K);
        for (int rep = 0; rep < 4; rep++) {
            const double t0 = now_s();
            hp_gemm_onednn_bf16_packed(HP_GEMM_N, HP_GEMM_T, M, N, K, 1.0f, xb, K, wb, K, 0.0f, y, N, threads);
            const double dt = now_s() - t0;
            const double g = dt > 0 ? 2.0 * M * N * K / dt * 1e-9 : 0.0;
            if (rep > 0 && g > r->onednn_bf16_packed) r->onednn_bf16_packed = g;
        }
    }
    free(xb); free(wb);
    free(x); free(w); free(y);
    hp_gemm_onednn_impl(0, M, N, K, threads, r->onednn_f32_impl, sizeof r->onednn_f32_impl);
    hp_gemm_onednn_impl(1, M, N, K, threads, r->onednn_bf16_impl, sizeof r->onednn_bf16_impl);
    r->bf16_peak = hp_fma_bf16_peak(threads, r->bf16_peak_isa, sizeof r->bf16_peak_isa);
    // AMX: its tiles outrun any vector loop; oneDNN's bf16 matmul is the measure there
    if (!strcmp(hp_gemm_onednn_isa(), "avx512_core_amx") && r->onednn_bf16_packed > r->bf16_peak) {
        r->bf16_peak = r->onednn_bf16_packed;
        snprintf(r->bf16_peak_isa, sizeof r->bf16_peak_isa, "amx (oneDNN bf16 matmul)");
    }
}
