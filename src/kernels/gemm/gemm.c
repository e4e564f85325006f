// gemm.c - hp_gemm and hp_gemm_bf16 (gemm.h): every matrix product of the kernels goes through
// here, to OpenBLAS (this file) or oneDNN (gemm_onednn.c), whichever the process chose.
// defines: hp_gemm, hp_gemm_bf16, hp_gemm_set_backend, hp_gemm_get_backend,
//          hp_gemm_backend_parse, hp_gemm_backend_name, hp_gemm_threads, hp_gemm_info_line,
//          hp_gemm_backend_supports, hp_gemm_auto_measure, hp_gemm_default_backend,
//          hp_gemm_shutdown, hp_gemm_omp_env
//
// Under OpenBLAS hp_gemm is cblas_sgemm with the caller's arguments, nothing else: the bits of
// every fp32 recipe are those of the releases before the backend choice.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cblas.h>
#include "hyperpar/blas.h"
#include "kernels/gemm.h"
#include "kernels/gemm_onednn.h"

static hp_gemm_backend backend = HP_GEMM_OPENBLAS;
static int invariant = 0;   // hp_gemm_set_invariant: every product by fixed tiles

static void openblas_gemm(hp_gemm_op ta, hp_gemm_op tb, int M, int N, int K, float alpha,
                          const float *A, int lda, const float *B, int ldb, float beta, float *C,
                          int ldc) {
    cblas_sgemm(CblasRowMajor, ta == HP_GEMM_T ? CblasTrans : CblasNoTrans,
                tb == HP_GEMM_T ? CblasTrans : CblasNoTrans, M, N, K, alpha, A, lda, B, ldb, beta, C,
                ldc);
}

void hp_gemm(hp_gemm_op ta, hp_gemm_op tb, int M, int N, int K, float alpha, const float *A,
             int lda, const float *B, int ldb, float beta, float *C, int ldc) {
    if (invariant)
        hp_gemm_invariant_product(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    else if (backend == HP_GEMM_ONEDNN)
        hp_gemm_onednn(0, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, hp_gemm_threads());
    else
        openblas_gemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

void hp_gemm_bf16(hp_gemm_op ta, hp_gemm_op tb, int M, int N, int K, float alpha, const float *A,
                  int lda, const float *B, int ldb, float beta, float *C, int ldc) {
    if (invariant)   // (the bf16 values' products are exact in fp32, as below)
        hp_gemm_invariant_product(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    else if (backend == HP_GEMM_ONEDNN)
        hp_gemm_onednn(1, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, hp_gemm_threads());
    else   // the bf16 values' products are exact in fp32: the same math, fp32 kernels' order
        openblas_gemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

void hp_gemm_set_backend(hp_gemm_backend b) { backend = b; }
void hp_gemm_set_invariant(int on) { invariant = on != 0; }
int hp_gemm_get_invariant(void) { return invariant; }

hp_gemm_backend hp_gemm_get_backend(void) { return backend; }

int hp_gemm_backend_parse(const char *name, hp_gemm_backend *out) {
    if (!name) return -1;
    if (!strcmp(name, "openblas")) { *out = HP_GEMM_OPENBLAS; return 0; }
    if (!strcmp(name, "onednn")) { *out = HP_GEMM_ONEDNN; return 0; }
    if (!strcmp(name, "auto")) return 1;
    return -1;
}

const char *hp_gemm_backend_name(hp_gemm_backend b) {
    return b == HP_GEMM_ONEDNN ? "onednn" : "openblas";
}

int hp_gemm_threads(void) {
    const int t = openblas_get_num_threads();
    return t < 1 ? 1 : t;
}

char *hp_gemm_info_line(char *buf, size_t n) {
    const int t = hp_gemm_threads();
    const char *s = t == 1 ? "" : "s";
    if (backend == HP_GEMM_ONEDNN) {
        char ver[32];
        snprintf(buf, n, "gemm: onednn %s, isa %s, %d thread%s", hp_gemm_onednn_version(ver, sizeof ver),
                 hp_gemm_onednn_isa(), t, s);
    } else {
        hp_blas_info b;
        hp_blas_info_get(&b);
        const char *ver = !strncmp(b.blas, "OpenBLAS ", 9) ? b.blas + 9 : b.blas;
        const char *isa = hp_blas_core_isa(b.core);
        snprintf(buf, n, "gemm: openblas %s, core %s, isa %s, %d thread%s", ver, b.core, isa ? isa : "?", t, s);
    }
    return buf;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int hp_gemm_backend_supports(hp_gemm_backend b, int bf16) {
    return b == HP_GEMM_OPENBLAS || hp_gemm_onednn_supports(bf16);
}

// GFLOP/s of one y = x w^T (M, N, K) on backend b (bf16: hp_gemm_bf16's product)
static double rate(hp_gemm_backend b, int bf16, int M, int N, int K, const float *x, const float *w,
                   float *y) {
    const hp_gemm_backend was = backend;
    backend = b;
    const double t0 = now_s();
    (bf16 ? hp_gemm_bf16 : hp_gemm)(HP_GEMM_N, HP_GEMM_T, M, N, K, 1.0f, x, K, w, K, 0.0f, y, N);
    const double dt = now_s() - t0;
    backend = was;
    return dt > 0 ? 2.0 * M * N * K / dt * 1e-9 : 0.0;
}

hp_gemm_backend hp_gemm_auto_measure(int bf16, char *why, size_t n) {
    enum { M = 1024, N = 1024, K = 1024 };
    const char *kind = bf16 ? "bf16" : "fp32";
    if (!hp_gemm_backend_supports(HP_GEMM_ONEDNN, bf16)) {
        char ver[32];
        snprintf(why, n, "oneDNN %s has no %s matmul on isa %s: openblas, not timed",
                 hp_gemm_onednn_version(ver, sizeof ver), kind, hp_gemm_onednn_isa());
        return HP_GEMM_OPENBLAS;
    }
    float *x = malloc(sizeof(float) * M * K), *w = malloc(sizeof(float) * N * K), *y = malloc(sizeof(float) * M * N);
    if (!x || !w || !y) {
        free(x); free(w); free(y);
        snprintf(why, n, "no memory to measure: openblas kept");
        return HP_GEMM_OPENBLAS;
    }
    for (size_t i = 0; i < (size_t)M * K; i++) x[i] = (float)((int)(i % 13) - 6) * 0.01f;
    for (size_t i = 0; i < (size_t)N * K; i++) w[i] = (float)((int)(i % 7) - 3) * 0.01f;
    // a warm-up call each, then 3 rounds taking turns, the best of each: with more than one
    // thread, the library that ran last still has its threads spinning for a while (OpenBLAS,
    // libgomp), and taking turns shares that handicap
    rate(HP_GEMM_OPENBLAS, bf16, M, N, K, x, w, y);
    rate(HP_GEMM_ONEDNN, bf16, M, N, K, x, w, y);
    double ob = 0.0, dn = 0.0;
    for (int r = 0; r < 3; r++) {
        const double o = rate(HP_GEMM_OPENBLAS, bf16, M, N, K, x, w, y);
        const double d = rate(HP_GEMM_ONEDNN, bf16, M, N, K, x, w, y);
        if (o > ob) ob = o;
        if (d > dn) dn = d;
    }
    free(x); free(w); free(y);
    const hp_gemm_backend pick = dn > ob ? HP_GEMM_ONEDNN : HP_GEMM_OPENBLAS;
    snprintf(why, n, "%s %dx%dx%d at %d thread%s: onednn %.1f GFLOP/s, openblas %.1f GFLOP/s", kind, M, N,
             K, hp_gemm_threads(), hp_gemm_threads() == 1 ? "" : "s", dn, ob);
    return pick;
}

hp_gemm_backend hp_gemm_default_backend(int bf16, double step_flops, char *why, size_t n) {
    if (step_flops < HP_GEMM_DEFAULT_MIN_STEP_FLOP) {
        snprintf(why, n, "openblas: a step of %.3g GFLOP, below the %.0f where oneDNN's set-up pays",
                 step_flops * 1e-9, HP_GEMM_DEFAULT_MIN_STEP_FLOP * 1e-9);
        return HP_GEMM_OPENBLAS;
    }
    const char *isa = hp_gemm_onednn_isa();
    if (bf16) {
        const int native = (strstr(isa, "bf16") || strstr(isa, "amx")) && hp_gemm_onednn_supports(1);
        snprintf(why, n, native ? "onednn: the bf16 products on the CPU's bf16 instructions (%s)"
                                : "openblas: oneDNN has no bf16 instructions here (isa %s)", isa);
        return native ? HP_GEMM_ONEDNN : HP_GEMM_OPENBLAS;
    }
    hp_blas_info b;
    hp_blas_info_get(&b);
    const char *core_isa = hp_blas_core_isa(b.core), *best_isa = hp_blas_core_isa(b.cpu_best);
    if (hp_blas_core_below_cpu() && hp_gemm_onednn_supports(0)) {
        snprintf(why, n, "onednn: OpenBLAS runs core %s (%s), narrower than the CPU's %s", b.core,
                 core_isa ? core_isa : "?", best_isa ? best_isa : "?");
        return HP_GEMM_ONEDNN;
    }
    snprintf(why, n, "openblas: core %s uses the CPU's widest vectors", b.core);
    return HP_GEMM_OPENBLAS;
}

void hp_gemm_shutdown(void) { hp_gemm_onednn_shutdown(); }

int hp_gemm_omp_env(void) {
    const char *v = getenv("OMP_WAIT_POLICY");
    if (v && *v) return 0;
    return setenv("OMP_WAIT_POLICY", "PASSIVE", 1) == 0;
}
