// test_moe.c - the MoE block (src/model/moe.c) and its expert-parallel dispatch
// (src/parallel/ep_dispatch.c) against a single-process reference.
//   test_moe single   (1 rank, L0) central-difference check of dx and every weight grad in
//                     4 router settings; token split and expert hidden split simulated with
//                     two states on one rank; alltoall == allgather; determinism; bad dims.
//   test_moe ep       (2 or 4 ranks) EP over the world (and ep=2 at 4 ranks): every rank's
//                     rows, dx and grads vs the reference run on the rows of ALL ranks, both
//                     dispatchers, and the dispatch traffic vs docs/traffic_moe.md.
//   test_moe tp       (4 ranks) tp=2 with ep=2, etp=2 (expert hidden split) and tp=2, ep=4,
//                     etp=1 (EP borrows tp: token split), tp=2 with ep=1 (experts tp-split):
//                     partial outputs summed over tp.
//   test_moe bad-ep   (2 ranks) local experts that do not match the ep rank: the job stops
//                     with one line naming the mismatch.
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <mpi.h>
#include "hyperpar/comm.h"
#include "hyperpar/dims.h"
#include "hyperpar/bf16.h"
#include "hyperpar/memtrack.h"
#include "hyperpar/moe.h"
#include "precision/precision.h"

static int n_pass = 0, n_fail = 0, g_rank = 0;

static void check(int ok, const char *what, double err, double tol) {
    if (ok) n_pass++; else n_fail++;
    if (!ok || g_rank == 0)
        printf("%s [rank %d] %-64s err %.3e (tol %.1e)\n", ok ? "  ok  " : "FAILED", g_rank, what, err, tol);
}

// ---- deterministic inputs (splitmix64) ------------------------------------------------
static uint64_t rng_s;
static double unif(void) {
    uint64_t z = (rng_s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (double)(z >> 11) * (1.0 / 9007199254740992.0);
}
static void fill(float *x, size_t n, float a) { for (size_t i = 0; i < n; i++) x[i] = (float)((2.0 * unif() - 1.0) * a); }
static float *falloc(size_t n) { float *p = calloc(n ? n : 1, sizeof(float)); if (!p) { fprintf(stderr, "oom\n"); exit(2); } return p; }

// max |a - b| / max |ref| (NaN fails)
static double relerr(const float *a, const float *ref, size_t n) {
    double md = 0.0, mr = 0.0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - (double)ref[i]);
        if (!(d <= md)) md = d;
        if (fabs((double)ref[i]) > mr) mr = fabs((double)ref[i]);
    }
    return md / (mr > 1e-30 ? mr : 1e-30);
}

// ---- the full (global) block and local slices of it -----------------------------------
typedef struct {
    int D, E, K, Fe, Fs;
    float *gate, *w1, *w2, *w3, *sw1, *sw2, *sw3;   // full shapes, model.md
} gmodel;

static gmodel gmodel_make(int D, int E, int K, int Fe, int Fs, uint64_t seed, float gate_std) {
    gmodel G = { D, E, K, Fe, Fs, 0, 0, 0, 0, 0, 0, 0 };
    rng_s = seed;
    G.gate = falloc((size_t)E * D);  fill(G.gate, (size_t)E * D, gate_std);
    G.w1 = falloc((size_t)E * Fe * D); fill(G.w1, (size_t)E * Fe * D, 0.5f);
    G.w2 = falloc((size_t)E * D * Fe); fill(G.w2, (size_t)E * D * Fe, 0.5f);
    G.w3 = falloc((size_t)E * Fe * D); fill(G.w3, (size_t)E * Fe * D, 0.5f);
    G.sw1 = falloc((size_t)Fs * D); fill(G.sw1, (size_t)Fs * D, 0.5f);
    G.sw2 = falloc((size_t)D * Fs); fill(G.sw2, (size_t)D * Fs, 0.5f);
    G.sw3 = falloc((size_t)Fs * D); fill(G.sw3, (size_t)Fs * D, 0.5f);
    return G;
}
static void gmodel_free(gmodel *G) {
    free(G->gate); free(G->w1); free(G->w2); free(G->w3); free(G->sw1); free(G->sw2); free(G->sw3);
}

// One rank's piece: experts [e0, e0+El), expert hidden [h0, h0+Fel), shared hidden [s0, s0+Fsl).
typedef struct {
    int e0, El, h0, Fel, s0, Fsl;
    float *gate, *w1, *w2, *w3, *sw1, *sw2, *sw3;   // weights, local shapes (moe.h)
    float *dgate, *dw1, *dw2, *dw3, *dsw1, *dsw2, *dsw3;
} lmodel;

static lmodel lmodel_slice(const gmodel *G, int e0, int El, int h0, int Fel, int s0, int Fsl) {
    const int D = G->D, E = G->E, Fe = G->Fe, Fs = G->Fs;
    lmodel L = { e0, El, h0, Fel, s0, Fsl, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 };
    L.gate = falloc((size_t)E * D); memcpy(L.gate, G->gate, (size_t)E * D * sizeof(float));
    L.w1 = falloc((size_t)El * Fel * D); L.w3 = falloc((size_t)El * Fel * D); L.w2 = falloc((size_t)El * D * Fel);
    for (int l = 0; l < El; l++)
        for (int f = 0; f < Fel; f++)
            for (int d = 0; d < D; d++) {
                size_t li = ((size_t)l * Fel + f) * D + d, gi = ((size_t)(e0 + l) * Fe + h0 + f) * D + d;
                L.w1[li] = G->w1[gi]; L.w3[li] = G->w3[gi];
                L.w2[((size_t)l * D + d) * Fel + f] = G->w2[((size_t)(e0 + l) * D + d) * Fe + h0 + f];
            }
    L.sw1 = falloc((size_t)Fsl * D); L.sw3 = falloc((size_t)Fsl * D); L.sw2 = falloc((size_t)D * Fsl);
    for (int f = 0; f < Fsl; f++)
        for (int d = 0; d < D; d++) {
            L.sw1[(size_t)f * D + d] = G->sw1[(size_t)(s0 + f) * D + d];
            L.sw3[(size_t)f * D + d] = G->sw3[(size_t)(s0 + f) * D + d];
            L.sw2[(size_t)d * Fsl + f] = G->sw2[(size_t)d * Fs + s0 + f];
        }
    L.dgate = falloc((size_t)E * D);
    L.dw1 = falloc((size_t)El * Fel * D); L.dw3 = falloc((size_t)El * Fel * D); L.dw2 = falloc((size_t)El * D * Fel);
    L.dsw1 = falloc((size_t)Fsl * D); L.dsw3 = falloc((size_t)Fsl * D); L.dsw2 = falloc((size_t)D * Fsl);
    return L;
}
static void lmodel_free(lmodel *L) {
    free(L->gate); free(L->w1); free(L->w2); free(L->w3); free(L->sw1); free(L->sw2); free(L->sw3);
    free(L->dgate); free(L->dw1); free(L->dw2); free(L->dw3); free(L->dsw1); free(L->dsw2); free(L->dsw3);
}
static hp_moe_weights lweights(const lmodel *L) {
    hp_moe_weights w = { L->gate, L->w1, L->w2, L->w3, L->Fsl ? L->sw1 : NULL, L->Fsl ? L->sw2 : NULL,
                         L->Fsl ? L->sw3 : NULL };
    return w;
}
static hp_moe_grads lgrads(lmodel *L) {
    hp_moe_grads g = { L->dgate, L->dw1, L->dw2, L->dw3, L->dsw1, L->dsw2, L->dsw3 };
    return g;
}
// Extracts from a full-layout expert/shared grad the slice L holds (to compare against).
static void slice_grads(const gmodel *G, const lmodel *R /* full grads in R->d* */, const lmodel *L,
                        float *w1, float *w2, float *w3, float *sw1, float *sw2, float *sw3) {
    const int D = G->D, Fe = G->Fe, Fs = G->Fs;
    for (int l = 0; l < L->El; l++)
        for (int f = 0; f < L->Fel; f++)
            for (int d = 0; d < D; d++) {
                size_t li = ((size_t)l * L->Fel + f) * D + d, gi = ((size_t)(L->e0 + l) * Fe + L->h0 + f) * D + d;
                w1[li] = R->dw1[gi]; w3[li] = R->dw3[gi];
                w2[((size_t)l * D + d) * L->Fel + f] = R->dw2[((size_t)(L->e0 + l) * D + d) * Fe + L->h0 + f];
            }
    for (int f = 0; f < L->Fsl; f++)
        for (int d = 0; d < D; d++) {
            sw1[(size_t)f * D + d] = R->dsw1[(size_t)(L->s0 + f) * D + d];
            sw3[(size_t)f * D + d] = R->dsw3[(size_t)(L->s0 + f) * D + d];
            sw2[(size_t)d * L->Fsl + f] = R->dsw2[(size_t)d * Fs + L->s0 + f];
        }
}

static hp_moe_dims mdims(const gmodel *G, const lmodel *L, int N, int split, int trank,
                         hp_score_func sf, int rn, float rs, hp_dispatcher disp) {
    hp_moe_dims md = { .N = N, .D = G->D, .E = G->E, .K = G->K, .El = L->El, .e0 = L->e0,
                       .Fel = L->Fel, .Fsl = L->Fsl, .token_split = split, .token_rank = trank,
                       .score_func = sf, .route_norm = rn, .route_scale = rs, .dispatcher = disp };
    return md;
}

// forward + backward once; grads accumulated into L's, dx overwritten. routing (N*K) optional.
static void run_block(hp_comm *comm, const hp_moe_dims *md, lmodel *L, const float *x,
                      const float *dout, float *out, float *dx, int *routing) {
    hp_moe_state *st = hp_moe_state_init(md);
    if (!st) { fprintf(stderr, "state init failed\n"); MPI_Abort(MPI_COMM_WORLD, 1); }
    hp_moe_weights w = lweights(L);
    hp_moe_grads g = lgrads(L);
    hp_moe_forward(st, comm, out, x, &w);
    memset(dx, 0, (size_t)md->N * md->D * sizeof(float));
    hp_moe_backward(st, comm, dx, &g, dout, &w);
    if (routing) memcpy(routing, hp_moe_routing(st), (size_t)md->N * md->K * sizeof(int));
    hp_moe_state_free(st);
}

static hp_comm *self_comm(void) {
    hp_dims d = hp_dims_default();
    d.dp_shard = 1; d.world = 1;
    char err[256];
    if (hp_dims_validate(&d, NULL, NULL, err, sizeof err) != 0) { fprintf(stderr, "%s\n", err); exit(2); }
    return hp_comm_init(MPI_COMM_SELF, &d, 1);
}

// ============================================================================================
// single process: finite differences

static double objective(hp_moe_state *st, hp_comm *comm, float *out, const float *x,
                        const hp_moe_weights *w, const float *R, size_t n) {
    hp_moe_forward(st, comm, out, x, w);
    double L = 0.0;
    for (size_t i = 0; i < n; i++) L += (double)out[i] * R[i];
    return L;
}

// Central differences over every element of p (n), against the analytic grad an.
// A coordinate whose perturbation changes the top-k selection is skipped (the selection is
// piecewise constant: no gradient flows through it).
static void fd_tensor(const char *what, float *p, const float *an, size_t n, hp_moe_state *st,
                      hp_comm *comm, float *out, const float *x, const hp_moe_weights *w,
                      const float *R, size_t nout, const int *base_idx, size_t nidx) {
    const float h = 1e-2f;
    double maxerr = 0.0, maxan = 0.0;
    int skipped = 0;
    for (size_t i = 0; i < n; i++) {
        float keep = p[i];
        p[i] = keep + h;
        double lp = objective(st, comm, out, x, w, R, nout);
        int flip = memcmp(hp_moe_routing(st), base_idx, nidx * sizeof(int)) != 0;
        p[i] = keep - h;
        double lm = objective(st, comm, out, x, w, R, nout);
        flip |= memcmp(hp_moe_routing(st), base_idx, nidx * sizeof(int)) != 0;
        p[i] = keep;
        if (flip) { skipped++; continue; }
        double fd = (lp - lm) / (2.0 * h);
        double e = fabs(fd - an[i]) / (1.0 + fabs(an[i]));
        if (!(e <= maxerr)) maxerr = e;
        if (fabs(an[i]) > maxan) maxan = fabs(an[i]);
    }
    char msg[160];
    snprintf(msg, sizeof msg, "%s (%zu coords, %d skipped: selection flips)", what, n, skipped);
    int ok = maxerr <= 2e-3 && skipped * 4 <= (int)n && maxan > 0.0;
    check(ok, msg, maxerr, 2e-3);
}

static void test_fd(hp_comm *self) {
    const int N = 6, D = 8, E = 4, K = 2, Fe = 6, Fs = 6;
    const struct { hp_score_func sf; int rn; float rs; const char *name; } cfg[] = {
        { HP_SCORE_SOFTMAX, 0, 1.0f, "softmax" },
        { HP_SCORE_SOFTMAX, 1, 1.0f, "softmax+route_norm" },
        { HP_SCORE_SIGMOID, 0, 2.5f, "sigmoid scale 2.5" },
        { HP_SCORE_SIGMOID, 1, 1.5f, "sigmoid+route_norm scale 1.5" },
    };
    for (size_t c = 0; c < sizeof cfg / sizeof cfg[0]; c++) {
        gmodel G = gmodel_make(D, E, K, Fe, Fs, 1000 + c, 1.0f);
        lmodel L = lmodel_slice(&G, 0, E, 0, Fe, 0, Fs);
        float *x = falloc((size_t)N * D), *R = falloc((size_t)N * D), *out = falloc((size_t)N * D);
        float *dx = falloc((size_t)N * D);
        rng_s = 77 + c;
        fill(x, (size_t)N * D, 1.0f);
        fill(R, (size_t)N * D, 1.0f);
        hp_moe_dims md = mdims(&G, &L, N, 1, 0, cfg[c].sf, cfg[c].rn, cfg[c].rs, HP_DISPATCH_ALLTOALL);
        int *idx = calloc((size_t)N * K, sizeof(int));
        run_block(self, &md, &L, x, R, out, dx, idx);
        hp_moe_state *st = hp_moe_state_init(&md);
        hp_moe_weights w = lweights(&L);
        char nm[96];
#define FD(what_, p, an, n) do { snprintf(nm, sizeof nm, "fd %-28s d%s", cfg[c].name, what_); \
        fd_tensor(nm, p, an, n, st, self, out, x, &w, R, (size_t)N * D, idx, (size_t)N * K); } while (0)
        FD("x", x, dx, (size_t)N * D);
        FD("gate", L.gate, L.dgate, (size_t)E * D);
        FD("w1", L.w1, L.dw1, (size_t)E * Fe * D);
        FD("w2", L.w2, L.dw2, (size_t)E * D * Fe);
        FD("w3", L.w3, L.dw3, (size_t)E * Fe * D);
        FD("sw1", L.sw1, L.dsw1, (size_t)Fs * D);
        FD("sw2", L.sw2, L.dsw2, (size_t)D * Fs);
        FD("sw3", L.sw3, L.dsw3, (size_t)Fs * D);
#undef FD
        hp_moe_state_free(st);
        free(idx); free(x); free(R); free(out); free(dx);
        lmodel_free(&L); gmodel_free(&G);
    }
}

// ============================================================================================
// comparing one layout's (summed) results with the reference

typedef struct {   // reference results on the rows of all ranks
    int Nall;
    float *out, *dx;   // (Nall, D)
    lmodel full;       // its grads are the reference grads (full shapes)
} reference;

static reference reference_run(hp_comm *self, const gmodel *G, const float *X, const float *Rr, int Nall,
                               hp_score_func sf, int rn, float rs) {
    reference ref = { Nall, falloc((size_t)Nall * G->D), falloc((size_t)Nall * G->D),
                      lmodel_slice(G, 0, G->E, 0, G->Fe, 0, G->Fs) };
    hp_moe_dims md = mdims(G, &ref.full, Nall, 1, 0, sf, rn, rs, HP_DISPATCH_ALLTOALL);
    run_block(self, &md, &ref.full, X, Rr, ref.out, ref.dx, NULL);
    return ref;
}
static void reference_free(reference *r) { free(r->out); free(r->dx); lmodel_free(&r->full); }

// Compares a local piece's grads (already summed over the ranks that share them) with the
// reference slice.
static void cmp_grads(const char *tag, const gmodel *G, const reference *ref, const lmodel *L,
                      const float *dgate_total, double tol) {
    const int D = G->D;
    size_t ne = (size_t)L->El * L->Fel * D, ns = (size_t)L->Fsl * D;
    float *w1 = falloc(ne), *w2 = falloc(ne), *w3 = falloc(ne);
    float *s1 = falloc(ns), *s2 = falloc(ns), *s3 = falloc(ns);
    slice_grads(G, &ref->full, L, w1, w2, w3, s1, s2, s3);
    char msg[160];
#define CMP(name, a, b, n) do { snprintf(msg, sizeof msg, "%s %s", tag, name); \
    double e_ = relerr(a, b, n); check(e_ <= tol, msg, e_, tol); } while (0)
    CMP("dgate", dgate_total, ref->full.dgate, (size_t)G->E * D);
    CMP("dw1", L->dw1, w1, ne);
    CMP("dw2", L->dw2, w2, ne);
    CMP("dw3", L->dw3, w3, ne);
    if (L->Fsl) {
        CMP("dsw1", L->dsw1, s1, ns);
        CMP("dsw2", L->dsw2, s2, ns);
        CMP("dsw3", L->dsw3, s3, ns);
    }
#undef CMP
    free(w1); free(w2); free(w3); free(s1); free(s2); free(s3);
}

// ============================================================================================
// single process: splits simulated with two states on one rank

// Two "tp ranks" t = 0, 1 on one process: each holds half the shared hidden and either half
// the rows (token split) or half of every expert's hidden (expert hidden split). Their
// partial outputs and grads must sum to the reference.
static void test_sim_split(hp_comm *self, int token_split, hp_dispatcher disp) {
    const int N = 8, D = 8, E = 4, K = 2, Fe = 6, Fs = 6, T = 2;
    const size_t ND = (size_t)N * D, ne = (size_t)E * Fe * D;
    gmodel G = gmodel_make(D, E, K, Fe, Fs, 4242, 1.0f);
    float *x = falloc(ND), *R = falloc(ND);
    rng_s = 99; fill(x, ND, 1.0f); fill(R, ND, 1.0f);
    reference ref = reference_run(self, &G, x, R, N, HP_SCORE_SOFTMAX, 1, 1.0f);
    float *out = falloc(ND), *dx = falloc(ND), *osum = falloc(ND), *dxsum = falloc(ND);
    float *dgsum = falloc((size_t)E * D);
    lmodel L[2];
    char tag[128];
    snprintf(tag, sizeof tag, "sim %s %s", token_split ? "token-split" : "hidden-split",
             disp == HP_DISPATCH_ALLTOALL ? "a2a" : "allgather");
    for (int t = 0; t < T; t++) {
        int Fel = token_split ? Fe : Fe / T;
        L[t] = lmodel_slice(&G, 0, E, token_split ? 0 : t * Fel, Fel, t * (Fs / T), Fs / T);
        hp_moe_dims md = mdims(&G, &L[t], N, token_split ? T : 1, token_split ? t : 0,
                               HP_SCORE_SOFTMAX, 1, 1.0f, disp);
        run_block(self, &md, &L[t], x, R, out, dx, NULL);
        for (size_t i = 0; i < ND; i++) { osum[i] += out[i]; dxsum[i] += dx[i]; }
        for (size_t i = 0; i < (size_t)E * D; i++) dgsum[i] += L[t].dgate[i];
    }
    if (token_split) {   // each half saw half the rows: expert grads add up over t
        for (size_t i = 0; i < ne; i++) {
            L[0].dw1[i] += L[1].dw1[i]; L[0].dw2[i] += L[1].dw2[i]; L[0].dw3[i] += L[1].dw3[i];
            L[1].dw1[i] = L[0].dw1[i]; L[1].dw2[i] = L[0].dw2[i]; L[1].dw3[i] = L[0].dw3[i];
        }
    }
    char msg[160];
    for (int t = 0; t < T; t++) {   // expert slices (hidden split) / sums (token split), shared slices
        snprintf(msg, sizeof msg, "%s t=%d", tag, t);
        cmp_grads(msg, &G, &ref, &L[t], dgsum, 1e-5);
        lmodel_free(&L[t]);
    }
    double e = relerr(osum, ref.out, ND);
    snprintf(msg, sizeof msg, "%s: out summed over t", tag);
    check(e <= 1e-5, msg, e, 1e-5);
    e = relerr(dxsum, ref.dx, ND);
    snprintf(msg, sizeof msg, "%s: dx summed over t", tag);
    check(e <= 1e-5, msg, e, 1e-5);
    free(x); free(R); free(out); free(dx); free(osum); free(dxsum); free(dgsum);
    reference_free(&ref); gmodel_free(&G);
}

// alltoall and allgather agree on one rank; two identical runs are bit-identical; groups of
// size 1 count no traffic; bad dims are refused with a message.
static void test_single_misc(hp_comm *self) {
    const int N = 10, D = 8, E = 4, K = 3, Fe = 6, Fs = 0;
    gmodel G = gmodel_make(D, E, K, Fe, Fs > 0 ? Fs : 1, 555, 1.0f);
    G.Fs = 0;
    float *x = falloc((size_t)N * D), *R = falloc((size_t)N * D);
    rng_s = 5; fill(x, (size_t)N * D, 1.0f); fill(R, (size_t)N * D, 1.0f);
    float *o1 = falloc((size_t)N * D), *o2 = falloc((size_t)N * D), *o3 = falloc((size_t)N * D);
    float *d1 = falloc((size_t)N * D), *d2 = falloc((size_t)N * D), *d3 = falloc((size_t)N * D);
    lmodel A = lmodel_slice(&G, 0, E, 0, Fe, 0, 0), B = lmodel_slice(&G, 0, E, 0, Fe, 0, 0),
           C = lmodel_slice(&G, 0, E, 0, Fe, 0, 0);
    hp_moe_dims ma = mdims(&G, &A, N, 1, 0, HP_SCORE_SIGMOID, 1, 2.0f, HP_DISPATCH_ALLTOALL);
    hp_moe_dims mg = ma; mg.dispatcher = HP_DISPATCH_ALLGATHER;
    hp_comm_reset_stats(self);
    run_block(self, &ma, &A, x, R, o1, d1, NULL);
    run_block(self, &ma, &B, x, R, o2, d2, NULL);
    run_block(self, &mg, &C, x, R, o3, d3, NULL);
    int same = !memcmp(o1, o2, (size_t)N * D * 4) && !memcmp(d1, d2, (size_t)N * D * 4) &&
               !memcmp(A.dgate, B.dgate, (size_t)E * D * 4) && !memcmp(A.dw1, B.dw1, (size_t)E * Fe * D * 4) &&
               !memcmp(A.dw2, B.dw2, (size_t)E * Fe * D * 4) && !memcmp(A.dw3, B.dw3, (size_t)E * Fe * D * 4);
    check(same, "single: two runs bit-identical (no shared experts, K=3)", same ? 0.0 : 1.0, 0.0);
    double e = 0.0, t;
    t = relerr(o3, o1, (size_t)N * D); if (t > e) e = t;
    t = relerr(d3, d1, (size_t)N * D); if (t > e) e = t;
    t = relerr(C.dgate, A.dgate, (size_t)E * D); if (t > e) e = t;
    t = relerr(C.dw1, A.dw1, (size_t)E * Fe * D); if (t > e) e = t;
    t = relerr(C.dw2, A.dw2, (size_t)E * Fe * D); if (t > e) e = t;
    t = relerr(C.dw3, A.dw3, (size_t)E * Fe * D); if (t > e) e = t;
    check(e <= 1e-6, "single: allgather == alltoall (out, dx, every grad)", e, 1e-6);
    uint64_t b = hp_comm_bytes(self, HP_G_EP, HP_OP_ALLTOALL) + hp_comm_bytes(self, HP_G_EP, HP_OP_ALLGATHER) +
                 hp_comm_bytes(self, HP_G_EP, HP_OP_REDUCE_SCATTER);
    check(b == 0, "single: an ep group of size 1 moves 0 bytes", (double)b, 0.0);
    // routing: descending score, so each row's K ids are distinct
    hp_moe_state *st = hp_moe_state_init(&ma);
    hp_moe_weights w = lweights(&A);
    hp_moe_forward(st, self, o1, x, &w);
    const int *idx = hp_moe_routing(st);
    int distinct = 1;
    for (int r = 0; r < N; r++)
        for (int a = 0; a < K; a++)
            for (int c = a + 1; c < K; c++) if (idx[r * K + a] == idx[r * K + c]) distinct = 0;
    check(distinct, "single: hp_moe_routing gives K distinct experts per row", !distinct, 0.0);
    hp_moe_state_free(st);
    // bad dims: refused (NULL), never a crash
    hp_moe_dims bad = ma; bad.token_split = 3; bad.token_rank = 0;   // 10 rows % 3
    fprintf(stderr, "(expected error lines follow)\n");
    hp_moe_state *s1 = hp_moe_state_init(&bad);
    bad = ma; bad.K = 5;
    hp_moe_state *s2 = hp_moe_state_init(&bad);
    bad = ma; bad.El = 3;
    hp_moe_state *s3 = hp_moe_state_init(&bad);
    check(!s1 && !s2 && !s3, "single: bad dims refused (rows % token_split, K > E, E % El)", 0.0, 0.0);
    free(x); free(R); free(o1); free(o2); free(o3); free(d1); free(d2); free(d3);
    lmodel_free(&A); lmodel_free(&B); lmodel_free(&C); gmodel_free(&G);
}

// ---- two MoE blocks of one dims, each run two ways (variant 0 and 1), as a model runs its
// blocks: both forwards, then the backwards in reverse
enum { TB_N = 12, TB_D = 8, TB_E = 4, TB_K = 2, TB_FE = 6, TB_FS = 6 };
typedef struct two_blocks {
    gmodel G;
    float *x[2], *R[2];        // [block] (N, D) input, output grad
    float *o[2][2], *dx[2][2]; // [variant][block] output, input grad
    lmodel L[2][2];            // [variant][block] the weights and their grads
    hp_moe_dims md;
} two_blocks;

// bf16_input: the inputs rounded to bf16 (a block's input under the bf16 rule)
static void two_blocks_init(two_blocks *t, uint64_t seed, int bf16_input) {
    const size_t nd = (size_t)TB_N * TB_D;
    t->G = gmodel_make(TB_D, TB_E, TB_K, TB_FE, TB_FS, seed, 1.0f);
    for (int b = 0; b < 2; b++) {
        t->x[b] = falloc(nd); t->R[b] = falloc(nd);
        fill(t->x[b], nd, 1.0f); fill(t->R[b], nd, 1.0f);
        if (bf16_input) hp_bf16_round(t->x[b], nd);
        for (int v = 0; v < 2; v++) {
            t->o[v][b] = falloc(nd); t->dx[v][b] = falloc(nd);
            t->L[v][b] = lmodel_slice(&t->G, 0, TB_E, 0, TB_FE, 0, TB_FS);
        }
    }
    t->md = mdims(&t->G, &t->L[0][0], TB_N, 1, 0, HP_SCORE_SOFTMAX, 0, 1.0f, HP_DISPATCH_ALLTOALL);
}

static void two_blocks_free(two_blocks *t) {
    for (int b = 0; b < 2; b++) {
        free(t->x[b]); free(t->R[b]);
        for (int v = 0; v < 2; v++) { free(t->o[v][b]); free(t->dx[v][b]); lmodel_free(&t->L[v][b]); }
    }
    gmodel_free(&t->G);
}

// 1 when variant 1 gave variant 0's outputs, input grads and every weight grad, bit for bit.
static int two_blocks_same(const two_blocks *t) {
    const size_t nd = (size_t)TB_N * TB_D, ew = (size_t)TB_E * TB_FE * TB_D, sw = (size_t)TB_FS * TB_D;
    int same = 1;
    for (int b = 0; b < 2; b++) {
        const lmodel *P = &t->L[0][b], *S = &t->L[1][b];
        same &= !memcmp(t->o[0][b], t->o[1][b], nd * 4) && !memcmp(t->dx[0][b], t->dx[1][b], nd * 4) &&
                !memcmp(P->dgate, S->dgate, (size_t)TB_E * TB_D * 4) && !memcmp(P->dw1, S->dw1, ew * 4) &&
                !memcmp(P->dw2, S->dw2, ew * 4) && !memcmp(P->dw3, S->dw3, ew * 4) &&
                !memcmp(P->dsw1, S->dsw1, sw * 4) && !memcmp(P->dsw2, S->dsw2, sw * 4) &&
                !memcmp(P->dsw3, S->dsw3, sw * 4);
    }
    return same;
}

// Variant v of both blocks on two states of md sharing one scratch; check_between (may be NULL)
// runs after the forwards, before the backwards. Returns the activation bytes the two held
// after their forwards.
static size_t two_blocks_run(hp_comm *self, two_blocks *t, int v, const hp_moe_dims *md,
                             void (*check_between)(hp_comm *, two_blocks *, hp_moe_state *)) {
    hp_mem_stats m0, m1;
    hp_mem_get_stats(&m0);
    hp_moe_state *st[2] = { hp_moe_state_init(md), hp_moe_state_init(md) };
    if (!st[0] || !st[1] || hp_moe_share_scratch(st[1], st[0]) != 0) {
        fprintf(stderr, "two_blocks_run: state init or share failed\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    hp_moe_weights w[2];
    hp_moe_grads g[2];
    for (int b = 0; b < 2; b++) {
        w[b] = lweights(&t->L[v][b]);
        g[b] = lgrads(&t->L[v][b]);
        hp_moe_forward(st[b], self, t->o[v][b], t->x[b], &w[b]);
    }
    hp_mem_get_stats(&m1);
    if (check_between) check_between(self, t, st[0]);
    for (int b = 1; b >= 0; b--) {
        memset(t->dx[v][b], 0, (size_t)md->N * md->D * sizeof(float));
        hp_moe_backward(st[b], self, t->dx[v][b], &g[b], t->R[b], &w[b]);
    }
    hp_moe_state_free(st[0]);   // (the scratch outlives its first user: st[1] runs again)
    hp_moe_state *again = hp_moe_state_init(md);
    const int ok = again && hp_moe_share_scratch(again, st[1]) == 0;
    float *o = falloc((size_t)md->N * md->D);
    if (ok) hp_moe_forward(again, self, o, t->x[0], &w[0]);
    check(ok, "shared scratch: usable after its first user is freed", 0.0, 0.0);
    free(o);
    hp_moe_state_free(again);
    hp_moe_state_free(st[1]);
    return m1.current[HP_MEM_ACTIVATIONS] - m0.current[HP_MEM_ACTIVATIONS];
}

// The refusals, with st0 forwarded and sharing already: another dims, a state that has run.
static void share_refusals(hp_comm *self, two_blocks *t, hp_moe_state *st0) {
    hp_moe_dims other = t->md;
    other.N = TB_N / 2;
    hp_moe_state *odd = hp_moe_state_init(&other), *late = hp_moe_state_init(&t->md);
    check(odd && hp_moe_share_scratch(odd, st0) == -1, "shared scratch: refused across dims (N 6 vs 12)", 0.0, 0.0);
    check(late && hp_moe_share_scratch(late, st0) == 0 && hp_moe_share_scratch(st0, late) == 0,
          "shared scratch: joining an already shared scratch is a no-op", 0.0, 0.0);
    hp_moe_state_free(late);
    late = hp_moe_state_init(&t->md);
    hp_moe_weights w = lweights(&t->L[0][0]);
    float *o = falloc((size_t)TB_N * TB_D);
    if (late) hp_moe_forward(late, self, o, t->x[0], &w);
    check(late && hp_moe_share_scratch(late, st0) == -1, "shared scratch: refused after a forward", 0.0, 0.0);
    free(o);
    hp_moe_state_free(late);
    hp_moe_state_free(odd);
}

// The activation bytes two fresh states of md hold after a forward each, sharing one scratch
// or not.
static size_t pair_bytes(hp_comm *self, const hp_moe_dims *md, int share, const lmodel *L, const float *x) {
    hp_mem_stats m0, m1;
    hp_mem_get_stats(&m0);
    hp_moe_state *a = hp_moe_state_init(md), *b = hp_moe_state_init(md);
    if (!a || !b || (share && hp_moe_share_scratch(b, a) != 0)) {
        fprintf(stderr, "pair_bytes: state init or share failed\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    hp_moe_weights w = lweights(L);
    float *out = falloc((size_t)md->N * md->D);
    hp_moe_forward(a, self, out, x, &w);
    hp_moe_forward(b, self, out, x, &w);
    hp_mem_get_stats(&m1);
    free(out);
    hp_moe_state_free(a);
    hp_moe_state_free(b);
    return m1.current[HP_MEM_ACTIVATIONS] - m0.current[HP_MEM_ACTIVATIONS];
}

// Two blocks sharing one scratch (hp_moe_share_scratch) give each block's private-state
// results bit for bit and hold exactly one scratch less (docs/planner.md's formula); sharing
// is refused across dims or after a forward, and the scratch outlives its first user.
static void test_shared_scratch(hp_comm *self) {
    two_blocks t;
    rng_s = 9;
    two_blocks_init(&t, 77, 0);
    for (int b = 0; b < 2; b++) run_block(self, &t.md, &t.L[0][b], t.x[b], t.R[b], t.o[0][b], t.dx[0][b], NULL);
    two_blocks_run(self, &t, 1, &t.md, share_refusals);
    check(two_blocks_same(&t), "shared scratch: out, dx and every grad of both blocks = their private-state runs",
          0.0, 0.0);
    // ep 1: cap = N K routed rows; the scratch: logits (N, E), sy (N, D), dye dxe (cap, D),
    // dact dh1 dh3 (cap, Fe), dgates (N, K), dscores dlogits (N, E), dsact dsh1 dsh3 (N, Fs)
    const size_t N = TB_N, cap = (size_t)TB_N * TB_K;
    const size_t scratch = (N * TB_E + N * TB_D + 2 * cap * TB_D + 3 * cap * TB_FE + N * TB_K + 2 * N * TB_E +
                            3 * N * TB_FS) * 4;
    const size_t priv = pair_bytes(self, &t.md, 0, &t.L[0][0], t.x[0]);
    const size_t shared = pair_bytes(self, &t.md, 1, &t.L[0][0], t.x[0]);
    check(priv - shared == scratch, "shared scratch: two blocks hold exactly one scratch less",
          (double)(priv - shared), (double)scratch);
    two_blocks_free(&t);
}

// Under the bf16 rule, keeping the bf16-valued fields in 2 bytes (store_bf16) gives the same
// outputs, input grads and weight grads bit for bit, and holds exactly the planner's bytes: 2 of
// every 4 bytes of the stored fields of each block saved, one fp32 copy of them in the shared
// scratch added (so two blocks break even, and every block more saves 2 bytes an element).
static void test_bf16_store(hp_comm *self) {
    two_blocks t;
    rng_s = 13;
    two_blocks_init(&t, 91, 1);
    hp_precision_hooks bf16, bf16_kept;   // the bf16 policy without and with its 2-byte storage
    if (hp_precision_init(&bf16, 1, 0) != 0 || hp_precision_init(&bf16_kept, 1, 1) != 0) {
        check(0, "bf16 store: the bf16 precisions are made", 0.0, 0.0);
        return;
    }
    t.md.prec = &bf16;
    const size_t plain = two_blocks_run(self, &t, 0, &t.md, NULL);
    hp_moe_dims kept_md = t.md;
    kept_md.prec = &bf16_kept;
    const size_t kept = two_blocks_run(self, &t, 1, &kept_md, NULL);
    check(two_blocks_same(&t), "bf16 store: out, dx and every grad of two blocks = the fp32-kept run's, bit for bit",
          0.0, 0.0);
    // stored fields: x (N, D), sh1 sh3 sact (N, Fs), xe (cap, D), h1 h3 act (cap, Fe), cap = N K
    const size_t N = TB_N, cap = (size_t)TB_N * TB_K;
    const size_t fields = N * TB_D + 3 * N * TB_FS + cap * TB_D + 3 * cap * TB_FE;
    const size_t want = plain - 2 * fields * 4 + 2 * fields * 2 + fields * 4;   // (= plain, for two)
    check(kept == want, "bf16 store: activation bytes of two blocks", (double)kept, (double)want);
    two_blocks_free(&t);
    hp_precision_free(&bf16);
    hp_precision_free(&bf16_kept);
}

// ============================================================================================
// multi-rank layouts

static hp_model_config model_cfg(int D, int E, int K, int Fe) {
    hp_model_config m;
    memset(&m, 0, sizeof m);
    snprintf(m.name, sizeof m.name, "test-moe");
    m.vocab_size = 64; m.dim = D; m.n_layers = 1; m.n_heads = 4; m.n_kv_heads = 4;
    m.ffn_hidden = 32; m.norm_eps = 1e-5f; m.rope_theta = 10000.0f;
    m.num_experts = E; m.top_k = K; m.moe_hidden = Fe; m.n_shared_experts = 1;
    m.n_dense_layers = 0; m.score_func = HP_SCORE_SOFTMAX; m.route_norm = 0; m.route_scale = 1.0f;
    return m;
}

typedef struct { uint64_t a2a, ag, rs; } traffic;

// Runs one layout with one dispatcher, checks it against the reference, returns the summed
// full output and dx of this rank's rows in out_full / dx_full (for the dispatcher check).
static void run_layout(const char *name, hp_comm *comm, const hp_dims *d, const gmodel *G,
                       const reference *ref, const float *X, const float *Rr, int N,
                       hp_score_func sf, int rn, float rs, hp_dispatcher disp,
                       float *out_full, float *dx_full, traffic *tr, int *routing) {
    const hp_coords *co = hp_comm_coords(comm);
    const int D = G->D, E = G->E;
    const int El = E / d->ep, e0 = hp_comm_rank(comm, HP_G_EP) * El;
    const int etp = hp_dims_expert_tp(d), ec = d->ep > 1 ? co->etp : co->t;
    const int Fel = G->Fe / etp, Fsl = G->Fs / d->tp;
    const int split = hp_dims_token_split(d), trank = split > 1 ? co->t : 0;
    lmodel L = lmodel_slice(G, e0, El, ec * Fel, Fel, co->t * Fsl, Fsl);
    hp_moe_dims md = mdims(G, &L, N, split, trank, sf, rn, rs, disp);
    const float *x = X + (size_t)co->batch * N * D, *dout = Rr + (size_t)co->batch * N * D;
    hp_comm_reset_stats(comm);
    run_block(comm, &md, &L, x, dout, out_full, dx_full, routing);
    tr->a2a = hp_comm_bytes(comm, HP_G_EP, HP_OP_ALLTOALL);
    tr->ag = hp_comm_bytes(comm, HP_G_EP, HP_OP_ALLGATHER);
    tr->rs = hp_comm_bytes(comm, HP_G_EP, HP_OP_REDUCE_SCATTER);
    // partial over tp -> full
    hp_allreduce_sum(comm, HP_G_TP, out_full, (size_t)N * D);
    hp_allreduce_sum(comm, HP_G_TP, dx_full, (size_t)N * D);
    // gate: partial over tp and over the data ranks -> every rank's contribution summed
    hp_allreduce_sum(comm, HP_G_WORLD, L.dgate, (size_t)E * D);
    // experts: the copies of one expert slice live on the efsdp (x dp_replicate) ranks; with
    // ep == 1 the experts are tp-split like a dense FFN and their copies are the fsdp ranks
    size_t ne = (size_t)El * Fel * D, ns = (size_t)Fsl * D;
    hp_group_kind copies = d->ep > 1 ? HP_G_EFSDP : HP_G_FSDP;
    hp_allreduce_sum(comm, copies, L.dw1, ne);
    hp_allreduce_sum(comm, copies, L.dw2, ne);
    hp_allreduce_sum(comm, copies, L.dw3, ne);
    hp_allreduce_sum(comm, HP_G_DP_REPLICATE, L.dw1, ne);
    hp_allreduce_sum(comm, HP_G_DP_REPLICATE, L.dw2, ne);
    hp_allreduce_sum(comm, HP_G_DP_REPLICATE, L.dw3, ne);
    // shared slices: replicated over the data ranks
    hp_allreduce_sum(comm, HP_G_BATCH, L.dsw1, ns);
    hp_allreduce_sum(comm, HP_G_BATCH, L.dsw2, ns);
    hp_allreduce_sum(comm, HP_G_BATCH, L.dsw3, ns);
    char tag[160];
    snprintf(tag, sizeof tag, "%s %s", name, disp == HP_DISPATCH_ALLTOALL ? "a2a" : "allgather");
    char msg[200];
    double e = relerr(out_full, ref->out + (size_t)co->batch * N * D, (size_t)N * D);
    snprintf(msg, sizeof msg, "%s out (rows of data rank %d)", tag, co->batch);
    check(e <= 1e-5, msg, e, 1e-5);
    e = relerr(dx_full, ref->dx + (size_t)co->batch * N * D, (size_t)N * D);
    snprintf(msg, sizeof msg, "%s dx", tag);
    check(e <= 1e-5, msg, e, 1e-5);
    cmp_grads(tag, G, ref, &L, L.dgate, 1e-5);
    lmodel_free(&L);
}

// Rows this rank sends to other ep members and receives from them (a2a), from the handled
// routing of every member (gathered here with plain MPI).
static void expected_traffic(hp_comm *comm, const hp_dims *d, const int *routing, int N, int K,
                             int E, int D, traffic *want) {
    const int n_ep = hp_comm_size(comm, HP_G_EP), me = hp_comm_rank(comm, HP_G_EP);
    const int El = E / n_ep, split = hp_dims_token_split(d);
    const int n = N / split, r0 = (split > 1 ? hp_comm_coords(comm)->t : 0) * n;
    int *all = calloc((size_t)n_ep * n * K, sizeof(int));
    MPI_Allgather(routing + (size_t)r0 * K, n * K, MPI_INT, all, n * K, MPI_INT, hp_comm_mpi(comm, HP_G_EP));
    uint64_t sent = 0, recvd = 0;
    for (int j = 0; j < n_ep; j++)
        for (int i = 0; i < n * K; i++) {
            int owner = all[(size_t)j * n * K + i] / El;
            if (j == me && owner != me) sent++;
            if (j != me && owner == me) recvd++;
        }
    free(all);
    // docs/traffic_moe.md: counts exchange + dispatch and combine, forward and backward
    want->a2a = (uint64_t)(n_ep - 1) * El * 4 + 2 * (sent + recvd) * (uint64_t)D * 4;
    // all-gather path: x, ids, gates forward; dout backward. reduce-scatter: out; dx and dgates
    want->ag = n_ep > 1 ? (uint64_t)n * (2 * D + 2 * K) * 4 : 0;
    want->rs = n_ep > 1 ? (uint64_t)n_ep * n * (2 * D + K) * 4 : 0;
}

static void test_layout(const char *name, hp_dims d, int N, hp_score_func sf, int rn, float rs,
                        int crafted) {
    const int D = 16, E = 8, K = 2, Fe = 12, Fs = 12;
    hp_model_config mc = model_cfg(D, E, K, Fe);
    char err[256];
    if (hp_dims_validate(&d, &mc, NULL, err, sizeof err) != 0) {
        check(0, err, 1.0, 0.0);
        return;
    }
    hp_comm *comm = hp_comm_init(MPI_COMM_WORLD, &d, 1);
    hp_comm *self = self_comm();
    gmodel G = gmodel_make(D, E, K, Fe, Fs, 31337, 1.0f);
    const int nB = hp_dims_batch(&d), Nall = nB * N;
    float *X = falloc((size_t)Nall * D), *Rr = falloc((size_t)Nall * D);
    rng_s = 2024;
    if (crafted) {
        // known routing: experts 0 and 1 (both on ep rank 0) win every row (equal scores,
        // the tie goes to the lower id), so ranks != 0 send all their entries to rank 0
        memset(G.gate, 0, (size_t)E * D * sizeof(float));
        for (int i = 0; i < D; i++) G.gate[i] = G.gate[D + i] = 0.5f;
        for (size_t i = 0; i < (size_t)Nall * D; i++) X[i] = (float)(0.5 + 0.5 * unif());
    } else {
        fill(X, (size_t)Nall * D, 1.0f);
    }
    fill(Rr, (size_t)Nall * D, 1.0f);
    reference ref = reference_run(self, &G, X, Rr, Nall, sf, rn, rs);
    float *oa = falloc((size_t)N * D), *da = falloc((size_t)N * D);
    float *og = falloc((size_t)N * D), *dg = falloc((size_t)N * D);
    float *ob = falloc((size_t)N * D), *db = falloc((size_t)N * D);
    int *routing = calloc((size_t)N * K, sizeof(int));
    traffic ta, tg, tb, want;
    run_layout(name, comm, &d, &G, &ref, X, Rr, N, sf, rn, rs, HP_DISPATCH_ALLTOALL, oa, da, &ta, routing);
    run_layout(name, comm, &d, &G, &ref, X, Rr, N, sf, rn, rs, HP_DISPATCH_ALLGATHER, og, dg, &tg, NULL);
    run_layout(name, comm, &d, &G, &ref, X, Rr, N, sf, rn, rs, HP_DISPATCH_ALLTOALL, ob, db, &tb, NULL);
    char msg[200];
    double e = relerr(og, oa, (size_t)N * D), t = relerr(dg, da, (size_t)N * D);
    snprintf(msg, sizeof msg, "%s allgather == alltoall (out, dx)", name);
    check(e <= 1e-6 && t <= 1e-6, msg, e > t ? e : t, 1e-6);
    int same = !memcmp(oa, ob, (size_t)N * D * 4) && !memcmp(da, db, (size_t)N * D * 4);
    snprintf(msg, sizeof msg, "%s a2a twice: bit-identical out and dx", name);
    check(same, msg, !same, 0.0);
    expected_traffic(comm, &d, routing, N, K, E, D, &want);
    snprintf(msg, sizeof msg, "%s a2a bytes %llu == formula %llu", name,
             (unsigned long long)ta.a2a, (unsigned long long)want.a2a);
    check(ta.a2a == want.a2a && ta.ag == 0 && ta.rs == 0, msg, fabs((double)ta.a2a - (double)want.a2a), 0.0);
    snprintf(msg, sizeof msg, "%s allgather path bytes ag %llu rs %llu == formula", name,
             (unsigned long long)tg.ag, (unsigned long long)tg.rs);
    check(tg.ag == want.ag && tg.rs == want.rs && tg.a2a == 0, msg,
          fabs((double)tg.ag - (double)want.ag) + fabs((double)tg.rs - (double)want.rs), 0.0);
    if (crafted) {   // closed form for the known routing
        const int n_ep = hp_comm_size(comm, HP_G_EP), me = hp_comm_rank(comm, HP_G_EP), El = E / n_ep;
        const int n = N / hp_dims_token_split(&d);
        uint64_t rows = me == 0 ? (uint64_t)(n_ep - 1) * n * K : (uint64_t)n * K;
        uint64_t closed = (uint64_t)(n_ep - 1) * El * 4 + 2 * rows * D * 4;
        snprintf(msg, sizeof msg, "%s crafted routing: a2a bytes == closed form %llu", name,
                 (unsigned long long)closed);
        check(ta.a2a == closed, msg, fabs((double)ta.a2a - (double)closed), 0.0);
    }
    free(routing); free(oa); free(da); free(og); free(dg); free(ob); free(db);
    free(X); free(Rr);
    reference_free(&ref); gmodel_free(&G);
    hp_comm_free(self);
    hp_comm_free(comm);
}

static hp_dims mk(int W, int S, int T, int EP, int ETP) {
    hp_dims d = hp_dims_default();
    d.world = W; d.dp_shard = S; d.tp = T; d.ep = EP; d.etp = ETP;
    return d;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int W;
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &W);
    const char *mode = argc > 1 ? argv[1] : "single";
    if (!strcmp(mode, "single")) {
        hp_comm *self = self_comm();
        test_fd(self);
        test_sim_split(self, 1, HP_DISPATCH_ALLTOALL);
        test_sim_split(self, 1, HP_DISPATCH_ALLGATHER);
        test_sim_split(self, 0, HP_DISPATCH_ALLTOALL);
        test_sim_split(self, 0, HP_DISPATCH_ALLGATHER);
        test_single_misc(self);
        test_shared_scratch(self);
        test_bf16_store(self);
        hp_comm_free(self);
    } else if (!strcmp(mode, "ep")) {
        test_layout("ep=W", mk(W, W, 1, W, 1), 8, HP_SCORE_SOFTMAX, 0, 1.0f, 0);
        test_layout("ep=W sigmoid+norm", mk(W, W, 1, W, 1), 6, HP_SCORE_SIGMOID, 1, 2.0f, 0);
        test_layout("ep=W crafted", mk(W, W, 1, W, 1), 4, HP_SCORE_SOFTMAX, 0, 1.0f, 1);
        if (W == 4) test_layout("ep=2 of 4", mk(W, W, 1, 2, 1), 8, HP_SCORE_SOFTMAX, 1, 1.0f, 0);
    } else if (!strcmp(mode, "tp")) {
        if (W != 4) { if (g_rank == 0) fprintf(stderr, "test_moe tp needs 4 ranks, got %d\n", W); MPI_Finalize(); return 1; }
        test_layout("tp2 ep2 etp2", mk(4, 2, 2, 2, 2), 8, HP_SCORE_SOFTMAX, 1, 1.0f, 0);
        test_layout("tp2 ep4 etp1 (token split)", mk(4, 2, 2, 4, 1), 8, HP_SCORE_SIGMOID, 0, 1.0f, 0);
        test_layout("tp2 ep4 etp1 crafted", mk(4, 2, 2, 4, 1), 4, HP_SCORE_SOFTMAX, 0, 1.0f, 1);
        test_layout("tp2 ep1 (expert tp = tp)", mk(4, 2, 2, 1, 1), 6, HP_SCORE_SOFTMAX, 0, 1.0f, 0);
    } else if (!strcmp(mode, "bad-ep")) {
        // every rank claims experts [0, El): rank 1 must take the job down with one line
        hp_dims d = mk(W, W, 1, W, 1);
        hp_model_config mc = model_cfg(16, 8, 2, 12);
        char err[256];
        if (hp_dims_validate(&d, &mc, NULL, err, sizeof err) != 0) { fprintf(stderr, "%s\n", err); MPI_Abort(MPI_COMM_WORLD, 2); }
        hp_comm *comm = hp_comm_init(MPI_COMM_WORLD, &d, 1);
        gmodel G = gmodel_make(16, 8, 2, 12, 12, 1, 1.0f);
        lmodel L = lmodel_slice(&G, 0, 8 / W, 0, 12, 0, 12);
        hp_moe_dims md = mdims(&G, &L, 4, 1, 0, HP_SCORE_SOFTMAX, 0, 1.0f, HP_DISPATCH_ALLTOALL);
        float *x = falloc(64), *o = falloc(64), *dx = falloc(64);
        run_block(comm, &md, &L, x, x, o, dx, NULL);
        check(0, "bad-ep: a wrong e0 was accepted", 1.0, 0.0);
        free(x); free(o); free(dx); lmodel_free(&L); gmodel_free(&G); hp_comm_free(comm);
    } else {
        if (g_rank == 0) fprintf(stderr, "usage: test_moe single|ep|tp|bad-ep\n");
        MPI_Finalize();
        return 2;
    }
    int local[2] = { n_pass, n_fail }, tot[2];
    MPI_Allreduce(local, tot, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (g_rank == 0) printf("test_moe %s (%d ranks): %d passed, %d failed\n", mode, W, tot[0], tot[1]);
    MPI_Finalize();
    return tot[1] == 0 ? 0 : 1;
}
