// plan_activations.c - the activation buffers one rank allocates, buffer by buffer, under each
// activation-checkpointing mode (hp plan --memory --ac ...).
// defines: hp_plan_activations_predict, hp_plan_activations_with_slots, hp_plan_pp_slots
//
// Mirrors, element for element, transformer.c's alloc_block and hp_transformer_alloc (the
// per-slot blocks and head), moe.c's hp_moe_state_init and ensure_routed, ep_dispatch.c's
// hp_ep_init and ulysses.c's hp_ulysses_attn_init; every buffer is 4 bytes an element (floats
// and ints) but the bf16 ones (2), an empty one is allocated as 1. The structs around the
// buffers are not counted.
// A slot holds the buffers of this rank's blocks only, plus the h_in of each block that
// follows one of its stages on another rank (where that stage's output goes).
// AC (config.h, hp_run_ac_block): a checkpointed block keeps its h_in per slot, and the rank
// holds ONE recompute set: the attention half, plus the dense FFN if one of its checkpointed
// blocks is dense and the MoE state if one is MoE (transformer.c's alloc_recompute). The MoE
// blocks of a rank share one scratch (moe.c's hp_moe_share_scratch), counted there too.
// bf16 storage (config.h, hp_run_bf16_stored): a block that keeps its activations keeps
// rstd1, rstd2, lse and the states in floats (the Ulysses state's gathered q, k, v in 2 bytes
// under the bf16 policy, float8 runs too) and the rest in ONE store of 2-byte elements
// (alloc_stored), and runs in that shared set, which then holds the attention half (the
// core's state only with a checkpointed block) and the dense FFN if one of them is dense.
// Every h_in a slot holds is then 2 bytes too, checkpointed or not, a stage's first and the
// one a stage feeds on another rank included, and the rank holds two fp32 stream buffers
// (transformer.c's input_stored); the head keeps its logits (and zbv's I their gradient) in
// 2 bytes (the fp32 ones are made in the backward scratch), and the pipeline sends and
// receives the 2-byte inputs as they are (no wire copies of its own).
#include <stdlib.h>
#include <string.h>
#include "hyperpar/pipeline.h"
#include "hyperpar/plan.h"
#include "hyperpar/ulysses.h"

static double f1(double n) { return n > 0 ? n : 1; }   // calloc(n ? n : 1)

// The shapes a rank's buffers are sized from (hp_transformer_alloc's Nres, Nreg, ...).
typedef struct shapes {
    double res, reg, D, qd, kvd, Hl, Fl, Vl;
    int split;   // zbv's split backward keeps the dy of every matmul for the W half
} shapes;

static shapes shapes_of(const hp_model_config *m, const hp_dims *d, const hp_run_config *rc) {
    const int T = d->tp, sp = d->sp > 0 && T > 1;
    const double Bl = (double)(rc->batch / hp_dims_batch(d) / hp_run_microbatches(rc));
    const double Sc = (double)(rc->seq_len / d->cp / d->ulysses), hd = hp_model_head_dim(m);
    shapes s = {
        .reg = Bl * Sc, .res = sp ? Bl * (double)((int)Sc / T) : Bl * Sc, .D = m->dim,
        .qd = (double)(m->n_heads / T) * hd, .kvd = (double)(m->n_kv_heads / T) * hd,
        .Hl = m->n_heads / T, .Fl = m->ffn_hidden / T, .Vl = m->vocab_size / T,
        .split = d->pp > 1 && d->pp_schedule == HP_PP_ZBV,
    };
    return s;
}

// alloc_block's attention part without h_in: rstd1, g1, q, k, v, att, lse, h_mid, rstd2, g2
// (n1 and n2 are made in the rank's one res_n).
static double attention_fields_floats(const shapes *s) {
    return f1(s->res * s->D) + 2 * f1(s->res) + 2 * f1(s->reg * s->D) +
           2 * f1(s->reg * s->qd) + 2 * f1(s->reg * s->kvd) + f1(s->reg * s->Hl);
}

// The attention core's state: the Ulysses one (hp_ulysses_attn_init: q, out, lse, k, v,
// counts; under the bf16 policy q, k, v in 2 bytes, counted here as half floats), none
// otherwise; scratch: the rank's one set of its exchange buffers and repeated kv heads instead
// (send, recv, ke, ve: hp_ulysses_attn_share_scratch), and under bf16 the fp32 q, k, v the core
// runs on.
static double attention_state_floats_of(const hp_model_config *m, const hp_dims *d, const hp_run_config *rc,
                                        const shapes *s, int scratch) {
    double a = 0;
    const int U = d->ulysses;
    if (U > 1) {   // hp_ulysses_attn_init(Bl, Sc, Hl, Hkvl, hd, U, C)
        const double BSu = (double)(rc->batch / hp_dims_batch(d) / hp_run_microbatches(rc)) *
                           (double)(rc->seq_len / d->cp / U), hd = hp_model_head_dim(m);
        const int Hkvl = m->n_kv_heads / d->tp;
        const double nq = BSu * s->Hl * hd, nk = BSu * Hkvl * hp_ulysses_kv_repeat(Hkvl, U) * hd;
        const double qkv = f1(nq) + 2 * f1(nk);
        const int bf16 = rc->mp_param == HP_DTYPE_BFLOAT16;
        if (scratch) a += 2 * f1(nq > nk ? nq : nk) + 2 * f1(nk) + (bf16 ? qkv : 0);
        else a += f1(nq) + f1(BSu * s->Hl) + U + (bf16 ? qkv / 2 : qkv);
    }
    return a;
}

static double attention_state_floats(const hp_model_config *m, const hp_dims *d, const hp_run_config *rc,
                                     const shapes *s) {
    return attention_state_floats_of(m, d, rc, s, 0);
}

static double attention_floats(const hp_model_config *m, const hp_dims *d, const hp_run_config *rc,
                               const shapes *s) {
    return attention_fields_floats(s) + attention_state_floats(m, d, rc, s);
}

// A stored block's 2-byte elements (transformer.c's stored_fields): g1, q, k, v, att, h_mid,
// g2, a dense block's a1, a3 (act is made again in the backward) and under zbv its dy.
static double stored_elements(const shapes *s, int moe) {
    double n = s->res * s->D + 2 * s->reg * s->D + 2 * s->reg * s->qd + 2 * s->reg * s->kvd;
    if (moe) return n;
    n += 2 * s->reg * s->Fl;
    if (s->split) n += 2 * s->reg * s->D + 2 * s->reg * s->Fl + s->reg * s->qd + 2 * s->reg * s->kvd;
    return n;
}

// a1, a3 (act: in the scratch reg_f3) and under zbv the dy
static double dense_ffn_floats(const shapes *s) {
    double a = 2 * f1(s->reg * s->Fl);
    if (s->split)   // dy_wo, dy_w2, dy_w1, dy_w3, dy_q, dy_k, dy_v
        a += 2 * f1(s->reg * s->D) + 2 * f1(s->reg * s->Fl) + f1(s->reg * s->qd) + 2 * f1(s->reg * s->kvd);
    return a;
}

// The sizes of a MoE block's buffers on this rank (moe.c, ep_dispatch.c). uniform: the routed
// rows sized for n*K entries (uniform routing) instead of ep*n*K (every entry of the ep group
// landing here).
typedef struct moe_shapes { double N, n, D, E, K, ep, El, Fel, Fs, cap; } moe_shapes;

static moe_shapes moe_shapes_of(const hp_model_config *m, const hp_dims *d, const shapes *s, int uniform) {
    moe_shapes x = { .N = s->reg, .D = s->D, .E = m->num_experts, .K = m->top_k, .ep = d->ep };
    x.n = x.N / hp_dims_token_split(d);
    x.El = x.E / x.ep;
    x.Fel = m->moe_hidden / hp_dims_expert_tp(d);
    x.Fs = (double)m->moe_hidden * m->n_shared_experts / d->tp;
    x.cap = (uniform ? 1 : x.ep) * x.n * x.K;
    return x;
}

// moe.c's scratch, one per rank (hp_moe_share_scratch): logits, sy (the forward's); dye dxe;
// dact dh1 dh3; dgates; dscores dlogits; dsact dsh1 dsh3 (the backward's); under bf16 storage
// the fp32 copies of the stored fields: x, sh1, sh3, sact; xe, h1, h3, act.
static double moe_scratch_floats(const hp_model_config *m, const hp_dims *d, const shapes *s, int uniform,
                                 int stored) {
    const moe_shapes x = moe_shapes_of(m, d, s, uniform);
    double a = f1(x.N * x.E) + f1(x.N * x.D) + 2 * f1(x.cap * x.D) + 3 * f1(x.cap * x.Fel) + f1(x.n * x.K) +
               2 * f1(x.n * x.E) + 3 * f1(x.N * x.Fs);
    if (stored) a += f1(x.N * x.D) + 3 * f1(x.N * x.Fs) + f1(x.cap * x.D) + 3 * f1(x.cap * x.Fel);
    return a;
}

// Under bf16 storage, one MoE block's 2-byte copies (kept_rows, kept_routed), in elements.
static double moe_stored_elements(const hp_model_config *m, const hp_dims *d, const shapes *s, int uniform) {
    const moe_shapes x = moe_shapes_of(m, d, s, uniform);
    return f1(x.N * x.D + 3 * x.N * x.Fs) + f1(x.cap * x.D + 3 * x.cap * x.Fel);
}

// One block's hp_moe_state_init + ensure_routed + hp_ep_init in floats (its scratch apart;
// under bf16 storage its stored fields too: moe_stored_elements).
static double moe_floats(const hp_model_config *m, const hp_dims *d, const hp_run_config *rc,
                         const shapes *s, int uniform, int stored) {
    const moe_shapes x = moe_shapes_of(m, d, s, uniform);
    const double N = x.N, n = x.n, D = x.D, E = x.E, K = x.K, ep = x.ep, El = x.El, Fel = x.Fel, Fs = x.Fs;
    const double cap = x.cap, mk = n * K, G = ep * n;
    double a = f1(N * E) + 2 * f1(N * K);   // scores; idx gates
    a += f1(cap * D);                         // ye
    if (!stored) a += f1(N * D) + 3 * f1(N * Fs) + f1(cap * D) + 3 * f1(cap * Fel);   // x sh1 sh3 sact; xe h1 h3 act
    a += f1(El + 1) + f1(cap);                  // off, perm
    if (rc->dispatcher == HP_DISPATCH_ALLTOALL)
        a += 4 * f1(mk) + 2 * f1(E) + 2 * f1(ep) + 2 * f1(mk * D) + f1(cap * D);
    else
        a += 4 * f1(G * K) + 2 * f1(G * D) + f1(n * D);
    return a;
}

// The head's buffers of one slot where it lives (its normed output is made in the backward
// scratch: only its gather gf is kept), and zbv's dy_embed where the embedding lives.
static double head_floats(const shapes *s, int head_local, int embed_local) {
    double a = s->split && embed_local ? f1(s->reg * s->D) : 0;
    if (head_local)
        a += f1(s->res * s->D) + f1(s->res) + f1(s->reg * s->D) + f1(s->reg * s->Vl) + 2 * f1(s->reg) +
             (s->split ? f1(s->reg * s->Vl) : 0);
    return a;
}

// The most microbatches holding a slot at once on pp rank p (pipeline_run.c: a microbatch
// holds one from its first action here to its last).
static int slots_in_flight(const hp_pp_layout *lay, int M, int p) {
    hp_pp_action *act = malloc((size_t)(3 * lay->V * M + 4) * sizeof *act);
    int *last = malloc((size_t)M * sizeof(int)), *seen = calloc((size_t)M, sizeof(int));
    int peak = -1;
    const int n = act && last && seen ? hp_pp_schedule_build(lay, M, p, act) : -1;
    if (n >= 0) {
        for (int i = 0; i < n; i++) last[act[i].mb] = i;
        int live = 0;
        peak = 0;
        for (int i = 0; i < n; i++) {
            const int mb = act[i].mb;
            if (!seen[mb]) { seen[mb] = 1; if (++live > peak) peak = live; }
            if (last[mb] == i) live--;
        }
    }
    free(act);
    free(last);
    free(seen);
    return peak;
}

int hp_plan_pp_slots(const hp_dims *d, int n_layers, int M, int rank) {
    if (d->pp <= 1) return 1;
    hp_pp_layout lay;
    hp_coords co;
    hp_mesh_coords(d, rank, &co);
    return hp_pp_layout_init(&lay, d, n_layers) != 0 ? -1 : slots_in_flight(&lay, M, co.p);
}

int hp_plan_activations_predict(const hp_model_config *m, const hp_dims *d, const hp_run_config *rc,
                                int rank, int uniform, hp_plan_activations *out) {
    return hp_plan_activations_with_slots(m, d, rc, rank, uniform, 0, out);
}

int hp_plan_activations_with_slots(const hp_model_config *m, const hp_dims *d, const hp_run_config *rc,
                                   int rank, int uniform, int n_slots, hp_plan_activations *out) {
    memset(out, 0, sizeof *out);
    if (rc->ac_every > 0 && d->pp > 1 && d->pp_schedule == HP_PP_ZBV) return -1;
    hp_pp_layout lay;
    if (hp_pp_layout_init(&lay, d, m->n_layers) != 0) return -1;
    hp_coords co;
    hp_mesh_coords(d, rank, &co);
    const shapes s = shapes_of(m, d, rc);
    const double attn = attention_floats(m, d, rc, &s), attn_state = attention_state_floats(m, d, rc, &s);
    const int stored = hp_run_bf16_stored(rc);
    // one MoE block's state in bytes (floats, and under bf16 storage its 2-byte copies)
    const double moe_state = m->num_experts <= 0 ? 0 :
        moe_floats(m, d, rc, &s, uniform, stored) * 4 + (stored ? moe_stored_elements(m, d, &s, uniform) * 2 : 0);
    out->block_input = f1(s.res * s.D) * 4;
    out->block_input_stored = stored ? f1(s.res * s.D) * 2 : out->block_input;
    if (stored) {   // alloc_stored: rstd1, rstd2, lse and the states in floats, one 2-byte store
        const double stats = 2 * f1(s.res) + f1(s.reg * s.Hl) + attn_state;
        out->dense_block = stats * 4 + f1(stored_elements(&s, 0)) * 2;
        out->moe_block = m->num_experts > 0 ? stats * 4 + moe_state + f1(stored_elements(&s, 1)) * 2
                                            : out->dense_block;
    } else {
        out->dense_block = (attn + dense_ffn_floats(&s)) * 4;
        out->moe_block = m->num_experts > 0 ? attn * 4 + moe_state : out->dense_block;
    }
    const int head_local = lay.stage_rank[hp_pp_unit_stage(&lay, m->n_layers + 1)] == co.p;
    const int embed_local = lay.stage_rank[hp_pp_unit_stage(&lay, 0)] == co.p;
    out->head = head_floats(&s, head_local, embed_local) * 4;
    if (stored && head_local)   // in 2 bytes: the logits, zbv's kept logits gradient, the input, gf
        out->head -= (f1(s.reg * s.Vl) + (s.split ? f1(s.reg * s.Vl) : 0) + f1(s.res * s.D) + f1(s.reg * s.D)) * 2;
    out->slot = out->head;
    int shared = 0, ac = 0, dense = 0, ac_moe = 0, streams = 0, any_moe = 0, any_block = 0;
    for (int l = 0; l < m->n_layers; l++) {
        const int local = lay.stage_rank[hp_pp_layer_stage(&lay, l)] == co.p;
        const int feeds = l > 0 && lay.stage_rank[hp_pp_layer_stage(&lay, l - 1)] == co.p;
        const int input_stored = stored && (local || feeds);
        if (local || feeds) out->slot += input_stored ? out->block_input_stored : out->block_input;   // h_in
        streams |= input_stored;
        if (!local) continue;
        const int moe = hp_model_is_moe_layer(m, l), ckpt = hp_run_ac_block(rc, l);
        any_moe |= moe;
        any_block = 1;
        if (!ckpt) out->slot += moe ? out->moe_block : out->dense_block;
        else out->n_checkpointed++;
        if (!ckpt && !stored) continue;
        shared = 1;
        ac |= ckpt;
        dense |= !moe;
        ac_moe |= moe && ckpt;
    }
    // the shared set (alloc_recompute): the attention half (its state with a checkpointed
    // block), the dense FFN if a block running in it is dense, the MoE state if one checkpointed is
    if (shared) {
        out->recompute = (attention_fields_floats(&s) + (ac ? attn_state : 0)) * 4;
        if (dense) out->recompute += dense_ffn_floats(&s) * 4;
        if (ac_moe) out->recompute += moe_state;
    }
    streams |= stored && head_local;   // (the head keeps its input in 2 bytes)
    if (streams) out->recompute += 2 * f1(s.res * s.D) * 4;   // tf->stream
    if (any_moe) out->recompute += moe_scratch_floats(m, d, &s, uniform, stored) * 4;   // the MoE blocks' one scratch
    if (any_block) out->recompute += attention_state_floats_of(m, d, rc, &s, 1) * 4;   // Ulysses' one scratch
    if (any_block) out->recompute += f1(s.res * s.D) * 4;   // tf->res_n, the norms' outputs
    out->n_slots = d->pp <= 1 ? 1 : n_slots > 0 ? n_slots : slots_in_flight(&lay, hp_run_microbatches(rc), co.p);
    if (out->n_slots < 0) return -1;
    // pipeline_run.c's dh_buf: the gradient arriving at each of the rank's stages, per slot;
    // under bf16 without the stores (float8) also fwd_wire, the 2-byte stream each stage sends on
    const double wire = rc->mp_param == HP_DTYPE_BFLOAT16 && !stored ? 2 : 0;
    if (d->pp > 1) out->boundary = (double)out->n_slots * lay.V * f1(s.res * s.D) * (4 + wire);
    out->total = out->n_slots * out->slot + out->recompute + out->boundary;
    return 0;
}
