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
#include "hyperpar/failpoint.h"
#include "hyperpar/kernels.h"
#include "hyperpar/memtrack.h"
#include "tp.h"

int hp_tp_init(hp_tp_state *st, hp_comm *comm, const hp_local_shapes *sh) {
    st->comm = comm;
    st->sh = *sh;
    const size_t reg = (size_t)sh->Nreg;
    st->buf = hp_mem_alloc(HP_MEM_SCRATCH, (reg * (size_t)sh->D + 1) * sizeof(float));
    st->ce_tl = hp_mem_alloc(HP_MEM_SCRATCH, (reg + 1) * sizeof(float));
    return st->buf && st->ce_tl ? 0 : -1;
}

void hp_tp_free(hp_tp_state *st) {
    hp_mem_free(st->buf);
    hp_mem_free(st->ce_tl);
    st->buf = st->ce_tl = NULL;
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

static void blocks_to_seq(const hp_tp_state *st, float *seq, const float *blocks, int D) {
    const int T = st->sh.T;
    const size_t run = (size_t)st->sh.Ss * (size_t)D;
    for (int t = 0; t < T; t++)
        for (int b = 0; b < st->sh.Bl; b++)
            memcpy(seq + ((size_t)b * st->sh.Sc + (size_t)t * st->sh.Ss) * D,
                   blocks + ((size_t)t * st->sh.Bl + b) * run, run * sizeof(float));
}

void hp_tp_region_enter(hp_tp_state *st, float *out, const float *in, int D) {
    const size_t nres = (size_t)st->sh.Nres * D;
    if (sp_on(st)) {
        hp_allgather(st->comm, HP_G_TP, st->buf, in, nres);
        if (hp_failpoint(HP_FP_SP_ALLGATHER_LAYOUT))   // the bug: blocks taken as rows
            memcpy(out, st->buf, (size_t)st->sh.T * nres * sizeof(float));
        else
            blocks_to_seq(st, out, st->buf, D);
    } else {
        memcpy(out, in, nres * sizeof(float));
    }
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
        hp_allgather(st->comm, HP_G_TP, st->buf, dout, nres);
        blocks_to_seq(st, din, st->buf, D);
    } else {
        memcpy(din, dout, nres * sizeof(float));
    }
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
