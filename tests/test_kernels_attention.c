// test_kernels_attention.c - blockwise causal attention (GQA, log-sum-exp merge) against a
// naive double-precision reference; key/query block splits (as ring attention does them)
// against one call, forward and backward; finite-difference gradients; edge rows.
#include <string.h>
#include "hyperpar/bf16.h"
#include "hyperpar/kernels.h"
#include "kernels/gemm.h"
#include "kernels/gemm_onednn.h"
#include "test_kernels_util.h"

// ---- naive reference in double: full causal-by-position attention over all keys ---------
static void ref_attention(double *out, double *lse,                  // (B,Sq,H,hd), (B,Sq,H)
                          const double *q, const double *k, const double *v,
                          const int *qpos, const int *kpos,
                          int B, int Sq, int Sk, int H, int Hkv, int hd) {
    double scale = 1.0 / sqrt((double)hd);
    double *s = malloc((size_t)Sk * sizeof(double));
    for (int b = 0; b < B; b++)
    for (int i = 0; i < Sq; i++)
    for (int h = 0; h < H; h++) {
        int kh = h / (H / Hkv);
        const double *qi = q + (((size_t)b * Sq + i) * H + h) * hd;
        double *o = out + (((size_t)b * Sq + i) * H + h) * hd;
        double mx = -INFINITY;
        for (int j = 0; j < Sk; j++) {
            s[j] = -INFINITY;
            if (kpos[j] > qpos[i]) continue;
            const double *kj = k + (((size_t)b * Sk + j) * Hkv + kh) * hd;
            double d = 0.0;
            for (int c = 0; c < hd; c++) d += qi[c] * kj[c];
            s[j] = d * scale;
            if (s[j] > mx) mx = s[j];
        }
        for (int c = 0; c < hd; c++) o[c] = 0.0;
        if (mx == -INFINITY) { lse[((size_t)b * Sq + i) * H + h] = -INFINITY; continue; }
        double sum = 0.0;
        for (int j = 0; j < Sk; j++) {
            if (s[j] == -INFINITY) continue;
            double p = exp(s[j] - mx);
            sum += p;
            const double *vj = v + (((size_t)b * Sk + j) * Hkv + kh) * hd;
            for (int c = 0; c < hd; c++) o[c] += p * vj[c];
        }
        for (int c = 0; c < hd; c++) o[c] /= sum;
        lse[((size_t)b * Sq + i) * H + h] = mx + log(sum);
    }
    free(s);
}

// One attention problem: float inputs, double copies for the reference, positions.
typedef struct {
    int B, Sq, Sk, H, Hkv, hd;
    int *qpos, *kpos;
    float *q, *k, *v, *R;        // R: random weights of the objective L = sum(out * R)
    double *qd, *kd, *vd, *Rd, *outd, *lsed;
} Prob;

static size_t nq_(const Prob *p) { return (size_t)p->B * p->Sq * p->H * p->hd; }
static size_t nk_(const Prob *p) { return (size_t)p->B * p->Sk * p->Hkv * p->hd; }
static size_t nl_(const Prob *p) { return (size_t)p->B * p->Sq * p->H; }

static Prob prob_new(int B, int Sq, int Sk, int H, int Hkv, int hd, const int *qpos, const int *kpos) {
    Prob p = {B, Sq, Sk, H, Hkv, hd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    p.qpos = malloc(Sq * sizeof(int)); memcpy(p.qpos, qpos, Sq * sizeof(int));
    p.kpos = malloc(Sk * sizeof(int)); memcpy(p.kpos, kpos, Sk * sizeof(int));
    size_t nq = nq_(&p), nk = nk_(&p);
    p.q = malloc(nq * sizeof(float)); p.k = malloc(nk * sizeof(float));
    p.v = malloc(nk * sizeof(float)); p.R = malloc(nq * sizeof(float));
    trng_fill(p.q, nq, 1.5f); trng_fill(p.k, nk, 1.5f); trng_fill(p.v, nk, 1.0f); trng_fill(p.R, nq, 1.0f);
    p.qd = malloc(nq * sizeof(double)); p.kd = malloc(nk * sizeof(double));
    p.vd = malloc(nk * sizeof(double)); p.Rd = malloc(nq * sizeof(double));
    p.outd = malloc(nq * sizeof(double)); p.lsed = malloc(nl_(&p) * sizeof(double));
    tk_f2d(p.qd, p.q, nq); tk_f2d(p.kd, p.k, nk); tk_f2d(p.vd, p.v, nk); tk_f2d(p.Rd, p.R, nq);
    return p;
}
static void prob_free(Prob *p) {
    free(p->qpos); free(p->kpos); free(p->q); free(p->k); free(p->v); free(p->R);
    free(p->qd); free(p->kd); free(p->vd); free(p->Rd); free(p->outd); free(p->lsed);
}

static double prob_objective(void *ctx) {
    Prob *p = ctx;
    ref_attention(p->outd, p->lsed, p->qd, p->kd, p->vd, p->qpos, p->kpos,
                  p->B, p->Sq, p->Sk, p->H, p->Hkv, p->hd);
    return tk_dotd(p->outd, p->Rd, nq_(p));
}

// Key blocks [cut[b], cut[b+1]), b in order[], over every query; out/lse start at 0/-inf.
static void fwd_blocks(const Prob *p, float *out, float *lse, const int *cut, const int *order, int nb) {
    memset(out, 0, nq_(p) * sizeof(float));
    for (size_t i = 0; i < nl_(p); i++) lse[i] = -INFINITY;
    for (int t = 0; t < nb; t++) {
        int b = order[t];
        hp_attention_forward(out, lse, p->q, p->k, p->v, p->qpos, p->kpos,
                             p->B, p->Sq, p->Sk, p->H, p->Hkv, p->hd, 0, p->Sq, cut[b], cut[b + 1]);
    }
}
static void bwd_blocks(const Prob *p, float *dq, float *dk, float *dv, const float *out, const float *lse,
                       const int *cut, const int *order, int nb) {
    memset(dq, 0, nq_(p) * sizeof(float));
    memset(dk, 0, nk_(p) * sizeof(float));
    memset(dv, 0, nk_(p) * sizeof(float));
    for (int t = 0; t < nb; t++) {
        int b = order[t];
        hp_attention_backward(dq, dk, dv, p->R, out, lse, p->q, p->k, p->v, p->qpos, p->kpos,
                              p->B, p->Sq, p->Sk, p->H, p->Hkv, p->hd, 0, p->Sq, cut[b], cut[b + 1]);
    }
}

// random cut points: nb blocks of at least one key, and a random merge order
static void random_blocks(int *cut, int *order, int nb, int Sk) {
    cut[0] = 0; cut[nb] = Sk;
    for (;;) {
        for (int b = 1; b < nb; b++) cut[b] = 1 + trng_int(Sk - 1);
        for (int b = 1; b < nb; b++) // insertion sort
            for (int c = b; c > 1 && cut[c - 1] > cut[c]; c--) { int t = cut[c]; cut[c] = cut[c - 1]; cut[c - 1] = t; }
        int ok = 1;
        for (int b = 0; b < nb; b++) if (cut[b + 1] <= cut[b]) ok = 0;
        if (ok) break;
    }
    for (int b = 0; b < nb; b++) order[b] = b;
    for (int b = nb - 1; b > 0; b--) { int c = trng_int(b + 1), t = order[b]; order[b] = order[c]; order[c] = t; }
}

// The whole battery on one problem: reference forward, block splits, backward, FD.
static void run_problem(const char *name, Prob *p, int do_fd) {
    char what[160];
    size_t nq = nq_(p), nk = nk_(p), nl = nl_(p);
    float *out1 = malloc(nq * sizeof(float)), *lse1 = malloc(nl * sizeof(float));
    float *out2 = malloc(nq * sizeof(float)), *lse2 = malloc(nl * sizeof(float));
    float *dq1 = malloc(nq * sizeof(float)), *dk1 = malloc(nk * sizeof(float)), *dv1 = malloc(nk * sizeof(float));
    float *dq2 = malloc(nq * sizeof(float)), *dk2 = malloc(nk * sizeof(float)), *dv2 = malloc(nk * sizeof(float));
    int cut[5] = {0, p->Sk}, order[4] = {0};

    // one call over all keys vs the double reference
    fwd_blocks(p, out1, lse1, cut, order, 1);
    prob_objective(p);
    snprintf(what, sizeof what, "%s: forward out vs naive double", name);
    tk_cmp_fd(what, out1, p->outd, nq, 2e-6);
    // lse: compare as values, rows with no key must be -inf in both
    double e = 0.0; int lse_inf_ok = 1;
    for (size_t i = 0; i < nl; i++) {
        if (isinf(p->lsed[i]) || isinf(lse1[i])) { if (!(isinf(p->lsed[i]) && isinf(lse1[i]))) lse_inf_ok = 0; continue; }
        double d = fabs(lse1[i] - p->lsed[i]) / (1.0 + fabs(p->lsed[i]));
        if (!(d <= e)) e = d;
    }
    snprintf(what, sizeof what, "%s: forward lse vs naive double", name);
    tk_check(e <= 2e-6 && lse_inf_ok, what, e, 2e-6);

    // backward of the single call vs finite differences of the reference
    bwd_blocks(p, dq1, dk1, dv1, out1, lse1, cut, order, 1);
    if (do_fd) {
        snprintf(what, sizeof what, "%s: dq vs central differences", name);
        tk_fd_check(what, prob_objective, p, p->qd, nq, dq1, 1e-5, 2e-5);
        snprintf(what, sizeof what, "%s: dk vs central differences", name);
        tk_fd_check(what, prob_objective, p, p->kd, nk, dk1, 1e-5, 2e-5);
        snprintf(what, sizeof what, "%s: dv vs central differences", name);
        tk_fd_check(what, prob_objective, p, p->vd, nk, dv1, 1e-5, 2e-5);
    }

    // 2 and 4 random key blocks merged in a random order == one call; backward per block
    for (int nb = 2; nb <= 4; nb += 2) {
        if (p->Sk < nb) continue;
        for (int rep = 0; rep < 3; rep++) {
            random_blocks(cut, order, nb, p->Sk);
            fwd_blocks(p, out2, lse2, cut, order, nb);
            bwd_blocks(p, dq2, dk2, dv2, out2, lse2, cut, order, nb);
            double eo = tk_relerr_ff(out2, out1, nq), el = 0.0;
            for (size_t i = 0; i < nl; i++) {
                if (isinf(lse1[i]) && isinf(lse2[i])) continue;
                double d = fabs(lse2[i] - lse1[i]) / (1.0 + fabs(lse1[i]));
                if (!(d <= el)) el = d;
            }
            double eq = tk_relerr_ff(dq2, dq1, nq), ek = tk_relerr_ff(dk2, dk1, nk), ev = tk_relerr_ff(dv2, dv1, nk);
            double emax = fmax(fmax(eo, el), fmax(eq, fmax(ek, ev)));
            if (nb == 2) snprintf(what, sizeof what, "%s: keys [0,%d)+[%d,%d) fwd+bwd == 1 call", name,
                                  cut[1], cut[1], cut[2]);
            else snprintf(what, sizeof what, "%s: 4 blocks cut at %d,%d,%d fwd+bwd == 1 call", name,
                          cut[1], cut[2], cut[3]);
            tk_check(emax <= 2e-6, what, emax, 2e-6);
        }
    }
    free(out1); free(lse1); free(out2); free(lse2);
    free(dq1); free(dk1); free(dv1); free(dq2); free(dk2); free(dv2);
}

// Query ranges: [q_lo,q_hi) pieces computed separately == all queries at once, and the
// rows outside the range are left alone.
static void test_query_ranges(void) {
    int S = 20, pos[20];
    for (int i = 0; i < S; i++) pos[i] = i;
    Prob p = prob_new(2, S, S, 4, 1, 6, pos, pos);
    size_t nq = nq_(&p), nl = nl_(&p);
    float *o1 = calloc(nq, sizeof(float)), *l1 = malloc(nl * sizeof(float));
    float *o2 = calloc(nq, sizeof(float)), *l2 = malloc(nl * sizeof(float));
    for (size_t i = 0; i < nl; i++) l1[i] = l2[i] = -INFINITY;
    hp_attention_forward(o1, l1, p.q, p.k, p.v, p.qpos, p.kpos, 2, S, S, 4, 1, 6, 0, S, 0, S);
    int qc[4] = {0, 7, 8, S};
    for (int t = 0; t < 3; t++)
        hp_attention_forward(o2, l2, p.q, p.k, p.v, p.qpos, p.kpos, 2, S, S, 4, 1, 6, qc[t], qc[t + 1], 0, S);
    double e = fmax(tk_relerr_ff(o2, o1, nq), tk_relerr_ff(l2, l1, nl));
    tk_check(e <= 1e-6, "query ranges [0,7)+[7,8)+[8,20) == [0,20)", e, 1e-6);
    // a range touches only its rows
    float *o3 = calloc(nq, sizeof(float)), *l3 = malloc(nl * sizeof(float));
    for (size_t i = 0; i < nl; i++) l3[i] = -INFINITY;
    hp_attention_forward(o3, l3, p.q, p.k, p.v, p.qpos, p.kpos, 2, S, S, 4, 1, 6, 5, 9, 0, S);
    int bad = 0;
    for (int b = 0; b < 2; b++) for (int i = 0; i < S; i++) for (int h = 0; h < 4; h++) {
        size_t row = ((size_t)b * S + i) * 4 + h;
        int inside = i >= 5 && i < 9;
        if (inside != !isinf(l3[row])) bad++;
        for (int d = 0; d < 6; d++) if (!inside && o3[row * 6 + d] != 0.0f) bad++;
    }
    tk_check(bad == 0, "query range [5,9) writes only its rows", bad, 0);
    free(o1); free(l1); free(o2); free(l2); free(o3); free(l3);
    prob_free(&p);
}

// Rows that see no key: untouched by that block, later blocks fill them in, and a row that
// never sees a key has zero gradient (no NaN).
static void test_empty_rows(void) {
    int qpos[4] = {0, 1, 6, 7}, kpos[8] = {4, 5, 6, 7, 0, 1, 2, 3};
    Prob p = prob_new(1, 4, 8, 2, 2, 4, qpos, kpos);
    size_t nq = nq_(&p), nl = nl_(&p), nk = nk_(&p);
    float *o = calloc(nq, sizeof(float)), *l = malloc(nl * sizeof(float));
    for (size_t i = 0; i < nl; i++) l[i] = -INFINITY;
    // keys at positions 4..7 only: query rows 0,1 (pos 0,1) see nothing
    hp_attention_forward(o, l, p.q, p.k, p.v, p.qpos, p.kpos, 1, 4, 8, 2, 2, 4, 0, 4, 0, 4);
    int bad = 0;
    for (int i = 0; i < 2; i++) for (int h = 0; h < 2; h++) {
        if (!isinf(l[i * 2 + h]) || l[i * 2 + h] > 0) bad++;
        for (int d = 0; d < 4; d++) if (o[(i * 2 + h) * 4 + d] != 0.0f) bad++;
    }
    for (int i = 2; i < 4; i++) for (int h = 0; h < 2; h++) if (isinf(l[i * 2 + h])) bad++;
    tk_check(bad == 0, "rows seeing no key of the block stay (0, -inf)", bad, 0);
    hp_attention_forward(o, l, p.q, p.k, p.v, p.qpos, p.kpos, 1, 4, 8, 2, 2, 4, 0, 4, 4, 8);
    prob_objective(&p);
    tk_cmp_fd("empty-then-filled rows == naive double", o, p.outd, nq, 2e-6);

    // a query at position -1 sees no key anywhere
    int qneg[4] = {-1, 1, -1, 7};
    Prob e = prob_new(1, 4, 8, 2, 1, 4, qneg, kpos);
    float *o2 = calloc(nq, sizeof(float)), *l2 = malloc(nl * sizeof(float));
    for (size_t i = 0; i < nl; i++) l2[i] = -INFINITY;
    hp_attention_forward(o2, l2, e.q, e.k, e.v, e.qpos, e.kpos, 1, 4, 8, 2, 1, 4, 0, 4, 0, 8);
    float *dq = calloc(nq, sizeof(float)), *dk = calloc(nk / 2, sizeof(float)), *dv = calloc(nk / 2, sizeof(float));
    hp_attention_backward(dq, dk, dv, e.R, o2, l2, e.q, e.k, e.v, e.qpos, e.kpos, 1, 4, 8, 2, 1, 4, 0, 4, 0, 8);
    bad = 0;
    for (size_t i = 0; i < nq; i++) if (!isfinite(dq[i])) bad++;
    for (size_t i = 0; i < nk / 2; i++) if (!isfinite(dk[i]) || !isfinite(dv[i])) bad++;
    for (int h = 0; h < 2; h++) for (int d = 0; d < 4; d++) {
        if (dq[(0 * 2 + h) * 4 + d] != 0.0f || dq[(2 * 2 + h) * 4 + d] != 0.0f) bad++;
        if (o2[(0 * 2 + h) * 4 + d] != 0.0f) bad++;
    }
    tk_check(bad == 0, "row that never sees a key: out 0, grads 0, all finite", bad, 0);
    free(o); free(l); free(o2); free(l2); free(dq); free(dk); free(dv);
    prob_free(&p); prob_free(&e);
}

// Same inputs twice give bitwise equal results.
static void test_determinism(void) {
    int S = 150, pos[150];
    for (int i = 0; i < S; i++) pos[i] = i;
    Prob p = prob_new(1, S, S, 2, 1, 16, pos, pos);
    size_t nq = nq_(&p), nk = nk_(&p), nl = nl_(&p);
    float *o[2], *l[2], *dq[2], *dk[2], *dv[2];
    int cut[3] = {0, 61, S}, order[2] = {1, 0};
    for (int r = 0; r < 2; r++) {
        o[r] = malloc(nq * sizeof(float)); l[r] = malloc(nl * sizeof(float));
        dq[r] = malloc(nq * sizeof(float)); dk[r] = malloc(nk * sizeof(float)); dv[r] = malloc(nk * sizeof(float));
        fwd_blocks(&p, o[r], l[r], cut, order, 2);
        bwd_blocks(&p, dq[r], dk[r], dv[r], o[r], l[r], cut, order, 2);
    }
    int same = !memcmp(o[0], o[1], nq * 4) && !memcmp(l[0], l[1], nl * 4) && !memcmp(dq[0], dq[1], nq * 4)
            && !memcmp(dk[0], dk[1], nk * 4) && !memcmp(dv[0], dv[1], nk * 4);
    tk_check(same, "two identical runs are bitwise equal", !same, 0);
    for (int r = 0; r < 2; r++) { free(o[r]); free(l[r]); free(dq[r]); free(dk[r]); free(dv[r]); }
    prob_free(&p);
}

// The bf16 forms (bf16-valued q, k, v, dout): with OpenBLAS the bits of the fp32 functions (the
// products of two bf16 are exact in fp32: the same sgemm calls); with oneDNN's bf16 kernels the
// products are exact too, so only the sum order differs: within 1e-5 of the fp32 results.
static void bf16_forms(float *o, float *l, float *dq, float *dk, float *dv, const Prob *p, int bf16) {
    const size_t nq = nq_(p), nk = nk_(p), nl = nl_(p);
    memset(o, 0, nq * 4); memset(dq, 0, nq * 4); memset(dk, 0, nk * 4); memset(dv, 0, nk * 4);
    for (size_t i = 0; i < nl; i++) l[i] = -INFINITY;
    (bf16 ? hp_attention_forward_bf16 : hp_attention_forward)(o, l, p->q, p->k, p->v, p->qpos, p->kpos,
        p->B, p->Sq, p->Sk, p->H, p->Hkv, p->hd, 0, p->Sq, 0, p->Sk);
    (bf16 ? hp_attention_backward_bf16 : hp_attention_backward)(dq, dk, dv, p->R, o, l, p->q, p->k, p->v,
        p->qpos, p->kpos, p->B, p->Sq, p->Sk, p->H, p->Hkv, p->hd, 0, p->Sq, 0, p->Sk);
}

// onednn: the bf16 forms under oneDNN's bf16 matmul too (a run of its own: not every CPU has it)
static void test_bf16_forms(int onednn) {
    int S = 200, pos[200];
    for (int i = 0; i < S; i++) pos[i] = i;
    Prob p = prob_new(2, S, S, 4, 2, 16, pos, pos);
    const size_t nq = nq_(&p), nk = nk_(&p), nl = nl_(&p);
    hp_bf16_round(p.q, nq); hp_bf16_round(p.k, nk); hp_bf16_round(p.v, nk); hp_bf16_round(p.R, nq);
    float *a[5], *b[5];
    const size_t n[5] = { nq, nl, nq, nk, nk };
    for (int i = 0; i < 5; i++) { a[i] = malloc(n[i] * 4); b[i] = malloc(n[i] * 4); }
    const hp_gemm_backend was = hp_gemm_get_backend();
    hp_gemm_set_backend(HP_GEMM_OPENBLAS);
    bf16_forms(a[0], a[1], a[2], a[3], a[4], &p, 0);
    bf16_forms(b[0], b[1], b[2], b[3], b[4], &p, 1);
    int same = 1;
    for (int i = 0; i < 5; i++) same &= !memcmp(a[i], b[i], n[i] * 4);
    tk_check(same, "bf16 forms under OpenBLAS: the fp32 functions' bits", !same, 0);
    if (onednn) {
        hp_gemm_set_backend(HP_GEMM_ONEDNN);
        bf16_forms(b[0], b[1], b[2], b[3], b[4], &p, 1);
        const char *what[5] = { "bf16 forms under oneDNN: out", "... lse", "... dq", "... dk", "... dv" };
        for (int i = 0; i < 5; i++) tk_cmp_ff(what[i], b[i], a[i], n[i], 1e-5);
    }
    hp_gemm_set_backend(was);
    for (int i = 0; i < 5; i++) { free(a[i]); free(b[i]); }
    prob_free(&p);
}

// Bad input gives one line on stderr and touches nothing.
static void test_bad_input(void) {
    float out[8] = {0}, lse[2] = {-INFINITY, -INFINITY}, q[8] = {1}, kv[8] = {1};
    int pos[2] = {0, 1};
    hp_attention_forward(out, lse, q, kv, kv, pos, pos, 1, 1, 2, 3, 2, 2, 0, 1, 0, 2); // H % Hkv != 0
    hp_attention_forward(out, lse, q, kv, kv, pos, pos, 1, 1, 2, 2, 1, 4, 0, 1, 0, 3); // k_hi > Sk
    tk_check(out[0] == 0.0f && isinf(lse[0]), "bad shapes are refused without writing", 0, 0);
}

// argv[1] "onednn-bf16": the bf16 forms under oneDNN alone, skipped (exit 77, one line) where
// oneDNN has no bf16 matmul (below avx512_core); else everything else.
int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "onednn-bf16")) {
        if (!hp_gemm_backend_supports(HP_GEMM_ONEDNN, 1)) {
            printf("test_kernels_attention onednn-bf16: skipped: oneDNN has no bf16 matmul on isa %s "
                   "(it needs avx512_core)\n", hp_gemm_onednn_isa());
            return 77;
        }
        test_bf16_forms(1);
        return tk_summary("test_kernels_attention onednn-bf16");
    }
    // self attention, GQA H=4 Hkv=2, positions 0..S-1
    {
        int S = 13, pos[13];
        for (int i = 0; i < S; i++) pos[i] = i;
        Prob p = prob_new(2, S, S, 4, 2, 8, pos, pos);
        run_problem("self S=13 H=4 Hkv=2", &p, 1);
        prob_free(&p);
    }
    // a context-parallel chunk: rank 0 of cp=2 on L=16 holds positions 0..3 and 12..15;
    // keys are its own chunk followed by rank 1's (4..11), as the ring delivers them
    {
        int qpos[8] = {0, 1, 2, 3, 12, 13, 14, 15};
        int kpos[16] = {0, 1, 2, 3, 12, 13, 14, 15, 4, 5, 6, 7, 8, 9, 10, 11};
        Prob p = prob_new(2, 8, 16, 4, 2, 8, qpos, kpos);
        run_problem("cp chunk q=[0..3,12..15] H=4 Hkv=2", &p, 1);
        prob_free(&p);
        // rank 1 of the same split, MHA, offset positions and an unsorted key order
        int qpos1[8] = {4, 5, 6, 7, 8, 9, 10, 11};
        int kpos1[16] = {4, 5, 6, 7, 8, 9, 10, 11, 15, 14, 0, 1, 2, 3, 13, 12};
        Prob r = prob_new(1, 8, 16, 2, 2, 6, qpos1, kpos1);
        run_problem("cp chunk q=[4..11] unsorted keys MHA", &r, 1);
        prob_free(&r);
    }
    // longer sequence crossing the query tiles (128), MQA
    {
        int S = 300, pos[300];
        for (int i = 0; i < S; i++) pos[i] = 100 + i;
        Prob p = prob_new(1, S, S, 2, 1, 16, pos, pos);
        run_problem("self S=300 H=2 Hkv=1 (tiles)", &p, 0);
        prob_free(&p);
    }
    // FD on a small problem whose query tile boundary is not hit but H/Hkv = 4
    {
        int S = 9, pos[9];
        for (int i = 0; i < S; i++) pos[i] = 3 * i;
        Prob p = prob_new(1, S, S, 4, 1, 4, pos, pos);
        run_problem("self S=9 H=4 Hkv=1 strided pos", &p, 1);
        prob_free(&p);
    }
    test_query_ranges();
    test_empty_rows();
    test_determinism();
    test_bf16_forms(0);
    test_bad_input();
    return tk_summary("test_kernels_attention");
}
