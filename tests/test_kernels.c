// test_kernels.c - layer kernels other than attention: linear, embedding, rmsnorm, rope,
// swiglu, router (scores, top-k), cross-entropy pieces, optimisers. Each forward is
// compared with a naive double-precision reference written here, and each backward with
// central differences of that reference on L = sum(out * R), R random.
#include <string.h>
#include "hyperpar/kernels.h"
#include "test_kernels_util.h"

#define FD_H   1e-5   // step of the central differences (in double)
#define FD_TOL 2e-5   // relative to the largest gradient entry

// ---- linear ------------------------------------------------------------------------------
typedef struct { int N, in, out; double *x, *w, *R, *y; } LinCtx;
static void ref_linear(double *y, const double *x, const double *w, int N, int in, int out) {
    for (int n = 0; n < N; n++) for (int o = 0; o < out; o++) {
        double s = 0.0;
        for (int i = 0; i < in; i++) s += x[(size_t)n * in + i] * w[(size_t)o * in + i];
        y[(size_t)n * out + o] = s;
    }
}
static double lin_obj(void *c) {
    LinCtx *L = c;
    ref_linear(L->y, L->x, L->w, L->N, L->in, L->out);
    return tk_dotd(L->y, L->R, (size_t)L->N * L->out);
}
static void test_linear(int N, int in, int out) {
    char what[128];
    size_t nx = (size_t)N * in, nw = (size_t)out * in, ny = (size_t)N * out;
    float *x = malloc(nx * 4), *w = malloc(nw * 4), *y = malloc(ny * 4), *R = malloc(ny * 4);
    float *dx = malloc(nx * 4), *dw = malloc(nw * 4), *dx0 = malloc(nx * 4), *dw0 = malloc(nw * 4);
    trng_fill(x, nx, 1.0f); trng_fill(w, nw, 1.0f); trng_fill(R, ny, 1.0f);
    LinCtx L = {N, in, out, malloc(nx * 8), malloc(nw * 8), malloc(ny * 8), malloc(ny * 8)};
    tk_f2d(L.x, x, nx); tk_f2d(L.w, w, nw); tk_f2d(L.R, R, ny);
    hp_linear_forward(y, x, w, N, in, out);
    lin_obj(&L);
    snprintf(what, sizeof what, "linear %dx%d->%d forward vs naive matmul", N, in, out);
    tk_cmp_fd(what, y, L.y, ny, 1e-6);
    // backward accumulates onto whatever is there: start from random grads
    trng_fill(dx0, nx, 1.0f); trng_fill(dw0, nw, 1.0f);
    memcpy(dx, dx0, nx * 4); memcpy(dw, dw0, nw * 4);
    hp_linear_backward(dx, dw, R, x, w, N, in, out);
    for (size_t i = 0; i < nx; i++) dx[i] -= dx0[i];
    for (size_t i = 0; i < nw; i++) dw[i] -= dw0[i];
    snprintf(what, sizeof what, "linear %dx%d->%d dx (+=) vs central differences", N, in, out);
    tk_fd_check(what, lin_obj, &L, L.x, nx, dx, FD_H, FD_TOL);
    snprintf(what, sizeof what, "linear %dx%d->%d dw (+=) vs central differences", N, in, out);
    tk_fd_check(what, lin_obj, &L, L.w, nw, dw, FD_H, FD_TOL);
    // NULL grads are skipped
    memcpy(dw0, dw, nw * 4);
    hp_linear_backward(NULL, dw, R, x, w, N, in, out);
    for (size_t i = 0; i < nw; i++) dw[i] -= dw0[i];
    snprintf(what, sizeof what, "linear %dx%d->%d dx=NULL still gives dw", N, in, out);
    tk_cmp_ff(what, dw, dw0, nw, 1e-6);
    free(x); free(w); free(y); free(R); free(dx); free(dw); free(dx0); free(dw0);
    free(L.x); free(L.w); free(L.R); free(L.y);
}

// ---- embedding ------------------------------------------------------------------------------
typedef struct { int N, D, v0, Vl; const int *tok; double *table, *R; } EmbCtx;
static double emb_obj(void *c) {
    EmbCtx *E = c;
    double s = 0.0;
    for (int i = 0; i < E->N; i++) {
        int r = E->tok[i] - E->v0;
        if (r < 0 || r >= E->Vl) continue;
        for (int d = 0; d < E->D; d++) s += E->table[(size_t)r * E->D + d] * E->R[(size_t)i * E->D + d];
    }
    return s;
}
static void test_embedding(void) {
    enum { N = 9, D = 6, V = 12, v0 = 4, Vl = 5 };
    int tok[N] = {4, 8, 3, 5, 4, 11, 0, 7, 4}; // 4 repeats; 3, 11, 0 fall outside [4, 9)
    float *table = malloc(Vl * D * 4), *out = malloc(N * D * 4), *R = malloc(N * D * 4), *dt = calloc(Vl * D, 4);
    trng_fill(table, Vl * D, 1.0f); trng_fill(R, N * D, 1.0f);
    memset(out, 0xff, N * D * 4); // garbage: the forward must overwrite every row
    hp_embedding_forward(out, tok, table, v0, Vl, N, D);
    int bad = 0;
    for (int i = 0; i < N; i++) for (int d = 0; d < D; d++) {
        int r = tok[i] - v0;
        float want = (r >= 0 && r < Vl) ? table[r * D + d] : 0.0f;
        if (out[i * D + d] != want) bad++;
    }
    tk_check(bad == 0, "embedding slice forward: own rows copied, others 0", bad, 0);
    hp_embedding_backward(dt, R, tok, v0, Vl, N, D);
    EmbCtx E = {N, D, v0, Vl, tok, malloc(Vl * D * 8), malloc(N * D * 8)};
    tk_f2d(E.table, table, Vl * D); tk_f2d(E.R, R, N * D);
    tk_fd_check("embedding dtable (repeated ids) vs central differences", emb_obj, &E, E.table, Vl * D, dt, FD_H, FD_TOL);
    (void)V;
    free(table); free(out); free(R); free(dt); free(E.table); free(E.R);
}

// ---- rmsnorm ----------------------------------------------------------------------------------
typedef struct { int N, D; double eps, *x, *w, *R, *y; } NormCtx;
static double norm_obj(void *c) {
    NormCtx *n = c;
    for (int i = 0; i < n->N; i++) {
        double ss = 0.0;
        for (int d = 0; d < n->D; d++) ss += n->x[i * n->D + d] * n->x[i * n->D + d];
        double r = 1.0 / sqrt(ss / n->D + n->eps);
        for (int d = 0; d < n->D; d++) n->y[i * n->D + d] = n->x[i * n->D + d] * r * n->w[d];
    }
    return tk_dotd(n->y, n->R, (size_t)n->N * n->D);
}
static void test_rmsnorm(void) {
    enum { N = 5, D = 24 };
    float eps = 1e-5f;
    float *x = malloc(N * D * 4), *w = malloc(D * 4), *y = malloc(N * D * 4), *rstd = malloc(N * 4), *R = malloc(N * D * 4);
    float *dx = calloc(N * D, 4), *dw = calloc(D, 4);
    trng_fill(x, N * D, 2.0f); trng_fill(R, N * D, 1.0f);
    for (int d = 0; d < D; d++) w[d] = 1.0f + trng_sym(0.5f);
    x[3] *= 10.0f; // one large entry so that the rstd term matters
    hp_rmsnorm_forward(y, rstd, x, w, eps, N, D);
    NormCtx n = {N, D, eps, malloc(N * D * 8), malloc(D * 8), malloc(N * D * 8), malloc(N * D * 8)};
    tk_f2d(n.x, x, N * D); tk_f2d(n.w, w, D); tk_f2d(n.R, R, N * D);
    norm_obj(&n);
    tk_cmp_fd("rmsnorm forward vs double", y, n.y, N * D, 1e-6);
    double er = 0.0;
    for (int i = 0; i < N; i++) {
        double ss = 0.0;
        for (int d = 0; d < D; d++) ss += n.x[i * D + d] * n.x[i * D + d];
        er = fmax(er, fabs(rstd[i] - 1.0 / sqrt(ss / D + (double)eps)) * sqrt(ss / D));
    }
    tk_check(er <= 1e-6, "rmsnorm saved rstd = 1/sqrt(mean(x^2)+eps)", er, 1e-6);
    hp_rmsnorm_backward(dx, dw, R, x, w, rstd, N, D);
    tk_fd_check("rmsnorm dx vs central differences", norm_obj, &n, n.x, N * D, dx, FD_H, FD_TOL);
    tk_fd_check("rmsnorm dw vs central differences", norm_obj, &n, n.w, D, dw, FD_H, FD_TOL);
    free(x); free(w); free(y); free(rstd); free(R); free(dx); free(dw);
    free(n.x); free(n.w); free(n.R); free(n.y);
}

// ---- rope -------------------------------------------------------------------------------------
typedef struct { int B, S, nh, hd; const int *pos; double theta, *x, *R, *y; } RopeCtx;
static void ref_rope(double *y, const double *x, const int *pos, double theta, int B, int S, int nh, int hd) {
    for (int b = 0; b < B; b++) for (int s = 0; s < S; s++) for (int h = 0; h < nh; h++)
        for (int j = 0; j < hd / 2; j++) {
            size_t o = (((size_t)b * S + s) * nh + h) * hd + 2 * j;
            double a = pos[s] * pow(theta, -2.0 * j / hd);
            y[o] = x[o] * cos(a) - x[o + 1] * sin(a);
            y[o + 1] = x[o] * sin(a) + x[o + 1] * cos(a);
        }
}
static double rope_obj(void *c) {
    RopeCtx *r = c;
    ref_rope(r->y, r->x, r->pos, r->theta, r->B, r->S, r->nh, r->hd);
    return tk_dotd(r->y, r->R, (size_t)r->B * r->S * r->nh * r->hd);
}
// Llama 3.1's frequencies as HF's _compute_llama3_parameters writes them, vectorised: the
// scaled and the blended values, then the band of each wavelength picks one
static double ref_llama3_freq(int j, int hd, double theta, double factor, double low, double high, double L) {
    const double inv = 1.0 / pow(theta, 2.0 * j / hd);
    const double wavelen = 2.0 * 3.14159265358979323846 / inv;
    const double scaled = wavelen > L / low ? inv / factor : inv;
    const double smooth = (L / wavelen - low) / (high - low);
    const double blended = (1.0 - smooth) * scaled / factor + smooth * scaled;
    const int medium = !(wavelen < L / high) && !(wavelen > L / low);
    return medium ? blended : scaled;
}

// Llama 3.1's RoPE rescale: factor 0 is hp_rope_table's bits; with Llama 3.1's numbers the high
// frequencies keep theirs, the low ones are divided by the factor, and every angle is the
// reference's; a bad rescale is refused
static void test_rope_llama3(void) {
    enum { S = 5, HD = 128 };
    const int pos[S] = { 0, 1, 7, 1000, 100000 };
    float plain[2 * S * HD / 2], none[2 * S * HD / 2], scaled[2 * S * HD / 2];
    hp_rope_table(plain, pos, 500000.0f, S, HD);
    tk_check(hp_rope_table_llama3(none, pos, 500000.0f, 0.0f, 0.0f, 0.0f, 0, S, HD) == 0 &&
             !memcmp(plain, none, sizeof plain), "rope llama3 with factor 0: plain RoPE's bits", 0, 0);
    tk_check(hp_rope_table_llama3(scaled, pos, 500000.0f, 8.0f, 1.0f, 4.0f, 8192, S, HD) == 0,
             "rope llama3 table (factor 8, low 1, high 4, 8192)", 0, 0);
    double worst = 0.0;
    int kept = 0, divided = 0, blended = 0;
    for (int j = 0; j < HD / 2; j++) {
        const double f0 = 1.0 / pow(500000.0, 2.0 * j / HD), f = ref_llama3_freq(j, HD, 500000.0, 8, 1, 4, 8192);
        kept += f == f0;
        divided += fabs(f - f0 / 8) <= 1e-15 * f0;
        blended += f != f0 && fabs(f - f0 / 8) > 1e-15 * f0;
        for (int t = 0; t < S; t++) {
            const double a = pos[t] * f;
            const double dc = fabs(scaled[t * (HD / 2) + j] - cos(a)), ds = fabs(scaled[(S + t) * (HD / 2) + j] - sin(a));
            if (dc > worst) worst = dc;
            if (ds > worst) worst = ds;
        }
    }
    tk_check(kept > 0 && divided > 0 && blended > 0 && kept + divided + blended == HD / 2,
             "rope llama3: pairs kept, divided by the factor and blended", 0, 0);
    tk_check(worst <= 1e-6, "rope llama3: every cos and sin within 1e-6 of the reference's", worst > 1e-6, 0);
    printf("rope llama3: %d pairs kept, %d divided, %d blended; worst |cos/sin - ref| %.2e\n", kept, divided,
           blended, worst);
    tk_check(hp_rope_table_llama3(scaled, pos, 500000.0f, 0.5f, 1.0f, 4.0f, 8192, S, HD) == -1 &&
             hp_rope_table_llama3(scaled, pos, 500000.0f, 8.0f, 4.0f, 1.0f, 8192, S, HD) == -1,
             "rope llama3: factor < 1 and low >= high are refused", 0, 0);
}

static void test_rope(void) {
    // hand case: hd 4, pos 1 -> f = (1, 1e-2); x = (1,0,0,1) -> (cos 1, sin 1, -sin .01, cos .01)
    float x1[4] = {1, 0, 0, 1}, cs1[4];
    int p1 = 1;
    tk_check(hp_rope_table(cs1, &p1, 10000.0f, 1, 4) == 0, "rope table of one position", 0, 0);
    hp_rope_forward(x1, cs1, 1, 1, 1, 4);
    double want[4] = {cos(1.0), sin(1.0), -sin(0.01), cos(0.01)};
    tk_cmp_fd("rope hand case hd=4 pos=1 (interleaved pairs)", x1, want, 4, 1e-6);

    enum { B = 2, S = 5, nh = 3, hd = 8 };
    int pos[S] = {0, 7, 8, 31, 2047}; // global positions of a cp/sp chunk, not contiguous
    size_t n = (size_t)B * S * nh * hd;
    float *x = malloc(n * 4), *y = malloc(n * 4), *R = malloc(n * 4), *g = malloc(n * 4);
    trng_fill(x, n, 1.0f); trng_fill(R, n, 1.0f);
    memcpy(y, x, n * 4);
    float cs[2 * S * (hd / 2)];
    hp_rope_table(cs, pos, 10000.0f, S, hd);
    hp_rope_forward(y, cs, B, S, nh, hd);
    RopeCtx r = {B, S, nh, hd, pos, 10000.0, malloc(n * 8), malloc(n * 8), malloc(n * 8)};
    tk_f2d(r.x, x, n); tk_f2d(r.R, R, n);
    rope_obj(&r);
    tk_cmp_fd("rope forward vs double (positions up to 2047)", y, r.y, n, 1e-6);
    memcpy(g, R, n * 4);
    hp_rope_backward(g, cs, B, S, nh, hd);
    tk_fd_check("rope backward vs central differences", rope_obj, &r, r.x, n, g, FD_H, FD_TOL);
    hp_rope_backward(y, cs, B, S, nh, hd); // R^T R = I
    tk_cmp_ff("rope backward(forward(x)) == x", y, x, n, 1e-6);
    float odd[3] = {1, 2, 3};
    hp_rope_forward(odd, cs, 1, 1, 1, 3); // odd head_dim: refused, untouched
    tk_check(odd[0] == 1 && odd[1] == 2 && odd[2] == 3 && hp_rope_table(cs, pos, 10000.0f, S, 3) == -1,
             "rope refuses an odd head_dim", 0, 0);
    free(x); free(y); free(R); free(g); free(r.x); free(r.R); free(r.y);
}

// ---- swiglu -----------------------------------------------------------------------------------
typedef struct { size_t n; double *a, *b, *R; } SwiCtx;
static double swi_obj(void *c) {
    SwiCtx *s = c;
    double L = 0.0;
    for (size_t i = 0; i < s->n; i++) L += s->a[i] / (1.0 + exp(-s->a[i])) * s->b[i] * s->R[i];
    return L;
}
static void test_swiglu(void) {
    enum { n = 200 };
    float a[n], b[n], h[n], R[n], da[n] = {0}, db[n] = {0};
    trng_fill(a, n, 6.0f); trng_fill(b, n, 2.0f); trng_fill(R, n, 1.0f);
    hp_swiglu_forward(h, a, b, n);
    SwiCtx s = {n, malloc(n * 8), malloc(n * 8), malloc(n * 8)};
    tk_f2d(s.a, a, n); tk_f2d(s.b, b, n); tk_f2d(s.R, R, n);
    double ref[n];
    for (int i = 0; i < n; i++) ref[i] = s.a[i] / (1.0 + exp(-s.a[i])) * s.b[i];
    tk_cmp_fd("swiglu forward vs double", h, ref, n, 1e-6);
    hp_swiglu_backward(da, db, R, a, b, n);
    tk_fd_check("swiglu da vs central differences", swi_obj, &s, s.a, n, da, FD_H, FD_TOL);
    tk_fd_check("swiglu db vs central differences", swi_obj, &s, s.b, n, db, FD_H, FD_TOL);
    free(s.a); free(s.b); free(s.R);
}

// ---- router -----------------------------------------------------------------------------------
typedef struct { int N, E, f; double *l, *R, *s; } ScoreCtx;
static void ref_scores(double *s, const double *l, int N, int E, int f) {
    for (int i = 0; i < N; i++) {
        const double *li = l + (size_t)i * E;
        double *si = s + (size_t)i * E;
        if (f == 1) { for (int e = 0; e < E; e++) si[e] = 1.0 / (1.0 + exp(-li[e])); continue; }
        double mx = li[0], sum = 0.0;
        for (int e = 1; e < E; e++) mx = fmax(mx, li[e]);
        for (int e = 0; e < E; e++) sum += (si[e] = exp(li[e] - mx));
        for (int e = 0; e < E; e++) si[e] /= sum;
    }
}
static double score_obj(void *c) {
    ScoreCtx *s = c;
    ref_scores(s->s, s->l, s->N, s->E, s->f);
    return tk_dotd(s->s, s->R, (size_t)s->N * s->E);
}
static void test_router_scores(int f) {
    enum { N = 6, E = 8 };
    char what[96];
    const char *nm = f ? "sigmoid" : "softmax";
    float l[N * E], s[N * E], R[N * E], dl[N * E] = {0};
    trng_fill(l, N * E, 3.0f); trng_fill(R, N * E, 1.0f);
    l[5] = 60.0f; // large logit: softmax must subtract the max
    hp_router_scores_forward(s, l, N, E, f);
    ScoreCtx c = {N, E, f, malloc(N * E * 8), malloc(N * E * 8), malloc(N * E * 8)};
    tk_f2d(c.l, l, N * E); tk_f2d(c.R, R, N * E);
    score_obj(&c);
    snprintf(what, sizeof what, "router %s scores vs double", nm);
    tk_cmp_fd(what, s, c.s, N * E, 1e-6);
    l[5] = 2.0f; c.l[5] = 2.0; // FD away from saturation, so the check is informative
    hp_router_scores_forward(s, l, N, E, f);
    hp_router_scores_backward(dl, R, s, N, E, f);
    snprintf(what, sizeof what, "router %s dlogits vs central differences", nm);
    tk_fd_check(what, score_obj, &c, c.l, N * E, dl, FD_H, FD_TOL);
    free(c.l); free(c.R); free(c.s);
}

typedef struct { int N, E, K, norm; double scale; const int *idx; double *s, *R; } TopkCtx;
static double topk_obj(void *c) { // the selection is held fixed (it carries no gradient)
    TopkCtx *t = c;
    double L = 0.0;
    for (int i = 0; i < t->N; i++) {
        double sum = 0.0;
        for (int k = 0; k < t->K; k++) sum += t->s[i * t->E + t->idx[i * t->K + k]];
        for (int k = 0; k < t->K; k++) {
            double g = t->s[i * t->E + t->idx[i * t->K + k]];
            if (t->norm) g /= sum;
            L += g * t->scale * t->R[i * t->K + k];
        }
    }
    return L;
}
static void test_router_topk(void) {
    // ties go to the lower id, output in descending score order
    float s1[2 * 5] = {0.2f, 0.5f, 0.5f, 0.1f, 0.5f,
                       0.1f, 0.3f, 0.7f, 0.3f, 0.9f};
    int idx[2 * 3];
    float g[2 * 3];
    hp_router_topk(idx, g, s1, 2, 5, 3, 0, 1.0f);
    int ok = idx[0] == 1 && idx[1] == 2 && idx[2] == 4 && idx[3] == 4 && idx[4] == 2 && idx[5] == 1;
    tk_check(ok, "topk: descending, ties to the lower expert id", !ok, 0);
    ok = g[0] == 0.5f && g[3] == 0.9f && g[5] == 0.3f;
    tk_check(ok, "topk: gates are the selected scores (no norm, scale 1)", !ok, 0);
    hp_router_topk(idx, g, s1, 2, 5, 3, 1, 2.0f);
    double e = fmax(fabs(g[0] - 2.0 / 3.0), fabs(g[3] - 2.0 * 0.9 / 1.9));
    e = fmax(e, fabs(g[0] + g[1] + g[2] - 2.0));
    tk_check(e <= 1e-6, "topk: route_norm sums to route_scale", e, 1e-6);

    enum { N = 7, E = 8, K = 3 };
    float s[N * E], R[N * K], gates[N * K];
    int id[N * K];
    trng_fill(R, N * K, 1.0f);
    for (int i = 0; i < N * E; i++) s[i] = 0.05f + (float)trng_unif();
    for (int norm = 0; norm <= 1; norm++) {
        float scale = norm ? 2.5f : 1.5f;
        float ds[N * E] = {0};
        hp_router_topk(id, gates, s, N, E, K, norm, scale);
        int sorted = 1;
        for (int i = 0; i < N; i++) for (int k = 1; k < K; k++)
            if (s[i * E + id[i * K + k]] > s[i * E + id[i * K + k - 1]]) sorted = 0;
        for (int i = 0; i < N; i++) for (int e2 = 0; e2 < E; e2++) { // nothing unselected beats the last pick
            int sel = 0;
            for (int k = 0; k < K; k++) sel |= id[i * K + k] == e2;
            if (!sel && s[i * E + e2] > s[i * E + id[i * K + K - 1]]) sorted = 0;
        }
        tk_check(sorted, norm ? "topk (norm) picks the K largest, descending" : "topk picks the K largest, descending", !sorted, 0);
        hp_router_topk_backward(ds, R, id, s, N, E, K, norm, scale);
        TopkCtx t = {N, E, K, norm, scale, id, malloc(N * E * 8), malloc(N * K * 8)};
        tk_f2d(t.s, s, N * E); tk_f2d(t.R, R, N * K);
        tk_fd_check(norm ? "topk backward, route_norm + scale 2.5, vs central diff" : "topk backward, scale 1.5, vs central differences",
                    topk_obj, &t, t.s, N * E, ds, FD_H, FD_TOL);
        free(t.s); free(t.R);
    }
}

// ---- cross-entropy ----------------------------------------------------------------------------
typedef struct { int N, V; const int *lab; double *l; int nvalid; } CeCtx;
static double ce_obj(void *c) { // mean CE over valid rows, double
    CeCtx *ce = c;
    double L = 0.0;
    for (int i = 0; i < ce->N; i++) {
        if (ce->lab[i] == -100) continue;
        const double *l = ce->l + (size_t)i * ce->V;
        double mx = l[0], s = 0.0;
        for (int j = 1; j < ce->V; j++) mx = fmax(mx, l[j]);
        for (int j = 0; j < ce->V; j++) s += exp(l[j] - mx);
        L += log(s) + mx - l[ce->lab[i]];
    }
    return L / ce->nvalid;
}
// CE from T slices combined as the header says; dl (N,V) gets every slice's backward.
static void ce_sliced(float *loss, float *dl, const float *logits, const int *lab, int N, int V,
                      const int *cut, int T, float scale) {
    float *m = malloc(N * 4), *se = calloc(N, 4), *tl = calloc(N, 4), *t = malloc(N * 4);
    float *part = malloc((size_t)N * V * 4), *dpart = malloc((size_t)N * V * 4);
    for (int i = 0; i < N; i++) m[i] = -INFINITY;
    for (int pass = 0; pass < 4; pass++)
        for (int s = 0; s < T; s++) {
            int v0 = cut[s], Vl = cut[s + 1] - cut[s];
            for (int i = 0; i < N; i++) memcpy(part + (size_t)i * Vl, logits + (size_t)i * V + v0, Vl * 4);
            if (pass == 0) { hp_ce_local_max(t, part, N, Vl); for (int i = 0; i < N; i++) m[i] = fmaxf(m[i], t[i]); }
            if (pass == 1) { hp_ce_local_sumexp(t, part, m, N, Vl); for (int i = 0; i < N; i++) se[i] += t[i]; }
            if (pass == 2) { hp_ce_local_target(t, part, lab, v0, N, Vl); for (int i = 0; i < N; i++) tl[i] += t[i]; }
            if (pass == 3) {
                for (int i = 0; i < N; i++) memcpy(dpart + (size_t)i * Vl, dl + (size_t)i * V + v0, Vl * 4);
                hp_ce_backward(dpart, part, m, se, lab, v0, scale, N, Vl);
                for (int i = 0; i < N; i++) memcpy(dl + (size_t)i * V + v0, dpart + (size_t)i * Vl, Vl * 4);
            }
        }
    for (int i = 0; i < N; i++) loss[i] = lab[i] == -100 ? 0.0f : logf(se[i]) + m[i] - tl[i];
    free(m); free(se); free(tl); free(t); free(part); free(dpart);
}
static void test_cross_entropy(void) {
    enum { N = 6, V = 11 };
    int lab[N] = {3, -100, 10, 0, 7, 5};
    int nvalid = 5;
    float logits[N * V], loss1[N], loss2[N], dl1[N * V] = {0}, dl2[N * V];
    trng_fill(logits, N * V, 4.0f);
    logits[2 * V + 4] = 80.0f; // a dominant logit in row 2: exp overflows without the max
    int one[2] = {0, V};
    ce_sliced(loss1, dl1, logits, lab, N, V, one, 1, 1.0f / nvalid);
    CeCtx c = {N, V, lab, malloc(N * V * 8), nvalid};
    tk_f2d(c.l, logits, N * V);
    double Lref = ce_obj(&c), L1 = 0.0;
    for (int i = 0; i < N; i++) L1 += loss1[i];
    L1 /= nvalid;
    tk_check(fabs(L1 - Lref) <= 1e-6 * fabs(Lref), "CE mean loss (one slice) vs double", fabs(L1 - Lref), 1e-6 * fabs(Lref));
    tk_check(loss1[1] == 0.0f, "CE row with label -100 contributes 0", loss1[1], 0);
    int zero = 1;
    for (int j = 0; j < V; j++) zero &= dl1[V + j] == 0.0f;
    tk_check(zero, "CE row with label -100 gets no gradient", !zero, 0);
    tk_fd_check("CE dlogits (scale 1/N_valid) vs central differences", ce_obj, &c, c.l, N * V, dl1, FD_H, FD_TOL);
    // vocab slices (as tp ranks hold them) combine to the single-slice values
    int cut2[3] = {0, 6, V}, cut3[4] = {0, 3, 4, V}, cut4[5] = {0, 2, 5, 8, V};
    const int *cuts[3] = {cut2, cut3, cut4};
    for (int T = 2; T <= 4; T++) {
        for (int i = 0; i < N * V; i++) dl2[i] = 0.0f;
        ce_sliced(loss2, dl2, logits, lab, N, V, cuts[T - 2], T, 1.0f / nvalid);
        double e = fmax(tk_relerr_ff(loss2, loss1, N), tk_relerr_ff(dl2, dl1, N * V));
        char what[96];
        snprintf(what, sizeof what, "CE over %d vocab slices == one slice (loss and grad)", T);
        tk_check(e <= 1e-6, what, e, 1e-6);
    }
    // dlogits is written, not added to (a stale buffer is overwritten, an ignored row zeroed),
    // and in place (bf16 storage unpacks the kept logits into dlogits) gives the same bits
    float *in_place = malloc(sizeof(float) * N * V), *apart = malloc(sizeof(float) * N * V), mx[N], sx[N];
    hp_ce_local_max(mx, logits, N, V);
    hp_ce_local_sumexp(sx, logits, mx, N, V);
    memcpy(in_place, logits, sizeof(float) * N * V);
    for (int i = 0; i < N * V; i++) apart[i] = 7.0f;
    hp_ce_backward(apart, logits, mx, sx, lab, 0, 1.0f / nvalid, N, V);
    hp_ce_backward(in_place, in_place, mx, sx, lab, 0, 1.0f / nvalid, N, V);
    tk_check(!memcmp(apart, dl1, sizeof(float) * N * V), "CE backward overwrites a stale dlogits", 0, 0);
    tk_check(!memcmp(in_place, apart, sizeof(float) * N * V), "CE backward in place == out of place, bit for bit", 0, 0);
    free(in_place); free(apart);
    // an empty slice is harmless
    float m0 = 0.0f;
    hp_ce_local_max(&m0, logits, 1, 0);
    tk_check(m0 == -INFINITY, "CE local max of an empty slice is -inf", m0 == -INFINITY ? 0 : 1, 0);
    free(c.l);
}

// ---- optimisers -------------------------------------------------------------------------------
static void test_optim(void) {
    enum { n = 50 };
    float p[n], g[n], m[n] = {0}, v[n] = {0}, p0[n];
    double pd[n], md[n] = {0}, vd[n] = {0};
    trng_fill(p, n, 1.0f);
    for (int i = 0; i < n; i++) pd[i] = p[i];
    memcpy(p0, p, sizeof p);
    const double lr = 1e-2, b1 = 0.9, b2 = 0.95, eps = 1e-8, wd = 0.1;
    for (int t = 1; t <= 3; t++) {
        trng_fill(g, n, 1.0f);
        if (t == 1) g[1] = 0.0f; // a zero grad: only the weight decay moves p
        hp_adamw_update(p, g, m, v, n, (float)lr, (float)b1, (float)b2, (float)eps, (float)wd, t);
        for (int i = 0; i < n; i++) { // reference in double, torch.optim.AdamW order
            double gi = g[i];
            md[i] = b1 * md[i] + (1 - b1) * gi;
            vd[i] = b2 * vd[i] + (1 - b2) * gi * gi;
            double mh = md[i] / (1 - pow(b1, t)), vh = vd[i] / (1 - pow(b2, t));
            pd[i] = pd[i] * (1 - lr * wd) - lr * mh / (sqrt(vh) + eps);
        }
        if (t == 1) { // step 1 in closed form: p - lr*wd*p - lr*g/(|g|+eps)
            double e = 0.0;
            for (int i = 0; i < n; i++)
                e = fmax(e, fabs(p[i] - (p0[i] - lr * wd * p0[i] - lr * g[i] / (fabs(g[i]) + eps))));
            tk_check(e <= 1e-6, "adamw step 1 == p - lr*wd*p - lr*g/(|g|+eps)", e, 1e-6);
        }
    }
    double e = 0.0;
    for (int i = 0; i < n; i++) e = fmax(e, fabs(p[i] - pd[i]));
    tk_check(e <= 2e-6, "adamw 3 steps vs double reference", e, 2e-6);
    memcpy(p0, p, sizeof p);
    hp_adamw_update(p, g, m, v, n, 0.1f, 0.9f, 0.95f, 1e-8f, 0.0f, 0); // t = 0 is refused
    tk_check(!memcmp(p, p0, sizeof p), "adamw refuses step 0 and leaves p alone", 0, 0);
    hp_sgd_update(p, g, n, 0.5f);
    e = 0.0;
    for (int i = 0; i < n; i++) e = fmax(e, fabs(p[i] - (p0[i] - 0.5 * g[i])));
    tk_check(e <= 1e-6, "sgd p -= lr*g", e, 1e-6);
}

int main(void) {
    test_linear(7, 13, 5);
    test_linear(33, 64, 48);
    test_embedding();
    test_rmsnorm();
    test_rope();
    test_rope_llama3();
    test_swiglu();
    test_router_scores(0);
    test_router_scores(1);
    test_router_topk();
    test_cross_entropy();
    test_optim();
    return tk_summary("test_kernels");
}
