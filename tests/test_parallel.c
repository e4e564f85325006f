// test_parallel.c - the kernels' parallel-for (src/kernels/parallel.c) and the kernels that
// use it: every item runs exactly once, OpenBLAS is single-threaded inside blas_serial jobs and
// restored after, and attention (forward + backward, GQA, two merged key blocks), SwiGLU and
// AdamW give bit-identical results at 1, 2 and 3 threads and from run to run.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cblas.h>
#include "hyperpar/kernels.h"
#include "kernels/parallel.h"

static int n_pass = 0, n_fail = 0;
static void check(int ok, const char *what) {
    if (ok) n_pass++; else n_fail++;
    printf("%s %s\n", ok ? "  ok  " : "FAILED", what);
}

static uint64_t rng_state = 0x243F6A8885A308D3ull;
static float rnd(void) { // splitmix64 -> U(-1, 1)
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (float)((double)(z >> 11) * (2.0 / 9007199254740992.0) - 1.0);
}
static float *rnd_buf(size_t n, float a) {
    float *x = malloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++) x[i] = a * rnd();
    return x;
}
static float *dup(const float *x, size_t n) {
    float *y = malloc(n * sizeof(float));
    memcpy(y, x, n * sizeof(float));
    return y;
}

// ---- hp_par_for itself ---------------------------------------------------------------------
typedef struct { int *count; int blas_inside; } cover_job;
static void cover(void *ctx, int lo, int hi) {
    cover_job *J = ctx;
    for (int i = lo; i < hi; i++) J->count[i]++;   // ranges are disjoint: no race
    if (openblas_get_num_threads() != 1) J->blas_inside = 0;
}

static void test_cover(void) {
    const int sizes[] = { 0, 1, 2, 5, 64, 1001 };
    int all_once = 1;
    for (int t = 1; t <= 4; t++) {
        openblas_set_num_threads(t);
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
            for (int mi = 1; mi <= 8; mi *= 8) {
                int n = sizes[s];
                int *count = calloc((size_t)n + 1, sizeof(int));
                cover_job J = { count, 1 };
                hp_par_for(n, mi, 0, cover, &J);
                for (int i = 0; i < n; i++) all_once &= count[i] == 1;
                free(count);
            }
    }
    check(all_once, "hp_par_for runs every item exactly once (threads 1..4, n 0..1001)");
    openblas_set_num_threads(2);
    int count[64] = { 0 };
    cover_job J = { count, 1 };
    hp_par_for(64, 1, 1, cover, &J);
    check(J.blas_inside, "blas_serial: OpenBLAS runs single-threaded inside the job");
    check(openblas_get_num_threads() == 2, "blas_serial: OpenBLAS's thread count is restored after");
}

// ---- attention: the same bits at every thread count ---------------------------------------
typedef struct { float *out, *lse, *dq, *dk, *dv; } attn_out;

static attn_out run_attention(int threads, int B, int S, int H, int Hkv, int hd,
                              const float *q, const float *k, const float *v, const float *dout,
                              const int *qpos, const int *kpos) {
    openblas_set_num_threads(threads);
    const size_t nq = (size_t)B * S * H * hd, nk = (size_t)B * S * Hkv * hd, nl = (size_t)B * S * H;
    attn_out r = { calloc(nq, 4), malloc(nl * 4), calloc(nq, 4), calloc(nk, 4), calloc(nk, 4) };
    for (size_t i = 0; i < nl; i++) r.lse[i] = -INFINITY;
    const int half = S / 2;   // two key blocks merged by log-sum-exp, as ring attention does
    hp_attention_forward(r.out, r.lse, q, k, v, qpos, kpos, B, S, S, H, Hkv, hd, 0, S, 0, half);
    hp_attention_forward(r.out, r.lse, q, k, v, qpos, kpos, B, S, S, H, Hkv, hd, 0, S, half, S);
    for (int blk = 0; blk < 2; blk++)
        hp_attention_backward(r.dq, r.dk, r.dv, dout, r.out, r.lse, q, k, v, qpos, kpos,
                              B, S, S, H, Hkv, hd, 0, S, blk ? half : 0, blk ? S : half);
    return r;
}

static int same(const float *a, const float *b, size_t n) { return memcmp(a, b, n * sizeof(float)) == 0; }

static void test_attention(void) {
    const int B = 3, S = 160, H = 8, Hkv = 2, hd = 32;
    const size_t nq = (size_t)B * S * H * hd, nk = (size_t)B * S * Hkv * hd, nl = (size_t)B * S * H;
    float *q = rnd_buf(nq, 1.0f), *k = rnd_buf(nk, 1.0f), *v = rnd_buf(nk, 1.0f), *g = rnd_buf(nq, 1.0f);
    int *qpos = malloc(S * sizeof(int)), *kpos = malloc(S * sizeof(int));
    for (int i = 0; i < S; i++) { qpos[i] = (i * 37) % S; kpos[i] = i; }   // unsorted queries too
    attn_out r1 = run_attention(1, B, S, H, Hkv, hd, q, k, v, g, qpos, kpos);
    int nonzero = 0;
    for (size_t i = 0; i < nk; i++) nonzero |= r1.dk[i] != 0.0f;
    check(nonzero, "attention backward produced a gradient");
    const int threads[] = { 2, 3, 2 };
    for (int t = 0; t < 3; t++) {
        attn_out r = run_attention(threads[t], B, S, H, Hkv, hd, q, k, v, g, qpos, kpos);
        char what[128];
        snprintf(what, sizeof what, "attention out, lse, dq, dk, dv at %d threads == at 1 thread%s",
                 threads[t], t == 2 ? " (second run)" : "");
        check(same(r.out, r1.out, nq) && same(r.lse, r1.lse, nl) && same(r.dq, r1.dq, nq) &&
              same(r.dk, r1.dk, nk) && same(r.dv, r1.dv, nk), what);
        free(r.out); free(r.lse); free(r.dq); free(r.dk); free(r.dv);
    }
    free(r1.out); free(r1.lse); free(r1.dq); free(r1.dk); free(r1.dv);
    free(q); free(k); free(v); free(g); free(qpos); free(kpos);
}

// ---- elementwise kernels --------------------------------------------------------------------
static void test_elementwise(void) {
    const size_t n = 300001;   // not a multiple of any chunk
    float *a = rnd_buf(n, 8.0f), *b = rnd_buf(n, 1.0f), *dh = rnd_buf(n, 1.0f);
    a[7] = -200.0f; a[11] = 200.0f;   // exp under- and overflow
    float *h[2], *da[2], *db[2], *p[2], *m[2], *v[2];
    float *p0 = rnd_buf(n, 1.0f), *m0 = rnd_buf(n, 0.1f), *v0 = rnd_buf(n, 0.1f);
    for (size_t i = 0; i < n; i++) v0[i] = fabsf(v0[i]);
    for (int r = 0; r < 2; r++) {
        openblas_set_num_threads(r ? 2 : 1);
        h[r] = calloc(n, 4);
        da[r] = dup(dh, n); db[r] = dup(b, n);
        hp_swiglu_forward(h[r], a, b, n);
        hp_swiglu_backward(da[r], db[r], dh, a, b, n);
        p[r] = dup(p0, n); m[r] = dup(m0, n); v[r] = dup(v0, n);
        for (int t = 1; t <= 3; t++) hp_adamw_update(p[r], a, m[r], v[r], n, 1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, t);
    }
    check(same(h[0], h[1], n) && same(da[0], da[1], n) && same(db[0], db[1], n),
          "swiglu forward and backward: 2 threads == 1 thread, bit for bit");
    check(same(p[0], p[1], n) && same(m[0], m[1], n) && same(v[0], v[1], n),
          "adamw, 3 steps: 2 threads == 1 thread, bit for bit");
    float want = a[3] / (1.0f + expf(-a[3])) * b[3];
    check(h[1][3] == want, "swiglu element = a * sigmoid(a) * b exactly (the scalar formula)");
    for (int r = 0; r < 2; r++) { free(h[r]); free(da[r]); free(db[r]); free(p[r]); free(m[r]); free(v[r]); }
    free(a); free(b); free(dh); free(p0); free(m0); free(v0);
}

int main(void) {
    test_cover();
    test_attention();
    test_elementwise();
    printf("test_parallel: %d passed, %d failed\n", n_pass, n_fail);
    return n_fail ? 1 : 0;
}
