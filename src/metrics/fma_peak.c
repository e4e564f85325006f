// fma_peak.c - the fp32 FMA-throughput microbenchmark behind `hp bench`'s peak figure, and its
// bf16 twin (AVX512_BF16's VDPBF16PS: per lane two bf16 products added to an fp32 accumulator).
// defines: hp_fma_peak, hp_fma_isa, hp_fma_bf16_peak
//
// Why 16 accumulators: an FMA has a latency of about 4 cycles and a core issues up to 2 per
// cycle, so at least 8 independent chains keep both ports busy; 16 leave room for cores with
// longer latency, and with 2 constants still fit in the 32 zmm registers (AVX2: 12 of the 16
// ymm registers). acc = acc * m + c with m just below 1 converges to c / (1 - m): the values
// stay normal, so no denormal slows the loop, and the compiler cannot fold the chain (no
// -ffast-math, results are stored to a volatile sink).
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include "fma_peak.h"
#include "hyperpar/cpu.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define HP_X86 1
#endif

static volatile float sink;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#ifdef HP_X86
// The two AVX-512 loops: 16 zmm accumulators, each updated by UPDATE(acc) with the constants
// SETUP declares; FLOPS an update per lane.
#define AVX512_LOOP(name, isa_attr, SETUP, UPDATE, FLOPS)                                           \
    __attribute__((target(isa_attr))) static double name(long iters) {                          \
        SETUP;                                                                                  \
        __m512 a0 = _mm512_set1_ps(0.10f), a1 = _mm512_set1_ps(0.11f), a2 = _mm512_set1_ps(0.12f), \
               a3 = _mm512_set1_ps(0.13f), a4 = _mm512_set1_ps(0.14f), a5 = _mm512_set1_ps(0.15f), \
               a6 = _mm512_set1_ps(0.16f), a7 = _mm512_set1_ps(0.17f), a8 = _mm512_set1_ps(0.18f), \
               a9 = _mm512_set1_ps(0.19f), a10 = _mm512_set1_ps(0.20f), a11 = _mm512_set1_ps(0.21f), \
               a12 = _mm512_set1_ps(0.22f), a13 = _mm512_set1_ps(0.23f), a14 = _mm512_set1_ps(0.24f), \
               a15 = _mm512_set1_ps(0.25f);                                                     \
        for (long i = 0; i < iters; i++) {                                                      \
            a0 = UPDATE(a0);   a1 = UPDATE(a1);   a2 = UPDATE(a2);   a3 = UPDATE(a3);           \
            a4 = UPDATE(a4);   a5 = UPDATE(a5);   a6 = UPDATE(a6);   a7 = UPDATE(a7);           \
            a8 = UPDATE(a8);   a9 = UPDATE(a9);   a10 = UPDATE(a10); a11 = UPDATE(a11);         \
            a12 = UPDATE(a12); a13 = UPDATE(a13); a14 = UPDATE(a14); a15 = UPDATE(a15);         \
        }                                                                                       \
        __m512 s = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)),   \
                                 _mm512_add_ps(_mm512_add_ps(a4, a5), _mm512_add_ps(a6, a7)));  \
        s = _mm512_add_ps(s, _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a8, a9), _mm512_add_ps(a10, a11)), \
                                           _mm512_add_ps(_mm512_add_ps(a12, a13), _mm512_add_ps(a14, a15)))); \
        sink = _mm512_reduce_add_ps(s);                                                         \
        return (double)iters * 16 * 16 * (FLOPS);   /* 16 accumulators x 16 lanes */           \
    }

// fp32: acc = acc * m + c, 2 FLOPs a lane
#define FMA_UPDATE(x) _mm512_fmadd_ps((x), m, c)
AVX512_LOOP(loop_avx512, "avx512f",
            const __m512 m = _mm512_set1_ps(0.9999999f); const __m512 c = _mm512_set1_ps(1e-7f),
            FMA_UPDATE, 2)

__attribute__((target("avx2,fma"))) static double loop_avx2(long iters) {
    const __m256 m = _mm256_set1_ps(0.9999999f), c = _mm256_set1_ps(1e-7f);
    __m256 a0 = _mm256_set1_ps(0.10f), a1 = _mm256_set1_ps(0.11f), a2 = _mm256_set1_ps(0.12f),
           a3 = _mm256_set1_ps(0.13f), a4 = _mm256_set1_ps(0.14f), a5 = _mm256_set1_ps(0.15f),
           a6 = _mm256_set1_ps(0.16f), a7 = _mm256_set1_ps(0.17f), a8 = _mm256_set1_ps(0.18f),
           a9 = _mm256_set1_ps(0.19f), a10 = _mm256_set1_ps(0.20f), a11 = _mm256_set1_ps(0.21f);
    for (long i = 0; i < iters; i++) {
        a0 = _mm256_fmadd_ps(a0, m, c);   a1 = _mm256_fmadd_ps(a1, m, c);
        a2 = _mm256_fmadd_ps(a2, m, c);   a3 = _mm256_fmadd_ps(a3, m, c);
        a4 = _mm256_fmadd_ps(a4, m, c);   a5 = _mm256_fmadd_ps(a5, m, c);
        a6 = _mm256_fmadd_ps(a6, m, c);   a7 = _mm256_fmadd_ps(a7, m, c);
        a8 = _mm256_fmadd_ps(a8, m, c);   a9 = _mm256_fmadd_ps(a9, m, c);
        a10 = _mm256_fmadd_ps(a10, m, c); a11 = _mm256_fmadd_ps(a11, m, c);
    }
    __m256 s = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)),
                             _mm256_add_ps(_mm256_add_ps(a4, a5), _mm256_add_ps(a6, a7)));
    s = _mm256_add_ps(s, _mm256_add_ps(_mm256_add_ps(a8, a9), _mm256_add_ps(a10, a11)));
    float lanes[8];
    _mm256_storeu_ps(lanes, s);
    sink = lanes[0] + lanes[7];
    return (double)iters * 12 * 8 * 2;    // 12 accumulators x 8 lanes x 2 FLOPs
}

// Without FMA (AVX: Sandybridge-class kernels; SSE: the generic ones) the multiplier and the
// adder are separate ports: independent chains of multiplies and of adds keep both busy, one FLOP
// a lane each. 6 + 6 accumulators and 2 constants fit the 16 vector registers.
#define MUL_ADD_LOOP(name, isa_attr, vec, set1, mul, add, store, lanes)                            \
    __attribute__((target(isa_attr))) static double name(long iters) {                          \
        const vec m = set1(0.9999999f), c = set1(1e-7f);                                        \
        vec a0 = set1(0.10f), a1 = set1(0.11f), a2 = set1(0.12f), a3 = set1(0.13f),             \
            a4 = set1(0.14f), a5 = set1(0.15f), b0 = set1(0.20f), b1 = set1(0.21f),             \
            b2 = set1(0.22f), b3 = set1(0.23f), b4 = set1(0.24f), b5 = set1(0.25f);             \
        for (long i = 0; i < iters; i++) {                                                      \
            a0 = mul(a0, m); a1 = mul(a1, m); a2 = mul(a2, m);                                  \
            a3 = mul(a3, m); a4 = mul(a4, m); a5 = mul(a5, m);                                  \
            b0 = add(b0, c); b1 = add(b1, c); b2 = add(b2, c);                                  \
            b3 = add(b3, c); b4 = add(b4, c); b5 = add(b5, c);                                  \
        }                                                                                       \
        vec s = add(add(add(a0, a1), add(a2, a3)), add(add(a4, a5), add(b0, b1)));              \
        s = add(s, add(add(b2, b3), add(b4, b5)));                                              \
        float out[lanes];                                                                       \
        store(out, s);                                                                          \
        sink = out[0] + out[lanes - 1];                                                         \
        return (double)iters * 12 * lanes;   /* 12 accumulators x lanes x 1 FLOP */            \
    }
// bf16: acc += a0 b0 + a1 b1 per fp32 lane, 16 lanes, so 64 FLOPs an instruction. a = b = 2^-15:
// each update adds 2^-29, far from overflow, and acc stays normal (no denormal flush).
#define DPBF16_UPDATE(x) _mm512_dpbf16_ps((x), a, a)
AVX512_LOOP(loop_avx512_bf16, "avx512bf16,avx512f",
            const __m512bh a = (__m512bh)_mm512_set1_epi16(0x3800) /* bf16 2^-15 */,
            DPBF16_UPDATE, 2 * 2)

MUL_ADD_LOOP(loop_avx, "avx", __m256, _mm256_set1_ps, _mm256_mul_ps, _mm256_add_ps, _mm256_storeu_ps, 8)
MUL_ADD_LOOP(loop_sse, "sse2", __m128, _mm_set1_ps, _mm_mul_ps, _mm_add_ps, _mm_storeu_ps, 4)
#endif

// Any CPU: a multiply and an add per update (ISO C does not contract them into an FMA).
static double loop_scalar(long iters) {
    float a[8] = { 0.10f, 0.11f, 0.12f, 0.13f, 0.14f, 0.15f, 0.16f, 0.17f };
    const float m = 0.9999999f, c = 1e-7f;
    for (long i = 0; i < iters; i++)
        for (int k = 0; k < 8; k++) a[k] = a[k] * m + c;
    sink = a[0] + a[7];
    return (double)iters * 8 * 2;
}

typedef double (*loop_fn)(long iters);

// The loop of `want` ("avx512", "avx2", "avx", "sse"/"scalar"), or of the widest ISA this CPU
// runs when want is NULL or wider than the CPU (a core's kernels cannot use what it lacks).
static loop_fn pick_loop(const char *want, const char **isa) {
#ifdef HP_X86
    const int any = !want;
    if ((any || !strcmp(want, "avx512")) && hp_cpu_has(HP_CPU_AVX512F)) {
        *isa = "avx512"; return loop_avx512;
    }
    if ((any || !strcmp(want, "avx512") || !strcmp(want, "avx2")) && hp_cpu_has(HP_CPU_AVX2) &&
        hp_cpu_has(HP_CPU_FMA)) {
        *isa = "avx2"; return loop_avx2;
    }
    if (!any && strcmp(want, "sse") && strcmp(want, "scalar") && hp_cpu_has(HP_CPU_AVX)) {
        *isa = "avx"; return loop_avx;
    }
    if (!any && strcmp(want, "scalar")) { *isa = "sse"; return loop_sse; }   // x86-64 has SSE2
#else
    (void)want;
#endif
    *isa = "scalar";
    return loop_scalar;
}

typedef struct {
    loop_fn fn;
    long iters;
    atomic_int *go;
    double t0, t1, flops;
} job;

static void *run_job(void *arg) {
    job *j = arg;
    while (!atomic_load(j->go)) { }   // every thread starts together: the cores run at once
    j->t0 = now_s();
    j->flops = j->fn(j->iters);
    j->t1 = now_s();
    return NULL;
}

// GFLOP/s of `threads` threads each running `iters` iterations at once (0 on failure).
static double timed(loop_fn fn, int threads, long iters) {
    enum { MAX_THREADS = 256 };
    job jobs[MAX_THREADS];
    pthread_t tid[MAX_THREADS];
    atomic_int go = 0;
    if (threads > MAX_THREADS) threads = MAX_THREADS;
    int started = 1;   // jobs[0] runs on this thread
    for (int t = 0; t < threads; t++) jobs[t] = (job){ fn, iters, &go, 0, 0, 0 };
    while (started < threads && pthread_create(&tid[started], NULL, run_job, &jobs[started]) == 0)
        started++;
    atomic_store(&go, 1);
    run_job(&jobs[0]);
    for (int t = 1; t < started; t++) pthread_join(tid[t], NULL);
    if (started < threads) {
        fprintf(stderr, "hp bench: could start only %d of %d threads for the FMA peak\n", started, threads);
        return 0.0;
    }
    double t0 = jobs[0].t0, t1 = jobs[0].t1, flops = 0;
    for (int t = 0; t < threads; t++) {
        if (jobs[t].t0 < t0) t0 = jobs[t].t0;
        if (jobs[t].t1 > t1) t1 = jobs[t].t1;
        flops += jobs[t].flops;
    }
    return t1 > t0 ? flops / (t1 - t0) * 1e-9 : 0.0;
}

const char *hp_fma_isa(const char *want) {
    const char *name;
    pick_loop(want, &name);
    return name;
}

static double peak_of(loop_fn fn, int threads, int reps, double seconds);

double hp_fma_peak(int threads, const char *want, char *isa, size_t isa_len) {
    const char *name;
    loop_fn fn = pick_loop(want, &name);
    if (isa && isa_len) snprintf(isa, isa_len, "%s", name);
    return peak_of(fn, threads, 10, 0.03);
}

double hp_fma_bf16_peak(int threads, char *isa, size_t isa_len) {
    if (isa && isa_len) isa[0] = '\0';
#ifdef HP_X86
    if (hp_cpu_has(HP_CPU_AVX512BF16) && hp_cpu_has(HP_CPU_AVX512F)) {
        if (isa && isa_len) snprintf(isa, isa_len, "avx512_bf16");
        return peak_of(loop_avx512_bf16, threads, 10, 0.03);
    }
#endif
    (void)threads;
    return 0.0;
}

// The best of `reps` timings of about `seconds` each.
static double peak_of(loop_fn fn, int threads, int reps, double seconds) {
    if (threads < 1) threads = 1;
    // calibrate: ~seconds per timing, whatever the vector width and clock (the first call also
    // lets the core settle at its wide-vector clock)
    long iters = seconds < 0.01 ? 1 << 15 : 1 << 18;
    double t0 = now_s();
    fn(iters);
    const double dt = now_s() - t0;
    if (dt > 0) iters = (long)(iters * seconds / dt);
    if (iters < 1000) iters = 1000;
    double best = 0.0;
    // best of short timings: on a shared machine a short one is likelier to find the cores
    // free, and a peak is the best the hardware did, never an average
    for (int r = 0; r < reps; r++) {
        const double g = timed(fn, threads, iters);
        if (g > best) best = g;
    }
    return best;
}
