// transformer.c - forward and backward of the Llama-style model of model.md, on one rank.
//
// The code is the same for every parallel configuration: it works on the rank's local
// shapes (heads, hidden and vocab divided by tp; sequence cut by cp and, between blocks, by
// sp) and calls the styles at fixed points - FSDP unit gather/reduce around each unit,
// tp region enter/exit around attention, FFN/MoE, embeddings and the loss, ring attention
// for the attention core. With every degree 1 each of those is a copy, and this is the
// single-process reference.
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "hyperpar/cp.h"
#include "hyperpar/failpoint.h"
#include "hyperpar/kernels.h"
#include "train/trainer_internal.h"

// The table names of a block's parameter roles (layers.{l}.<suffix>), in hp_block_param order.
static const char *const block_suffix[BP_COUNT] = {
    [BP_ATTN_NORM] = "attention_norm.weight",
    [BP_WQ] = "attention.wq.weight",
    [BP_WK] = "attention.wk.weight",
    [BP_WV] = "attention.wv.weight",
    [BP_WO] = "attention.wo.weight",
    [BP_FFN_NORM] = "ffn_norm.weight",
    [BP_W1] = "feed_forward.w1.weight",
    [BP_W2] = "feed_forward.w2.weight",
    [BP_W3] = "feed_forward.w3.weight",
    [BP_GATE] = "moe.router.gate.weight",
    [BP_EW1] = "moe.experts.w1",
    [BP_EW2] = "moe.experts.w2",
    [BP_EW3] = "moe.experts.w3",
    [BP_SW1] = "moe.shared_experts.w1.weight",
    [BP_SW2] = "moe.shared_experts.w2.weight",
    [BP_SW3] = "moe.shared_experts.w3.weight",
};

// A block parameter by role (l >= 0), or a top-level one by its table index. The roles'
// table indices live with slot 0's blocks (the same for every slot).
#define PARAM(l, role) hp_fsdp_param(tr, tr->blocks[(l)].pid[(role)])
#define GRAD(l, role) hp_fsdp_grad(tr, tr->blocks[(l)].pid[(role)])
#define TOP_PARAM(id) hp_fsdp_param(tr, tr->id)
#define TOP_GRAD(id) hp_fsdp_grad(tr, tr->id)

// The activations of block l for the running microbatch's slot (pipeline stages keep several
// microbatches in flight; without pp there is one slot).
static hp_block_acts *acts(hp_trainer *tr, int l) {
    return &tr->blocks[(size_t)tr->slot * tr->m.n_layers + l];
}

static void lookup_params(hp_trainer *tr) {
    char name[96];
    for (int l = 0; l < tr->m.n_layers; l++)
        for (int r = 0; r < BP_COUNT; r++) {
            snprintf(name, sizeof name, "layers.%d.%s", l, block_suffix[r]);
            tr->blocks[l].pid[r] = hp_params_find(&tr->pt, name);
        }
    tr->pid_tok = hp_params_find(&tr->pt, "tok_embeddings.weight");
    tr->pid_norm = hp_params_find(&tr->pt, "norm.weight");
    tr->pid_out = hp_params_find(&tr->pt, "output.weight");
}

// Every activation buffer comes from here; the count lets the trainer report what the
// activation slots hold (allocation is single-threaded, at set-up).
static size_t falloc_bytes;
static float *falloc(size_t n) {
    falloc_bytes += (n ? n : 1) * sizeof(float);
    return calloc(n ? n : 1, sizeof(float));
}

static hp_moe_weights moe_weights(hp_trainer *tr, int l) {
    hp_moe_weights w = {
        .gate = PARAM(l, BP_GATE),
        .w1 = PARAM(l, BP_EW1), .w2 = PARAM(l, BP_EW2), .w3 = PARAM(l, BP_EW3),
    };
    if (tr->m.n_shared_experts > 0) {
        w.sw1 = PARAM(l, BP_SW1);
        w.sw2 = PARAM(l, BP_SW2);
        w.sw3 = PARAM(l, BP_SW3);
    }
    return w;
}

static hp_moe_grads moe_grads(hp_trainer *tr, int l) {
    hp_moe_grads g = {
        .gate = GRAD(l, BP_GATE),
        .w1 = GRAD(l, BP_EW1), .w2 = GRAD(l, BP_EW2), .w3 = GRAD(l, BP_EW3),
    };
    if (tr->m.n_shared_experts > 0) {
        g.sw1 = GRAD(l, BP_SW1);
        g.sw2 = GRAD(l, BP_SW2);
        g.sw3 = GRAD(l, BP_SW3);
    }
    return g;
}

// ---------------------------------------------------------------------------------------
// allocation

// One block's activations; only h_in (the stage boundary's buffer) for a block of another
// pp rank.
static int alloc_block(hp_trainer *tr, hp_block_acts *A, int l) {
    const hp_model_config *m = &tr->m;
    const hp_dims *d = &tr->d;
    const int T = d->tp;
    const size_t D = (size_t)tr->D, res = (size_t)tr->Nres, reg = (size_t)tr->Nreg;
    const size_t qd = (size_t)tr->Hl * tr->hd, kvd = (size_t)tr->Hkvl * tr->hd;
    A->h_in = falloc(res * D);
    if (!A->h_in) return -1;
    if (!tr->layer_local[l]) return 0;
    A->n1 = falloc(res * D); A->rstd1 = falloc(res);
    A->g1 = falloc(reg * D);
    A->q = falloc(reg * qd); A->k = falloc(reg * kvd); A->v = falloc(reg * kvd);
    A->att = falloc(reg * qd); A->lse = falloc(reg * (size_t)tr->Hl);
    A->h_mid = falloc(res * D); A->n2 = falloc(res * D); A->rstd2 = falloc(res);
    A->g2 = falloc(reg * D);
    if (!A->n1 || !A->rstd1 || !A->g1 || !A->q || !A->k || !A->v || !A->att || !A->lse ||
        !A->h_mid || !A->n2 || !A->rstd2 || !A->g2)
        return -1;
    if (d->ulysses > 1 &&
        !(A->uly = hp_ulysses_attn_init(tr->Bl, tr->Sc, tr->Hl, tr->Hkvl, tr->hd, d->ulysses, d->cp)))
        return -1;
    if (!hp_model_is_moe_layer(m, l)) {
        A->a1 = falloc(reg * (size_t)tr->Fl);
        A->a3 = falloc(reg * (size_t)tr->Fl);
        A->act = falloc(reg * (size_t)tr->Fl);
        if (!A->a1 || !A->a3 || !A->act) return -1;
        if (!tr->split_backward) return 0;
        A->dy_wo = falloc(reg * D); A->dy_w2 = falloc(reg * D);
        A->dy_w1 = falloc(reg * (size_t)tr->Fl); A->dy_w3 = falloc(reg * (size_t)tr->Fl);
        A->dy_q = falloc(reg * qd); A->dy_k = falloc(reg * kvd); A->dy_v = falloc(reg * kvd);
        return A->dy_wo && A->dy_w2 && A->dy_w1 && A->dy_w3 && A->dy_q && A->dy_k && A->dy_v ? 0 : -1;
    }
    const int ep = d->ep, etp = hp_dims_expert_tp(d);
    hp_moe_dims md = {
        .N = tr->Nreg, .D = m->dim, .E = m->num_experts, .K = m->top_k,
        .El = m->num_experts / ep, .e0 = (ep > 1 ? tr->co.ep : 0) * (m->num_experts / ep),
        .Fel = m->moe_hidden / etp,
        .Fsl = m->moe_hidden * m->n_shared_experts / T,
        .token_split = hp_dims_token_split(d), .token_rank = tr->co.t,
        .score_func = m->score_func, .route_norm = m->route_norm,
        .route_scale = m->route_scale, .dispatcher = tr->rc.dispatcher,
    };
    if (md.token_split == 1) md.token_rank = 0;
    // token_split_offset (#3604): tp rank t takes the S_local rows at t*S_local, the
    // split of one sequence; right only for a local batch of 1
    if (md.token_split > 1 && hp_failpoint(HP_FP_TOKEN_SPLIT_OFFSET)) md.token_split *= tr->Bl;
    A->moe = hp_moe_state_init(&md);
    return A->moe ? 0 : -1;
}

int hp_transformer_alloc(hp_trainer *tr) {
    const hp_model_config *m = &tr->m;
    const hp_dims *d = &tr->d;
    const int T = d->tp, sp = d->sp > 0 && T > 1, L = m->n_layers;
    tr->Bl_step = tr->rc.batch / hp_dims_batch(d);
    tr->Bl = tr->Bl_step / tr->M;
    tr->Sc_cp = tr->rc.seq_len / d->cp;
    tr->Sc = tr->Sc_cp / d->ulysses;
    tr->Ss = sp ? tr->Sc / T : tr->Sc;
    tr->Nres = tr->Bl * tr->Ss;
    tr->Nreg = tr->Bl * tr->Sc;
    tr->D = m->dim;
    tr->hd = hp_model_head_dim(m);
    tr->Hl = m->n_heads / T;
    tr->Hkvl = m->n_kv_heads / T;
    tr->Fl = m->ffn_hidden / T;
    tr->Vl = m->vocab_size / T;
    tr->v0 = tr->co.t * tr->Vl;
    if (tr->n_slots < 1) tr->n_slots = 1;

    const size_t D = (size_t)tr->D, res = (size_t)tr->Nres, reg = (size_t)tr->Nreg;
    const size_t qd = (size_t)tr->Hl * tr->hd, kvd = (size_t)tr->Hkvl * tr->hd;
    tr->pos = calloc((size_t)tr->Sc, sizeof(int));
    tr->pos_cp = calloc((size_t)tr->Sc_cp, sizeof(int));
    const size_t reg_step = reg * (size_t)tr->M;
    tr->tokens = calloc(reg_step ? reg_step : 1, sizeof(int));
    tr->labels = calloc(reg_step ? reg_step : 1, sizeof(int));
    tr->layer_local = calloc((size_t)L + 1, sizeof(int));
    if (!tr->pos || !tr->pos_cp || !tr->tokens || !tr->labels || !tr->layer_local) return -1;
    hp_cp_positions(tr->pos_cp, tr->rc.seq_len, d->cp, tr->co.c, tr->rc.cp_load_balance);
    hp_seq_positions(tr->pos, tr->rc.seq_len, d->cp, tr->co.c, d->ulysses, tr->co.u,
                     tr->rc.cp_load_balance);
    for (int l = 0; l < L; l++) {
        char name[96];
        snprintf(name, sizeof name, "layers.%d.attention_norm.weight", l);
        const int i = hp_params_find(&tr->pt, name);
        tr->layer_local[l] = i >= 0 && tr->pt.p[i].on_rank;
    }
    const int i_out = hp_params_find(&tr->pt, "output.weight");
    tr->head_local = i_out >= 0 && tr->pt.p[i_out].on_rank;

    const size_t bytes_before = falloc_bytes;
    tr->blocks = calloc((size_t)tr->n_slots * L + 1, sizeof(hp_block_acts));
    tr->heads = calloc((size_t)tr->n_slots, sizeof(hp_head_acts));
    if (!tr->blocks || !tr->heads) return -1;
    lookup_params(tr);
    for (int slot = 0; slot < tr->n_slots; slot++)
        for (int l = 0; l < L; l++)
            if (alloc_block(tr, &tr->blocks[(size_t)slot * L + l], l) != 0) return -1;
    int n_moe = 0;
    for (int l = 0; l < L; l++) n_moe += hp_model_is_moe_layer(m, l);
    tr->routing_step = calloc((size_t)n_moe * reg_step * m->top_k + 1, sizeof(int));
    if (!tr->routing_step) return -1;
    for (int slot = 0; slot < tr->n_slots; slot++) {
        hp_head_acts *H = &tr->heads[slot];
        H->h_final = falloc(res * D);
        if (!H->h_final) return -1;
        if (tr->split_backward) {
            H->dy_embed = falloc(reg * D);
            if (!H->dy_embed) return -1;
        }
        if (!tr->head_local) continue;
        H->nf = falloc(res * D); H->rstdf = falloc(res);
        H->gf = falloc(reg * D);
        H->logits = falloc(reg * (size_t)tr->Vl);
        H->ce_m = falloc(reg); H->ce_se = falloc(reg);
        if (!H->nf || !H->rstdf || !H->gf || !H->logits || !H->ce_m || !H->ce_se) return -1;
        if (tr->split_backward && !(H->dy_out = falloc(reg * (size_t)tr->Vl))) return -1;
    }
    tr->activation_bytes = falloc_bytes - bytes_before;   // every slot's blocks and head
    tr->dlogits = falloc(reg * (size_t)tr->Vl);
    tr->ce_tl = falloc(reg);
    tr->tp_buf = falloc(reg * D);
    tr->res_a = falloc(res * D); tr->res_b = falloc(res * D);
    tr->reg_a = falloc(reg * D); tr->reg_b = falloc(reg * D);
    tr->reg_q = falloc(reg * qd); tr->reg_k = falloc(reg * kvd); tr->reg_v = falloc(reg * kvd);
    tr->reg_att = falloc(reg * qd);
    const size_t fl = (size_t)tr->Fl;
    tr->reg_f1 = falloc(reg * fl); tr->reg_f2 = falloc(reg * fl); tr->reg_f3 = falloc(reg * fl);
    return 0;
}

void hp_transformer_free(hp_trainer *tr) {
    const int L = tr->m.n_layers;
    if (tr->blocks) {
        for (size_t b = 0; b < (size_t)tr->n_slots * L; b++) {
            hp_block_acts *A = &tr->blocks[b];
            free(A->h_in); free(A->n1); free(A->rstd1); free(A->g1);
            free(A->q); free(A->k); free(A->v); free(A->att); free(A->lse);
            free(A->h_mid); free(A->n2); free(A->rstd2); free(A->g2);
            free(A->a1); free(A->a3); free(A->act);
            free(A->dy_wo); free(A->dy_w2); free(A->dy_w1); free(A->dy_w3);
            free(A->dy_q); free(A->dy_k); free(A->dy_v);
            if (A->moe) hp_moe_state_free(A->moe);
            hp_ulysses_attn_free(A->uly);
        }
        free(tr->blocks);
    }
    if (tr->heads) {
        for (int slot = 0; slot < tr->n_slots; slot++) {
            hp_head_acts *H = &tr->heads[slot];
            free(H->h_final); free(H->nf); free(H->rstdf); free(H->gf); free(H->logits);
            free(H->ce_m); free(H->ce_se); free(H->dy_out); free(H->dy_embed);
        }
        free(tr->heads);
    }
    free(tr->pos); free(tr->pos_cp); free(tr->tokens); free(tr->labels); free(tr->routing_step);
    free(tr->layer_local);
    free(tr->dlogits); free(tr->ce_tl);
    free(tr->tp_buf); free(tr->res_a); free(tr->res_b); free(tr->reg_a); free(tr->reg_b);
    free(tr->reg_q); free(tr->reg_k); free(tr->reg_v); free(tr->reg_att);
    free(tr->reg_f1); free(tr->reg_f2); free(tr->reg_f3);
}

// ---------------------------------------------------------------------------------------
// forward

// The tokens and labels of the running microbatch.
static const int *mb_tokens(const hp_trainer *tr) { return tr->tokens + (size_t)tr->mb * tr->Nreg; }
static const int *mb_labels(const hp_trainer *tr) { return tr->labels + (size_t)tr->mb * tr->Nreg; }

static void add_into(float *out, const float *a, const float *b, size_t n) {
    for (size_t i = 0; i < n; i++) out[i] = a[i] + b[i];
}

static void block_forward(hp_trainer *tr, int l, float *h_out) {
    const hp_model_config *m = &tr->m;
    hp_block_acts *A = acts(tr, l);
    const int D = tr->D, Nr = tr->Nreg, qd = tr->Hl * tr->hd, kvd = tr->Hkvl * tr->hd;
    const size_t nres = (size_t)tr->Nres * D;

    // h_mid = h_in + Attention(RMSNorm(h_in))
    hp_rmsnorm_forward(A->n1, A->rstd1, A->h_in, PARAM(l, BP_ATTN_NORM), m->norm_eps,
                       tr->Nres, D);
    hp_tp_region_enter(tr, A->g1, A->n1, D);
    hp_linear_forward(A->q, A->g1, PARAM(l, BP_WQ), Nr, D, qd);
    hp_linear_forward(A->k, A->g1, PARAM(l, BP_WK), Nr, D, kvd);
    hp_linear_forward(A->v, A->g1, PARAM(l, BP_WV), Nr, D, kvd);
    hp_rope_forward(A->q, tr->pos, m->rope_theta, tr->Bl, tr->Sc, tr->Hl, tr->hd);
    hp_rope_forward(A->k, tr->pos, m->rope_theta, tr->Bl, tr->Sc, tr->Hkvl, tr->hd);
    if (A->uly)   // Ulysses: heads <-> tokens around the core (ring attention inside when cp > 1)
        hp_ulysses_attention_forward(A->uly, tr->comm, tr->rc.cp_rotate, tr->rc.cp_load_balance,
                                     A->att, A->q, A->k, A->v, tr->pos_cp);
    else
        hp_cp_attention_forward(tr->comm, tr->rc.cp_rotate, tr->rc.cp_load_balance, A->att, A->lse,
                                A->q, A->k, A->v, tr->pos, tr->Bl, tr->Sc, tr->Hl, tr->Hkvl, tr->hd);
    hp_linear_forward(tr->reg_a, A->att, PARAM(l, BP_WO), Nr, qd, D);
    hp_tp_region_exit(tr, tr->res_a, tr->reg_a, D);
    add_into(A->h_mid, A->h_in, tr->res_a, nres);

    // h_out = h_mid + (FFN or MoE)(RMSNorm(h_mid))
    hp_rmsnorm_forward(A->n2, A->rstd2, A->h_mid, PARAM(l, BP_FFN_NORM), m->norm_eps,
                       tr->Nres, D);
    hp_tp_region_enter(tr, A->g2, A->n2, D);
    if (A->moe) {
        hp_moe_weights w = moe_weights(tr, l);
        hp_moe_forward(A->moe, tr->comm, tr->reg_a, A->g2, &w);
    } else {
        hp_linear_forward(A->a1, A->g2, PARAM(l, BP_W1), Nr, D, tr->Fl);
        hp_linear_forward(A->a3, A->g2, PARAM(l, BP_W3), Nr, D, tr->Fl);
        hp_swiglu_forward(A->act, A->a1, A->a3, (size_t)Nr * tr->Fl);
        hp_linear_forward(tr->reg_a, A->act, PARAM(l, BP_W2), Nr, tr->Fl, D);
    }
    hp_tp_region_exit(tr, tr->res_a, tr->reg_a, D);
    add_into(h_out, A->h_mid, tr->res_a, nres);
}

// The residual stream entering block l of the running slot (l == L: the head's input).
static float *stream_in(hp_trainer *tr, int l) {
    return l < tr->m.n_layers ? acts(tr, l)->h_in : tr->heads[tr->slot].h_final;
}

float *hp_transformer_stream(hp_trainer *tr, int l) { return stream_in(tr, l); }

void hp_transformer_forward_layers(hp_trainer *tr, int l0, int l1, int first, int last) {
    const hp_model_config *m = &tr->m;
    const int L = m->n_layers, D = tr->D;
    if (first) {
        hp_fsdp_gather_unit(tr, 0);
        hp_embedding_forward(tr->reg_a, mb_tokens(tr), TOP_PARAM(pid_tok), tr->v0, tr->Vl,
                             tr->Nreg, D);
        hp_fsdp_release_unit(tr, 0);
        hp_tp_region_exit(tr, stream_in(tr, l0), tr->reg_a, D);   // rowwise embedding: partial over tp
    }
    for (int l = l0; l < l1; l++) {
        hp_fsdp_gather_unit(tr, 1 + l);
        block_forward(tr, l, stream_in(tr, l + 1));
        hp_fsdp_release_unit(tr, 1 + l);
    }
    tr->ce_sum_local = 0.0;
    if (!last) return;
    hp_head_acts *H = &tr->heads[tr->slot];
    hp_fsdp_gather_unit(tr, L + 1);
    hp_rmsnorm_forward(H->nf, H->rstdf, H->h_final, TOP_PARAM(pid_norm), m->norm_eps,
                       tr->Nres, D);
    hp_tp_region_enter(tr, H->gf, H->nf, D);
    hp_linear_forward(H->logits, H->gf, TOP_PARAM(pid_out), tr->Nreg, D, tr->Vl);
    const double ce_sum = hp_tp_cross_entropy(tr, H->logits, mb_labels(tr), H->ce_m, H->ce_se);
    hp_fsdp_release_unit(tr, L + 1);
    tr->ce_sum_local = ce_sum;
    tr->loss_local = ce_sum / (double)tr->n_valid_global;
}

double hp_transformer_forward(hp_trainer *tr) {
    hp_transformer_forward_layers(tr, 0, tr->m.n_layers, 1, 1);
    return tr->loss_local;
}

// ---------------------------------------------------------------------------------------
// backward: dh (res_b) flows from the loss down to the embeddings

static void zeros(float *x, size_t n) { memset(x, 0, n * sizeof(float)); }

// A linear's backward: dx now; dw now, or under zbv's I later (W) from the kept copy of dy.
static void linear_bwd(hp_trainer *tr, float *dx, float *dw, float *keep_dy, const float *dy,
                       const float *x, const float *w, int N, int in, int out) {
    if (tr->input_only && keep_dy) {
        memcpy(keep_dy, dy, (size_t)N * out * sizeof(float));
        dw = NULL;
    }
    hp_linear_backward(dx, dw, dy, x, w, N, in, out);
}

static void block_backward(hp_trainer *tr, int l, float *dh) {
    const hp_model_config *m = &tr->m;
    hp_block_acts *A = acts(tr, l);
    const int D = tr->D, Nr = tr->Nreg, qd = tr->Hl * tr->hd, kvd = tr->Hkvl * tr->hd;
    const size_t nreg = (size_t)Nr * D, nf = (size_t)Nr * tr->Fl;

    // FFN / MoE branch: dh -> d(partial branch output) -> d(g2) -> d(n2) -> dh_mid
    hp_tp_region_exit_backward(tr, tr->reg_a, dh, D);
    zeros(tr->reg_b, nreg);
    if (A->moe) {
        hp_moe_weights w = moe_weights(tr, l);
        hp_moe_grads g = moe_grads(tr, l);
        hp_moe_backward(A->moe, tr->comm, tr->reg_b, &g, tr->reg_a, &w);
    } else {
        zeros(tr->reg_f3, nf);
        linear_bwd(tr, tr->reg_f3, GRAD(l, BP_W2), A->dy_w2, tr->reg_a, A->act,
                   PARAM(l, BP_W2), Nr, tr->Fl, D);
        zeros(tr->reg_f1, nf);
        zeros(tr->reg_f2, nf);
        hp_swiglu_backward(tr->reg_f1, tr->reg_f2, tr->reg_f3, A->a1, A->a3, nf);
        linear_bwd(tr, tr->reg_b, GRAD(l, BP_W1), A->dy_w1, tr->reg_f1, A->g2,
                   PARAM(l, BP_W1), Nr, D, tr->Fl);
        linear_bwd(tr, tr->reg_b, GRAD(l, BP_W3), A->dy_w3, tr->reg_f2, A->g2,
                   PARAM(l, BP_W3), Nr, D, tr->Fl);
    }
    hp_tp_region_enter_backward(tr, tr->res_a, tr->reg_b, D);
    hp_rmsnorm_backward(dh, GRAD(l, BP_FFN_NORM), tr->res_a, A->h_mid,
                        PARAM(l, BP_FFN_NORM), A->rstd2, tr->Nres, D);   // dh is now dh_mid

    // attention branch
    hp_tp_region_exit_backward(tr, tr->reg_a, dh, D);
    zeros(tr->reg_att, (size_t)Nr * qd);
    linear_bwd(tr, tr->reg_att, GRAD(l, BP_WO), A->dy_wo, tr->reg_a, A->att,
               PARAM(l, BP_WO), Nr, qd, D);
    zeros(tr->reg_q, (size_t)Nr * qd);
    zeros(tr->reg_k, (size_t)Nr * kvd);
    zeros(tr->reg_v, (size_t)Nr * kvd);
    if (A->uly)
        hp_ulysses_attention_backward(A->uly, tr->comm, tr->rc.cp_rotate, tr->rc.cp_load_balance,
                                      tr->reg_q, tr->reg_k, tr->reg_v, tr->reg_att, tr->pos_cp);
    else
        hp_cp_attention_backward(tr->comm, tr->rc.cp_rotate, tr->rc.cp_load_balance, tr->reg_q,
                                 tr->reg_k, tr->reg_v, tr->reg_att, A->att, A->lse, A->q, A->k, A->v,
                                 tr->pos, tr->Bl, tr->Sc, tr->Hl, tr->Hkvl, tr->hd);
    hp_rope_backward(tr->reg_q, tr->pos, m->rope_theta, tr->Bl, tr->Sc, tr->Hl, tr->hd);
    hp_rope_backward(tr->reg_k, tr->pos, m->rope_theta, tr->Bl, tr->Sc, tr->Hkvl, tr->hd);
    zeros(tr->reg_b, nreg);
    linear_bwd(tr, tr->reg_b, GRAD(l, BP_WQ), A->dy_q, tr->reg_q, A->g1,
               PARAM(l, BP_WQ), Nr, D, qd);
    linear_bwd(tr, tr->reg_b, GRAD(l, BP_WK), A->dy_k, tr->reg_k, A->g1,
               PARAM(l, BP_WK), Nr, D, kvd);
    linear_bwd(tr, tr->reg_b, GRAD(l, BP_WV), A->dy_v, tr->reg_v, A->g1,
               PARAM(l, BP_WV), Nr, D, kvd);
    hp_tp_region_enter_backward(tr, tr->res_a, tr->reg_b, D);
    hp_rmsnorm_backward(dh, GRAD(l, BP_ATTN_NORM), tr->res_a, A->h_in,
                        PARAM(l, BP_ATTN_NORM), A->rstd1, tr->Nres, D);  // dh_in
}

void hp_transformer_backward_layers(hp_trainer *tr, int l0, int l1, int first, int last) {
    const int L = tr->m.n_layers, D = tr->D;
    const size_t nres = (size_t)tr->Nres * D;
    float *dh = tr->res_b;

    if (last) {
        // loss and head: d(sum CE / N_global) / dlogits
        hp_head_acts *H = &tr->heads[tr->slot];
        hp_fsdp_gather_unit(tr, L + 1);
        hp_fsdp_zero_unit_grads(tr, L + 1);
        zeros(tr->dlogits, (size_t)tr->Nreg * tr->Vl);
        // (pp_microbatch_loss_scale: the bug divides each microbatch's loss by M once more)
        const double scale = hp_failpoint(HP_FP_PP_MICROBATCH_LOSS_SCALE) ? (double)tr->M : 1.0;
        hp_ce_backward(tr->dlogits, H->logits, H->ce_m, H->ce_se, mb_labels(tr), tr->v0,
                       (float)(1.0 / ((double)tr->n_valid_global * scale)), tr->Nreg, tr->Vl);
        zeros(tr->reg_a, (size_t)tr->Nreg * D);
        linear_bwd(tr, tr->reg_a, TOP_GRAD(pid_out), H->dy_out, tr->dlogits, H->gf,
                   TOP_PARAM(pid_out), tr->Nreg, D, tr->Vl);
        hp_tp_region_enter_backward(tr, tr->res_a, tr->reg_a, D);
        zeros(dh, nres);
        hp_rmsnorm_backward(dh, TOP_GRAD(pid_norm), tr->res_a, H->h_final, TOP_PARAM(pid_norm),
                            H->rstdf, tr->Nres, D);
        if (!tr->input_only) hp_fsdp_reduce_unit(tr, L + 1);   // (an I leaves it to its W)
        hp_fsdp_release_unit(tr, L + 1);
    }

    for (int l = l1 - 1; l >= l0; l--) {
        hp_fsdp_gather_unit(tr, 1 + l);
        hp_fsdp_zero_unit_grads(tr, 1 + l);
        block_backward(tr, l, dh);
        if (!tr->input_only) hp_fsdp_reduce_unit(tr, 1 + l);
        hp_fsdp_release_unit(tr, 1 + l);
    }

    if (!first) return;
    hp_fsdp_gather_unit(tr, 0);
    hp_fsdp_zero_unit_grads(tr, 0);
    hp_tp_region_exit_backward(tr, tr->reg_a, dh, D);
    if (tr->input_only) {   // the embedding has weight grads only: all of it is W's
        memcpy(tr->heads[tr->slot].dy_embed, tr->reg_a, (size_t)tr->Nreg * D * sizeof(float));
    } else {
        hp_embedding_backward(TOP_GRAD(pid_tok), tr->reg_a, mb_tokens(tr), tr->v0, tr->Vl,
                              tr->Nreg, D);
        hp_fsdp_reduce_unit(tr, 0);
    }
    hp_fsdp_release_unit(tr, 0);
}

void hp_transformer_weight_grads_layers(hp_trainer *tr, int l0, int l1, int first, int last) {
    const int L = tr->m.n_layers, D = tr->D, Nr = tr->Nreg;
    const int qd = tr->Hl * tr->hd, kvd = tr->Hkvl * tr->hd;
    hp_head_acts *H = &tr->heads[tr->slot];
    if (last) {
        hp_linear_backward(NULL, TOP_GRAD(pid_out), H->dy_out, H->gf, TOP_PARAM(pid_out), Nr, D, tr->Vl);
        hp_fsdp_reduce_unit(tr, L + 1);
    }
    for (int l = l1 - 1; l >= l0; l--) {
        hp_block_acts *A = acts(tr, l);
        if (!A->moe) {   // a MoE block ran its whole backward in the I
            hp_linear_backward(NULL, GRAD(l, BP_W2), A->dy_w2, A->act, PARAM(l, BP_W2), Nr, tr->Fl, D);
            hp_linear_backward(NULL, GRAD(l, BP_W1), A->dy_w1, A->g2, PARAM(l, BP_W1), Nr, D, tr->Fl);
            hp_linear_backward(NULL, GRAD(l, BP_W3), A->dy_w3, A->g2, PARAM(l, BP_W3), Nr, D, tr->Fl);
            hp_linear_backward(NULL, GRAD(l, BP_WO), A->dy_wo, A->att, PARAM(l, BP_WO), Nr, qd, D);
            hp_linear_backward(NULL, GRAD(l, BP_WQ), A->dy_q, A->g1, PARAM(l, BP_WQ), Nr, D, qd);
            hp_linear_backward(NULL, GRAD(l, BP_WK), A->dy_k, A->g1, PARAM(l, BP_WK), Nr, D, kvd);
            hp_linear_backward(NULL, GRAD(l, BP_WV), A->dy_v, A->g1, PARAM(l, BP_WV), Nr, D, kvd);
        }
        hp_fsdp_reduce_unit(tr, 1 + l);
    }
    if (first) {
        hp_embedding_backward(TOP_GRAD(pid_tok), H->dy_embed, mb_tokens(tr), tr->v0, tr->Vl, Nr, D);
        hp_fsdp_reduce_unit(tr, 0);
    }
}

void hp_transformer_backward(hp_trainer *tr) {
    hp_transformer_backward_layers(tr, 0, tr->m.n_layers, 1, 1);
}
