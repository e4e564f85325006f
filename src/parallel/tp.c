// tp.c - tensor-parallel regions (Megatron's f/g operators, TorchTitan's PrepareModuleInput
// and Rowwise output layouts) and the vocab-parallel cross-entropy (loss parallel).
//
// Under sequence parallel the residual stream of a tp rank is its slice of the sequence:
// tp rank t holds positions [t*Ss, (t+1)*Ss) of every one of its Bl cp-local sequences.
// Collectives move [T][Bl][Ss][D] blocks; the transposes below keep the batch index right
// (a token's row is b*Sc + t*Ss + j, never t*Ss + j: the #3604 lesson).
#include <math.h>
#include <string.h>
#include "hyperpar/failpoint.h"
#include "hyperpar/kernels.h"
#include "train/trainer_internal.h"

static int sp_on(const hp_trainer *tr) { return tr->d.sp > 0 && tr->d.tp > 1; }

// (Bl, Sc, D) <-> [T][Bl][Ss][D]
static void seq_to_blocks(const hp_trainer *tr, float *blocks, const float *seq, int D) {
    const int T = tr->d.tp;
    const size_t run = (size_t)tr->Ss * (size_t)D;
    for (int t = 0; t < T; t++)
        for (int b = 0; b < tr->Bl; b++)
            memcpy(blocks + ((size_t)t * tr->Bl + b) * run,
                   seq + ((size_t)b * tr->Sc + (size_t)t * tr->Ss) * D, run * sizeof(float));
}

static void blocks_to_seq(const hp_trainer *tr, float *seq, const float *blocks, int D) {
    const int T = tr->d.tp;
    const size_t run = (size_t)tr->Ss * (size_t)D;
    for (int t = 0; t < T; t++)
        for (int b = 0; b < tr->Bl; b++)
            memcpy(seq + ((size_t)b * tr->Sc + (size_t)t * tr->Ss) * D,
                   blocks + ((size_t)t * tr->Bl + b) * run, run * sizeof(float));
}

void hp_tp_region_enter(hp_trainer *tr, float *out, const float *in, int D) {
    const size_t nres = (size_t)tr->Nres * D;
    if (sp_on(tr)) {
        hp_allgather(tr->comm, HP_G_TP, tr->tp_buf, in, nres);
        if (hp_failpoint(HP_FP_SP_ALLGATHER_LAYOUT))   // the bug: blocks taken as rows
            memcpy(out, tr->tp_buf, (size_t)tr->d.tp * nres * sizeof(float));
        else
            blocks_to_seq(tr, out, tr->tp_buf, D);
    } else {
        memcpy(out, in, nres * sizeof(float));
    }
}

void hp_tp_region_enter_backward(hp_trainer *tr, float *din, float *dout, int D) {
    const size_t nres = (size_t)tr->Nres * D;
    if (sp_on(tr)) {
        seq_to_blocks(tr, tr->tp_buf, dout, D);
        hp_reduce_scatter(tr->comm, HP_G_TP, din, tr->tp_buf, nres);
    } else {
        hp_allreduce_sum(tr->comm, HP_G_TP, dout, nres);
        memcpy(din, dout, nres * sizeof(float));
    }
}

void hp_tp_region_exit(hp_trainer *tr, float *out, float *in, int D) {
    const size_t nres = (size_t)tr->Nres * D;
    if (sp_on(tr)) {
        seq_to_blocks(tr, tr->tp_buf, in, D);
        hp_reduce_scatter(tr->comm, HP_G_TP, out, tr->tp_buf, nres);
        if (hp_failpoint(HP_FP_SP_REDUCE_SCATTER_MEAN))   // the bug: a mean, not a sum
            for (size_t i = 0; i < nres; i++) out[i] /= (float)tr->d.tp;
    } else {
        hp_allreduce_sum(tr->comm, HP_G_TP, in, nres);
        memcpy(out, in, nres * sizeof(float));
    }
}

void hp_tp_region_exit_backward(hp_trainer *tr, float *din, const float *dout, int D) {
    const size_t nres = (size_t)tr->Nres * D;
    if (sp_on(tr)) {
        hp_allgather(tr->comm, HP_G_TP, tr->tp_buf, dout, nres);
        blocks_to_seq(tr, din, tr->tp_buf, D);
    } else {
        memcpy(din, dout, nres * sizeof(float));
    }
}

// Loss parallel: each tp rank holds the logits of its vocab slice; the full-vocab max,
// sum of exponentials and target logit each take one all-reduce over tp.
double hp_tp_cross_entropy(hp_trainer *tr, const float *logits, const int *labels,
                           float *m, float *se) {
    const int N = tr->Nreg;
    hp_ce_local_max(m, logits, N, tr->Vl);
    if (!hp_failpoint(HP_FP_CE_MAX_LOCAL))   // the bug: "softmax is shift-invariant anyway"
        hp_allreduce_max(tr->comm, HP_G_TP, m, (size_t)N);
    hp_ce_local_sumexp(se, logits, m, N, tr->Vl);
    hp_allreduce_sum(tr->comm, HP_G_TP, se, (size_t)N);
    hp_ce_local_target(tr->ce_tl, logits, labels, tr->v0, N, tr->Vl);
    if (!hp_failpoint(HP_FP_CE_TARGET_DROPPED))
        hp_allreduce_sum(tr->comm, HP_G_TP, tr->ce_tl, (size_t)N);
    double sum = 0.0;
    for (int i = 0; i < N; i++)
        if (labels[i] != -100) sum += log((double)se[i]) + (double)m[i] - (double)tr->ce_tl[i];
    return sum;
}
