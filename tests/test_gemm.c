// test_gemm.c - the GEMM backends behind hp_gemm / hp_gemm_bf16 (src/kernels/gemm.h), each
// against a naive reference summed in double:
//   - hp_gemm_bf16 under openblas and onednn, on bf16-valued operands, for the four transpose
//     combinations, beta 0 and 1, alpha 1 and an attention-like scale, odd shapes, leading
//     dimensions wider than the rows: |C - ref| <= (K + 3) 2^-24 (|alpha| sum_k |a||b| + |beta c|)
//     (each product of two bf16 is exact in fp32; K - 1 additions, the alpha scaling and the beta
//     sum round once each, by at most 2^-24 of a partial sum bounded by the sum of magnitudes);
//   - hp_gemm (fp32) under onednn within the same bound plus one rounding per product (K + 4);
//   - hp_gemm under openblas is bit for bit cblas_sgemm with the same arguments (the fp32
//     recipes keep their bits);
//   - onednn from two threads at once (the kernels' parallel-for) equals onednn from one;
//   - more shapes than a thread's primitive cache holds, and a shutdown in between;
//   - the backend names parse, and the info line names the library, its ISA and the threads;
//   - oneDNN has its f32 matmul here, and its bf16 one exactly from avx512_core on.
// oneDNN's bf16 products (and the threads and cache checks, which run them) are a run of their
// own, `test_gemm onednn-bf16`, skipped with exit 77 and a line where oneDNN has no bf16 matmul.
// Exit 0 only when every check passed.
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cblas.h>
#include "hyperpar/bf16.h"
#include "hyperpar/blas.h"
#include "kernels/gemm.h"
#include "kernels/gemm_onednn.h"
#include "test_check.h"

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static float uniform(void) {   // in [-1, 1)
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((double)(rng >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

static float *fill(size_t n, int bf16) {
    float *x = malloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++) x[i] = bf16 ? hp_bf16_round_float(uniform()) : uniform();
    return x;
}

// element (i, j) of op(X) for X stored row-major with leading dimension ld
static double at(const float *X, int ld, int trans, int i, int j) {
    return trans ? X[(size_t)j * ld + i] : X[(size_t)i * ld + j];
}

// max over C of |C - ref| / bound (<= 1 passes); also checks the padding past N is untouched
static double worst_ratio(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
                          const float *B, int ldb, float beta, const float *C0, const float *C, int ldc,
                          int extra_roundings, int *pad_ok) {
    double worst = 0.0;
    *pad_ok = 1;
    for (int i = 0; i < M; i++) {
        for (int j = 0; j < N; j++) {
            double s = 0.0, mag = 0.0;
            for (int k = 0; k < K; k++) {
                const double p = at(A, lda, ta, i, k) * at(B, ldb, tb, k, j);
                s += p;
                mag += fabs(p);
            }
            const double c0 = C0[(size_t)i * ldc + j];
            const double ref = (double)alpha * s + (beta != 0.0f ? (double)beta * c0 : 0.0);
            const double bound = (K + extra_roundings) * ldexp(1.0, -24) *
                                 (fabs((double)alpha) * mag + fabs((double)beta * c0)) + 1e-30;
            const double r = fabs((double)C[(size_t)i * ldc + j] - ref) / bound;
            if (!(r <= worst)) worst = r;   // a NaN makes it NaN
        }
        for (int j = N; j < ldc; j++)
            if (memcmp(&C[(size_t)i * ldc + j], &C0[(size_t)i * ldc + j], sizeof(float))) *pad_ok = 0;
    }
    return worst;
}

typedef struct { int M, N, K; } shape;
static const shape shapes[] = { { 7, 13, 29 }, { 1, 5, 3 }, { 33, 17, 65 }, { 64, 48, 130 }, { 5, 1, 1 } };
enum { PAD = 3 };

// every shape x transpose x alpha x beta through backend b; bf16 = hp_gemm_bf16
static void check_backend(hp_gemm_backend b, int bf16) {
    hp_gemm_set_backend(b);
    const float alphas[2] = { 1.0f, 0.35355339f }, betas[2] = { 0.0f, 1.0f };
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const int M = shapes[s].M, N = shapes[s].N, K = shapes[s].K;
        for (int ta = 0; ta < 2; ta++)
            for (int tb = 0; tb < 2; tb++) {
                const int lda = (ta ? M : K) + PAD, ldb = (tb ? K : N) + PAD, ldc = N + PAD;
                float *A = fill((size_t)(ta ? K : M) * lda, bf16), *B = fill((size_t)(tb ? N : K) * ldb, bf16);
                float *C0 = fill((size_t)M * ldc, 0), *C = malloc((size_t)M * ldc * sizeof(float));
                for (int ai = 0; ai < 2; ai++)
                    for (int bi = 0; bi < 2; bi++) {
                        memcpy(C, C0, (size_t)M * ldc * sizeof(float));
                        (bf16 ? hp_gemm_bf16 : hp_gemm)(ta, tb, M, N, K, alphas[ai], A, lda, B, ldb, betas[bi], C, ldc);
                        int pad_ok;
                        const double w = worst_ratio(ta, tb, M, N, K, alphas[ai], A, lda, B, ldb, betas[bi], C0, C,
                                                     ldc, bf16 ? 3 : 4, &pad_ok);
                        CHECK(w <= 1.0 && pad_ok, "%s %s ta %d tb %d M %d N %d K %d alpha %g beta %g: error %.3g of "
                              "the bound%s", hp_gemm_backend_name(b), bf16 ? "bf16" : "fp32", ta, tb, M, N, K,
                              alphas[ai], betas[bi], w, pad_ok ? "" : ", and the padding of C was written");
                    }
                free(A); free(B); free(C0); free(C);
            }
    }
}

// hp_gemm under openblas: the same bits as cblas_sgemm called directly
static void check_openblas_bits(void) {
    hp_gemm_set_backend(HP_GEMM_OPENBLAS);
    const int M = 37, N = 29, K = 71;
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++) {
            const int lda = (ta ? M : K) + 1, ldb = (tb ? K : N) + 2, ldc = N + 1;
            float *A = fill((size_t)(ta ? K : M) * lda, 0), *B = fill((size_t)(tb ? N : K) * ldb, 0);
            float *C1 = fill((size_t)M * ldc, 0), *C2 = malloc((size_t)M * ldc * sizeof(float));
            memcpy(C2, C1, (size_t)M * ldc * sizeof(float));
            hp_gemm(ta, tb, M, N, K, 0.7f, A, lda, B, ldb, 1.0f, C1, ldc);
            cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M, N, K,
                        0.7f, A, lda, B, ldb, 1.0f, C2, ldc);
            CHECK(!memcmp(C1, C2, (size_t)M * ldc * sizeof(float)),
                  "openblas: hp_gemm ta %d tb %d is bit for bit cblas_sgemm", ta, tb);
            free(A); free(B); free(C1); free(C2);
        }
}

typedef struct { const float *A, *B; float *C; int M, N, K, bf16; } job;

static void *run_job(void *p) {
    job *j = p;
    for (int r = 0; r < 20; r++)
        (j->bf16 ? hp_gemm_bf16 : hp_gemm)(HP_GEMM_N, HP_GEMM_T, j->M, j->N, j->K, 1.0f, j->A, j->K, j->B, j->K,
                                           0.0f, j->C, j->N);
    return NULL;
}

// two threads at once, each its own C: the bits of one thread alone
static void check_threads(void) {
    hp_gemm_set_backend(HP_GEMM_ONEDNN);
    const int M = 40, N = 24, K = 96;
    float *A = fill((size_t)M * K, 1), *B = fill((size_t)N * K, 1);
    float *ref = malloc((size_t)M * N * sizeof(float)), *c1 = malloc((size_t)M * N * sizeof(float)),
          *c2 = malloc((size_t)M * N * sizeof(float));
    hp_gemm_bf16(HP_GEMM_N, HP_GEMM_T, M, N, K, 1.0f, A, K, B, K, 0.0f, ref, N);
    job j1 = { A, B, c1, M, N, K, 1 }, j2 = { A, B, c2, M, N, K, 1 };
    pthread_t t1, t2;
    const int started = pthread_create(&t1, NULL, run_job, &j1) == 0 && pthread_create(&t2, NULL, run_job, &j2) == 0;
    CHECK(started, "two threads start");
    if (started) { pthread_join(t1, NULL); pthread_join(t2, NULL); }
    CHECK(started && !memcmp(ref, c1, (size_t)M * N * sizeof(float)) && !memcmp(ref, c2, (size_t)M * N * sizeof(float)),
          "onednn bf16 from two threads at once: the bits of one thread");
    free(A); free(B); free(ref); free(c1); free(c2);
}

// more shapes than the cache holds, a shutdown, and the first shape again
static void check_cache(void) {
    hp_gemm_set_backend(HP_GEMM_ONEDNN);
    const int M = 3, N = 2, KMAX = 80;
    float *A = fill((size_t)M * KMAX, 1), *B = fill((size_t)N * KMAX, 1), C[6], first[6];
    int ok = 1;
    for (int pass = 0; pass < 2; pass++) {
        for (int K = 1; K <= KMAX; K++) {
            memset(C, 0, sizeof C);
            hp_gemm_bf16(HP_GEMM_N, HP_GEMM_T, M, N, K, 1.0f, A, K, B, K, 0.0f, C, N);
            int pad_ok;
            const float zero[6] = { 0 };
            if (!(worst_ratio(0, 1, M, N, K, 1.0f, A, K, B, K, 0.0f, zero, C, N, 3, &pad_ok) <= 1.0)) ok = 0;
            if (K == 1 && pass == 0) memcpy(first, C, sizeof C);
        }
        if (pass == 0) hp_gemm_shutdown();
    }
    memset(C, 0, sizeof C);
    hp_gemm_bf16(HP_GEMM_N, HP_GEMM_T, M, N, 1, 1.0f, A, 1, B, 1, 0.0f, C, N);
    CHECK(ok && !memcmp(C, first, sizeof C), "onednn: %d shapes (past the cache), a shutdown, the first again", KMAX);
    free(A); free(B);
}

static void check_names(void) {
    hp_gemm_backend b = HP_GEMM_ONEDNN;
    CHECK(hp_gemm_backend_parse("openblas", &b) == 0 && b == HP_GEMM_OPENBLAS, "parse openblas");
    CHECK(hp_gemm_backend_parse("onednn", &b) == 0 && b == HP_GEMM_ONEDNN, "parse onednn");
    CHECK(hp_gemm_backend_parse("auto", &b) == 1 && b == HP_GEMM_ONEDNN, "parse auto: 1, the backend untouched");
    CHECK(hp_gemm_backend_parse("mkl", &b) == -1 && hp_gemm_backend_parse("", &b) == -1 &&
          hp_gemm_backend_parse("OneDNN", &b) == -1 && hp_gemm_backend_parse(NULL, &b) == -1,
          "parse refuses mkl, '', OneDNN, NULL");
    char line[200];
    hp_gemm_set_backend(HP_GEMM_ONEDNN);
    hp_gemm_info_line(line, sizeof line);
    CHECK(!strncmp(line, "gemm: onednn 2.", 15) && strstr(line, ", isa ") && strstr(line, " thread"),
          "onednn info line: '%s'", line);
    hp_gemm_set_backend(HP_GEMM_OPENBLAS);
    hp_gemm_info_line(line, sizeof line);
    CHECK(!strncmp(line, "gemm: openblas 0.", 17) && strstr(line, ", core ") && strstr(line, ", isa "),
          "openblas info line: '%s'", line);
    printf("%s\n", line);
    hp_gemm_set_backend(HP_GEMM_ONEDNN);
    printf("%s\n", hp_gemm_info_line(line, sizeof line));
}

// The tools' default (hp_gemm_default_backend): OpenBLAS below the step size, whatever the
// machine; above it, oneDNN exactly where its rule says (the machine asked, not assumed).
static void check_default(void) {
    char why[160];
    const double small = HP_GEMM_DEFAULT_MIN_STEP_FLOP / 2, big = HP_GEMM_DEFAULT_MIN_STEP_FLOP * 2;
    CHECK(hp_gemm_default_backend(0, small, why, sizeof why) == HP_GEMM_OPENBLAS && !strncmp(why, "openblas: a step of", 19) &&
          hp_gemm_default_backend(1, small, why, sizeof why) == HP_GEMM_OPENBLAS,
          "default below %g FLOP a step: openblas in fp32 and bf16 ('%s')", HP_GEMM_DEFAULT_MIN_STEP_FLOP, why);
    const hp_gemm_backend fp32 = hp_gemm_default_backend(0, big, why, sizeof why);
    CHECK(fp32 == (hp_blas_core_below_cpu() ? HP_GEMM_ONEDNN : HP_GEMM_OPENBLAS) &&
          !strncmp(why, hp_gemm_backend_name(fp32), strlen(hp_gemm_backend_name(fp32))),
          "default fp32 step: onednn exactly where OpenBLAS's core is below the CPU's ('%s')", why);
    const char *isa = hp_gemm_onednn_isa();
    const hp_gemm_backend bf16 = hp_gemm_default_backend(1, big, why, sizeof why);
    const int native = (strstr(isa, "bf16") || strstr(isa, "amx")) && hp_gemm_onednn_supports(1);
    CHECK(bf16 == (native ? HP_GEMM_ONEDNN : HP_GEMM_OPENBLAS),
          "default bf16 step: onednn exactly where oneDNN has bf16 instructions and its matmul (isa %s: '%s')",
          isa, why);
}

// What oneDNN offers here, as the tools ask it: an f32 matmul on every x86-64 CPU; a bf16 one
// exactly from avx512_core on (oneDNN 2.6), which `auto` then never picks without it.
static void check_supports(void) {
    const char *isa = hp_gemm_onednn_isa();
    const int wide = !strncmp(isa, "avx512_core", 11) || !strcmp(isa, "all");
    CHECK(hp_gemm_backend_supports(HP_GEMM_ONEDNN, 0) && hp_gemm_backend_supports(HP_GEMM_OPENBLAS, 1) &&
          hp_gemm_backend_supports(HP_GEMM_OPENBLAS, 0), "onednn f32 and openblas run here (isa %s)", isa);
    CHECK(hp_gemm_backend_supports(HP_GEMM_ONEDNN, 1) == wide,
          "onednn bf16 matmul exactly from avx512_core on (isa %s: %d)", isa, hp_gemm_backend_supports(HP_GEMM_ONEDNN, 1));
    if (!hp_gemm_backend_supports(HP_GEMM_ONEDNN, 1)) {
        char why[200];
        CHECK(hp_gemm_auto_measure(1, why, sizeof why) == HP_GEMM_OPENBLAS && strstr(why, "not timed"),
              "auto for a bf16 run without oneDNN's bf16 matmul: openblas, untimed ('%s')", why);
    }
}

// argv[1] "onednn-bf16": oneDNN's bf16 products alone (skipped where oneDNN has none); else the
// rest, which runs on any x86-64 CPU.
int main(int argc, char **argv) {
    openblas_set_num_threads(1);   // one thread: the conditions the bitwise checks hold under
    if (argc > 1 && !strcmp(argv[1], "onednn-bf16")) {
        if (!hp_gemm_backend_supports(HP_GEMM_ONEDNN, 1))
            return test_skip("test_gemm onednn-bf16", "oneDNN %s has no bf16 matmul on isa %s (it needs avx512_core)",
                             hp_gemm_onednn_version((char[32]){ 0 }, 32), hp_gemm_onednn_isa());
        check_backend(HP_GEMM_ONEDNN, 1);
        check_threads();
        check_cache();
        hp_gemm_set_backend(HP_GEMM_OPENBLAS);
        return test_summary("test_gemm onednn-bf16");
    }
    check_names();
    check_default();
    check_supports();
    check_openblas_bits();
    check_backend(HP_GEMM_OPENBLAS, 1);
    check_backend(HP_GEMM_OPENBLAS, 0);
    check_backend(HP_GEMM_ONEDNN, 0);
    hp_gemm_set_backend(HP_GEMM_OPENBLAS);
    return test_summary("test_gemm");
}
