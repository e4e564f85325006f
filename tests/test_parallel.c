// test_parallel.c - the kernels' parallel-for (src/kernels/parallel.c), the vectorised expf
// (src/kernels/vexpf.c) and the kernels that use them: every item runs exactly once, OpenBLAS
// is single-threaded inside blas_serial jobs and restored after; hp_expf_n == expf bit for bit
// (a sweep of 2^24 floats over the whole range); SwiGLU and AdamW equal their scalar formulas
// element by element; attention (forward + backward, GQA, two merged key blocks), SwiGLU and
// AdamW give bit-identical results at 1, 2 and 3 threads and from run to run.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cblas.h>
#include "hyperpar/kernels.h"
#include "kernels/parallel.h"
#include "kernels/vexpf.h"

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

static int same(const float *a, const float *b, size_t n) { return memcmp(a, b, n * sizeof(float)) == 0; }

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

// ---- hp_par_zero, and hp_linear_backward_first against zero-fill + hp_linear_backward -----
static void test_zero_and_first(void) {
    const size_t sizes[] = { 0, 1, 65536, 65537, 1000003 };
    int zeroed = 1;
    for (int t = 1; t <= 3; t++) {
        openblas_set_num_threads(t);
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
            const size_t n = sizes[s];
            float *x = rnd_buf(n + 1, 1.0f);
            x[n] = 7.0f;   // one past the end: untouched
            hp_par_zero(x, n);
            for (size_t i = 0; i < n; i++) zeroed &= x[i] == 0.0f && !signbit(x[i]);
            zeroed &= x[n] == 7.0f;
            free(x);
        }
    }
    check(zeroed, "hp_par_zero: +0.0 in every element and nothing past n (threads 1..3)");
    // shapes of the tiny and bench models, and a small-matrix one
    const int shapes[][3] = { { 64, 32, 96 }, { 2048, 512, 1536 }, { 5, 3, 2 } };
    for (int t = 1; t <= 2; t++) {
        openblas_set_num_threads(t);
        int equal = 1;
        for (int s = 0; s < 3; s++) {
            const int N = shapes[s][0], in = shapes[s][1], out = shapes[s][2];
            float *dy = rnd_buf((size_t)N * out, 1.0f), *x = rnd_buf((size_t)N * in, 1.0f);
            float *w = rnd_buf((size_t)out * in, 0.1f);
            for (int i = 0; i < out; i++) dy[i] = 0.0f;   // a zero row of dy: signed zeros
            float *dx0 = calloc((size_t)N * in, 4), *dw0 = calloc((size_t)out * in, 4);
            float *dx1 = rnd_buf((size_t)N * in, 5.0f), *dw1 = calloc((size_t)out * in, 4);
            hp_linear_backward(dx0, dw0, dy, x, w, N, in, out);
            hp_linear_backward_first(dx1, dw1, dy, x, w, N, in, out);
            equal &= same(dx0, dx1, (size_t)N * in) && same(dw0, dw1, (size_t)out * in);
            free(dy); free(x); free(w); free(dx0); free(dw0); free(dx1); free(dw1);
        }
        printf("  (threads %d)\n", t);
        check(equal, "hp_linear_backward_first == zero-fill + hp_linear_backward, bit for bit");
    }
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
    // the scalar formulas, element by element (the kernels vectorise; the bits must not move)
    size_t bad_h = 0, bad_d = 0, bad_p = 0;
    float *mm = dup(m0, n), *vv = dup(v0, n), *pp = dup(p0, n);
    for (size_t i = 0; i < n; i++) {
        float sg = 1.0f / (1.0f + expf(-a[i]));
        float want = a[i] * sg * b[i];
        float wda = dh[i] * b[i] * sg * (1.0f + a[i] * (1.0f - sg));
        float wdb = dh[i] * (a[i] * sg);
        bad_h += memcmp(&want, &h[1][i], 4) != 0;
        bad_d += memcmp(&wda, &da[1][i], 4) != 0 || memcmp(&wdb, &db[1][i], 4) != 0;
        for (int t = 1; t <= 3; t++) {
            float bc1 = (float)(1.0 - pow((double)0.9f, t)), bc2 = (float)(1.0 - pow((double)0.95f, t));
            float gi = a[i];
            float mi = 0.9f * mm[i] + (1.0f - 0.9f) * gi;
            float vi = 0.95f * vv[i] + (1.0f - 0.95f) * gi * gi;
            mm[i] = mi; vv[i] = vi;
            float mhat = mi / bc1, vhat = vi / bc2, pi = pp[i];
            pp[i] = pi - 1e-3f * 0.1f * pi - 1e-3f * mhat / (sqrtf(vhat) + 1e-8f);
        }
        bad_p += memcmp(&pp[i], &p[1][i], 4) != 0 || memcmp(&mm[i], &m[1][i], 4) != 0 ||
                 memcmp(&vv[i], &v[1][i], 4) != 0;
    }
    printf("  (elements differing: swiglu h %zu, da/db %zu, adamw %zu)\n", bad_h, bad_d, bad_p);
    check(bad_h == 0, "swiglu forward == a * (1 / (1 + expf(-a))) * b, every element");
    check(bad_d == 0, "swiglu backward == the scalar formula with expf, every element");
    check(bad_p == 0, "adamw p, m, v == the scalar update, every element");
    free(mm); free(vv); free(pp);
    for (int r = 0; r < 2; r++) { free(h[r]); free(da[r]); free(db[r]); free(p[r]); free(m[r]); free(v[r]); }
    free(a); free(b); free(dh); free(p0); free(m0); free(v0);
}

// ---- hp_expf_n: the library's expf, bit for bit ----------------------------------------------
static void test_expf(void) {
    enum { BLK = 4099 };   // odd: the scalar tail runs too
    static float x[BLK], y[BLK];
    size_t bad = 0, n = 0;
    // 2^24 bit patterns spread over all 2^32: both signs, subnormals, |x| >= 88, inf, NaN
    for (uint64_t u = 0; u < (1ull << 32); u += 256 * BLK) {
        int k = 0;
        for (; k < BLK && u + (uint64_t)k * 256 < (1ull << 32); k++) {
            uint32_t bits = (uint32_t)(u + (uint64_t)k * 256) ^ 0x5A5A5Au;
            memcpy(&x[k], &bits, 4);
        }
        hp_expf_n(y, x, k);
        for (int i = 0; i < k; i++, n++) {
            float e = expf(x[i]);
            bad += memcmp(&e, &y[i], 4) != 0 && !(isnan(e) && isnan(y[i]));
        }
    }
    float special[] = { 0.0f, -0.0f, 88.0f, -88.0f, 88.72f, -103.9f, -104.0f, 1e-45f, INFINITY, -INFINITY, NAN };
    const int ns = (int)(sizeof special / sizeof special[0]);
    float ys[16];
    hp_expf_n(ys, special, ns);
    for (int i = 0; i < ns; i++) {
        float e = expf(special[i]);
        bad += memcmp(&e, &ys[i], 4) != 0 && !(isnan(e) && isnan(ys[i]));
    }
    printf("  (%zu of %zu floats differ)\n", bad, n + ns);
    check(bad == 0, "hp_expf_n == expf bit for bit (2^24 patterns, specials, inf, NaN)");
}

int main(void) {
    test_cover();
    test_zero_and_first();
    test_expf();
    test_attention();
    test_elementwise();
    printf("test_parallel: %d passed, %d failed\n", n_pass, n_fail);
    return n_fail ? 1 : 0;
}
