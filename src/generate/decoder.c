// decoder.c - the model's forward for generation: a KV cache per block, the prompt in one
// forward and a token a step after it, on one process or on a tp x pp layout (generate.h).
// defines: hp_decoder_init, hp_decoder_free, hp_decoder_forward, hp_decoder_position,
//          hp_decoder_room, hp_decoder_vocab, hp_decoder_reset
//
// The same kernels as training's forward (kernels.h) in the same order per block:
//   h   = x + wo(attention(rope(wq n1), rope(wk n1), wv n1))   n1 = rmsnorm(x)
//   out = h + ffn(rmsnorm(h))          (dense SwiGLU, or the router's top-k experts + shared)
// with the rows of this call as queries and every cached position as keys. Each rank's
// weights are its local pieces under the layout's placements (hp_params_build), so a tp rank
// computes its heads and its slice of every hidden dim, and the outputs of wo and w2 (and
// the vocab-split embedding) are partial sums that one fixed-order all-reduce over tp
// completes, as in training. Only fp32: generation reads the fp32 master weights.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "hyperpar/comm.h"
#include "hyperpar/generate.h"
#include "hyperpar/kernels.h"
#include "hyperpar/params.h"

// One block's weights on this rank (NULL: absent in this block).
typedef struct decoder_block {
    const float *attn_norm, *wq, *wk, *wv, *wo, *ffn_norm;
    const float *w1, *w2, *w3;                 // dense FFN (Fl, D), (D, Fl), (Fl, D)
    const float *gate, *ew1, *ew2, *ew3;       // MoE: (E, D), (E, Fel, D), (E, D, Fel), (E, Fel, D)
    const float *sw1, *sw2, *sw3;              // shared experts (Fsl, D), (D, Fsl), (Fsl, D)
    float *kc, *vc;                            // the cache: (max_tokens, Hkvl * hd) each
} decoder_block;

struct hp_decoder {
    hp_model_config m;
    hp_dims d;
    hp_comm *comm;
    hp_param_table pt;
    float *weights;                 // every local piece, one allocation
    decoder_block *blocks;          // [L]; only this stage's have weights
    const float *tok, *norm, *out;  // (Vl, D), (D), (Vl, D)
    int tp, pp, pp_rank;
    int D, hd, Hl, Hkvl, Fl, Fel, Fsl, Vl, v0;
    int l0, l1;                     // this stage's blocks [l0, l1)
    int max_tokens, pos;
    // scratch for up to max_tokens rows
    float *x, *n, *q, *k, *v, *att, *lse, *o, *f1, *f3, *rope;
    int *qpos, *kpos, *ids;
    float *row, *logits_local, *logits_all;
    int *topk_idx;
    float *router, *topk_gate, *e1, *e3, *ey;
};

static void *alloc_zero(size_t n, size_t size) { return calloc(n ? n : 1, size); }

// This rank's piece of parameter name, copied out of the full model into *next; NULL when the
// parameter is absent or not on this rank.
static const float *take(hp_decoder *dec, const float *full, const char *name, float **next) {
    const int i = hp_params_find(&dec->pt, name);
    if (i < 0 || !dec->pt.p[i].on_rank) return NULL;
    const hp_param *p = &dec->pt.p[i];
    float *dst = *next;
    for (int64_t li = 0; li < p->local_numel; li++) dst[li] = full[p->full_offset + hp_param_global_index(p, li)];
    *next += p->local_numel;
    return dst;
}

static void take_block(hp_decoder *dec, const float *full, int l, float **next) {
    char nm[96];
    decoder_block *b = &dec->blocks[l];
#define TAKE(field, suffix) (snprintf(nm, sizeof nm, "layers.%d.%s", l, suffix), b->field = take(dec, full, nm, next))
    TAKE(attn_norm, "attention_norm.weight");
    TAKE(wq, "attention.wq.weight");
    TAKE(wk, "attention.wk.weight");
    TAKE(wv, "attention.wv.weight");
    TAKE(wo, "attention.wo.weight");
    TAKE(ffn_norm, "ffn_norm.weight");
    TAKE(w1, "feed_forward.w1.weight");
    TAKE(w2, "feed_forward.w2.weight");
    TAKE(w3, "feed_forward.w3.weight");
    TAKE(gate, "moe.router.gate.weight");
    TAKE(ew1, "moe.experts.w1");
    TAKE(ew2, "moe.experts.w2");
    TAKE(ew3, "moe.experts.w3");
    TAKE(sw1, "moe.shared_experts.w1.weight");
    TAKE(sw2, "moe.shared_experts.w2.weight");
    TAKE(sw3, "moe.shared_experts.w3.weight");
#undef TAKE
}

// The shapes this rank computes with, and the stage's blocks.
static void local_shapes(hp_decoder *dec) {
    const hp_model_config *m = &dec->m;
    dec->D = m->dim;
    dec->hd = hp_model_head_dim(m);
    dec->Hl = m->n_heads / dec->tp;
    dec->Hkvl = m->n_kv_heads / dec->tp;
    dec->Fl = m->ffn_hidden / dec->tp;
    const int moe = m->num_experts > 0;
    dec->Fel = moe ? m->moe_hidden / hp_dims_expert_tp(&dec->d) : 0;
    dec->Fsl = moe ? m->moe_hidden * m->n_shared_experts / dec->tp : 0;
    const int t = hp_params_find(&dec->pt, "tok_embeddings.weight");
    dec->Vl = (int)dec->pt.p[t].local_shape[0];
    dec->v0 = (int)dec->pt.p[t].local_start[0];
    dec->l0 = m->n_layers;
    dec->l1 = 0;
    char nm[96];
    for (int l = 0; l < m->n_layers; l++) {
        snprintf(nm, sizeof nm, "layers.%d.attention_norm.weight", l);
        const int i = hp_params_find(&dec->pt, nm);
        if (i >= 0 && dec->pt.p[i].on_rank) {
            if (l < dec->l0) dec->l0 = l;
            dec->l1 = l + 1;
        }
    }
}

static int alloc_scratch(hp_decoder *dec) {
    const size_t T = (size_t)dec->max_tokens, D = (size_t)dec->D, hd = (size_t)dec->hd;
    const size_t qd = (size_t)dec->Hl * hd, kvd = (size_t)dec->Hkvl * hd;
    size_t F = (size_t)dec->Fl > (size_t)dec->Fsl ? (size_t)dec->Fl : (size_t)dec->Fsl;
    if ((size_t)dec->Fel > F) F = (size_t)dec->Fel;
    const size_t E = (size_t)(dec->m.num_experts > 0 ? dec->m.num_experts : 1);
    const size_t K = (size_t)(dec->m.top_k > 0 ? dec->m.top_k : 1);
    dec->x = alloc_zero(T * D, sizeof(float));
    dec->n = alloc_zero(T * D, sizeof(float));
    dec->o = alloc_zero(T * D, sizeof(float));
    dec->q = alloc_zero(T * qd, sizeof(float));
    dec->att = alloc_zero(T * qd, sizeof(float));
    dec->lse = alloc_zero(T * (size_t)dec->Hl, sizeof(float));
    dec->k = alloc_zero(T * kvd, sizeof(float));
    dec->v = alloc_zero(T * kvd, sizeof(float));
    dec->f1 = alloc_zero(T * F, sizeof(float));
    dec->f3 = alloc_zero(T * F, sizeof(float));
    dec->rope = alloc_zero(T * hd, sizeof(float));
    dec->qpos = alloc_zero(T, sizeof(int));
    dec->kpos = alloc_zero(T, sizeof(int));
    dec->ids = alloc_zero(T, sizeof(int));
    dec->row = alloc_zero(D, sizeof(float));
    dec->logits_local = alloc_zero((size_t)dec->Vl, sizeof(float));
    dec->logits_all = alloc_zero((size_t)dec->Vl * (size_t)dec->tp, sizeof(float));
    dec->router = alloc_zero(2 * E, sizeof(float));
    dec->topk_idx = alloc_zero(K, sizeof(int));
    dec->topk_gate = alloc_zero(K, sizeof(float));
    dec->e1 = alloc_zero(F, sizeof(float));
    dec->e3 = alloc_zero(F, sizeof(float));
    dec->ey = alloc_zero(D, sizeof(float));
    for (int l = dec->l0; l < dec->l1; l++) {
        dec->blocks[l].kc = alloc_zero(T * kvd, sizeof(float));
        dec->blocks[l].vc = alloc_zero(T * kvd, sizeof(float));
        if (!dec->blocks[l].kc || !dec->blocks[l].vc) return -1;
    }
    for (size_t t = 0; t < T; t++) dec->kpos[t] = (int)t;
    return dec->x && dec->n && dec->o && dec->q && dec->att && dec->lse && dec->k && dec->v && dec->f1 &&
           dec->f3 && dec->rope && dec->qpos && dec->ids && dec->row && dec->logits_local && dec->logits_all &&
           dec->router && dec->topk_idx && dec->topk_gate && dec->e1 && dec->e3 && dec->ey ? 0 : -1;
}

hp_decoder *hp_decoder_init(MPI_Comm world, const hp_model_config *m, const hp_dims *d,
                            const float *full, int max_tokens, char *err, size_t errlen) {
    if (hp_dims_batch(d) != 1 || hp_dims_seq(d) != 1 || d->ep != 1) {
        snprintf(err, errlen, "generation runs under --tp and --pp only (one sequence: dp_replicate %d, dp_shard %d, "
                 "cp %d, ulysses %d and ep %d must be 1)", d->dp_replicate, d->dp_shard, d->cp, d->ulysses, d->ep);
        return NULL;
    }
    if (max_tokens < 1) {
        snprintf(err, errlen, "generation needs room for at least 1 position, got %d", max_tokens);
        return NULL;
    }
    int rank;
    MPI_Comm_rank(world, &rank);
    hp_decoder *dec = calloc(1, sizeof *dec);
    if (!dec) { snprintf(err, errlen, "out of memory (decoder)"); return NULL; }
    dec->m = *m;
    dec->d = *d;
    dec->tp = d->tp;
    dec->pp = d->pp;
    dec->max_tokens = max_tokens;
    if (hp_params_build(&dec->pt, m, d, rank) != 0) { free(dec); snprintf(err, errlen, "out of memory (parameter table)"); return NULL; }
    dec->comm = hp_comm_init(world, d, 1);
    dec->pp_rank = hp_comm_rank(dec->comm, HP_G_PP);
    dec->blocks = alloc_zero((size_t)m->n_layers, sizeof *dec->blocks);
    int64_t n_local = 0;
    for (int i = 0; i < dec->pt.n; i++)
        if (dec->pt.p[i].on_rank) n_local += dec->pt.p[i].local_numel;
    dec->weights = alloc_zero((size_t)n_local, sizeof(float));
    if (!dec->blocks || !dec->weights) { hp_decoder_free(dec); snprintf(err, errlen, "out of memory (weights)"); return NULL; }
    local_shapes(dec);
    float *next = dec->weights;
    dec->tok = take(dec, full, "tok_embeddings.weight", &next);
    for (int l = dec->l0; l < dec->l1; l++) take_block(dec, full, l, &next);
    dec->norm = take(dec, full, "norm.weight", &next);
    dec->out = take(dec, full, "output.weight", &next);
    if (alloc_scratch(dec) != 0) {
        hp_decoder_free(dec);
        snprintf(err, errlen, "out of memory (the KV cache of %d positions)", max_tokens);
        return NULL;
    }
    return dec;
}

void hp_decoder_free(hp_decoder *dec) {
    if (!dec) return;
    if (dec->blocks)
        for (int l = 0; l < dec->m.n_layers; l++) { free(dec->blocks[l].kc); free(dec->blocks[l].vc); }
    void *bufs[] = { dec->x, dec->n, dec->o, dec->q, dec->att, dec->lse, dec->k, dec->v, dec->f1, dec->f3,
                     dec->rope, dec->qpos, dec->kpos, dec->ids, dec->row, dec->logits_local, dec->logits_all,
                     dec->router, dec->topk_idx, dec->topk_gate, dec->e1, dec->e3, dec->ey, dec->blocks,
                     dec->weights };
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) free(bufs[i]);
    if (dec->comm) hp_comm_free(dec->comm);
    hp_params_free(&dec->pt);
    free(dec);
}

int hp_decoder_position(const hp_decoder *dec) { return dec->pos; }
int hp_decoder_room(const hp_decoder *dec) { return dec->max_tokens; }
int hp_decoder_vocab(const hp_decoder *dec) { return dec->m.vocab_size; }
void hp_decoder_reset(hp_decoder *dec) { dec->pos = 0; }

// The routed experts and shared experts of one row r (x: its normed input), into y (D): a
// partial sum over tp when the hidden dims are split.
static void moe_row(hp_decoder *dec, const decoder_block *b, float *y, const float *x) {
    const hp_model_config *m = &dec->m;
    const int D = dec->D, E = m->num_experts, K = m->top_k, F = dec->Fel, Fs = dec->Fsl;
    float *logits = dec->router, *scores = dec->router + E;
    hp_linear_forward(logits, x, b->gate, 1, D, E);
    hp_router_scores_forward(scores, logits, 1, E, m->score_func);
    hp_router_topk(dec->topk_idx, dec->topk_gate, scores, 1, E, K, m->route_norm, m->route_scale);
    memset(y, 0, (size_t)D * sizeof(float));
    for (int j = 0; j < K; j++) {
        const size_t e = (size_t)dec->topk_idx[j];
        hp_linear_forward(dec->e1, x, b->ew1 + e * F * D, 1, D, F);
        hp_linear_forward(dec->e3, x, b->ew3 + e * F * D, 1, D, F);
        hp_swiglu_forward(dec->e1, dec->e1, dec->e3, (size_t)F);
        hp_linear_forward(dec->ey, dec->e1, b->ew2 + e * D * F, 1, F, D);
        for (int i = 0; i < D; i++) y[i] += dec->topk_gate[j] * dec->ey[i];
    }
    if (Fs > 0) {
        hp_linear_forward(dec->e1, x, b->sw1, 1, D, Fs);
        hp_linear_forward(dec->e3, x, b->sw3, 1, D, Fs);
        hp_swiglu_forward(dec->e1, dec->e1, dec->e3, (size_t)Fs);
        hp_linear_forward(dec->ey, dec->e1, b->sw2, 1, Fs, D);
        for (int i = 0; i < D; i++) y[i] += dec->ey[i];
    }
}

static void add_rows(float *x, const float *y, size_t n) { for (size_t i = 0; i < n; i++) x[i] += y[i]; }

// Block l on the n rows of dec->x at positions pos..pos+n-1.
static void block_forward(hp_decoder *dec, int l, int n) {
    const hp_model_config *m = &dec->m;
    decoder_block *b = &dec->blocks[l];
    const int D = dec->D, hd = dec->hd, Hl = dec->Hl, Hkvl = dec->Hkvl, kvd = Hkvl * hd;
    const size_t nd = (size_t)n * D;
    hp_rmsnorm_forward(dec->n, dec->lse, dec->x, b->attn_norm, m->norm_eps, n, D);   // (lse: rstd scratch)
    hp_linear_forward(dec->q, dec->n, b->wq, n, D, Hl * hd);
    hp_linear_forward(dec->k, dec->n, b->wk, n, D, kvd);
    hp_linear_forward(dec->v, dec->n, b->wv, n, D, kvd);
    hp_rope_forward(dec->q, dec->rope, 1, n, Hl, hd);
    hp_rope_forward(dec->k, dec->rope, 1, n, Hkvl, hd);
    memcpy(b->kc + (size_t)dec->pos * kvd, dec->k, (size_t)n * kvd * sizeof(float));
    memcpy(b->vc + (size_t)dec->pos * kvd, dec->v, (size_t)n * kvd * sizeof(float));
    const int Sk = dec->pos + n;
    memset(dec->att, 0, (size_t)n * Hl * hd * sizeof(float));
    for (size_t i = 0; i < (size_t)n * Hl; i++) dec->lse[i] = -INFINITY;
    hp_attention_forward(dec->att, dec->lse, dec->q, b->kc, b->vc, dec->qpos, dec->kpos, 1, n, Sk, Hl, Hkvl, hd,
                         0, n, 0, Sk);
    hp_linear_forward(dec->o, dec->att, b->wo, n, Hl * hd, D);
    if (dec->tp > 1) hp_allreduce_sum(dec->comm, HP_G_TP, dec->o, nd);
    add_rows(dec->x, dec->o, nd);

    hp_rmsnorm_forward(dec->n, dec->lse, dec->x, b->ffn_norm, m->norm_eps, n, D);
    if (b->gate) {
        for (int r = 0; r < n; r++) moe_row(dec, b, dec->o + (size_t)r * D, dec->n + (size_t)r * D);
    } else {
        hp_linear_forward(dec->f1, dec->n, b->w1, n, D, dec->Fl);
        hp_linear_forward(dec->f3, dec->n, b->w3, n, D, dec->Fl);
        hp_swiglu_forward(dec->f1, dec->f1, dec->f3, (size_t)n * dec->Fl);
        hp_linear_forward(dec->o, dec->f1, b->w2, n, dec->Fl, D);
    }
    if (dec->tp > 1) hp_allreduce_sum(dec->comm, HP_G_TP, dec->o, nd);
    add_rows(dec->x, dec->o, nd);
}

// The RoPE table of positions pos..pos+n-1 (training's formula, rescaled as the model says).
static void rope_rows(hp_decoder *dec, int n) {
    const hp_model_config *m = &dec->m;
    for (int i = 0; i < n; i++) dec->qpos[i] = dec->pos + i;
    if (m->rope_factor > 0.0f)
        hp_rope_table_llama3(dec->rope, dec->qpos, m->rope_theta, m->rope_factor, m->rope_low_freq_factor,
                             m->rope_high_freq_factor, m->rope_original_max_positions, n, dec->hd);
    else
        hp_rope_table(dec->rope, dec->qpos, m->rope_theta, n, dec->hd);
}

int hp_decoder_forward(hp_decoder *dec, const int *ids, int n, float *logits) {
    if (n < 1 || dec->pos + n > dec->max_tokens) return -1;
    const int D = dec->D, V = dec->m.vocab_size;
    const size_t nd = (size_t)n * D;
    rope_rows(dec, n);
    if (dec->pp_rank == 0) {   // the embedding: a vocab slice per tp rank, summed
        hp_embedding_forward(dec->x, ids, dec->tok, dec->v0, dec->Vl, n, D);
        if (dec->tp > 1) hp_allreduce_sum(dec->comm, HP_G_TP, dec->x, nd);
    } else {                   // the rows from the stage before (its tp rank of the same index)
        MPI_Request req;
        hp_p2p_irecv(dec->comm, HP_G_PP, dec->x, nd, dec->pp_rank - 1, 0, &req);
        hp_p2p_wait(dec->comm, HP_G_PP, 1, &req, "generate: the stage before");
    }
    for (int l = dec->l0; l < dec->l1; l++) block_forward(dec, l, n);
    if (dec->pp_rank < dec->pp - 1) {
        MPI_Request req;
        hp_p2p_isend(dec->comm, HP_G_PP, dec->x, nd, dec->pp_rank + 1, 0, &req);
        hp_p2p_wait(dec->comm, HP_G_PP, 1, &req, "generate: the stage after");
    } else {                   // the head, on the last row only
        float rstd;
        hp_rmsnorm_forward(dec->row, &rstd, dec->x + (size_t)(n - 1) * D, dec->norm, dec->m.norm_eps, 1, D);
        hp_linear_forward(dec->logits_local, dec->row, dec->out, 1, D, dec->Vl);
        if (dec->tp > 1) hp_allgather(dec->comm, HP_G_TP, dec->logits_all, dec->logits_local, (size_t)dec->Vl);
        else memcpy(dec->logits_all, dec->logits_local, (size_t)V * sizeof(float));
    }
    if (dec->pp > 1) hp_broadcast(dec->comm, HP_G_PP, dec->logits_all, (size_t)V, dec->pp - 1);
    memcpy(logits, dec->logits_all, (size_t)V * sizeof(float));
    dec->pos += n;
    return 0;
}
