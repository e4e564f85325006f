// moe.c - the MoE block: router (gate linear, score function, top-k), routed experts run
// over expert-parallel dispatch, shared experts, forward and backward.
// spec: docs/model.md (MoE), docs/torchtitan.md §4.2-4.3; docs/moe.md.
// defines: hp_moe_state_init, hp_moe_state_free, hp_moe_forward, hp_moe_backward,
//          hp_moe_set_dispatch, hp_moe_block_forward, hp_moe_block_backward, hp_moe_routing
//
// The block does not know how rows reach their experts: a dispatcher (hp_moe_dispatch_ops,
// expert parallel in ../parallel/ep_dispatch.c) moves them and brings the outputs back.
//
// Data flow of one forward (N rows, this rank handles rows [r0, r0+n)):
//   logits = x gate^T (N,E) -> scores -> top-K ids/gates for ALL N rows (hp_moe_routing)
//   handled rows -> dispatch (ep) -> xe (Mr,D) expert-major -> per local expert:
//     h1 = xe w1^T, h3 = xe w3^T, a = silu(h1) * h3, ye = a w2^T
//   -> combine: out[r] = sum_k g_k y_k on handled rows, 0 on the others
//   + shared experts on all N rows: sw2(silu(sw1 x) * (sw3 x)) with a tp slice of the hidden.
// The output is partial over tp in every layout: rows are split (token_split), or the
// expert hidden dim is split (expert_tp), and the shared hidden dim is split. The caller's
// one tp reduction sums all of them. Backward is linear in each of these partial pieces
// (gate grads included: dgate_k = dout . y_k with y_k partial), so the input and router-gate
// grads it returns are partial over tp as well (TorchTitan #4054: declare them Partial).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "hyperpar/kernels.h"
#include "hyperpar/memtrack.h"
#include "hyperpar/failpoint.h"
#include "hyperpar/moe.h"
#include "model/precision_hooks.h"

// The scratch: what a block reads only inside its forward (the router's logits, the shared
// experts' output) or only inside its backward (the experts' output and input grads, the
// router's and the shared experts' grads). Blocks run one at a time, so the blocks of a rank
// can share one (hp_moe_share_scratch); sized at the first forward of a state using it, grown
// if a later one needs more (states of one model need the same).
typedef struct hp_moe_scratch {
    int refs;              // states using it
    size_t cap, n, N;      // what it is sized for: routed rows, handled rows, all rows
    float *logits;         // (N, E)   forward
    float *sy;             // (N, D)   forward
    float *dye, *dxe;      // (cap, D)
    float *dact, *dh1, *dh3; // (cap, Fel)
    float *dgates;         // (n, K)
    float *dscores, *dlogits; // (n, E)
    float *dsact, *dsh1, *dsh3; // (N, Fsl)
    // under packed storage: the fp32 copies the stored fields run in (a state's x .. act point here)
    float *x, *sh1, *sh3, *sact;   // (N, D), (N, Fsl) x3
    float *xe, *h1, *h3, *act;     // (cap, D), (cap, Fel) x3
} hp_moe_scratch;

struct hp_moe_state {
    hp_moe_dims md;
    int n, r0;             // handled rows [r0, r0+n)
    int ready;             // buffers sized for the dispatch (after the first forward)
    int forwarded;         // a forward has run (backward needs it)
    const hp_moe_dispatch_ops *ops;   // the dispatcher (hp_moe_set_dispatch), its context
    void *ctx;
    void *disp;            // its state for this block (after the first forward)
    int cap;               // room for expert-major rows
    int Mr;                // rows computed here after the last route
    const int *off;        // (El+1) each local expert's first row
    // router, all N rows
    float *x;              // (N, D) copy of the input (backward needs it)
    float *scores;         // (N, E)
    int   *idx;            // (N, K)
    float *gates;          // (N, K)
    // routed experts, expert-major rows (room for n_ep*n*K entries)
    float *xe, *ye;        // (cap, D)
    float *h1, *h3, *act;  // (cap, Fel)
    // shared experts, all N rows
    float *sh1, *sh3, *sact; // (N, Fsl)
    hp_moe_scratch *scr;   // the scratch: its own, or shared with other states
    // packed storage: the stored fields as the precision keeps them, packed after the forward
    // and restored before the backward; x, sh1, sh3, sact, xe, h1, h3, act then point into
    // the scratch
    void *kept_rows;       // x (N, D), sh1, sh3, sact (N, Fsl)
    void *kept_routed;     // xe (cap, D), h1, h3, act (cap, Fel): the first Mr rows of each
};

static int stored(const hp_moe_state *st) { return st->md.prec && st->md.prec->stored_bytes > 0; }

// every buffer of the block is an activation (docs/planner.md, "Measured memory")
static float *fbuf(size_t n) { return hp_mem_alloc(HP_MEM_ACTIVATIONS, (n ? n : 1) * sizeof(float)); }
static void *pbuf(const hp_moe_state *st, size_t n) {
    return hp_mem_alloc(HP_MEM_ACTIVATIONS, (n ? n : 1) * st->md.prec->stored_bytes);
}

hp_moe_state *hp_moe_state_init(const hp_moe_dims *md) {
    const hp_moe_dims *m = md;
    const char *rule = NULL;
    char msg[256];
    if (!m) { fprintf(stderr, "hp_moe_state_init: dims is NULL\n"); return NULL; }
    if (m->N < 1 || m->D < 1) {
        snprintf(msg, sizeof msg, "rows and dim must be >= 1: N = %d, D = %d", m->N, m->D); rule = msg;
    } else if (m->E < 1 || m->K < 1 || m->K > m->E) {
        snprintf(msg, sizeof msg, "need 1 <= top_k <= num_experts: top_k = %d, num_experts = %d", m->K, m->E); rule = msg;
    } else if (m->El < 1 || m->E % m->El != 0 || m->e0 < 0 || m->e0 % m->El != 0 || m->e0 + m->El > m->E) {
        snprintf(msg, sizeof msg, "local experts [e0, e0+El) = [%d, %d) must be an El-aligned block of %d experts",
                 m->e0, m->e0 + m->El, m->E); rule = msg;
    } else if (m->Fel < 1 || m->Fsl < 0) {
        snprintf(msg, sizeof msg, "expert width Fel = %d must be >= 1 and shared width Fsl = %d >= 0", m->Fel, m->Fsl); rule = msg;
    } else if (m->token_split < 1 || m->token_rank < 0 || m->token_rank >= m->token_split) {
        snprintf(msg, sizeof msg, "token_rank %d must lie in [0, token_split = %d)", m->token_rank, m->token_split); rule = msg;
    } else if (m->N % m->token_split != 0) {
        snprintf(msg, sizeof msg, "rows N = %d must be divisible by token_split = %d (tp ranks splitting the tokens)",
                 m->N, m->token_split); rule = msg;
    } else if (m->score_func != HP_SCORE_SOFTMAX && m->score_func != HP_SCORE_SIGMOID) {
        snprintf(msg, sizeof msg, "score_func %d is neither softmax (0) nor sigmoid (1)", (int)m->score_func); rule = msg;
    } else if (m->dispatcher != HP_DISPATCH_ALLTOALL && m->dispatcher != HP_DISPATCH_ALLGATHER) {
        snprintf(msg, sizeof msg, "dispatcher %d is neither alltoall (0) nor allgather (1)", (int)m->dispatcher); rule = msg;
    }
    if (rule) { fprintf(stderr, "hp_moe_state_init: %s\n", rule); return NULL; }

    hp_moe_state *st = hp_mem_alloc(HP_MEM_OTHER, sizeof *st);
    if (!st) { fprintf(stderr, "hp_moe_state_init: out of memory\n"); return NULL; }
    st->md = *m;
    st->n = m->N / m->token_split;
    st->r0 = m->token_rank * st->n;
    const size_t N = m->N, D = m->D, E = m->E, K = m->K, Fs = m->Fsl;
    if (stored(st)) st->kept_rows = pbuf(st, N * D + 3 * N * Fs);   // (x .. sact: the scratch's)
    else { st->x = fbuf(N * D); st->sh1 = fbuf(N * Fs); st->sh3 = fbuf(N * Fs); st->sact = fbuf(N * Fs); }
    st->scores = fbuf(N * E);
    st->idx = hp_mem_alloc(HP_MEM_ACTIVATIONS, N * K * sizeof(int));
    st->gates = fbuf(N * K);
    st->scr = hp_mem_alloc(HP_MEM_OTHER, sizeof *st->scr);   // (its buffers: at the first forward)
    if (st->scr) st->scr->refs = 1;
    if (!(stored(st) ? st->kept_rows != NULL : st->x && st->sh1 && st->sh3 && st->sact) || !st->scores ||
        !st->idx || !st->gates || !st->scr) {
        fprintf(stderr, "hp_moe_state_init: out of memory (N = %d, D = %d)\n", m->N, m->D);
        hp_moe_state_free(st);
        return NULL;
    }
    return st;
}

static void scratch_free_buffers(hp_moe_scratch *s) {
    hp_mem_free(s->logits); hp_mem_free(s->sy);
    hp_mem_free(s->x); hp_mem_free(s->sh1); hp_mem_free(s->sh3); hp_mem_free(s->sact);
    hp_mem_free(s->xe); hp_mem_free(s->h1); hp_mem_free(s->h3); hp_mem_free(s->act);
    hp_mem_free(s->dye); hp_mem_free(s->dxe); hp_mem_free(s->dact); hp_mem_free(s->dh1); hp_mem_free(s->dh3);
    hp_mem_free(s->dgates); hp_mem_free(s->dscores); hp_mem_free(s->dlogits);
    hp_mem_free(s->dsact); hp_mem_free(s->dsh1); hp_mem_free(s->dsh3);
    memset(s, 0, sizeof *s);
}

// Drops st's use of its scratch, freeing it with its last user.
static void scratch_release(hp_moe_state *st) {
    hp_moe_scratch *s = st->scr;
    st->scr = NULL;
    if (!s || --s->refs > 0) return;
    scratch_free_buffers(s);
    hp_mem_free(s);
}

// Sizes st's scratch for it (the first forward of each state using it; states of one model
// need the same, so only the first allocates).
static int scratch_reserve(hp_moe_state *st) {
    hp_moe_scratch *s = st->scr;
    const hp_moe_dims *m = &st->md;
    const size_t cap = st->cap, n = st->n, N = m->N;
    if (s->dye && s->cap >= cap && s->n >= n && s->N >= N) return 0;
    const int refs = s->refs;
    scratch_free_buffers(s);
    s->refs = refs;
    s->cap = cap; s->n = n; s->N = N;
    const size_t D = m->D, F = m->Fel, E = m->E, K = m->K, Fs = m->Fsl;
    s->logits = fbuf(N * E); s->sy = fbuf(N * D);
    s->dye = fbuf(cap * D); s->dxe = fbuf(cap * D);
    s->dact = fbuf(cap * F); s->dh1 = fbuf(cap * F); s->dh3 = fbuf(cap * F);
    s->dgates = fbuf(n * K);
    s->dscores = fbuf(n * E); s->dlogits = fbuf(n * E);
    s->dsact = fbuf(N * Fs); s->dsh1 = fbuf(N * Fs); s->dsh3 = fbuf(N * Fs);
    if (stored(st)) {
        s->x = fbuf(N * D); s->sh1 = fbuf(N * Fs); s->sh3 = fbuf(N * Fs); s->sact = fbuf(N * Fs);
        s->xe = fbuf(cap * D); s->h1 = fbuf(cap * F); s->h3 = fbuf(cap * F); s->act = fbuf(cap * F);
        if (!s->x || !s->sh1 || !s->sh3 || !s->sact || !s->xe || !s->h1 || !s->h3 || !s->act) return -1;
    }
    return s->logits && s->sy && s->dye && s->dxe && s->dact && s->dh1 && s->dh3 && s->dgates &&
           s->dscores && s->dlogits && s->dsact && s->dsh1 && s->dsh3 ? 0 : -1;
}

int hp_moe_share_scratch(hp_moe_state *st, hp_moe_state *with) {
    const hp_moe_dims *a = &st->md, *b = &with->md;
    if (st == with || st->scr == with->scr) return 0;
    if (st->ready || a->N != b->N || a->D != b->D || a->E != b->E || a->K != b->K ||
        a->Fel != b->Fel || a->Fsl != b->Fsl || a->token_split != b->token_split || stored(st) != stored(with))
        return -1;
    scratch_release(st);
    st->scr = with->scr;
    st->scr->refs++;
    return 0;
}

static void free_routed(hp_moe_state *st) {
    if (st->disp) st->ops->free(st->disp);
    st->disp = NULL;
    if (stored(st)) st->xe = st->h1 = st->h3 = st->act = NULL;   // (the scratch's)
    hp_mem_free(st->xe); hp_mem_free(st->ye); hp_mem_free(st->h1); hp_mem_free(st->h3); hp_mem_free(st->act);
    hp_mem_free(st->kept_routed);
    st->xe = st->ye = st->h1 = st->h3 = st->act = NULL;
    st->kept_routed = NULL;
    st->ready = 0;
}

void hp_moe_state_free(hp_moe_state *st) {
    if (!st) return;
    free_routed(st);
    scratch_release(st);
    if (stored(st)) st->x = st->sh1 = st->sh3 = st->sact = NULL;   // (the scratch's)
    hp_mem_free(st->kept_rows);
    hp_mem_free(st->x); hp_mem_free(st->scores); hp_mem_free(st->idx); hp_mem_free(st->gates);
    hp_mem_free(st->sh1); hp_mem_free(st->sh3); hp_mem_free(st->sact);
    hp_mem_free(st);
}

const int *hp_moe_routing(const hp_moe_state *st) { return st ? st->idx : NULL; }

// A misuse the void API cannot report back: one line, then the whole job goes down (a
// lone failing rank would leave its peers waiting inside a collective).
static _Noreturn void moe_fail(const char *what) {
    hp_fail_line_and_abort(1, "hp_moe: %s", what);
}

int hp_moe_set_dispatch(hp_moe_state *st, const hp_moe_dispatch_ops *ops, void *ctx) {
    if (st->ops && (st->ops != ops || st->ctx != ctx)) return -1;
    st->ops = ops;
    st->ctx = ctx;
    return 0;
}

// The routed buffers depend on the dispatcher (a rank may receive up to n_ep*n*K rows), so
// they are sized on the first forward, when the dispatch is known.
static void ensure_routed(hp_moe_state *st) {
    const hp_moe_dims *m = &st->md;
    if (st->ready) return;
    if (!st->ops) moe_fail("no dispatch set on the MoE state (hp_moe_set_dispatch)");
    st->disp = st->ops->init(st->ctx, m->dispatcher, st->n, m->K, m->E, m->El, m->e0, m->D, &st->cap);
    if (!st->disp) moe_fail("expert-parallel dispatch does not fit the comm (see the line above)");
    const size_t cap = st->cap, D = m->D, F = m->Fel;
    st->ye = fbuf(cap * D);
    if (stored(st)) {
        st->kept_routed = pbuf(st, cap * D + 3 * cap * F);   // (xe .. act: the scratch's)
    } else {
        st->xe = fbuf(cap * D);
        st->h1 = fbuf(cap * F); st->h3 = fbuf(cap * F); st->act = fbuf(cap * F);
    }
    if (!st->ye || !(stored(st) ? st->kept_routed != NULL : st->xe && st->h1 && st->h3 && st->act) ||
        scratch_reserve(st) != 0)
        moe_fail("out of memory for the routed expert buffers");
    st->ready = 1;
}

// ---------------------------------------------------------------------------------------------
// packed storage: the stored fields run in the scratch's fp32 copies

static void bind_work(hp_moe_state *st) {
    if (!stored(st)) return;
    const hp_moe_scratch *s = st->scr;
    st->x = s->x; st->sh1 = s->sh1; st->sh3 = s->sh3; st->sact = s->sact;
    st->xe = s->xe; st->h1 = s->h1; st->h3 = s->h3; st->act = s->act;
}

// The stored fields in the order of kept_rows (the first 4) and kept_routed (the rest), and
// how many floats of each are valid: N rows of the first, Mr routed rows of the rest.
static void stored_fields(const hp_moe_state *st, float *f[8], size_t n[8], size_t room[8]) {
    const size_t N = st->md.N, D = st->md.D, Fs = st->md.Fsl, F = st->md.Fel, Mr = st->Mr, cap = st->cap;
    float *fields[8] = { st->x, st->sh1, st->sh3, st->sact, st->xe, st->h1, st->h3, st->act };
    const size_t valid[8] = { N * D, N * Fs, N * Fs, N * Fs, Mr * D, Mr * F, Mr * F, Mr * F };
    const size_t sizes[8] = { N * D, N * Fs, N * Fs, N * Fs, cap * D, cap * F, cap * F, cap * F };
    for (int i = 0; i < 8; i++) { f[i] = fields[i]; n[i] = valid[i]; room[i] = sizes[i]; }
}

// Keeps (save) the stored fields packed, or restores them. Each is an op output under the op
// rule (or the block's input and its dispatched rows), so the round trip is exact; a value the
// precision cannot keep exactly stops the job with one line.
static void stored_move(hp_moe_state *st, int save) {
    float *f[8];
    size_t n[8], room[8], at = 0;
    stored_fields(st, f, n, room);
    for (int i = 0; i < 8; i++) {
        const hp_precision_hooks *p = st->md.prec;
        void *kept = (char *)(i < 4 ? st->kept_rows : st->kept_routed) + at * p->stored_bytes;
        at = i == 3 ? 0 : at + room[i];
        if (!save) {
            // (bf16_moe_routed_stale: the bug leaves the routed rows as the scratch holds them,
            //  the last forward's: another block's or microbatch's)
            if (i >= 4 && hp_failpoint(HP_FP_BF16_MOE_ROUTED_STALE)) continue;
            p->restore(p->ctx, f[i], kept, n[i]);
        } else {
            char what[48];
            snprintf(what, sizeof what, "field %d of a MoE block", i);
            p->keep(p->ctx, kept, f[i], n[i], what, -1);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// forward

// The precision's op rule on the block's complete outputs: the experts' and the shared
// expert's w1/w3 products and gates, and their input-side grads. The router stays fp32
// (TorchTitan runs it under fp32 autocast); the w2 products, the combine and the input grads
// are partial over tp (etp, the shared expert's hidden split) and get the rule from the model
// after their sum.
static void op_out(const hp_moe_state *st, float *x, size_t n) {
    if (st->md.prec) st->md.prec->op_output(st->md.prec->ctx, x, n);
}

// The experts' linears (not the router's: fp32), in the precision's operands (the shared
// experts, and each routed expert: one call per local expert over its rows, w its slice of the
// (El, ...) weight, even with 0 rows, so that every rank of an etp group makes the same calls).
static void expert_fwd(const hp_moe_state *st, const hp_moe_weights *W, float *y, const float *x, const float *w,
                       int N, int in, int out) {
    (void)W;
    const hp_precision_hooks *p = st->md.prec;
    if (p) p->linear_forward(p->ctx, y, x, w, N, in, out);
    else hp_linear_forward(y, x, w, N, in, out);
}
static void expert_bwd(const hp_moe_state *st, const hp_moe_weights *W, float *dx, float *dw, const float *dy,
                       const float *x, const float *w, int N, int in, int out) {
    (void)W;
    const hp_precision_hooks *p = st->md.prec;
    if (p) p->linear_backward(p->ctx, dx, dw, dy, x, w, N, in, out);
    else hp_linear_backward(dx, dw, dy, x, w, N, in, out);
}

void hp_moe_block_forward(hp_moe_state *st, float *out, const float *x, const hp_moe_weights *w) {
    if (!st || !out || !x || !w) moe_fail("hp_moe_forward: NULL argument");
    const hp_moe_dims *m = &st->md;
    const int N = m->N, D = m->D, E = m->E, K = m->K, F = m->Fel, Fs = m->Fsl;
    const int r0 = st->r0;
    ensure_routed(st);
    bind_work(st);
    memcpy(st->x, x, (size_t)N * D * sizeof(float));

    // router on every row (replicated gate; hp_moe_routing reports all N rows)
    hp_linear_forward(st->scr->logits, x, w->gate, N, D, E);
    hp_router_scores_forward(st->scores, st->scr->logits, N, E, m->score_func);
    hp_router_topk(st->idx, st->gates, st->scores, N, E, K, m->route_norm, m->route_scale);

    // routed experts on this rank's rows, wherever their experts live
    st->Mr = st->ops->route(st->disp, st->idx + (size_t)r0 * K, st->gates + (size_t)r0 * K, &st->off);
    st->ops->dispatch_rows(st->disp, st->xe, x + (size_t)r0 * D);
    // one GEMM per local expert over its contiguous row range (a grouped GEMM without the
    // padding TorchTitan needs for its kernels: fp32 sgemm takes any row count, even 0)
    for (int l = 0; l < m->El; l++) {
        const int o = st->off[l], c = st->off[l + 1] - o;
        const size_t we = (size_t)l * F * D;
        expert_fwd(st, w, st->h1 + (size_t)o * F, st->xe + (size_t)o * D, w->w1 + we, c, D, F);
        expert_fwd(st, w, st->h3 + (size_t)o * F, st->xe + (size_t)o * D, w->w3 + we, c, D, F);
    }
    op_out(st, st->h1, (size_t)st->Mr * F);
    op_out(st, st->h3, (size_t)st->Mr * F);
    hp_swiglu_forward(st->act, st->h1, st->h3, (size_t)st->Mr * F);
    op_out(st, st->act, (size_t)st->Mr * F);
    for (int l = 0; l < m->El; l++) {
        const int o = st->off[l], c = st->off[l + 1] - o;
        expert_fwd(st, w, st->ye + (size_t)o * D, st->act + (size_t)o * F, w->w2 + (size_t)l * D * F, c, F, D);
    }
    // rows handled by another tp rank stay 0 here: the output is a true partial sum over tp
    memset(out, 0, (size_t)N * D * sizeof(float));
    st->ops->combine_rows(st->disp, out + (size_t)r0 * D, st->ye);

    // shared experts on all N rows (hidden dim split over tp, output partial)
    if (Fs > 0) {
        expert_fwd(st, w, st->sh1, x, w->sw1, N, D, Fs);
        expert_fwd(st, w, st->sh3, x, w->sw3, N, D, Fs);
        op_out(st, st->sh1, (size_t)N * Fs);
        op_out(st, st->sh3, (size_t)N * Fs);
        hp_swiglu_forward(st->sact, st->sh1, st->sh3, (size_t)N * Fs);
        op_out(st, st->sact, (size_t)N * Fs);
        float *sy = st->scr->sy;
        expert_fwd(st, w, sy, st->sact, w->sw2, N, Fs, D);
        for (size_t i = 0; i < (size_t)N * D; i++) out[i] += sy[i];
    }
    if (stored(st)) stored_move(st, 1);
    st->forwarded = 1;
}

// ---------------------------------------------------------------------------------------------
// backward

static float *at(float *p, size_t off) { return p ? p + off : NULL; }

void hp_moe_block_backward(hp_moe_state *st, float *dx, hp_moe_grads *g, const float *dout,
                           const hp_moe_weights *w) {
    if (!st || !dx || !g || !dout || !w) moe_fail("hp_moe_backward: NULL argument");
    if (!st->forwarded) moe_fail("hp_moe_backward called before hp_moe_forward on this state");
    const hp_moe_dims *m = &st->md;
    const int N = m->N, D = m->D, E = m->E, K = m->K, F = m->Fel, Fs = m->Fsl;
    const int n = st->n, r0 = st->r0;
    const size_t MF = (size_t)st->Mr * F;
    hp_moe_scratch *scr = st->scr;
    bind_work(st);
    if (stored(st)) stored_move(st, 0);

    // dy of each entry = gate * dout[row], sent to the experts; dgate_k = dout . y_k
    st->ops->dispatch_grad(st->disp, scr->dye, scr->dgates, dout + (size_t)r0 * D, st->ye);
    op_out(st, scr->dye, (size_t)st->Mr * D);
    memset(scr->dact, 0, MF * sizeof(float));
    for (int l = 0; l < m->El; l++) {
        const int o = st->off[l], c = st->off[l + 1] - o;
        expert_bwd(st, w, scr->dact + (size_t)o * F, at(g->w2, (size_t)l * D * F), scr->dye + (size_t)o * D,
                           st->act + (size_t)o * F, w->w2 + (size_t)l * D * F, c, F, D);
    }
    op_out(st, scr->dact, MF);
    hp_swiglu_backward(scr->dh1, scr->dh3, scr->dact, st->h1, st->h3, MF);
    op_out(st, scr->dh1, MF);
    op_out(st, scr->dh3, MF);
    memset(scr->dxe, 0, (size_t)st->Mr * D * sizeof(float));
    for (int l = 0; l < m->El; l++) {
        const int o = st->off[l], c = st->off[l + 1] - o;
        const size_t we = (size_t)l * F * D;
        expert_bwd(st, w, scr->dxe + (size_t)o * D, at(g->w1, we), scr->dh1 + (size_t)o * F,
                           st->xe + (size_t)o * D, w->w1 + we, c, D, F);
        expert_bwd(st, w, scr->dxe + (size_t)o * D, at(g->w3, we), scr->dh3 + (size_t)o * F,
                           st->xe + (size_t)o * D, w->w3 + we, c, D, F);
    }
    st->ops->combine_grad(st->disp, dx + (size_t)r0 * D, scr->dxe);

    // router: only the handled rows (the other tp ranks cover the rest)
    memset(scr->dscores, 0, (size_t)n * E * sizeof(float));
    memset(scr->dlogits, 0, (size_t)n * E * sizeof(float));
    hp_router_topk_backward(scr->dscores, scr->dgates, st->idx + (size_t)r0 * K, st->scores + (size_t)r0 * E,
                            n, E, K, m->route_norm, m->route_scale);
    hp_router_scores_backward(scr->dlogits, scr->dscores, st->scores + (size_t)r0 * E, n, E, m->score_func);
    hp_linear_backward(dx + (size_t)r0 * D, g->gate, scr->dlogits, st->x + (size_t)r0 * D, w->gate, n, D, E);

    // shared experts on all N rows
    if (Fs > 0) {
        const size_t NF = (size_t)N * Fs;
        memset(scr->dsact, 0, NF * sizeof(float));
        expert_bwd(st, w, scr->dsact, g->sw2, dout, st->sact, w->sw2, N, Fs, D);
        op_out(st, scr->dsact, NF);
        hp_swiglu_backward(scr->dsh1, scr->dsh3, scr->dsact, st->sh1, st->sh3, NF);
        op_out(st, scr->dsh1, NF);
        op_out(st, scr->dsh3, NF);
        expert_bwd(st, w, dx, g->sw1, scr->dsh1, st->x, w->sw1, N, D, Fs);
        expert_bwd(st, w, dx, g->sw3, scr->dsh3, st->x, w->sw3, N, D, Fs);
    }
}
