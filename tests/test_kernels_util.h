// test_kernels_util.h - small helpers shared by the kernel tests: a seeded RNG, pass/fail
// counting, tensor comparison and a central-difference gradient checker (in double).
// defines: trng_*, tk_check, tk_relerr, tk_fd_check, tk_summary
#ifndef TEST_KERNELS_UTIL_H
#define TEST_KERNELS_UTIL_H
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static int tk_pass = 0, tk_fail = 0;

// pass/fail with one line per check
static inline void tk_check(int ok, const char *what, double got, double tol) {
    if (ok) tk_pass++; else tk_fail++;
    printf("%s %-58s err %.3e (tol %.1e)\n", ok ? "  ok  " : "FAILED", what, got, tol);
}

static inline int tk_summary(const char *name) {
    printf("%s: %d passed, %d failed\n", name, tk_pass, tk_fail);
    return tk_fail == 0 ? 0 : 1;
}

// ---- RNG (splitmix64): reproducible inputs --------------------------------------------
static uint64_t trng_state = 0x9E3779B97F4A7C15ull;
static inline uint64_t trng_u64(void) {
    uint64_t z = (trng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static inline double trng_unif(void) { return (double)(trng_u64() >> 11) * (1.0 / 9007199254740992.0); }
static inline float trng_sym(float a) { return (float)((2.0 * trng_unif() - 1.0) * a); } // U(-a, a)
static inline int trng_int(int n) { return (int)(trng_u64() % (uint64_t)n); }
static inline void trng_fill(float *x, size_t n, float a) { for (size_t i = 0; i < n; i++) x[i] = trng_sym(a); }

// ---- comparisons ----------------------------------------------------------------------
// max |a - b| / max(max |b|, floor): error relative to the reference's scale
static inline double tk_relerr_ff(const float *a, const float *b, size_t n) {
    double md = 0.0, mb = 0.0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - (double)b[i]);
        if (!(d <= md)) md = d; // NaN propagates as a failure
        if (fabs((double)b[i]) > mb) mb = fabs((double)b[i]);
    }
    return md / (mb > 1e-30 ? mb : 1e-30);
}
static inline double tk_relerr_fd(const float *a, const double *b, size_t n) {
    double md = 0.0, mb = 0.0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - b[i]);
        if (!(d <= md)) md = d;
        if (fabs(b[i]) > mb) mb = fabs(b[i]);
    }
    return md / (mb > 1e-30 ? mb : 1e-30);
}
static inline void tk_cmp_ff(const char *what, const float *a, const float *ref, size_t n, double tol) {
    double e = tk_relerr_ff(a, ref, n);
    tk_check(e <= tol, what, e, tol);
}
static inline void tk_cmp_fd(const char *what, const float *a, const double *ref, size_t n, double tol) {
    double e = tk_relerr_fd(a, ref, n);
    tk_check(e <= tol, what, e, tol);
}

// ---- finite differences -----------------------------------------------------------------
// f evaluates the scalar objective in double from the (double) inputs held by ctx; x is
// one of those inputs. The analytic float gradient is compared with central differences.
typedef double (*tk_objective)(void *ctx);
static inline void tk_fd_check(const char *what, tk_objective f, void *ctx, double *x, size_t n,
                        const float *analytic, double h, double tol) {
    double *num = malloc(n * sizeof(double));
    for (size_t i = 0; i < n; i++) {
        double x0 = x[i];
        x[i] = x0 + h; double lp = f(ctx);
        x[i] = x0 - h; double lm = f(ctx);
        x[i] = x0;
        num[i] = (lp - lm) / (2.0 * h);
    }
    double mb = 0.0;
    for (size_t i = 0; i < n; i++) if (fabs(num[i]) > mb) mb = fabs(num[i]);
    if (mb < 1e-8) { // a vanishing gradient would make any check pass: refuse it
        tk_check(0, what, mb, tol);
        printf("        (numeric gradient is ~0: the test is not meaningful)\n");
    } else {
        tk_cmp_fd(what, analytic, num, n, tol);
    }
    free(num);
}

static inline void tk_f2d(double *d, const float *f, size_t n) { for (size_t i = 0; i < n; i++) d[i] = f[i]; }
static inline void tk_d2f(float *f, const double *d, size_t n) { for (size_t i = 0; i < n; i++) f[i] = (float)d[i]; }
static inline double tk_dotd(const double *a, const double *b, size_t n) {
    double s = 0.0;
    for (size_t i = 0; i < n; i++) s += a[i] * b[i];
    return s;
}
#endif
