// cp_attention.c - ring attention over the cp group (spec §6): every rank keeps its own
// queries and meets the K/V block of every cp rank, one source per step, merging each
// block into (out, lse) by log-sum-exp inside hp_attention_forward.
//
// Step i (0..C-1) on cp rank r uses the K/V of source s = (r - i) mod C. The blocks travel
// either by one all-gather (HP_ROTATE_ALLGATHER) or by C-1 ring shifts to rank r+1
// (HP_ROTATE_RING). Backward walks the same steps with the final out/lse; the dK/dV made
// for another rank's block go back to it by one reduce-scatter (allgather method) or ride
// with the block round the ring and take one extra hop home (ring method).
//
// Block skipping: a rank's rows are cut into chunks (2 with the head-tail layout, 1 with
// the contiguous one) and every (q chunk, kv chunk) pair is classed by its position
// ranges: all keys visible (full), some (diagonal) or none (skipped, no kernel call). The
// kernel masks by position anyway, so the classes only save work, never change results.
//
// Determinism: blocks merge in a fixed order (step, then q chunk, then kv chunk), the same
// for both rotate methods, so out/lse/dq are bit-identical run to run and across methods.
// defines: hp_cp_attention_forward, hp_cp_attention_backward, hp_cp_stats_get/reset
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "hyperpar/bf16.h"
#include "hyperpar/cp.h"
#include "hyperpar/cp_stats.h"
#include "hyperpar/failpoint.h"
#include "hyperpar/kernels.h"
#include "hyperpar/memtrack.h"
#include "hyperpar/structure.h"
#include "cp_internal.h"

static hp_cp_stats g_stats;

void hp_cp_stats_get(hp_cp_stats *out) { *out = g_stats; }
void hp_cp_stats_reset(void) { memset(&g_stats, 0, sizeof g_stats); }

// ----------------------------------------------------------------------------
// chunks and block classes

#define MAX_CHUNKS 2

// Rows [lo, hi) of one rank's local sequence and the range of their global positions.
typedef struct { int lo, hi, pmin, pmax; } cp_chunk;

typedef enum { BLOCK_SKIP = 0, BLOCK_DIAG, BLOCK_FULL } cp_block;

// Cuts Sl rows into nch equal chunks (Sl % nch == 0 is checked by the caller).
static void make_chunks(cp_chunk *c, const int *pos, int Sl, int nch) {
    const int len = Sl / nch;
    for (int a = 0; a < nch; a++) {
        c[a].lo = a * len;
        c[a].hi = (a + 1) * len;
        c[a].pmin = c[a].pmax = pos[c[a].lo];
        for (int j = c[a].lo + 1; j < c[a].hi; j++) {
            if (pos[j] < c[a].pmin) c[a].pmin = pos[j];
            if (pos[j] > c[a].pmax) c[a].pmax = pos[j];
        }
    }
}

// Key j is visible to query i iff kpos[j] <= qpos[i] (kernels.h). skip_diag is the
// cp_skip_diagonal failpoint: the rule "skip unless every key is visible".
static cp_block classify(const cp_chunk *qc, const cp_chunk *kc, int skip_diag) {
    if (kc->pmin > qc->pmax) return BLOCK_SKIP;
    if (skip_diag && kc->pmax > qc->pmin) return BLOCK_SKIP;
    if (kc->pmax <= qc->pmin) return BLOCK_FULL;
    return BLOCK_DIAG;
}

// Everything one rank needs to run the blocks of one source.
typedef struct {
    int B, Sl, H, Hkv, hd, nch;
    int skip_diag;               // failpoint cp_skip_diagonal (only when C > 1)
    int bf16;                    // the bf16 policy: the kernels' _bf16 forms
    const int *qpos;             // (Sl) this rank's positions
    cp_chunk   qc[MAX_CHUNKS];   // this rank's query chunks
} cp_ctx;

// ----------------------------------------------------------------------------
// argument checks

static void check_args(const char *who, const hp_comm *comm, hp_cp_rotate rotate, int load_balance,
                       const int *pos, int B, int Sl, int H, int Hkv, int hd) {
    if (!comm) hp_cp_fail("%s: comm is NULL", who);
    if (rotate != HP_ROTATE_ALLGATHER && rotate != HP_ROTATE_RING)
        hp_cp_fail("%s: unknown rotate method %d (0 allgather, 1 ring)", who, (int)rotate);
    if (B < 0 || Sl < 0 || H <= 0 || Hkv <= 0 || hd <= 0 || H % Hkv != 0)
        hp_cp_fail("%s: need B, Sl >= 0, positive H, Hkv, hd and H %% Hkv == 0 "
                   "(B=%d Sl=%d H=%d Hkv=%d hd=%d)", who, B, Sl, H, Hkv, hd);
    const int C = hp_comm_size(comm, HP_G_CP), r = hp_comm_rank(comm, HP_G_CP);
    if ((long long)Sl * C > 0x7fffffffLL)
        hp_cp_fail("%s: sequence length Sl*C = %d*%d exceeds INT_MAX", who, Sl, C);
    if (C > 1 && load_balance && Sl % 2 != 0)
        hp_cp_fail("%s: load-balanced cp needs S divisible by 2*C: local length Sl=%d is odd "
                   "(S=%d, C=%d)", who, Sl, Sl * C, C);
    if (B == 0 || Sl == 0 || C == 1) return;
    // Sources' positions are derived from the layout rule, so ours must follow it too.
    int *want = malloc((size_t)Sl * sizeof *want);
    if (!want) hp_cp_fail("%s: out of memory (%d positions)", who, Sl);
    hp_cp_positions(want, Sl * C, C, r, load_balance);
    for (int j = 0; j < Sl; j++)
        if (pos[j] != want[j])
            hp_cp_fail("%s: pos[%d]=%d but the %s layout gives cp rank %d position %d (S=%d, C=%d)",
                       who, j, pos[j], load_balance ? "head-tail" : "contiguous", r, want[j],
                       Sl * C, C);
    free(want);
}

// The global positions of source s's K/V rows (cp_kv_positions: the bug uses this rank's).
static void source_positions(int *kpos, int Sl, int C, int r, int s, int load_balance) {
    hp_cp_positions(kpos, Sl * C, C, hp_failpoint(HP_FP_CP_KV_POSITIONS) ? r : s, load_balance);
}

static void *xmalloc(size_t nbytes, const char *who) {
    void *p = hp_mem_alloc(HP_MEM_SCRATCH, nbytes);   // the per-call K/V (docs/planner.md)
    if (!p) hp_cp_fail("%s: out of memory (%zu bytes)", who, nbytes);
    return p;
}

// The K/V moves. kv_bf16 (the bf16 policy: K and V are bf16 values): 2 bytes an element travel,
// narrowed and widened in place in the same float buffers, and the same floats arrive.
// all (C, 2n) <- every rank's mine (2n); mine is spent.
static void gather_kv(hp_comm *comm, float *all, float *mine, size_t n2, int kv_bf16) {
    if (!kv_bf16) { hp_allgather(comm, HP_G_CP, all, mine, n2); return; }
    hp_structure_check_bf16_wire(mine, n2, "cp K/V all-gather");
    hp_bf16_narrow_in_place(mine, n2);
    hp_allgather_bf16(comm, HP_G_CP, (hp_bf16 *)(void *)all, (const hp_bf16 *)(void *)mine, n2);
    hp_bf16_widen_in_place(all, (size_t)hp_comm_size(comm, HP_G_CP) * n2);
}
// nxt (n2) <- src's cur (n2), cur -> dst; cur is spent.
static void pass_kv(hp_comm *comm, float *nxt, int src, float *cur, int dst, size_t n2, int kv_bf16,
                    const char *what) {
    if (!kv_bf16) { hp_sendrecv(comm, HP_G_CP, nxt, src, cur, dst, n2); return; }
    hp_structure_check_bf16_wire(cur, n2, what);
    hp_bf16_narrow_in_place(cur, n2);
    hp_sendrecv_bf16(comm, HP_G_CP, (hp_bf16 *)(void *)nxt, src, (const hp_bf16 *)(void *)cur, dst, n2);
    hp_bf16_widen_in_place(nxt, n2);
}

// ----------------------------------------------------------------------------
// the blocks of one source

// Merges every visible (q chunk, kv chunk) block of source k/v into (out, lse).
static void fwd_source(const cp_ctx *x, float *out, float *lse, const float *q,
                       const float *k, const float *v, const int *kpos) {
    cp_chunk kc[MAX_CHUNKS];
    make_chunks(kc, kpos, x->Sl, x->nch);
    for (int a = 0; a < x->nch; a++)
    for (int b = 0; b < x->nch; b++) {
        cp_block cls = classify(&x->qc[a], &kc[b], x->skip_diag);
        if (cls == BLOCK_SKIP) { g_stats.skipped++; continue; }
        if (cls == BLOCK_FULL) g_stats.full++; else g_stats.diag++;
        g_stats.fwd_calls++;
        g_stats.fwd_pairs += (uint64_t)x->B * x->H * (uint64_t)(x->qc[a].hi - x->qc[a].lo) *
                             (uint64_t)(kc[b].hi - kc[b].lo);
        (x->bf16 ? hp_attention_forward_bf16 : hp_attention_forward)(
            out, lse, q, k, v, x->qpos, kpos, x->B, x->Sl, x->Sl, x->H, x->Hkv, x->hd, x->qc[a].lo,
            x->qc[a].hi, kc[b].lo, kc[b].hi);
    }
}

// Accumulates the grads of the same blocks: dq (this rank's) and dk/dv (the source's).
static void bwd_source(const cp_ctx *x, float *dq, float *dk, float *dv, const float *dout,
                       const float *out, const float *lse, const float *q,
                       const float *k, const float *v, const int *kpos) {
    cp_chunk kc[MAX_CHUNKS];
    make_chunks(kc, kpos, x->Sl, x->nch);
    for (int a = 0; a < x->nch; a++)
    for (int b = 0; b < x->nch; b++) {
        if (classify(&x->qc[a], &kc[b], x->skip_diag) == BLOCK_SKIP) continue;
        g_stats.bwd_calls++;
        g_stats.bwd_pairs += (uint64_t)x->B * x->H * (uint64_t)(x->qc[a].hi - x->qc[a].lo) *
                             (uint64_t)(kc[b].hi - kc[b].lo);
        (x->bf16 ? hp_attention_backward_bf16 : hp_attention_backward)(
            dq, dk, dv, dout, out, lse, q, k, v, x->qpos, kpos, x->B, x->Sl, x->Sl, x->H, x->Hkv,
            x->hd, x->qc[a].lo, x->qc[a].hi, kc[b].lo, kc[b].hi);
    }
}

static cp_ctx make_ctx(const int *pos, int load_balance, int C, int B, int Sl, int H, int Hkv, int hd) {
    cp_ctx x = { .B = B, .Sl = Sl, .H = H, .Hkv = Hkv, .hd = hd, .qpos = pos };
    x.nch = (C > 1 && load_balance) ? 2 : 1;
    x.skip_diag = C > 1 && hp_failpoint(HP_FP_CP_SKIP_DIAGONAL);
    make_chunks(x.qc, pos, Sl, x.nch);
    return x;
}

// ----------------------------------------------------------------------------
// forward

void hp_cp_attention_forward(hp_comm *comm, hp_cp_rotate rotate, int load_balance, int kv_bf16,
                             float *out, float *lse,
                             const float *q, const float *k, const float *v, const int *pos,
                             int B, int Sl, int H, int Hkv, int hd) {
    const char *who = "hp_cp_attention_forward";
    check_args(who, comm, rotate, load_balance, pos, B, Sl, H, Hkv, hd);
    const size_t nrow = (size_t)B * Sl * H;
    // every rank of the group has the same B and Sl, so all return here together
    if (nrow == 0) return;
    memset(out, 0, nrow * hd * sizeof *out);
    for (size_t i = 0; i < nrow; i++) lse[i] = -INFINITY;

    const int C = hp_comm_size(comm, HP_G_CP), r = hp_comm_rank(comm, HP_G_CP);
    cp_ctx x = make_ctx(pos, load_balance, C, B, Sl, H, Hkv, hd);
    x.bf16 = kv_bf16;
    if (C == 1) { fwd_source(&x, out, lse, q, k, v, pos); return; }

    const size_t n = (size_t)B * Sl * Hkv * hd; // floats in one rank's K (and in its V)
    int *kpos = xmalloc((size_t)Sl * sizeof *kpos, who);
    if (rotate == HP_ROTATE_ALLGATHER) {
        float *mine = xmalloc(2 * n * sizeof *mine, who);       // (2, n): K then V
        float *all = xmalloc((size_t)C * 2 * n * sizeof *all, who); // (C, 2, n)
        memcpy(mine, k, n * sizeof *mine);
        memcpy(mine + n, v, n * sizeof *mine);
        gather_kv(comm, all, mine, 2 * n, kv_bf16);
        for (int i = 0; i < C; i++) {
            const int s = (r - i + C) % C;
            const float *kv = all + (size_t)s * 2 * n;
            source_positions(kpos, Sl, C, r, s, load_balance);
            fwd_source(&x, out, lse, q, kv, kv + n, kpos);
        }
        hp_mem_free(all);
        hp_mem_free(mine);
    } else {
        float *cur = xmalloc(2 * n * sizeof *cur, who);  // (2, n): the K/V held this step
        float *nxt = xmalloc(2 * n * sizeof *nxt, who);
        memcpy(cur, k, n * sizeof *cur);
        memcpy(cur + n, v, n * sizeof *cur);
        for (int i = 0; i < C; i++) {
            const int s = (r - i + C) % C;
            source_positions(kpos, Sl, C, r, s, load_balance);
            fwd_source(&x, out, lse, q, cur, cur + n, kpos);
            if (i == C - 1) break; // the last block need not move on
            pass_kv(comm, nxt, (r - 1 + C) % C, cur, (r + 1) % C, 2 * n, kv_bf16, "cp K/V ring");
            float *t = cur; cur = nxt; nxt = t;
        }
        hp_mem_free(nxt);
        hp_mem_free(cur);
    }
    hp_mem_free(kpos);
}

// ----------------------------------------------------------------------------
// backward

void hp_cp_attention_backward(hp_comm *comm, hp_cp_rotate rotate, int load_balance, int kv_bf16,
                              float *dq, float *dk, float *dv, const float *dout,
                              const float *out, const float *lse,
                              const float *q, const float *k, const float *v, const int *pos,
                              int B, int Sl, int H, int Hkv, int hd) {
    const char *who = "hp_cp_attention_backward";
    check_args(who, comm, rotate, load_balance, pos, B, Sl, H, Hkv, hd);
    if ((size_t)B * Sl == 0) return;

    const int C = hp_comm_size(comm, HP_G_CP), r = hp_comm_rank(comm, HP_G_CP);
    cp_ctx x = make_ctx(pos, load_balance, C, B, Sl, H, Hkv, hd);
    x.bf16 = kv_bf16;
    if (C == 1) { bwd_source(&x, dq, dk, dv, dout, out, lse, q, k, v, pos); return; }

    const size_t n = (size_t)B * Sl * Hkv * hd;
    int *kpos = xmalloc((size_t)Sl * sizeof *kpos, who);
    if (rotate == HP_ROTATE_ALLGATHER) {
        // K/V of every source again, then this rank's dK/dV contribution to each source's
        // block in its own slot; one reduce-scatter sums the slots at their owners in
        // group-rank order (deterministic comm).
        float *mine = xmalloc(2 * n * sizeof *mine, who);
        float *all = xmalloc((size_t)C * 2 * n * sizeof *all, who);   // (C, 2, n) K/V
        float *dall = xmalloc((size_t)C * 2 * n * sizeof *dall, who);          // (C, 2, n) dK/dV
        if (!dall) hp_cp_fail("%s: out of memory (%zu floats)", who, (size_t)C * 2 * n);
        memcpy(mine, k, n * sizeof *mine);
        memcpy(mine + n, v, n * sizeof *mine);
        gather_kv(comm, all, mine, 2 * n, kv_bf16);
        for (int i = 0; i < C; i++) {
            const int s = (r - i + C) % C;
            const float *kv = all + (size_t)s * 2 * n;
            float *dkv = dall + (size_t)s * 2 * n;
            source_positions(kpos, Sl, C, r, s, load_balance);
            bwd_source(&x, dq, dkv, dkv + n, dout, out, lse, q, kv, kv + n, kpos);
        }
        hp_reduce_scatter(comm, HP_G_CP, mine, dall, 2 * n); // mine <- summed dK/dV
        for (size_t j = 0; j < n; j++) { dk[j] += mine[j]; dv[j] += mine[n + j]; }
        hp_mem_free(dall);
        hp_mem_free(all);
        hp_mem_free(mine);
    } else {
        // The block travels as (K, V, dK, dV): each holder adds its contribution to the
        // block's dK/dV before passing it on. After step i rank r holds source (r-i)'s
        // block; at the last step (i = C-1) that is source r+1, so one more hop of dK/dV
        // alone delivers every accumulator (now summed over all C ranks) to its owner.
        // dK/dV thus make C hops in all: a full circle.
        float *cur = xmalloc(4 * n * sizeof *cur, who); // (4, n): K, V, dK, dV held this step
        float *nxt = xmalloc(4 * n * sizeof *nxt, who);
        memcpy(cur, k, n * sizeof *cur);
        memcpy(cur + n, v, n * sizeof *cur);
        memset(cur + 2 * n, 0, 2 * n * sizeof *cur);
        const int dst = (r + 1) % C, src = (r - 1 + C) % C;
        for (int i = 0; i < C; i++) {
            const int s = (r - i + C) % C;
            source_positions(kpos, Sl, C, r, s, load_balance);
            bwd_source(&x, dq, cur + 2 * n, cur + 3 * n, dout, out, lse, q, cur, cur + n, kpos);
            if (i < C - 1 && kv_bf16) {   // K/V in 2 bytes, then the fp32 dK/dV accumulators
                pass_kv(comm, nxt, src, cur, dst, 2 * n, 1, "cp K/V ring");
                // (the bug of cp_bf16_dkv_ring: the accumulators travel in bf16 too)
                pass_kv(comm, nxt + 2 * n, src, cur + 2 * n, dst, 2 * n,
                        hp_failpoint(HP_FP_CP_BF16_DKV_RING), "cp dK/dV ring");
                hp_structure_check_fp32_arrival(nxt + 2 * n, 2 * n, "cp dK/dV ring");
            }
            else if (i < C - 1) hp_sendrecv(comm, HP_G_CP, nxt, src, cur, dst, 4 * n);
            else if (hp_failpoint(HP_FP_RING_LAST_HOP_DROPPED)) break;   // the bug: kept here
            else           hp_sendrecv(comm, HP_G_CP, nxt + 2 * n, src, cur + 2 * n, dst, 2 * n);
            float *t = cur; cur = nxt; nxt = t;
        }
        // cur now holds this rank's own dK/dV (in its dK/dV half), summed over all ranks
        for (size_t j = 0; j < n; j++) { dk[j] += cur[2 * n + j]; dv[j] += cur[3 * n + j]; }
        hp_mem_free(nxt);
        hp_mem_free(cur);
    }
    hp_mem_free(kpos);
}
