// ep_dispatch.c - expert-parallel dispatch / combine of routed rows over HP_G_EP: the
// all-to-all path (TorchTitan's token dispatcher, §4.3) and an all-gather + reduce-scatter
// path. See ep_dispatch.h for the layout contract, docs/traffic_moe.md for the bytes.
// defines: hp_ep_init, hp_ep_free, hp_ep_route, hp_ep_dispatch_rows, hp_ep_combine_rows,
//          hp_ep_dispatch_grad, hp_ep_combine_grad; hp_ep_moe_ops(_bf16) (the MoE block's dispatch
//          over a comm), hp_moe_forward, hp_moe_backward (moe.h, over that dispatch)
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ep_dispatch.h"   // defines: hp_ep_dispatch
#include "hyperpar/bf16.h"
#include "hyperpar/failpoint.h"
#include "hyperpar/memtrack.h"
#include "hyperpar/moe.h"
#include "hyperpar/structure.h"

static void *xcalloc(size_t n, size_t sz) { return hp_mem_alloc(HP_MEM_ACTIVATIONS, (n ? n : 1) * sz); }

int hp_ep_init(hp_ep_dispatch *d, hp_comm *comm, hp_dispatcher mode, int n, int K, int E,
               int El, int e0, int D) {
    memset(d, 0, sizeof *d);
    int n_ep = hp_comm_size(comm, HP_G_EP), me = hp_comm_rank(comm, HP_G_EP);
    if (mode != HP_DISPATCH_ALLTOALL && mode != HP_DISPATCH_ALLGATHER) {
        fprintf(stderr, "moe dispatch: unknown dispatcher %d (0 = alltoall, 1 = allgather)\n", (int)mode);
        return -1;
    }
    if (El < 1 || (long long)n_ep * El != E) {
        fprintf(stderr, "moe dispatch: ep group of %d ranks x %d local experts != num_experts %d\n",
                n_ep, El, E);
        return -1;
    }
    if (e0 != me * El) {
        fprintf(stderr, "moe dispatch: local experts start at %d but ep rank %d owns [%d, %d)\n",
                e0, me, me * El, (me + 1) * El);
        return -1;
    }
    long long cap = (long long)n_ep * n * K;
    if (cap * D > INT_MAX) {
        fprintf(stderr, "moe dispatch: %lld routed rows x dim %d exceed an MPI count (%d)\n",
                cap, D, INT_MAX);
        return -1;
    }
    *d = (hp_ep_dispatch){ .mode = mode, .n_ep = n_ep, .ep_rank = me, .n = n, .K = K, .E = E,
                           .El = El, .e0 = e0, .D = D, .cap = (int)cap };
    size_t m = (size_t)n * K, G = (size_t)n_ep * n;
    d->off = xcalloc((size_t)El + 1, sizeof(int));
    d->perm = xcalloc((size_t)cap, sizeof(int));
    int ok = d->off && d->perm;
    if (mode == HP_DISPATCH_ALLTOALL) {
        d->idx = xcalloc(m, sizeof(int));
        d->gates = xcalloc(m, sizeof(float));
        d->counts_local = xcalloc((size_t)E, sizeof(int));
        d->counts_recv = xcalloc((size_t)E, sizeof(int));
        d->send_counts = xcalloc((size_t)n_ep, sizeof(int));
        d->recv_counts = xcalloc((size_t)n_ep, sizeof(int));
        d->sorted = xcalloc(m, sizeof(int));
        d->pos = xcalloc(m, sizeof(int));
        d->xs = xcalloc(m * D, sizeof(float));
        d->ys = xcalloc(m * D, sizeof(float));
        d->xr = xcalloc((size_t)cap * D, sizeof(float));
        ok = ok && d->idx && d->gates && d->counts_local && d->counts_recv && d->send_counts &&
             d->recv_counts && d->sorted && d->pos && d->xs && d->ys && d->xr;
    } else {
        d->idx_g = xcalloc(G * K, sizeof(int));
        d->gates_g = xcalloc(G * K, sizeof(float));
        d->loc = xcalloc(G * K, sizeof(int));
        d->xg = xcalloc(G * D, sizeof(float));
        d->part = xcalloc(G * D, sizeof(float));
        d->dpart = xcalloc(G * K, sizeof(float));
        d->tmp = xcalloc((size_t)n * D, sizeof(float));
        ok = ok && d->idx_g && d->gates_g && d->loc && d->xg && d->part && d->dpart && d->tmp;
    }
    if (!ok) {
        fprintf(stderr, "moe dispatch: out of memory for %lld routed rows of dim %d\n", cap, D);
        hp_ep_free(d);
        return -1;
    }
    return 0;
}

void hp_ep_free(hp_ep_dispatch *d) {
    if (!d) return;
    hp_mem_free(d->off); hp_mem_free(d->perm); hp_mem_free(d->idx); hp_mem_free(d->gates);
    hp_mem_free(d->counts_local); hp_mem_free(d->counts_recv); hp_mem_free(d->send_counts); hp_mem_free(d->recv_counts);
    hp_mem_free(d->sorted); hp_mem_free(d->pos); hp_mem_free(d->xs); hp_mem_free(d->ys); hp_mem_free(d->xr);
    hp_mem_free(d->idx_g); hp_mem_free(d->gates_g); hp_mem_free(d->loc); hp_mem_free(d->xg); hp_mem_free(d->part);
    hp_mem_free(d->dpart); hp_mem_free(d->tmp);
    memset(d, 0, sizeof *d);
}

static _Noreturn void bad_expert(int e, int E) {
    hp_fail_line_and_abort(1, "moe dispatch: routed expert id %d outside [0, %d)", e, E);
}

// ---------------------------------------------------------------------------------------------
// routing

static void route_alltoall(hp_ep_dispatch *d, hp_comm *comm, const int *idx, const float *gates) {
    const int n = d->n, K = d->K, E = d->E, El = d->El, n_ep = d->n_ep, m = n * K;
    memcpy(d->idx, idx, (size_t)m * sizeof(int));
    memcpy(d->gates, gates, (size_t)m * sizeof(float));
    // counting sort of the entries by global expert id; entries of one expert keep their
    // (row, k) order, so the layout (and every later sum) is deterministic
    int *cnt = d->counts_local;
    memset(cnt, 0, (size_t)E * sizeof(int));
    for (int i = 0; i < m; i++) {
        if (idx[i] < 0 || idx[i] >= E) bad_expert(idx[i], E);
        cnt[idx[i]]++;
    }
    int *start = d->counts_recv;   // borrowed as scratch until the exchange below
    for (int e = 0, s = 0; e < E; e++) { start[e] = s; s += cnt[e]; }
    for (int i = 0; i < m; i++) {
        int j = start[idx[i]]++;
        d->sorted[j] = i;
        d->pos[i] = j;
    }
    // counts exchange: counts_local viewed as [n_ep][El]; member j gets the El counts of
    // its experts from every source -> counts_recv [src][local expert]
    hp_alltoall_int(comm, HP_G_EP, d->counts_recv, cnt, El);
    int Mr = 0;
    for (int j = 0; j < n_ep; j++) {
        int s = 0, r = 0;
        for (int l = 0; l < El; l++) { s += cnt[j * El + l]; r += d->counts_recv[j * El + l]; }
        d->send_counts[j] = s * d->D;
        d->recv_counts[j] = r * d->D;
        Mr += r;
    }
    if (Mr > d->cap)   // cannot happen with consistent peers (each sends at most n*K)
        hp_fail_line_and_abort(1, "moe dispatch: received %d rows, room for %d", Mr, d->cap);
    d->Mr = Mr;
    // permute: received rows are (source-major, local-expert-minor); regroup them
    // local-expert-major, source-minor. No padding: fp32 CPU GEMMs take any row count.
    int p = 0;
    const int keep_order = hp_failpoint(HP_FP_EP_COUNTS_LAYOUT);   // the bug: no regrouping
    for (int l = 0; l < El; l++) {
        d->off[l] = p;
        int base = 0;   // first received row of the current source
        for (int src = 0; src < n_ep; src++) {
            int b = base;
            for (int ll = 0; ll < l; ll++) b += d->counts_recv[src * El + ll];
            int c = d->counts_recv[src * El + l];
            for (int q = 0; q < c; q++, p++) d->perm[p] = keep_order ? p : b + q;
            base += d->recv_counts[src] / d->D;
        }
    }
    d->off[El] = p;
}

static void route_allgather(hp_ep_dispatch *d, hp_comm *comm, const int *idx, const float *gates) {
    const int K = d->K, El = d->El, e0 = d->e0;
    const size_t G = (size_t)d->n_ep * d->n;
    hp_allgather_int(comm, HP_G_EP, d->idx_g, idx, (size_t)d->n * K);
    hp_allgather(comm, HP_G_EP, d->gates_g, gates, (size_t)d->n * K);
    // local entries grouped by local expert, in gathered (member, row, k) order
    for (int l = 0; l <= El; l++) d->off[l] = 0;
    for (size_t i = 0; i < G * K; i++) {
        int e = d->idx_g[i];
        if (e < 0 || e >= d->E) bad_expert(e, d->E);
        if (e >= e0 && e < e0 + El) d->off[e - e0 + 1]++;
    }
    for (int l = 0; l < El; l++) d->off[l + 1] += d->off[l];
    // a second pass places them; off[l] is advanced as a cursor and restored after
    for (size_t i = 0; i < G * K; i++) {
        int e = d->idx_g[i];
        if (e >= e0 && e < e0 + El) {
            int p = d->off[e - e0]++;
            d->perm[p] = (int)i;
            d->loc[i] = p;
        } else {
            d->loc[i] = -1;
        }
    }
    for (int l = El; l > 0; l--) d->off[l] = d->off[l - 1];
    d->off[0] = 0;
    d->Mr = d->off[El];
}

void hp_ep_route(hp_ep_dispatch *d, hp_comm *comm, const int *idx, const float *gates) {
    if (d->mode == HP_DISPATCH_ALLTOALL) route_alltoall(d, comm, idx, gates);
    else route_allgather(d, comm, idx, gates);
}

// ---------------------------------------------------------------------------------------------
// the row moves. wire_bf16: token rows (bf16 values, or grads the model rounds to bf16 as they
// arrive, with nothing in between) travel as 2 bytes, narrowed and widened in place: the same
// floats arrive. `what` names rows that must be bf16 already (the structure check), or NULL.

// xr <- the all-to-all of xs (rows * D floats each way, d's counts)
static void move_rows(hp_ep_dispatch *d, hp_comm *comm, float *recv, const int *recv_counts,
                      float *send, const int *send_counts, int bf16, const char *what) {
    if (!bf16) { hp_alltoallv(comm, HP_G_EP, recv, recv_counts, send, send_counts); return; }
    size_t ns = 0, nr = 0;
    for (int j = 0; j < d->n_ep; j++) { ns += (size_t)send_counts[j]; nr += (size_t)recv_counts[j]; }
    if (what) hp_structure_check_bf16_wire(send, ns, what);
    hp_bf16_narrow_in_place(send, ns);
    hp_alltoallv_bf16(comm, HP_G_EP, (hp_bf16 *)(void *)recv, recv_counts, (const hp_bf16 *)(void *)send,
                      send_counts);
    hp_bf16_widen_in_place(recv, nr);
}

// all (n_ep * n_el) <- every member's mine (n_el), bf16 values under wire_bf16
static void gather_rows(hp_ep_dispatch *d, hp_comm *comm, float *all, const float *mine, size_t n_el,
                        const char *what) {
    if (!d->wire_bf16) { hp_allgather(comm, HP_G_EP, all, mine, n_el); return; }
    hp_structure_check_bf16_wire(mine, n_el, what);
    hp_bf16 *all16 = (hp_bf16 *)(void *)all;
    hp_bf16_pack(all16 + (size_t)d->ep_rank * n_el, mine, n_el);   // in its own slot
    hp_allgather_bf16(comm, HP_G_EP, all16, all16 + (size_t)d->ep_rank * n_el, n_el);
    hp_bf16_widen_in_place(all, (size_t)d->n_ep * n_el);
}

// ---------------------------------------------------------------------------------------------
// forward

void hp_ep_dispatch_rows(hp_ep_dispatch *d, hp_comm *comm, float *xe, const float *x) {
    const int D = d->D, K = d->K;
    const size_t row = (size_t)D * sizeof(float);
    if (d->mode == HP_DISPATCH_ALLTOALL) {
        for (int j = 0; j < d->n * K; j++) memcpy(d->xs + (size_t)j * D, x + (size_t)(d->sorted[j] / K) * D, row);
        move_rows(d, comm, d->xr, d->recv_counts, d->xs, d->send_counts, d->wire_bf16, "ep dispatch rows");
        for (int p = 0; p < d->Mr; p++) memcpy(xe + (size_t)p * D, d->xr + (size_t)d->perm[p] * D, row);
    } else {
        gather_rows(d, comm, d->xg, x, (size_t)d->n * D, "ep gathered rows");
        for (int p = 0; p < d->Mr; p++) memcpy(xe + (size_t)p * D, d->xg + (size_t)(d->perm[p] / K) * D, row);
    }
}

void hp_ep_combine_rows(hp_ep_dispatch *d, hp_comm *comm, float *out, const float *ye) {
    const int D = d->D, K = d->K, n = d->n;
    const size_t row = (size_t)D * sizeof(float);
    if (d->mode == HP_DISPATCH_ALLTOALL) {
        // unpermute to received order, send back with the splits swapped
        const int unpermute = !hp_failpoint(HP_FP_EP_COMBINE_ORDER);   // the bug: skipped
        for (int p = 0; p < d->Mr; p++)
            memcpy(d->xr + (size_t)(unpermute ? d->perm[p] : p) * D, ye + (size_t)p * D, row);
        hp_alltoallv(comm, HP_G_EP, d->ys, d->send_counts, d->xr, d->recv_counts);
        // K-weighted sum at the row's owner, k in order
        for (int r = 0; r < n; r++) {
            float *o = out + (size_t)r * D;
            memset(o, 0, row);
            for (int k = 0; k < K; k++) {
                float g = d->gates[r * K + k];
                const float *y = d->ys + (size_t)d->pos[r * K + k] * D;
                for (int i = 0; i < D; i++) o[i] += g * y[i];
            }
        }
    } else {
        const size_t G = (size_t)d->n_ep * n;
        memset(d->part, 0, G * row);
        for (size_t gr = 0; gr < G; gr++) {
            float *o = d->part + gr * D;
            for (int k = 0; k < K; k++) {
                int p = d->loc[gr * K + k];
                if (p < 0) continue;
                float g = d->gates_g[gr * K + k];
                const float *y = ye + (size_t)p * D;
                for (int i = 0; i < D; i++) o[i] += g * y[i];
            }
        }
        hp_reduce_scatter(comm, HP_G_EP, out, d->part, (size_t)n * D);
    }
}

// ---------------------------------------------------------------------------------------------
// backward

static float dot(const float *a, const float *b, int n) {
    double s = 0.0;   // double: the gate grad is a long dot product
    for (int i = 0; i < n; i++) s += (double)a[i] * b[i];
    return (float)s;
}

void hp_ep_dispatch_grad(hp_ep_dispatch *d, hp_comm *comm, float *dye, float *dgates,
                         const float *dout, const float *ye) {
    const int D = d->D, K = d->K, n = d->n;
    const size_t row = (size_t)D * sizeof(float);
    if (d->mode == HP_DISPATCH_ALLTOALL) {
        for (int i = 0; i < n * K; i++)
            dgates[i] = dot(dout + (size_t)(i / K) * D, d->ys + (size_t)d->pos[i] * D, D);
        for (int j = 0; j < n * K; j++) {
            int i = d->sorted[j];
            float g = d->gates[i];
            const float *go = dout + (size_t)(i / K) * D;
            float *dst = d->xs + (size_t)j * D;
            for (int c = 0; c < D; c++) dst[c] = g * go[c];
        }
        // (the gate-weighted grads are copied out and rounded by the model: 2 bytes give the
        //  same floats)
        move_rows(d, comm, d->xr, d->recv_counts, d->xs, d->send_counts, d->wire_bf16, NULL);
        for (int p = 0; p < d->Mr; p++) memcpy(dye + (size_t)p * D, d->xr + (size_t)d->perm[p] * D, row);
    } else {
        const size_t G = (size_t)d->n_ep * n;
        gather_rows(d, comm, d->xg, dout, (size_t)n * D, "ep gathered output grads");
        // each entry's gate grad is computed by its expert's owner, zero elsewhere
        for (size_t i = 0; i < G * K; i++) {
            int p = d->loc[i];
            d->dpart[i] = p < 0 ? 0.0f : dot(d->xg + (i / K) * D, ye + (size_t)p * D, D);
        }
        hp_reduce_scatter(comm, HP_G_EP, dgates, d->dpart, (size_t)n * K);
        for (int p = 0; p < d->Mr; p++) {
            int i = d->perm[p];
            float g = d->gates_g[i];
            const float *go = d->xg + (size_t)(i / K) * D;
            float *dst = dye + (size_t)p * D;
            for (int c = 0; c < D; c++) dst[c] = g * go[c];
        }
    }
}

void hp_ep_combine_grad(hp_ep_dispatch *d, hp_comm *comm, float *dx, const float *dxe) {
    const int D = d->D, K = d->K, n = d->n;
    const size_t row = (size_t)D * sizeof(float);
    if (d->mode == HP_DISPATCH_ALLTOALL) {
        for (int p = 0; p < d->Mr; p++) memcpy(d->xr + (size_t)d->perm[p] * D, dxe + (size_t)p * D, row);
        hp_alltoallv(comm, HP_G_EP, d->xs, d->send_counts, d->xr, d->recv_counts);
        for (int r = 0; r < n; r++) {
            float *o = dx + (size_t)r * D;
            for (int k = 0; k < K; k++) {
                const float *g = d->xs + (size_t)d->pos[r * K + k] * D;
                for (int i = 0; i < D; i++) o[i] += g[i];
            }
        }
    } else {
        const size_t G = (size_t)d->n_ep * n;
        memset(d->part, 0, G * row);
        for (size_t gr = 0; gr < G; gr++) {
            float *o = d->part + gr * D;
            for (int k = 0; k < K; k++) {
                int p = d->loc[gr * K + k];
                if (p < 0) continue;
                const float *g = dxe + (size_t)p * D;
                for (int i = 0; i < D; i++) o[i] += g[i];
            }
        }
        hp_reduce_scatter(comm, HP_G_EP, d->tmp, d->part, (size_t)n * D);
        for (size_t i = 0; i < (size_t)n * D; i++) dx[i] += d->tmp[i];
    }
}

// ---------------------------------------------------------------------------------------
// the MoE block's dispatch (hp_moe_dispatch_ops) over the HP_G_EP group of a comm

typedef struct ep_moe { hp_ep_dispatch ep; hp_comm *comm; } ep_moe;

static void *ep_moe_init(void *ctx, hp_dispatcher mode, int n, int K, int E, int El, int e0,
                         int D, int *cap) {
    ep_moe *s = hp_mem_alloc(HP_MEM_OTHER, sizeof *s);
    if (!s) { fprintf(stderr, "moe dispatch: out of memory\n"); return NULL; }
    s->comm = ctx;
    if (hp_ep_init(&s->ep, s->comm, mode, n, K, E, El, e0, D) != 0) { hp_mem_free(s); return NULL; }   // (freed its own)
    *cap = s->ep.cap;
    return s;
}
static void ep_moe_free(void *self) {
    ep_moe *s = self;
    hp_ep_free(&s->ep);
    hp_mem_free(s);
}
static int ep_moe_route(void *self, const int *idx, const float *gates, const int **off) {
    ep_moe *s = self;
    hp_ep_route(&s->ep, s->comm, idx, gates);
    *off = s->ep.off;
    return s->ep.Mr;
}
static void ep_moe_dispatch_rows(void *self, float *xe, const float *x) {
    ep_moe *s = self;
    hp_ep_dispatch_rows(&s->ep, s->comm, xe, x);
}
static void ep_moe_combine_rows(void *self, float *out, const float *ye) {
    ep_moe *s = self;
    hp_ep_combine_rows(&s->ep, s->comm, out, ye);
}
static void ep_moe_dispatch_grad(void *self, float *dye, float *dgates, const float *dout,
                                 const float *ye) {
    ep_moe *s = self;
    hp_ep_dispatch_grad(&s->ep, s->comm, dye, dgates, dout, ye);
}
static void ep_moe_combine_grad(void *self, float *dx, const float *dxe) {
    ep_moe *s = self;
    hp_ep_combine_grad(&s->ep, s->comm, dx, dxe);
}

static void *ep_moe_init_bf16(void *ctx, hp_dispatcher mode, int n, int K, int E, int El, int e0,
                              int D, int *cap) {
    ep_moe *s = ep_moe_init(ctx, mode, n, K, E, El, e0, D, cap);
    if (s) s->ep.wire_bf16 = 1;
    return s;
}

static const hp_moe_dispatch_ops ep_moe_ops = {
    ep_moe_init, ep_moe_free, ep_moe_route, ep_moe_dispatch_rows, ep_moe_combine_rows,
    ep_moe_dispatch_grad, ep_moe_combine_grad,
};
static const hp_moe_dispatch_ops ep_moe_ops_bf16 = {
    ep_moe_init_bf16, ep_moe_free, ep_moe_route, ep_moe_dispatch_rows, ep_moe_combine_rows,
    ep_moe_dispatch_grad, ep_moe_combine_grad,
};

const hp_moe_dispatch_ops *hp_ep_moe_ops(void) { return &ep_moe_ops; }
const hp_moe_dispatch_ops *hp_ep_moe_ops_bf16(void) { return &ep_moe_ops_bf16; }

// The public block over comm: the state dispatches over the first comm it is called with.
static void use_comm(hp_moe_state *st, hp_comm *comm, const char *who) {
    if (!st || !comm) hp_fail_line_and_abort(1, "%s: NULL argument", who);
    if (hp_moe_set_dispatch(st, &ep_moe_ops, comm) != 0)
        hp_fail_line_and_abort(1, "hp_moe: the ep group changed between calls on one state");
}

void hp_moe_forward(hp_moe_state *st, hp_comm *comm, float *out, const float *x,
                    const hp_moe_weights *w) {
    use_comm(st, comm, "hp_moe: hp_moe_forward");
    hp_moe_block_forward(st, out, x, w);
}

void hp_moe_backward(hp_moe_state *st, hp_comm *comm, float *dx, hp_moe_grads *g,
                     const float *dout, const hp_moe_weights *w) {
    use_comm(st, comm, "hp_moe: hp_moe_backward");
    hp_moe_block_backward(st, dx, g, dout, w);
}
