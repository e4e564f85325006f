// tp.c - tensor-parallel regions (Megatron's f/g operators, TorchTitan's PrepareModuleInput
// and Rowwise output layouts) and the vocab-parallel cross-entropy (loss parallel).
//
// Under sequence parallel the residual stream of a tp rank is its slice of the sequence:
// tp rank t holds positions [t*Ss, (t+1)*Ss) of every one of its Bl cp-local sequences.
// Collectives move [T][Bl][Ss][D] blocks; the transposes below keep the batch index right
// (a token's row is b*Sc + t*Ss + j, never t*Ss + j: the #3604 lesson).
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "hyperpar/bf16.h"
#include "hyperpar/failpoint.h"
#include "hyperpar/float8.h"
#include "hyperpar/kernels.h"
#include "hyperpar/memtrack.h"
#include "hyperpar/structure.h"
#include "tp.h"

int hp_tp_init(hp_tp_state *st, hp_comm *comm, const hp_local_shapes *sh, int wire_bf16) {
    st->comm = comm;
    st->sh = *sh;
    st->wire_bf16 = wire_bf16;
    const size_t reg = (size_t)sh->Nreg;
    st->buf = hp_mem_alloc(HP_MEM_SCRATCH, (reg * (size_t)sh->D + 1) * sizeof(float));
    st->ce_tl = hp_mem_alloc(HP_MEM_SCRATCH, (reg + 1) * sizeof(float));
    return st->buf && st->ce_tl ? 0 : -1;
}

void hp_tp_free(hp_tp_state *st) {
    hp_mem_free(st->buf);
    hp_mem_free(st->ce_tl);
    hp_mem_free(st->rs_rows);
    hp_mem_free(st->reqs);
    st->buf = st->ce_tl = st->rs_rows = NULL;
    st->reqs = NULL;
}

int hp_tp_set_async(hp_tp_state *st, int on) {
    // (async_tp_not_applied, torchtitan#3869's shape: the flag accepted, the plain path run)
    st->async = on && st->sh.sp && st->sh.T > 1 && !hp_failpoint(HP_FP_ASYNC_TP_NOT_APPLIED);
    if (!st->async) return 0;
    const size_t full = (size_t)st->sh.T * st->sh.Nres * st->sh.D;
    st->rs_rows = hp_mem_alloc(HP_MEM_SCRATCH, (full + 1) * sizeof(float));
    st->reqs = hp_mem_alloc(HP_MEM_SCRATCH, 2 * (size_t)st->sh.T * sizeof(MPI_Request));
    return st->rs_rows && st->reqs ? 0 : -1;
}

long hp_tp_take_async_ops(hp_tp_state *st) {
    const long n = st->async_ops;
    st->async_ops = 0;
    return n;
}

static int sp_on(const hp_tp_state *st) { return st->sh.sp; }

// (Bl, Sc, D) <-> [T][Bl][Ss][D]
static void seq_to_blocks(const hp_tp_state *st, float *blocks, const float *seq, int D) {
    const int T = st->sh.T;
    const size_t run = (size_t)st->sh.Ss * (size_t)D;
    for (int t = 0; t < T; t++)
        for (int b = 0; b < st->sh.Bl; b++)
            memcpy(blocks + ((size_t)t * st->sh.Bl + b) * run,
                   seq + ((size_t)b * st->sh.Sc + (size_t)t * st->sh.Ss) * D, run * sizeof(float));
}

// The gathered shards in buf, [T][Bl][Ss][D]: floats, under wire_bf16 the 2-byte values at
// the start of buf, during a float8 gather (fp8_scale > 0) 1-byte codes there.
// gathered(st, dst, i, n): dst (n floats) = elements [i, i+n) of them.
static hp_bf16 *gathered16(const hp_tp_state *st) { return (hp_bf16 *)(void *)st->buf; }
static hp_fp8 *gathered8(const hp_tp_state *st) { return (hp_fp8 *)(void *)st->buf; }
static void gathered(const hp_tp_state *st, float *dst, size_t i, size_t n) {
    if (st->fp8_scale > 0.0f) hp_fp8_dequantize(dst, gathered8(st) + i, n, st->fp8_scale, st->fp8_format);
    else if (st->wire_bf16) hp_bf16_unpack(dst, gathered16(st) + i, n);
    else memcpy(dst, st->buf + i, n * sizeof(float));
}

// The SP all-gather of this rank's shard in (nres floats) into buf. The bf16 policy's shards
// (normed activations, the residual gradient) are bf16 values: they travel in 2 bytes.
static void gather_shards(hp_tp_state *st, const float *in, size_t nres, const char *what) {
    if (!st->wire_bf16) { hp_allgather(st->comm, HP_G_TP, st->buf, in, nres); return; }
    hp_structure_check_bf16_wire(in, nres, what);
    hp_bf16 *own = gathered16(st) + (size_t)hp_comm_rank(st->comm, HP_G_TP) * nres;
    hp_bf16_pack(own, in, nres);
    hp_allgather_bf16(st->comm, HP_G_TP, gathered16(st), own, nres);
}

static void blocks_to_seq(const hp_tp_state *st, float *seq, int D) {   // from the gathered buf
    const int T = st->sh.T;
    const size_t run = (size_t)st->sh.Ss * (size_t)D;
    for (int t = 0; t < T; t++)
        for (int b = 0; b < st->sh.Bl; b++)
            gathered(st, seq + ((size_t)b * st->sh.Sc + (size_t)t * st->sh.Ss) * D,
                     ((size_t)t * st->sh.Bl + b) * run, run);
}

void hp_tp_region_enter(hp_tp_state *st, float *out, const float *in, int D) {
    const size_t nres = (size_t)st->sh.Nres * D;
    if (sp_on(st)) {
        gather_shards(st, in, nres, "tp sequence all-gather");
        if (hp_failpoint(HP_FP_SP_ALLGATHER_LAYOUT))   // the bug: blocks taken as rows
            gathered(st, out, 0, (size_t)st->sh.T * nres);
        else
            blocks_to_seq(st, out, D);
    } else {
        memcpy(out, in, nres * sizeof(float));
    }
}

int hp_tp_sp_gathers(const hp_tp_state *st) { return sp_on(st) && st->sh.T > 1; }

// The structure check of a float8 SP all-gather: this rank's codes must be the cast of its shard
// with the scale and format it was asked for (the scale itself is checked where its amax is
// MAX-reduced over tp: float8 scales).
static void check_fp8_codes(const hp_tp_state *st, const hp_fp8 *own, const float *in, size_t n) {
    if (!hp_structure_enabled()) return;
    for (size_t i = 0; i < n; i++)
        if (own[i] != hp_fp8_from_float(in[i] * st->fp8_scale, st->fp8_format)) {
            hp_structure_fail(HP_CHECK_FLOAT8_SP_GATHER, "element %zu of this rank's shard (%.9g) "
                              "travels as code 0x%02x, the %s cast with scale %.9g is 0x%02x", i,
                              (double)in[i], own[i], st->fp8_format == HP_FP8_E5M2 ? "e5m2" : "e4m3",
                              (double)st->fp8_scale, hp_fp8_from_float(in[i] * st->fp8_scale, st->fp8_format));
            return;
        }
    hp_structure_pass(HP_CHECK_FLOAT8_SP_GATHER);
}

// This rank's shard of a float8 SP all-gather cast into its slot of buf (1-byte codes); the
// gathered codes decode with (fp8_scale, fp8_format) until the gather is done.
static hp_fp8 *quantize_own(hp_tp_state *st, const float *in, size_t nres, float scale, hp_fp8_format format) {
    hp_fp8 *own = gathered8(st) + (size_t)hp_comm_rank(st->comm, HP_G_TP) * nres;
    st->fp8_scale = scale;
    st->fp8_format = format;
    // (float8_sp_gather_e4m3: the bug casts every gathered shard to e4m3, grad_output too,
    //  whose range (448) clips what e5m2 (57344) keeps)
    hp_fp8_quantize(own, in, nres, scale, hp_failpoint(HP_FP_FLOAT8_SP_GATHER_E4M3) ? HP_FP8_E4M3 : format);
    check_fp8_codes(st, own, in, nres);
    return own;
}

void hp_tp_region_enter_backward(hp_tp_state *st, float *din, float *dout, int D) {
    const size_t nres = (size_t)st->sh.Nres * D;
    if (sp_on(st)) {
        seq_to_blocks(st, st->buf, dout, D);
        hp_reduce_scatter(st->comm, HP_G_TP, din, st->buf, nres);
    } else {
        hp_allreduce_sum(st->comm, HP_G_TP, dout, nres);
        memcpy(din, dout, nres * sizeof(float));
    }
}

void hp_tp_region_exit(hp_tp_state *st, float *out, float *in, int D) {
    const size_t nres = (size_t)st->sh.Nres * D;
    if (sp_on(st)) {
        seq_to_blocks(st, st->buf, in, D);
        hp_reduce_scatter(st->comm, HP_G_TP, out, st->buf, nres);
        if (hp_failpoint(HP_FP_SP_REDUCE_SCATTER_MEAN))   // the bug: a mean, not a sum
            for (size_t i = 0; i < nres; i++) out[i] /= (float)st->sh.T;
    } else {
        hp_allreduce_sum(st->comm, HP_G_TP, in, nres);
        memcpy(out, in, nres * sizeof(float));
    }
}

void hp_tp_region_exit_backward(hp_tp_state *st, float *din, const float *dout, int D) {
    const size_t nres = (size_t)st->sh.Nres * D;
    if (sp_on(st)) {
        gather_shards(st, dout, nres, "tp sequence all-gather (backward)");
        blocks_to_seq(st, din, D);
    } else {
        memcpy(din, dout, nres * sizeof(float));
    }
}

// ---- GEMMs fused with the region's collective (docs/async_tp.md)

// Row blocks of member t: Bl runs of Ss rows, at b*Sc + t*Ss of the region's (Bl, Sc) rows.
static void run_blocks(const hp_tp_state *st, int t, hp_rows_fn *fn, void *ctx) {
    for (int b = 0; b < st->sh.Bl; b++) fn(ctx, b * st->sh.Sc + t * st->sh.Ss, st->sh.Ss);
}

// Member t's gathered shard (at t*nres of buf, [Bl][Ss][D]) into its rows of seq, placed as
// member `at`.
static void place_shard(const hp_tp_state *st, float *seq, int t, int at, int D) {
    const size_t run = (size_t)st->sh.Ss * (size_t)D;
    for (int b = 0; b < st->sh.Bl; b++)
        gathered(st, seq + ((size_t)b * st->sh.Sc + (size_t)at * st->sh.Ss) * D,
                 ((size_t)t * st->sh.Bl + b) * run, run);
}

// Member t's rows of seq into its block of blocks ([Bl][Ss][D] at t*nres).
static void take_shard(const hp_tp_state *st, float *blocks, const float *seq, int t, int D) {
    const size_t run = (size_t)st->sh.Ss * (size_t)D;
    if (hp_failpoint(HP_FP_ASYNC_TP_SCATTER_DIM) && D % st->sh.T == 0) {
        // (async_tp_scatter_dim, pytorch/pytorch#153595's shape: the partial scattered along
        //  its last dim - every row's columns [t*D/T, (t+1)*D/T) - not along the sequence; the
        //  same count, so nothing but the values shows it)
        const int Dt = D / st->sh.T;
        float *out = blocks + (size_t)t * st->sh.Bl * run;
        for (int r = 0; r < st->sh.Nreg; r++)
            memcpy(out + (size_t)r * Dt, seq + (size_t)r * D + (size_t)t * Dt, (size_t)Dt * sizeof(float));
        return;
    }
    for (int b = 0; b < st->sh.Bl; b++)
        memcpy(blocks + ((size_t)t * st->sh.Bl + b) * run,
               seq + ((size_t)b * st->sh.Sc + (size_t)t * st->sh.Ss) * D, run * sizeof(float));
}

// The blocking collective of a region, and the one it is on the other side of the model:
// enter (all-gather) and exit_backward (all-gather of dout) move res -> reg; exit
// (reduce-scatter) and enter_backward (reduce-scatter of dx) reg -> res.
typedef void region_fn(hp_tp_state *st, float *out, float *in, int D);
static void enter_fn(hp_tp_state *st, float *out, float *in, int D) { hp_tp_region_enter(st, out, in, D); }
static void exit_backward_fn(hp_tp_state *st, float *out, float *in, int D) {
    hp_tp_region_exit_backward(st, out, in, D);
}

// The posted all-gather's shards into out's rows and consume() over them: own member first,
// then member (me+s) mod T as its shard lands (the async side of gather_consume).
static void consume_as_landed(hp_tp_state *st, float *out, int D, hp_rows_fn *consume, void *ctx) {
    const int T = st->sh.T, me = hp_comm_rank(st->comm, HP_G_TP);
    for (int s = 0; s < T; s++) {
        const int t = (me + s) % T;
        if (s > 0) hp_allgather_wait_member(st->comm, HP_G_TP, st->reqs, t);
        // (async_tp_chunk_offset: the bug places and consumes the first peer's chunk at the
        //  next member's row offset: one block computed twice, another never)
        const int at = s == 1 && hp_failpoint(HP_FP_ASYNC_TP_CHUNK_OFFSET) ? (t + 1) % T : t;
        place_shard(st, out, t, at, D);
        run_blocks(st, at, consume, ctx);
    }
    hp_allgather_finish(st->comm, HP_G_TP, st->reqs);
    st->async_ops++;
}

// out (reg) = the SP all-gather of in (res), consume() over out's rows (see tp.h).
static void gather_consume(hp_tp_state *st, float *out, const float *in, int D, hp_rows_fn *consume,
                           void *ctx, region_fn *plain) {
    const int T = st->sh.T;
    if (!sp_on(st) || T == 1) {
        plain(st, out, (float *)in, D);
        consume(ctx, 0, st->sh.Nreg);
        return;
    }
    if (!st->async) {
        plain(st, out, (float *)in, D);
        for (int t = 0; t < T; t++) run_blocks(st, t, consume, ctx);
        return;
    }
    const size_t nres = (size_t)st->sh.Nres * D;
    const int me = hp_comm_rank(st->comm, HP_G_TP);
    if (st->wire_bf16) {   // (2 bytes, as the plain path: the own shard packed in its slot)
        hp_structure_check_bf16_wire(in, nres, "tp sequence all-gather (async)");
        hp_bf16 *own = gathered16(st) + (size_t)me * nres;
        hp_bf16_pack(own, in, nres);
        hp_allgather_post_bf16(st->comm, HP_G_TP, gathered16(st), own, nres, st->reqs);
    } else {
        hp_allgather_post(st->comm, HP_G_TP, st->buf, in, nres, st->reqs);
    }
    consume_as_landed(st, out, D, consume, ctx);
}

// out (res) = the SP reduce-scatter of partial (reg), whose rows produce() writes (see tp.h).
static void produce_scatter(hp_tp_state *st, float *out, float *partial, int D, hp_rows_fn *produce,
                            void *ctx, region_fn *plain, int forward) {
    const int T = st->sh.T;
    if (!sp_on(st) || T == 1) {
        produce(ctx, 0, st->sh.Nreg);
        plain(st, out, partial, D);
        return;
    }
    if (!st->async) {
        for (int t = 0; t < T; t++) run_blocks(st, t, produce, ctx);
        plain(st, out, partial, D);
        return;
    }
    const size_t nres = (size_t)st->sh.Nres * D;
    const int me = hp_comm_rank(st->comm, HP_G_TP);
    hp_reduce_scatter_post(st->comm, HP_G_TP, st->rs_rows, nres, st->reqs);
    for (int s = 1; s <= T; s++) {   // member (me+s) mod T at step s: mine last
        const int t = (me + s) % T;
        run_blocks(st, t, produce, ctx);
        take_shard(st, st->buf, partial, t, D);
        hp_reduce_scatter_send(st->comm, HP_G_TP, st->buf + (size_t)t * nres, nres, t, st->reqs);
    }
    hp_reduce_scatter_finish(st->comm, HP_G_TP, out, st->rs_rows, st->buf + (size_t)me * nres,
                             nres, st->reqs);
    if (forward && hp_failpoint(HP_FP_SP_REDUCE_SCATTER_MEAN))   // (the plain exit's bug, kept)
        for (size_t i = 0; i < nres; i++) out[i] /= (float)T;
    st->async_ops++;
}

void hp_tp_region_gather_fp8_consume(hp_tp_state *st, float *out, const float *in, int D, float scale,
                                     hp_fp8_format format, hp_rows_fn *consume, void *ctx) {
    const int T = st->sh.T;
    const size_t nres = (size_t)st->sh.Nres * D;
    hp_fp8 *own = quantize_own(st, in, nres, scale, format);
    if (!st->async) {   // the blocking gather (1 byte a code), then every member's row blocks
        hp_allgather_bytes(st->comm, HP_G_TP, gathered8(st), own, nres);
        if (hp_failpoint(HP_FP_SP_ALLGATHER_LAYOUT)) gathered(st, out, 0, (size_t)T * nres);
        else blocks_to_seq(st, out, D);
        for (int t = 0; t < T; t++) run_blocks(st, t, consume, ctx);
    } else {           // as gather_consume: own member first, then each peer's as it lands
        hp_allgather_post_bytes(st->comm, HP_G_TP, gathered8(st), own, nres, st->reqs);
        consume_as_landed(st, out, D, consume, ctx);
    }
    st->fp8_scale = 0.0f;
}

void hp_tp_region_enter_consume(hp_tp_state *st, float *out, const float *in, int D,
                                hp_rows_fn *consume, void *ctx) {
    gather_consume(st, out, in, D, consume, ctx, enter_fn);
}

void hp_tp_region_exit_produce(hp_tp_state *st, float *out, float *partial, int D,
                               hp_rows_fn *produce, void *ctx) {
    produce_scatter(st, out, partial, D, produce, ctx, hp_tp_region_exit, 1);
}

void hp_tp_region_exit_backward_consume(hp_tp_state *st, float *din, const float *dout, int D,
                                        hp_rows_fn *consume, void *ctx) {
    gather_consume(st, din, dout, D, consume, ctx, exit_backward_fn);
}

void hp_tp_region_enter_backward_produce(hp_tp_state *st, float *din, float *dout, int D,
                                         hp_rows_fn *produce, void *ctx) {
    produce_scatter(st, din, dout, D, produce, ctx, hp_tp_region_enter_backward, 0);
}

// Loss parallel: each tp rank holds the logits of its vocab slice; the full-vocab max,
// sum of exponentials and target logit each take one all-reduce over tp.
double hp_tp_cross_entropy(hp_tp_state *st, const float *logits, const int *labels,
                           float *m, float *se) {
    const int N = st->sh.Nreg;
    hp_ce_local_max(m, logits, N, st->sh.Vl);
    if (!hp_failpoint(HP_FP_CE_MAX_LOCAL))   // the bug: "softmax is shift-invariant anyway"
        hp_allreduce_max(st->comm, HP_G_TP, m, (size_t)N);
    hp_ce_local_sumexp(se, logits, m, N, st->sh.Vl);
    hp_allreduce_sum(st->comm, HP_G_TP, se, (size_t)N);
    hp_ce_local_target(st->ce_tl, logits, labels, st->sh.v0, N, st->sh.Vl);
    if (!hp_failpoint(HP_FP_CE_TARGET_DROPPED))
        hp_allreduce_sum(st->comm, HP_G_TP, st->ce_tl, (size_t)N);
    double sum = 0.0;
    for (int i = 0; i < N; i++)
        if (labels[i] != -100) sum += log((double)se[i]) + (double)m[i] - (double)st->ce_tl[i];
    return sum;
}
