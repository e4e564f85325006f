// transformer.c - forward and backward of the Llama-style model of model.md, on one rank.
//
// The code is the same for every parallel configuration: it works on the rank's local
// shapes (heads, hidden and vocab divided by tp; sequence cut by cp and, between blocks, by
// sp) and calls the hooks (model_hooks.h) at fixed points - unit gather/reduce around each
// unit, region enter/exit around attention, FFN/MoE, embeddings and the loss, the attention
// core, the MoE dispatch. It does not know which style fills them: with every degree 1 each
// is a copy or the plain computation, and this is the single-process reference. In the same
// way it runs its linears, rounds its op outputs and keeps its activations through the
// precision hooks (precision_hooks.h), without knowing which precision fills them.
#include <math.h>
#include <mpi.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include "hyperpar/failpoint.h"
#include "hyperpar/kernels.h"
#include "hyperpar/memtrack.h"
#include "hyperpar/structure.h"
#include "kernels/parallel.h"   // hp_par_zero
#include "model/transformer.h"

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
#define PARAM(l, role) tf->hk.unit.param(tf->hk.unit.ctx, tf->blocks[(l)].pid[(role)])
#define GRAD(l, role) tf->hk.unit.grad(tf->hk.unit.ctx, tf->blocks[(l)].pid[(role)])
#define TOP_PARAM(id) tf->hk.unit.param(tf->hk.unit.ctx, tf->id)
#define TOP_GRAD(id) tf->hk.unit.grad(tf->hk.unit.ctx, tf->id)

// The hooks, by what they do.
static void unit_gather(hp_transformer *tf, int u) { tf->hk.unit.gather(tf->hk.unit.ctx, u); }
static void unit_after_forward(hp_transformer *tf, int u) { tf->hk.unit.after_forward(tf->hk.unit.ctx, u); }
static void unit_after_backward(hp_transformer *tf, int u) { tf->hk.unit.after_backward(tf->hk.unit.ctx, u); }
static void unit_zero_grads(hp_transformer *tf, int u) { tf->hk.unit.zero_grads(tf->hk.unit.ctx, u, tf->mb); }
static void unit_reduce(hp_transformer *tf, int u) { tf->hk.unit.reduce(tf->hk.unit.ctx, u, tf->mb); }
static void region_enter(hp_transformer *tf, float *out, const float *in, int D) {
    tf->hk.region.enter(tf->hk.region.ctx, out, in, D);
}
static void region_enter_backward(hp_transformer *tf, float *din, float *dout, int D) {
    tf->hk.region.enter_backward(tf->hk.region.ctx, din, dout, D);
}
static void region_exit(hp_transformer *tf, float *out, float *in, int D) {
    tf->hk.region.exit(tf->hk.region.ctx, out, in, D);
}
// The regions whose collective feeds or drains GEMMs, handed the GEMMs by row block (async
// TP overlaps them; the plain path runs the same blocks), through the precision, which may
// need the whole tensor first (w: the GEMMs' weights; see precision_hooks.h).
#define PREC(fn, ...) tf->hk.prec.fn(tf->hk.prec.ctx, __VA_ARGS__)
static void region_enter_consume(hp_transformer *tf, float *out, const float *in, int D,
                                 hp_region_rows_fn *rows, void *rows_ctx, const float *const *w, int n_w) {
    PREC(enter_consume, &tf->hk.region, out, in, D, tf->sh.Nreg, rows, rows_ctx, w, n_w);
}
// (x (reg, in): the producer's input)
static void region_exit_produce(hp_transformer *tf, float *out, float *partial, int D,
                                hp_region_rows_fn *rows, void *rows_ctx, const float *w, const float *x, int in) {
    PREC(exit_produce, &tf->hk.region, out, partial, D, tf->sh.Nreg, rows, rows_ctx, w, x, in);
}
static void region_exit_backward_consume(hp_transformer *tf, float *din, const float *dout, int D,
                                         hp_region_rows_fn *rows, void *rows_ctx, const float *const *w,
                                         int n_w) {
    PREC(exit_backward_consume, &tf->hk.region, din, dout, D, tf->sh.Nreg, rows, rows_ctx, w, n_w);
}
// (dy[i] (reg, out[i]): the producers' grad_outputs)
static void region_enter_backward_produce(hp_transformer *tf, float *din, float *dout, int D,
                                          hp_region_rows_fn *rows, void *rows_ctx, const float *const *dy,
                                          const float *const *w, const int *out, int n) {
    PREC(enter_backward_produce, &tf->hk.region, din, dout, D, tf->sh.Nreg, rows, rows_ctx, dy, w, out, n);
}
static void region_exit_backward(hp_transformer *tf, float *din, const float *dout, int D) {
    tf->hk.region.exit_backward(tf->hk.region.ctx, din, dout, D);
}

// The op rule: an op's output as the precision holds it (e.g. rounded once). Outputs that
// are partial sums over tp (row-parallel linears, the vocab-split embedding, input grads of
// column-parallel linears) get it only after the region hook has summed them in fp32, so the
// result does not move with the tp degree.
static void op_out(const hp_transformer *tf, float *x, size_t n) { PREC(op_output, x, n); }

// The structure check of a row-parallel output about to be summed over tp (structure.h): it
// must be the GEMM's fp32 result, not rounded first. An fp32 result whose 64 or more nonzero
// values all have zero low halves was rounded (by chance: 2^-16 per value).
static void check_partial(const hp_transformer *tf, const float *x, size_t n, const char *what, int l) {
    if (!hp_structure_enabled()) return;
    size_t nonzero;
    if (hp_structure_looks_rounded(x, n, &nonzero))
        hp_structure_fail(HP_CHECK_PARTIAL, "block %d, %s: all %zu nonzero values of the partial "
                          "have zero low halves (rounded) before the fp32 sum over tp (microbatch %d)", l, what,
                          nonzero, tf->mb);
    else
        hp_structure_pass(HP_CHECK_PARTIAL);
}

// A row-parallel partial about to be summed over tp.
static void partial_out(const hp_transformer *tf, float *x, size_t n) { PREC(tp_partial, x, n); }

// The linears of the model, in the precision's operands.
static void linear_fwd(const hp_transformer *tf, float *y, const float *x, const float *w, int N,
                       int in, int out) {
    PREC(linear_forward, y, x, w, N, in, out);
}
static void linear_bwd_add(const hp_transformer *tf, float *dx, float *dw, const float *dy,
                           const float *x, const float *w, int N, int in, int out) {
    PREC(linear_backward, dx, dw, dy, x, w, N, in, out);
}

// The activations of block l for the running microbatch's slot (pipeline stages keep several
// microbatches in flight; without pp there is one slot).
const char *hp_transformer_role_name(hp_block_param r) {
    static char names[BP_COUNT][48];
    if (!names[r][0]) {
        snprintf(names[r], sizeof names[r], "%s", block_suffix[r]);
        char *dot = strstr(names[r], ".weight");
        if (dot) *dot = '\0';
    }
    return names[r];
}

static hp_block_acts *acts(hp_transformer *tf, int l) {
    return &tf->blocks[(size_t)tf->slot * tf->m.n_layers + l];
}

// The residual stream entering block l of the running slot (l == L: the head's input).
static float *stream_in(hp_transformer *tf, int l) {
    return l < tf->m.n_layers ? acts(tf, l)->h_in : tf->heads[tf->slot].h_final;
}

static void lookup_params(hp_transformer *tf) {
    char name[96];
    for (int l = 0; l < tf->m.n_layers; l++)
        for (int r = 0; r < BP_COUNT; r++) {
            snprintf(name, sizeof name, "layers.%d.%s", l, block_suffix[r]);
            tf->blocks[l].pid[r] = hp_params_find(tf->pt, name);
        }
    tf->pid_tok = hp_params_find(tf->pt, "tok_embeddings.weight");
    tf->pid_norm = hp_params_find(tf->pt, "norm.weight");
    tf->pid_out = hp_params_find(tf->pt, "output.weight");
}

// Every activation buffer comes from here; the count lets the trainer report what the
// activation slots hold (allocation is single-threaded, at set-up).
static size_t falloc_bytes;
static float *falloc(size_t n) {
    falloc_bytes += (n ? n : 1) * sizeof(float);
    return hp_mem_alloc(HP_MEM_ACTIVATIONS, (n ? n : 1) * sizeof(float));
}
// A packed store of n elements, the precision's stored_bytes each (category activations,
// counted with them).
static void *palloc(const hp_transformer *tf, size_t n) {
    const size_t bytes = (n ? n : 1) * tf->hk.prec.stored_bytes;
    falloc_bytes += bytes;
    return hp_mem_alloc(HP_MEM_ACTIVATIONS, bytes);
}
// Element at of a packed store.
static void *packed_at(const hp_transformer *tf, void *store, size_t at) {
    return (char *)store + at * tf->hk.prec.stored_bytes;
}
// The per-rank backward scratch (one set, whatever the slots): category scratch.
static float *salloc(size_t n) { return hp_mem_alloc(HP_MEM_SCRATCH, (n ? n : 1) * sizeof(float)); }

static hp_moe_weights moe_weights(hp_transformer *tf, int l) {
    hp_moe_weights w = {
        .gate = PARAM(l, BP_GATE),
        .w1 = PARAM(l, BP_EW1), .w2 = PARAM(l, BP_EW2), .w3 = PARAM(l, BP_EW3),
    };
    if (tf->m.n_shared_experts > 0) {
        w.sw1 = PARAM(l, BP_SW1);
        w.sw2 = PARAM(l, BP_SW2);
        w.sw3 = PARAM(l, BP_SW3);
    }
    return w;
}

static hp_moe_grads moe_grads(hp_transformer *tf, int l) {
    hp_moe_grads g = {
        .gate = GRAD(l, BP_GATE),
        .w1 = GRAD(l, BP_EW1), .w2 = GRAD(l, BP_EW2), .w3 = GRAD(l, BP_EW3),
    };
    if (tf->m.n_shared_experts > 0) {
        g.sw1 = GRAD(l, BP_SW1);
        g.sw2 = GRAD(l, BP_SW2);
        g.sw3 = GRAD(l, BP_SW3);
    }
    return g;
}

// ---------------------------------------------------------------------------------------
// allocation

// The attention core's state of a block (hp_attention_hooks; none without state_init).
static int alloc_attention_state(hp_transformer *tf, hp_block_acts *A) {
    return tf->hk.attn.state_init && tf->hk.attn.state_init(tf->hk.attn.ctx, &A->attn) != 0 ? -1 : 0;
}

// Activation checkpointing (config.h, hp_run_ac_block): block l is checkpointed when
// (l+1) % ac_every == 0. It keeps only h_in per slot; its forward and its recompute run in
// the one shared set tf->recompute.
static int ac_block(const hp_transformer *tf, int l) {
    return tf->ac_every > 0 && (l + 1) % tf->ac_every == 0;
}

// The attention half of a block's activations (rstd1 .. g2), and the core's state when
// with_state. The norms' outputs n1 and n2 are not kept: only the forward reads them (its
// region makes g1 and g2 of them; the backward reads the norms' inputs), so every block makes
// them in the rank's one buffer tf->res_n (set at the end of hp_transformer_init).
static int alloc_attention(hp_transformer *tf, hp_block_acts *A, int with_state) {
    const hp_local_shapes *sh = &tf->sh;
    const size_t D = (size_t)sh->D, res = (size_t)sh->Nres, reg = (size_t)sh->Nreg;
    const size_t qd = (size_t)sh->Hl * sh->hd, kvd = (size_t)sh->Hkvl * sh->hd;
    A->rstd1 = falloc(res);
    A->g1 = falloc(reg * D);
    A->q = falloc(reg * qd); A->k = falloc(reg * kvd); A->v = falloc(reg * kvd);
    A->att = falloc(reg * qd); A->lse = falloc(reg * (size_t)sh->Hl);
    A->h_mid = falloc(res * D); A->rstd2 = falloc(res);
    A->g2 = falloc(reg * D);
    if (!A->rstd1 || !A->g1 || !A->q || !A->k || !A->v || !A->att || !A->lse || !A->h_mid ||
        !A->rstd2 || !A->g2)
        return -1;
    return with_state ? alloc_attention_state(tf, A) : 0;
}

// A dense block's FFN activations, and under zbv the dy its linears keep for W. The SwiGLU
// output act is not kept: the forward makes it in the rank's scratch reg_f3 (set at the end of
// hp_transformer_init), and the backward makes it again from a1 and a3 (ffn_act_again).
static int alloc_dense_ffn(hp_transformer *tf, hp_block_acts *A) {
    const hp_local_shapes *sh = &tf->sh;
    const size_t D = (size_t)sh->D, reg = (size_t)sh->Nreg, fl = (size_t)sh->Fl;
    const size_t qd = (size_t)sh->Hl * sh->hd, kvd = (size_t)sh->Hkvl * sh->hd;
    A->a1 = falloc(reg * fl); A->a3 = falloc(reg * fl);
    if (!A->a1 || !A->a3) return -1;
    if (!tf->split_backward) return 0;
    A->dy_wo = falloc(reg * D); A->dy_w2 = falloc(reg * D);
    A->dy_w1 = falloc(reg * fl); A->dy_w3 = falloc(reg * fl);
    A->dy_q = falloc(reg * qd); A->dy_k = falloc(reg * kvd); A->dy_v = falloc(reg * kvd);
    return A->dy_wo && A->dy_w2 && A->dy_w1 && A->dy_w3 && A->dy_q && A->dy_k && A->dy_v ? 0 : -1;
}

// A MoE block's state (its buffers, the routed rows sized at the first forward).
static int alloc_moe(hp_transformer *tf, hp_block_acts *A) {
    const hp_model_config *m = &tf->m;
    const hp_local_shapes *sh = &tf->sh;
    hp_moe_dims md = {
        .N = sh->Nreg, .D = m->dim, .E = m->num_experts, .K = m->top_k,
        .El = sh->El, .e0 = sh->e0, .Fel = sh->Fel, .Fsl = sh->Fsl,
        .token_split = sh->token_split, .token_rank = sh->token_rank,
        .score_func = m->score_func, .route_norm = m->route_norm,
        .route_scale = m->route_scale, .dispatcher = tf->hk.moe_mode, .prec = &tf->hk.prec,
    };
    // token_split_offset (#3604): tp rank t takes the S_local rows at t*S_local, the
    // split of one sequence; right only for a local batch of 1
    if (md.token_split > 1 && hp_failpoint(HP_FP_TOKEN_SPLIT_OFFSET)) md.token_split *= sh->Bl;
    A->moe = hp_moe_state_init(&md);
    if (!A->moe || hp_moe_set_dispatch(A->moe, tf->hk.moe, tf->hk.moe_ctx) != 0) return -1;
    // one scratch for the rank's MoE blocks: a forward or backward runs one block at a time
    if (!tf->moe_scratch_from) tf->moe_scratch_from = A->moe;
    return hp_moe_share_scratch(A->moe, tf->moe_scratch_from);
}

// ---------------------------------------------------------------------------------------
// packed storage: a block's activations kept as the precision keeps them (hk.prec.keep)
//
// A packed block runs its forward in the shared set (tf->recompute, lent as tf->work over the
// block's own h_in, statistics and states), then keeps the set's stored fields in its store;
// its backward restores them into the set first. Every field is an op output under the op
// rule, so the round trip is exact (the precision checks it at each keep) and the step's bits
// are those of the floats. The fp32 statistics (rstd1, rstd2, lse), the stream h_in, the
// attention core's and the MoE state stay in their float buffers.

typedef enum { SZ_RES_D, SZ_REG_D, SZ_REG_QD, SZ_REG_KVD, SZ_REG_F } stored_size;
typedef enum { G_ATTN = 1, G_FFN = 2, G_DY = 4 } stored_group;   // the attention half, a dense
                                                                  // FFN, zbv's kept dy
typedef struct { size_t off; stored_size size; stored_group group; const char *name; } stored_field;
#define STORED(f, size, group) { offsetof(hp_block_acts, f), size, group, #f }
// (n1 and n2 are not: the backward reads the norms' inputs and rstd, and the region's g1, g2)
static const stored_field stored_fields[] = {   // a store's layout, in this order
    STORED(g1, SZ_REG_D, G_ATTN), STORED(q, SZ_REG_QD, G_ATTN), STORED(k, SZ_REG_KVD, G_ATTN),
    STORED(v, SZ_REG_KVD, G_ATTN), STORED(att, SZ_REG_QD, G_ATTN), STORED(h_mid, SZ_RES_D, G_ATTN),
    STORED(g2, SZ_REG_D, G_ATTN),
    STORED(a1, SZ_REG_F, G_FFN), STORED(a3, SZ_REG_F, G_FFN),   // (act: made again from them)
    STORED(dy_wo, SZ_REG_D, G_DY), STORED(dy_w2, SZ_REG_D, G_DY), STORED(dy_w1, SZ_REG_F, G_DY),
    STORED(dy_w3, SZ_REG_F, G_DY), STORED(dy_q, SZ_REG_QD, G_DY), STORED(dy_k, SZ_REG_KVD, G_DY),
    STORED(dy_v, SZ_REG_KVD, G_DY),
};
#define N_STORED_FIELDS (sizeof stored_fields / sizeof *stored_fields)

static float **stored_field_of(hp_block_acts *A, const stored_field *f) {
    return (float **)((char *)A + f->off);
}

static size_t stored_elems(const hp_transformer *tf, stored_size size) {
    const hp_local_shapes *sh = &tf->sh;
    const size_t D = (size_t)sh->D, res = (size_t)sh->Nres, reg = (size_t)sh->Nreg;
    switch (size) {
    case SZ_RES_D:   return res * D;
    case SZ_REG_D:   return reg * D;
    case SZ_REG_QD:  return reg * (size_t)sh->Hl * sh->hd;
    case SZ_REG_KVD: return reg * (size_t)sh->Hkvl * sh->hd;
    case SZ_REG_F:   return reg * (size_t)sh->Fl;
    }
    return 0;
}

// The groups block l stores: the attention half, and a dense block's FFN (and zbv's dy).
static int stored_groups(const hp_transformer *tf, int l) {
    if (hp_model_is_moe_layer(&tf->m, l)) return G_ATTN;
    return G_ATTN | G_FFN | (tf->split_backward ? G_DY : 0);
}

// A stored block's buffers: its fp32 statistics, the store, the core's and MoE state.
static int alloc_stored(hp_transformer *tf, hp_block_acts *A, int l) {
    const size_t res = (size_t)tf->sh.Nres, reg = (size_t)tf->sh.Nreg;
    A->rstd1 = falloc(res); A->rstd2 = falloc(res); A->lse = falloc(reg * (size_t)tf->sh.Hl);
    const int groups = stored_groups(tf, l);
    size_t n = 0;
    for (size_t i = 0; i < N_STORED_FIELDS; i++)
        if (stored_fields[i].group & groups) n += stored_elems(tf, stored_fields[i].size);
    A->stored = palloc(tf, n);
    if (!A->rstd1 || !A->rstd2 || !A->lse || !A->stored || alloc_attention_state(tf, A) != 0) return -1;
    return hp_model_is_moe_layer(&tf->m, l) ? alloc_moe(tf, A) : 0;
}

// Keeps n floats (op outputs under the op rule) packed; one the precision cannot keep exactly
// stops the job with one line naming `what`.
static void keep_packed(const hp_transformer *tf, void *dst, const float *src, size_t n, const char *what) {
    PREC(keep, dst, src, n, what, tf->mb);
}
static void restore_packed(const hp_transformer *tf, float *dst, const void *src, size_t n) {
    PREC(restore, dst, src, n);
}

// Packs (save) the groups `which` of the set W into block l's store, or unpacks them into W.
static void stored_move(hp_transformer *tf, int l, hp_block_acts *W, int which, int save) {
    const hp_block_acts *A = acts(tf, l);
    // (bf16_store_slot: the bug restores the next slot's store, another microbatch's activations)
    if (!save && hp_failpoint(HP_FP_BF16_STORE_SLOT))
        A = &tf->blocks[(size_t)((tf->slot + 1) % tf->n_slots) * tf->m.n_layers + l];
    const int groups = stored_groups(tf, l);
    size_t at = 0;
    for (size_t i = 0; i < N_STORED_FIELDS; i++) {
        const stored_field *f = &stored_fields[i];
        if (!(f->group & groups)) continue;
        const size_t n = stored_elems(tf, f->size);
        float *buf = *stored_field_of(W, f);
        if (f->group & which) {
            if (!save) restore_packed(tf, buf, packed_at(tf, A->stored, at), n);
            else {
                char what[48];
                snprintf(what, sizeof what, "%s of block %d", f->name, l);
                keep_packed(tf, packed_at(tf, A->stored, at), buf, n, what);
            }
        }
        at += n;
    }
}

// Under packed storage every block input a rank holds is kept packed, one copy per slot, and
// read and written in floats in the shared stream buffer of the block's parity (tf->stream):
//   - a block inside a stage, and block 0 (the embedding writes its input in the same action):
//     the block before it writes the stream there and the block's forward packs it;
//   - a stage's first block (l > 0): the packed copy is what the pipeline receives, or what
//     a stage of this rank packed when it ended (zbv's middle), any number of actions before;
//     the stage's forward unpacks it first (input_arrives_packed);
//   - the first block of a stage on another rank, fed by a stage of this one: the copy is
//     what the stage packs when it ends and the pipeline sends as it is.
// The head (l == L) keeps its input, the last block's output, packed too: the two are
// always in one stage.
static int input_stored(const hp_transformer *tf, int l) {
    if (l == tf->m.n_layers) return tf->store_packed && tf->head_local;
    return tf->store_packed && (tf->layer_local[l] || (l > 0 && tf->layer_local[l - 1]));
}

// Whether block l's stored input arrives packed from outside its stage (else its forward packs it).
static int input_arrives_packed(const hp_transformer *tf, int l) {
    return l > 0 && l < tf->m.n_layers && tf->stage_entry[l];
}

// Under --verify, the CRC-32 of an input stream (n floats), to see that a backward unpacks
// the input its forward read (HP_CHECK_STORE; 0 when not verifying).
static uint32_t stream_crc(const float *x, size_t n) {
    if (!hp_structure_enabled()) return 0;
    return (uint32_t)crc32_z(crc32_z(0L, Z_NULL, 0), (const Bytef *)x, n * sizeof(float));
}

// The structure check of an unpacked input of block l (l == L: the head's); its forward
// recorded `want`.
static void check_store(const hp_transformer *tf, const float *x, size_t n, uint32_t want, int l) {
    if (!hp_structure_enabled()) return;
    const uint32_t got = stream_crc(x, n);
    char who[32];
    if (l < tf->m.n_layers) snprintf(who, sizeof who, "block %d", l);
    else snprintf(who, sizeof who, "the head");
    if (got == want) hp_structure_pass(HP_CHECK_STORE);
    else hp_structure_fail(HP_CHECK_STORE, "%s, microbatch %d: the input its backward unpacks "
                           "(CRC-32 %08x) is not the one its forward read (%08x)", who, tf->mb, got, want);
}

// Packs block l's input (in its stream buffer) into its packed copy, after its forward.
static void keep_input(hp_transformer *tf, int l) {
    hp_block_acts *A = acts(tf, l);
    A->h_in_crc = stream_crc(A->h_in, (size_t)tf->sh.Nres * tf->sh.D);
    // (bf16_input_parity: the bug packs the other parity's buffer, where the block wrote its output)
    const float *in = hp_failpoint(HP_FP_BF16_INPUT_PARITY) ? tf->stream[(l + 1) & 1] : A->h_in;
    char what[48];
    snprintf(what, sizeof what, "input of block %d", l);
    keep_packed(tf, A->h_in_stored, in, (size_t)tf->sh.Nres * tf->sh.D, what);
}

// The stream entering block l as its forward left it, in floats: a packed copy is restored
// into its stream buffer first (l == L: the head's input).
static float *kept_stream(hp_transformer *tf, int l) {
    const size_t n = (size_t)tf->sh.Nres * tf->sh.D;
    if (l < tf->m.n_layers && acts(tf, l)->h_in_stored) {
        const hp_block_acts *A = acts(tf, l);
        restore_packed(tf, A->h_in, A->h_in_stored, n);
        check_store(tf, A->h_in, n, A->h_in_crc, l);
    } else if (l == tf->m.n_layers && tf->heads[tf->slot].h_final_stored) {
        const hp_head_acts *H = &tf->heads[tf->slot];
        // (bf16_head_slot: the bug unpacks the next slot's kept input, another microbatch's)
        const hp_head_acts *from = hp_failpoint(HP_FP_BF16_HEAD_SLOT) ? &tf->heads[(tf->slot + 1) % tf->n_slots] : H;
        restore_packed(tf, H->h_final, from->h_final_stored, n);
        check_store(tf, H->h_final, n, H->h_final_crc, l);
    }
    return stream_in(tf, l);
}

// Block l's buffers in one slot: nothing for a block of another pp rank, unless a stage of
// this rank ends just before it (h_in is then where that stage's output goes); only h_in for
// a checkpointed block; under packed storage its statistics, store and states; everything for
// the others. A block whose input is stored has h_in packed (input_stored).
static int alloc_block(hp_transformer *tf, hp_block_acts *A, int l) {
    const int local = tf->layer_local[l], feeds = l > 0 && tf->layer_local[l - 1];
    if (!local && !feeds) return 0;
    const size_t nres = (size_t)tf->sh.Nres * tf->sh.D;
    if (input_stored(tf, l)) {
        A->h_in = tf->stream[l & 1];
        if (!(A->h_in_stored = palloc(tf, nres))) return -1;
    } else if (!(A->h_in = falloc(nres))) {
        return -1;
    }
    if (!local || ac_block(tf, l)) return 0;
    if (tf->store_packed) return alloc_stored(tf, A, l);
    if (alloc_attention(tf, A, 1) != 0) return -1;
    return hp_model_is_moe_layer(&tf->m, l) ? alloc_moe(tf, A) : alloc_dense_ffn(tf, A);
}

// The one shared set of a rank with checkpointed or stored blocks: the attention half (the
// core's state only for checkpointed blocks: a stored block keeps its own), the dense FFN if
// one of those blocks is dense, and the MoE state if a checkpointed block is MoE. Its h_in
// points at the running block's kept input.
static int alloc_recompute(hp_transformer *tf) {
    int used = 0, ac = 0, dense = 0, ac_moe = 0;
    for (int l = 0; l < tf->m.n_layers; l++) {
        if (!tf->layer_local[l] || (!ac_block(tf, l) && !tf->store_packed)) continue;
        const int moe = hp_model_is_moe_layer(&tf->m, l);
        used = 1;
        ac |= ac_block(tf, l);
        dense |= !moe;
        ac_moe |= moe && ac_block(tf, l);
    }
    if (!used) return 0;
    hp_block_acts *R = tf->recompute = hp_mem_alloc(HP_MEM_OTHER, sizeof *R);
    if (!R || alloc_attention(tf, R, ac) != 0) return -1;
    if (dense && alloc_dense_ffn(tf, R) != 0) return -1;
    return ac_moe ? alloc_moe(tf, R) : 0;
}

int hp_transformer_init(hp_transformer *tf, const hp_model_config *m, const hp_local_shapes *sh,
                        const hp_param_table *pt, const hp_model_hooks *hk,
                        const hp_transformer_opts *opt) {
    memset(tf, 0, sizeof *tf);
    tf->store_packed = hk->prec.stored_bytes > 0;
    tf->m = *m;
    tf->sh = *sh;
    tf->pt = pt;
    tf->hk = *hk;
    tf->n_slots = opt->n_slots < 1 ? 1 : opt->n_slots;
    tf->split_backward = opt->split_backward;
    tf->ac_every = opt->ac_every;
    const int L = m->n_layers;
    const size_t D = (size_t)sh->D, res = (size_t)sh->Nres, reg = (size_t)sh->Nreg;
    const size_t qd = (size_t)sh->Hl * sh->hd, kvd = (size_t)sh->Hkvl * sh->hd;
    tf->layer_local = hp_mem_alloc(HP_MEM_OTHER, ((size_t)L + 1) * sizeof(int));
    tf->stage_entry = hp_mem_alloc(HP_MEM_OTHER, ((size_t)L + 1) * sizeof(int));
    if (!tf->layer_local || !tf->stage_entry) return -1;
    for (int l = 0; l < L; l++) {
        char name[96];
        snprintf(name, sizeof name, "layers.%d.attention_norm.weight", l);
        const int i = hp_params_find(pt, name);
        tf->layer_local[l] = i >= 0 && pt->p[i].on_rank;
        tf->stage_entry[l] = l == 0 || (opt->stage_entry && opt->stage_entry[l]);
    }
    const int i_out = hp_params_find(pt, "output.weight");
    tf->head_local = i_out >= 0 && pt->p[i_out].on_rank;

    const size_t bytes_before = falloc_bytes;
    tf->blocks = hp_mem_alloc(HP_MEM_OTHER, ((size_t)tf->n_slots * L + 1) * sizeof(hp_block_acts));
    tf->heads = hp_mem_alloc(HP_MEM_OTHER, (size_t)tf->n_slots * sizeof(hp_head_acts));
    if (!tf->blocks || !tf->heads) return -1;
    lookup_params(tf);
    for (int l = 0; l <= L && !tf->stream[0]; l++)   // the two stream buffers, if a block or the head needs them
        if (input_stored(tf, l) && (!(tf->stream[0] = falloc(res * D)) || !(tf->stream[1] = falloc(res * D))))
            return -1;
    for (int slot = 0; slot < tf->n_slots; slot++)
        for (int l = 0; l < L; l++)
            if (alloc_block(tf, &tf->blocks[(size_t)slot * L + l], l) != 0) return -1;
    if (alloc_recompute(tf) != 0) return -1;
    tf->dlogits = salloc(reg * (size_t)sh->Vl);
    if (!tf->dlogits) return -1;
    for (int slot = 0; slot < tf->n_slots; slot++) {
        hp_head_acts *H = &tf->heads[slot];
        if (input_stored(tf, L)) {
            H->h_final_stored = palloc(tf, res * D);
            H->h_final = tf->stream[L & 1];
        } else if (tf->head_local) {   // (a rank without the head never writes it)
            H->h_final = falloc(res * D);
        }
        if ((tf->head_local && !H->h_final) || (input_stored(tf, L) && !H->h_final_stored)) return -1;
        if (tf->split_backward && tf->pid_tok >= 0 && tf->pt->p[tf->pid_tok].on_rank) {   // (zbv: the first stage's)
            H->dy_embed = falloc(reg * D);
            if (!H->dy_embed) return -1;
        }
        if (!tf->head_local) continue;
        H->rstdf = falloc(res);
        if (tf->store_packed) H->gf_stored = palloc(tf, reg * D);   // (H->gf: tf->reg_b, below)
        else H->gf = falloc(reg * D);
        if (tf->store_packed) {   // (the loss's logits are an op output: kept as the others)
            H->logits_stored = palloc(tf, reg * (size_t)sh->Vl);
            H->logits = H->logits_stored ? tf->dlogits : NULL;
        } else {
            H->logits = falloc(reg * (size_t)sh->Vl);
        }
        H->ce_m = falloc(reg); H->ce_se = falloc(reg);
        if (!H->rstdf || !(H->gf || H->gf_stored) || !H->logits || !H->ce_m || !H->ce_se) return -1;
        if (tf->split_backward && tf->store_packed) {   // (zbv: the kept logits' gradient)
            if (!(H->dy_out_stored = palloc(tf, reg * (size_t)sh->Vl))) return -1;
        } else if (tf->split_backward && !(H->dy_out = falloc(reg * (size_t)sh->Vl))) {
            return -1;
        }
    }
    for (int l = 0; l < L && !tf->res_n; l++)   // the norms' outputs of the running block
        if (tf->layer_local[l] && !(tf->res_n = falloc(res * D))) return -1;
    tf->activation_bytes = falloc_bytes - bytes_before;   // every slot's blocks and head, the recompute set
    tf->res_a = salloc(res * D); tf->res_b = salloc(res * D);
    tf->reg_a = salloc(reg * D); tf->reg_b = salloc(reg * D);
    tf->reg_q = salloc(reg * qd); tf->reg_k = salloc(reg * kvd); tf->reg_v = salloc(reg * kvd);
    tf->reg_att = salloc(reg * qd);
    const size_t fl = (size_t)sh->Fl;
    tf->reg_f1 = salloc(reg * fl); tf->reg_f2 = salloc(reg * fl); tf->reg_f3 = salloc(reg * fl);
    // a kept gf is unpacked into reg_b, free while the head runs (the blocks' backward uses it)
    for (int slot = 0; slot < tf->n_slots; slot++)
        if (tf->heads[slot].gf_stored) tf->heads[slot].gf = tf->reg_b;
    // a dense block's forward makes act in reg_f3, which only a backward uses otherwise, and
    // every block its norms' outputs in res_n
    for (size_t b = 0; b <= (size_t)tf->n_slots * L; b++) {
        hp_block_acts *A = b < (size_t)tf->n_slots * L ? &tf->blocks[b] : tf->recompute;
        if (!A) continue;
        if (A->a1) A->act = tf->reg_f3;
        if (A->g1) A->n1 = A->n2 = tf->res_n;
    }
    return tf->res_a && tf->res_b && tf->reg_a && tf->reg_b && tf->reg_q &&
           tf->reg_k && tf->reg_v && tf->reg_att && tf->reg_f1 && tf->reg_f2 && tf->reg_f3 ? 0 : -1;
}

static void free_block(hp_transformer *tf, hp_block_acts *A) {
    if (A->h_in_stored) A->h_in = NULL;   // the shared stream buffer (tf->stream)
    if (A->act == tf->reg_f3) A->act = NULL;   // the scratch's
    if (A->n1 == tf->res_n) A->n1 = A->n2 = NULL;   // the rank's one buffer
    hp_mem_free(A->h_in_stored);
    hp_mem_free(A->h_in); hp_mem_free(A->n1); hp_mem_free(A->rstd1); hp_mem_free(A->g1);
    hp_mem_free(A->q); hp_mem_free(A->k); hp_mem_free(A->v); hp_mem_free(A->att); hp_mem_free(A->lse);
    hp_mem_free(A->h_mid); hp_mem_free(A->n2); hp_mem_free(A->rstd2); hp_mem_free(A->g2);
    hp_mem_free(A->a1); hp_mem_free(A->a3); hp_mem_free(A->act);
    hp_mem_free(A->dy_wo); hp_mem_free(A->dy_w2); hp_mem_free(A->dy_w1); hp_mem_free(A->dy_w3);
    hp_mem_free(A->dy_q); hp_mem_free(A->dy_k); hp_mem_free(A->dy_v);
    hp_mem_free(A->stored);
    if (A->moe) hp_moe_state_free(A->moe);
    if (A->attn) tf->hk.attn.state_free(A->attn);
}

void hp_transformer_free(hp_transformer *tf) {
    const int L = tf->m.n_layers;
    if (tf->blocks) {
        for (size_t b = 0; b < (size_t)tf->n_slots * L; b++) free_block(tf, &tf->blocks[b]);
        hp_mem_free(tf->blocks);
    }
    if (tf->recompute) {
        tf->recompute->h_in = NULL;   // a slot's, lent to the running block
        free_block(tf, tf->recompute);
        hp_mem_free(tf->recompute);
    }
    if (tf->heads) {
        for (int slot = 0; slot < tf->n_slots; slot++) {
            hp_head_acts *H = &tf->heads[slot];
            if (H->logits_stored) H->logits = NULL;   // tf->dlogits
            if (H->h_final_stored) H->h_final = NULL;   // tf->stream
            if (H->gf_stored) H->gf = NULL;             // tf->reg_b
            hp_mem_free(H->logits_stored); hp_mem_free(H->h_final_stored); hp_mem_free(H->gf_stored);
            hp_mem_free(H->h_final); hp_mem_free(H->rstdf); hp_mem_free(H->gf); hp_mem_free(H->logits);
            hp_mem_free(H->ce_m); hp_mem_free(H->ce_se); hp_mem_free(H->dy_out); hp_mem_free(H->dy_embed);
            hp_mem_free(H->dy_out_stored);
        }
        hp_mem_free(tf->heads);
    }
    hp_mem_free(tf->stream[0]); hp_mem_free(tf->stream[1]);
    hp_mem_free(tf->layer_local); hp_mem_free(tf->stage_entry);
    hp_mem_free(tf->dlogits);
    hp_mem_free(tf->res_n);
    hp_mem_free(tf->res_a); hp_mem_free(tf->res_b); hp_mem_free(tf->reg_a); hp_mem_free(tf->reg_b);
    hp_mem_free(tf->reg_q); hp_mem_free(tf->reg_k); hp_mem_free(tf->reg_v); hp_mem_free(tf->reg_att);
    hp_mem_free(tf->reg_f1); hp_mem_free(tf->reg_f2); hp_mem_free(tf->reg_f3);
    memset(tf, 0, sizeof *tf);
}

// ---------------------------------------------------------------------------------------
// forward

// The tokens and labels of the running microbatch.
static const int *mb_tokens(const hp_transformer *tf) { return tf->tokens + (size_t)tf->mb * tf->sh.Nreg; }
static const int *mb_labels(const hp_transformer *tf) { return tf->labels + (size_t)tf->mb * tf->sh.Nreg; }

static void add_into(float *out, const float *a, const float *b, size_t n) {
    for (size_t i = 0; i < n; i++) out[i] = a[i] + b[i];
}

// The buffers block l runs in: its own in the slot, or for a checkpointed block the shared
// recompute set over the slot's kept h_in; for a stored block that set too, lent as tf->work
// over the block's h_in, statistics and states (the fields it does not store: NULL).
static hp_block_acts *block_work(hp_transformer *tf, int l) {
    hp_block_acts *A = acts(tf, l);
    if (ac_block(tf, l)) {
        tf->recompute->h_in = A->h_in;
        return tf->recompute;
    }
    if (!A->stored) return A;
    hp_block_acts *W = &tf->work;
    *W = *tf->recompute;
    W->h_in = A->h_in;
    W->rstd1 = A->rstd1; W->rstd2 = A->rstd2; W->lse = A->lse;
    W->attn = A->attn; W->moe = A->moe;
    W->stored = NULL;
    const int groups = stored_groups(tf, l);
    for (size_t i = 0; i < N_STORED_FIELDS; i++)
        if (!(stored_fields[i].group & groups)) *stored_field_of(W, &stored_fields[i]) = NULL;
    return W;
}

// The step's routing of MoE block l for the running microbatch (the caller's record), or NULL.
static int *routing_record(hp_transformer *tf, int l) {
    if (!tf->routing) return NULL;
    int i = 0;
    for (int k = 0; k < l; k++) i += hp_model_is_moe_layer(&tf->m, k);
    const size_t per_mb = (size_t)tf->sh.Nreg * tf->m.top_k;
    return tf->routing + ((size_t)i * tf->sh.M + tf->mb) * per_mb;
}

// The forward records block l's routing; its recompute must route every token the same way
// (deterministic kernels, the same input): a difference is a broken recompute, and the job
// stops here rather than train on gradients of another routing.
static void keep_routing(hp_transformer *tf, int l, const hp_moe_state *st, int recompute) {
    int *rec = routing_record(tf, l);
    if (!rec) return;
    const size_t n = (size_t)tf->sh.Nreg * tf->m.top_k;
    if (!recompute) {
        memcpy(rec, hp_moe_routing(st), n * sizeof(int));
        return;
    }
    const int *again = hp_moe_routing(st);
    for (size_t i = 0; i < n; i++)
        if (again[i] != rec[i]) {
            // every rank stops: a peer may wait in a collective
            hp_fail_line_and_abort(1, "hp: activation checkpointing: the recompute of block %d "
                                   "routed row %zu (microbatch %d) to expert %d, its forward to "
                                   "%d; the recompute must repeat the forward exactly", l,
                                   i / (size_t)tf->m.top_k, tf->mb, again[i], rec[i]);
        }
}

// The GEMMs a region's collective feeds or drains, by row block (region_enter_consume /
// region_exit_produce: async TP overlaps each block with the exchange). Each block is the
// linears of its rows: row r of every output reads row r of the input only.
typedef struct {
    const hp_transformer *tf;
    hp_block_acts *A;
    const float *w[3];   // the weights of the consumers (wq, wk, wv / w1, w3 / output)
    float *partial;      // exit_produce: the partial's rows
} rows_job;

static void qkv_rows(void *ctx, int r0, int n) {   // q, k, v of rows [r0, r0+n) of g1
    const rows_job *j = ctx;
    const hp_local_shapes *sh = &j->tf->sh;
    const size_t D = (size_t)sh->D, qd = (size_t)sh->Hl * sh->hd, kvd = (size_t)sh->Hkvl * sh->hd;
    const float *x = j->A->g1 + (size_t)r0 * D;
    linear_fwd(j->tf, j->A->q + (size_t)r0 * qd, x, j->w[0], n, (int)D, (int)qd);
    linear_fwd(j->tf, j->A->k + (size_t)r0 * kvd, x, j->w[1], n, (int)D, (int)kvd);
    linear_fwd(j->tf, j->A->v + (size_t)r0 * kvd, x, j->w[2], n, (int)D, (int)kvd);
}

static void wo_rows(void *ctx, int r0, int n) {     // the attention output's partial (wo)
    const rows_job *j = ctx;
    const hp_local_shapes *sh = &j->tf->sh;
    const size_t D = (size_t)sh->D, qd = (size_t)sh->Hl * sh->hd;
    linear_fwd(j->tf, j->partial + (size_t)r0 * D, j->A->att + (size_t)r0 * qd, j->w[0], n, (int)qd, (int)D);
    partial_out(j->tf, j->partial + (size_t)r0 * D, (size_t)n * D);
}

static void w13_rows(void *ctx, int r0, int n) {    // a1, a3 of rows of g2
    const rows_job *j = ctx;
    const hp_local_shapes *sh = &j->tf->sh;
    const size_t D = (size_t)sh->D, fl = (size_t)sh->Fl;
    const float *x = j->A->g2 + (size_t)r0 * D;
    linear_fwd(j->tf, j->A->a1 + (size_t)r0 * fl, x, j->w[0], n, (int)D, (int)fl);
    linear_fwd(j->tf, j->A->a3 + (size_t)r0 * fl, x, j->w[1], n, (int)D, (int)fl);
}

static void w2_rows(void *ctx, int r0, int n) {     // the FFN output's partial (w2)
    const rows_job *j = ctx;
    const hp_local_shapes *sh = &j->tf->sh;
    const size_t D = (size_t)sh->D, fl = (size_t)sh->Fl;
    linear_fwd(j->tf, j->partial + (size_t)r0 * D, j->A->act + (size_t)r0 * fl, j->w[0], n, (int)fl, (int)D);
    partial_out(j->tf, j->partial + (size_t)r0 * D, (size_t)n * D);
}

// Block l's forward from its h_in into h_out. recompute: a checkpointed block's rerun in
// its backward (every collective again, the routing checked against the forward's).
static void block_forward(hp_transformer *tf, int l, float *h_out, int recompute) {
    const hp_model_config *m = &tf->m;
    hp_block_acts *A = block_work(tf, l);
    const int D = tf->sh.D, Nr = tf->sh.Nreg, qd = tf->sh.Hl * tf->sh.hd, kvd = tf->sh.Hkvl * tf->sh.hd;
    const size_t nres = (size_t)tf->sh.Nres * D;
    PREC(block_begin, l, recompute);

    // h_mid = h_in + Attention(RMSNorm(h_in))
    const size_t nq = (size_t)Nr * qd, nkv = (size_t)Nr * kvd, nf = (size_t)Nr * tf->sh.Fl;
    hp_rmsnorm_forward(A->n1, A->rstd1, A->h_in, PARAM(l, BP_ATTN_NORM), m->norm_eps,
                       tf->sh.Nres, D);
    op_out(tf, A->n1, nres);
    rows_job job = { tf, A, { PARAM(l, BP_WQ), PARAM(l, BP_WK), PARAM(l, BP_WV) }, tf->reg_a };
    region_enter_consume(tf, A->g1, A->n1, D, qkv_rows, &job, job.w, 3);
    op_out(tf, A->q, nq); op_out(tf, A->k, nkv); op_out(tf, A->v, nkv);
    hp_rope_forward(A->q, tf->rope, tf->sh.Bl, tf->sh.Sc, tf->sh.Hl, tf->sh.hd);
    hp_rope_forward(A->k, tf->rope, tf->sh.Bl, tf->sh.Sc, tf->sh.Hkvl, tf->sh.hd);
    op_out(tf, A->q, nq); op_out(tf, A->k, nkv);
    tf->hk.attn.forward(tf->hk.attn.ctx, A->attn, A->att, A->lse, A->q, A->k, A->v);
    op_out(tf, A->att, nq);   // (under cp the partial outputs and lse stay fp32: one rounding)
    job.w[0] = PARAM(l, BP_WO);
    region_exit_produce(tf, tf->res_a, tf->reg_a, D, wo_rows, &job, job.w[0], A->att, qd);   // (reads, never writes, reg_a)
    check_partial(tf, tf->reg_a, (size_t)Nr * D, "attention output (wo)", l);
    op_out(tf, tf->res_a, nres);
    add_into(A->h_mid, A->h_in, tf->res_a, nres);
    op_out(tf, A->h_mid, nres);

    // h_out = h_mid + (FFN or MoE)(RMSNorm(h_mid))
    hp_rmsnorm_forward(A->n2, A->rstd2, A->h_mid, PARAM(l, BP_FFN_NORM), m->norm_eps,
                       tf->sh.Nres, D);
    op_out(tf, A->n2, nres);
    if (hp_model_is_moe_layer(m, l)) {   // (MoE: plain regions; async TP fuses dense GEMMs only)
        region_enter(tf, A->g2, A->n2, D);
        hp_moe_weights w = moe_weights(tf, l);
        hp_moe_block_forward(A->moe, tf->reg_a, A->g2, &w);
        keep_routing(tf, l, A->moe, recompute);
        partial_out(tf, tf->reg_a, (size_t)Nr * D);
        check_partial(tf, tf->reg_a, (size_t)Nr * D, "FFN / MoE output (w2)", l);
        region_exit(tf, tf->res_a, tf->reg_a, D);
    } else {
        job.w[0] = PARAM(l, BP_W1); job.w[1] = PARAM(l, BP_W3);
        region_enter_consume(tf, A->g2, A->n2, D, w13_rows, &job, job.w, 2);
        op_out(tf, A->a1, nf); op_out(tf, A->a3, nf);
        hp_swiglu_forward(A->act, A->a1, A->a3, nf);
        op_out(tf, A->act, nf);
        job.w[0] = PARAM(l, BP_W2);
        region_exit_produce(tf, tf->res_a, tf->reg_a, D, w2_rows, &job, job.w[0], A->act, tf->sh.Fl);
        check_partial(tf, tf->reg_a, (size_t)Nr * D, "FFN / MoE output (w2)", l);
    }
    op_out(tf, tf->res_a, nres);
    add_into(h_out, A->h_mid, tf->res_a, nres);
    op_out(tf, h_out, nres);
    if (acts(tf, l)->stored) stored_move(tf, l, A, G_ATTN | G_FFN, 1);
    if (!recompute && acts(tf, l)->h_in_stored && !input_arrives_packed(tf, l)) keep_input(tf, l);
    tf->hk.prec.block_end(tf->hk.prec.ctx);
}

// The head's output GEMM by row block of gf (region_enter_consume).
typedef struct {
    const hp_transformer *tf;
    hp_head_acts *H;
    const float *w;
} head_job;

static void logits_rows(void *ctx, int r0, int n) {
    const head_job *j = ctx;
    const size_t D = (size_t)j->tf->sh.D, Vl = (size_t)j->tf->sh.Vl;
    linear_fwd(j->tf, j->H->logits + (size_t)r0 * Vl, j->H->gf + (size_t)r0 * D, j->w, n, (int)D, (int)Vl);
}


float *hp_transformer_stream(hp_transformer *tf, int l) { return stream_in(tf, l); }

void *hp_transformer_stream_stored(hp_transformer *tf, int l) {
    return l < tf->m.n_layers ? acts(tf, l)->h_in_stored : tf->heads[tf->slot].h_final_stored;
}

// A stage's input that arrived packed (the pipeline's, or a stage of this rank's) is
// restored into its stream buffer before the stage runs; its CRC is what the backward's
// restore is checked against.
static void unpack_stage_input(hp_transformer *tf, int l0) {
    hp_block_acts *A = acts(tf, l0);
    const size_t n = (size_t)tf->sh.Nres * tf->sh.D;
    // (bf16_stage_input_stale: the bug runs the stage on what its stream buffer holds, another
    //  microbatch's stream or zeros, the input that arrived left packed)
    if (!hp_failpoint(HP_FP_BF16_STAGE_INPUT_STALE)) restore_packed(tf, A->h_in, A->h_in_stored, n);
    A->h_in_crc = stream_crc(A->h_in, n);
}

// A stage's output, for the next stage (the pipeline sends the packed copy, or a stage of this
// rank restores it later), packed into that stage's first block's copy of this slot.
static void pack_stage_output(hp_transformer *tf, int l1) {
    char what[48];
    snprintf(what, sizeof what, "input of block %d (a stage's output)", l1);
    keep_packed(tf, acts(tf, l1)->h_in_stored, stream_in(tf, l1), (size_t)tf->sh.Nres * tf->sh.D, what);
}

void hp_transformer_forward_layers(hp_transformer *tf, int l0, int l1, int first, int last) {
    const hp_model_config *m = &tf->m;
    const int L = m->n_layers, D = tf->sh.D;
    if (first) {
        unit_gather(tf, 0);
        hp_embedding_forward(tf->reg_a, mb_tokens(tf), TOP_PARAM(pid_tok), tf->sh.v0, tf->sh.Vl,
                             tf->sh.Nreg, D);
        unit_after_forward(tf, 0);
        region_exit(tf, stream_in(tf, l0), tf->reg_a, D);   // rowwise embedding: partial over tp
        op_out(tf, stream_in(tf, l0), (size_t)tf->sh.Nres * D);
    } else if (input_arrives_packed(tf, l0) && acts(tf, l0)->h_in_stored) {
        unpack_stage_input(tf, l0);
    }
    for (int l = l0; l < l1; l++) {
        unit_gather(tf, 1 + l);
        block_forward(tf, l, stream_in(tf, l + 1), 0);
        unit_after_forward(tf, 1 + l);
    }
    tf->ce_sum_local = 0.0;
    if (!last && acts(tf, l1)->h_in_stored) pack_stage_output(tf, l1);
    if (!last) return;
    hp_head_acts *H = &tf->heads[tf->slot];
    unit_gather(tf, L + 1);
    float *nf = tf->res_a;   // (res, D) the normed stream: the backward reads only its gather gf
    hp_rmsnorm_forward(nf, H->rstdf, H->h_final, TOP_PARAM(pid_norm), m->norm_eps, tf->sh.Nres, D);
    op_out(tf, nf, (size_t)tf->sh.Nres * D);
    head_job hj = { tf, H, TOP_PARAM(pid_out) };
    region_enter_consume(tf, H->gf, nf, D, logits_rows, &hj, NULL, 0);
    op_out(tf, H->logits, (size_t)tf->sh.Nreg * tf->sh.Vl);   // the loss reads them in fp32
    const double ce_sum = tf->hk.region.cross_entropy(tf->hk.region.ctx, H->logits, mb_labels(tf), H->ce_m, H->ce_se);
    if (H->logits_stored) keep_packed(tf, H->logits_stored, H->logits, (size_t)tf->sh.Nreg * tf->sh.Vl, "logits");
    if (H->h_final_stored) {
        H->h_final_crc = stream_crc(H->h_final, (size_t)tf->sh.Nres * D);
        keep_packed(tf, H->h_final_stored, H->h_final, (size_t)tf->sh.Nres * D, "head's input");
    }
    if (H->gf_stored) keep_packed(tf, H->gf_stored, H->gf, (size_t)tf->sh.Nreg * D, "head's normed input");
    unit_after_forward(tf, L + 1);
    tf->ce_sum_local = ce_sum;
    tf->loss_local = ce_sum / (double)tf->n_valid_global;
}

double hp_transformer_forward(hp_transformer *tf) {
    hp_transformer_forward_layers(tf, 0, tf->m.n_layers, 1, 1);
    return tf->loss_local;
}

// ---------------------------------------------------------------------------------------
// backward: dh (res_b) flows from the loss down to the embeddings

static void zeros(float *x, size_t n) { hp_par_zero(x, n); }

// A linear's backward in two halves, because a region's collective sits between them (async
// TP): the input gradient dx by row block (dx_rows, called by region_*_backward_*: rows of dx
// read rows of dy only; the first product into dx writes it, no zero-fill, later ones add), and
// the weight gradient dw in one call over all rows (it sums over the rows: never split), or
// under zbv's I later (W) from the kept copy of dy. A precision may make dw in the dx call
// (linear_backward_dx), which then leaves linear_backward_dw nothing to do.
static void linear_bwd_dw(hp_transformer *tf, float *dw, float *keep_dy, const float *dy,
                          const float *x, const float *w, int N, int in, int out) {
    if (tf->input_only && keep_dy) {
        memcpy(keep_dy, dy, (size_t)N * out * sizeof(float));
        return;
    }
    PREC(linear_backward_dw, dw, dy, x, w, N, in, out);
}

// dx (N, in) rows [r0, r0+n) = sum over i of dy_i rows @ w_i (written by the first, in order);
// the precision may make dw_i from x in the same call (then over all rows in one call).
typedef struct {
    const hp_transformer *tf;
    float *dx;
    const float *dy[3], *w[3];
    int n_terms, in, out[3];
    float *dw[3];
    const float *x;   // the linears' input (N, in)
} dx_job;

static void dx_rows(void *ctx, int r0, int n) {
    const dx_job *j = ctx;
    float *dx = j->dx + (size_t)r0 * j->in;
    for (int i = 0; i < j->n_terms; i++) {
        const float *dy = j->dy[i] + (size_t)r0 * j->out[i];
        // (zbv's I: dw in its W, except in a block that keeps no dy for one: a MoE block)
        float *dw = j->tf->input_only && !j->tf->dw_in_i ? NULL : j->dw[i];
        const hp_precision_hooks *prec = &j->tf->hk.prec;
        prec->linear_backward_dx(prec->ctx, dx, dw, dy, j->x, j->w[i], n, j->in, j->out[i], i == 0);
    }
}

// A dense block's SwiGLU output, which no slot keeps: made again in reg_f1 from its kept a1
// and a3 with the forward's op rule, so bit for bit the forward's (the backward's w2 and zbv's
// W read it; reg_f1 is free until the backward makes dh1 there).
static const float *ffn_act_again(hp_transformer *tf, const hp_block_acts *A) {
    const size_t nf = (size_t)tf->sh.Nreg * tf->sh.Fl;
    hp_swiglu_forward(tf->reg_f1, A->a1, A->a3, nf);
    op_out(tf, tf->reg_f1, nf);
    return tf->reg_f1;
}

// The structure check of a recompute (structure.h): the rerun's output (in res_a) must be the
// forward's, which the next block keeps as its input, bit for bit.
static void check_recompute(hp_transformer *tf, int l) {
    if (!hp_structure_enabled()) return;
    const size_t n = (size_t)tf->sh.Nres * tf->sh.D;
    const float *forward = kept_stream(tf, l + 1);   // (its buffer is not block l's)
    for (size_t i = 0; i < n; i++)
        if (memcmp(&tf->res_a[i], &forward[i], sizeof(float)) != 0) {
            hp_structure_fail(HP_CHECK_RECOMPUTE, "block %d, microbatch %d, element %zu: the "
                              "recompute gives %.9g, its forward %.9g", l, tf->mb, i,
                              (double)tf->res_a[i], (double)forward[i]);
            return;
        }
    hp_structure_pass(HP_CHECK_RECOMPUTE);
}

// A checkpointed block first reruns its forward from its kept h_in into the recompute set
// (its output, already handed on, lands in scratch); the FSDP unit is gathered already.
static void block_backward(hp_transformer *tf, int l, float *dh) {
    const hp_model_config *m = &tf->m;
    float *kept = kept_stream(tf, l);   // its input, in floats
    if (ac_block(tf, l)) {
        // (ac_recompute_stale: the bug reruns the block from the next block's kept input,
        //  an off-by-one into the slot's inputs; shapes and collectives stay the same)
        if (hp_failpoint(HP_FP_AC_RECOMPUTE_STALE)) acts(tf, l)->h_in = kept_stream(tf, l + 1);
        block_forward(tf, l, tf->res_a, 1);
        acts(tf, l)->h_in = kept;
        check_recompute(tf, l);
    }
    hp_block_acts *A = block_work(tf, l);
    const int stored = acts(tf, l)->stored != NULL;
    if (stored) stored_move(tf, l, A, G_ATTN | G_FFN, 0);
    const int D = tf->sh.D, Nr = tf->sh.Nreg, qd = tf->sh.Hl * tf->sh.hd, kvd = tf->sh.Hkvl * tf->sh.hd;
    const size_t nreg = (size_t)Nr * D, nf = (size_t)Nr * tf->sh.Fl, nres = (size_t)tf->sh.Nres * D;
    PREC(block_begin, l, 0);
    tf->dw_in_i = A->dy_wo == NULL;   // (zbv: no kept dy, no W for this block's linears)

    // FFN / MoE branch: dh -> d(partial branch output) -> d(g2) -> d(n2) -> dh_mid
    if (hp_model_is_moe_layer(m, l)) {   // (MoE: plain regions, as in the forward)
        region_exit_backward(tf, tf->reg_a, dh, D);
        hp_moe_weights w = moe_weights(tf, l);
        hp_moe_grads g = moe_grads(tf, l);
        zeros(tf->reg_b, nreg);
        hp_moe_block_backward(A->moe, tf->reg_b, &g, tf->reg_a, &w);
        region_enter_backward(tf, tf->res_a, tf->reg_b, D);
    } else {   // (the buffers are written by their first product: no zero-fills)
        const int Fl = tf->sh.Fl;
        const float *act = ffn_act_again(tf, A);   // (in reg_f1, free until dh1 is made)
        dx_job w2 = { tf, tf->reg_f3, { tf->reg_a }, { PARAM(l, BP_W2) }, 1, Fl, { D }, { GRAD(l, BP_W2) }, act };
        region_exit_backward_consume(tf, tf->reg_a, dh, D, dx_rows, &w2, w2.w, 1);
        linear_bwd_dw(tf, GRAD(l, BP_W2), A->dy_w2, tf->reg_a, act, PARAM(l, BP_W2), Nr, Fl, D);
        op_out(tf, tf->reg_f3, nf);
        hp_swiglu_backward(tf->reg_f1, tf->reg_f2, tf->reg_f3, A->a1, A->a3, nf);
        op_out(tf, tf->reg_f1, nf); op_out(tf, tf->reg_f2, nf);
        linear_bwd_dw(tf, GRAD(l, BP_W1), A->dy_w1, tf->reg_f1, A->g2, PARAM(l, BP_W1), Nr, D, Fl);
        linear_bwd_dw(tf, GRAD(l, BP_W3), A->dy_w3, tf->reg_f2, A->g2, PARAM(l, BP_W3), Nr, D, Fl);
        dx_job w13 = { tf, tf->reg_b, { tf->reg_f1, tf->reg_f2 }, { PARAM(l, BP_W1), PARAM(l, BP_W3) },
                       2, D, { Fl, Fl }, { GRAD(l, BP_W1), GRAD(l, BP_W3) }, A->g2 };
        region_enter_backward_produce(tf, tf->res_a, tf->reg_b, D, dx_rows, &w13, w13.dy, w13.w, w13.out, 2);
    }
    op_out(tf, tf->res_a, nres);
    hp_rmsnorm_backward(dh, GRAD(l, BP_FFN_NORM), tf->res_a, A->h_mid,
                        PARAM(l, BP_FFN_NORM), A->rstd2, tf->sh.Nres, D);   // dh is now dh_mid
    op_out(tf, dh, nres);

    // attention branch
    dx_job wo = { tf, tf->reg_att, { tf->reg_a }, { PARAM(l, BP_WO) }, 1, qd, { D }, { GRAD(l, BP_WO) }, A->att };
    region_exit_backward_consume(tf, tf->reg_a, dh, D, dx_rows, &wo, wo.w, 1);
    linear_bwd_dw(tf, GRAD(l, BP_WO), A->dy_wo, tf->reg_a, A->att, PARAM(l, BP_WO), Nr, qd, D);
    op_out(tf, tf->reg_att, (size_t)Nr * qd);
    zeros(tf->reg_q, (size_t)Nr * qd);
    zeros(tf->reg_k, (size_t)Nr * kvd);
    zeros(tf->reg_v, (size_t)Nr * kvd);
    tf->hk.attn.backward(tf->hk.attn.ctx, A->attn, tf->reg_q, tf->reg_k, tf->reg_v, tf->reg_att,
                         A->att, A->lse, A->q, A->k, A->v);
    op_out(tf, tf->reg_q, (size_t)Nr * qd);
    op_out(tf, tf->reg_k, (size_t)Nr * kvd);
    op_out(tf, tf->reg_v, (size_t)Nr * kvd);
    hp_rope_backward(tf->reg_q, tf->rope, tf->sh.Bl, tf->sh.Sc, tf->sh.Hl, tf->sh.hd);
    hp_rope_backward(tf->reg_k, tf->rope, tf->sh.Bl, tf->sh.Sc, tf->sh.Hkvl, tf->sh.hd);
    op_out(tf, tf->reg_q, (size_t)Nr * qd);
    op_out(tf, tf->reg_k, (size_t)Nr * kvd);
    linear_bwd_dw(tf, GRAD(l, BP_WQ), A->dy_q, tf->reg_q, A->g1, PARAM(l, BP_WQ), Nr, D, qd);
    linear_bwd_dw(tf, GRAD(l, BP_WK), A->dy_k, tf->reg_k, A->g1, PARAM(l, BP_WK), Nr, D, kvd);
    linear_bwd_dw(tf, GRAD(l, BP_WV), A->dy_v, tf->reg_v, A->g1, PARAM(l, BP_WV), Nr, D, kvd);
    dx_job qkv = { tf, tf->reg_b, { tf->reg_q, tf->reg_k, tf->reg_v },
                   { PARAM(l, BP_WQ), PARAM(l, BP_WK), PARAM(l, BP_WV) }, 3, D, { qd, kvd, kvd },
                   { GRAD(l, BP_WQ), GRAD(l, BP_WK), GRAD(l, BP_WV) }, A->g1 };
    region_enter_backward_produce(tf, tf->res_a, tf->reg_b, D, dx_rows, &qkv, qkv.dy, qkv.w, qkv.out, 3);
    op_out(tf, tf->res_a, nres);
    hp_rmsnorm_backward(dh, GRAD(l, BP_ATTN_NORM), tf->res_a, A->h_in,
                        PARAM(l, BP_ATTN_NORM), A->rstd1, tf->sh.Nres, D);  // dh_in
    op_out(tf, dh, nres);
    if (stored && tf->input_only) stored_move(tf, l, A, G_DY, 1);   // (zbv: the dy its W reads)
    tf->hk.prec.block_end(tf->hk.prec.ctx);
}

void hp_transformer_backward_layers(hp_transformer *tf, int l0, int l1, int first, int last) {
    const int L = tf->m.n_layers, D = tf->sh.D;
    const size_t nres = (size_t)tf->sh.Nres * D;
    float *dh = tf->res_b;

    if (last) {
        // loss and head: d(sum CE / N_global) / dlogits
        hp_head_acts *H = &tf->heads[tf->slot];
        unit_gather(tf, L + 1);
        unit_zero_grads(tf, L + 1);
        if (H->logits_stored)   // into tf->dlogits, which the CE backward overwrites in place
            restore_packed(tf, H->logits, H->logits_stored, (size_t)tf->sh.Nreg * tf->sh.Vl);
        if (H->gf_stored) restore_packed(tf, H->gf, H->gf_stored, (size_t)tf->sh.Nreg * D);
        // (pp_microbatch_loss_scale: the bug divides each microbatch's loss by M once more)
        const double scale = hp_failpoint(HP_FP_PP_MICROBATCH_LOSS_SCALE) ? (double)tf->sh.M : 1.0;
        hp_ce_backward(tf->dlogits, H->logits, H->ce_m, H->ce_se, mb_labels(tf), tf->sh.v0,
                       (float)(1.0 / ((double)tf->n_valid_global * scale)), tf->sh.Nreg, tf->sh.Vl);
        op_out(tf, tf->dlogits, (size_t)tf->sh.Nreg * tf->sh.Vl);
        if (tf->input_only && H->dy_out_stored)   // (zbv's I under packed storage: W restores it)
            keep_packed(tf, H->dy_out_stored, tf->dlogits, (size_t)tf->sh.Nreg * tf->sh.Vl, "logits' gradient");
        else
            linear_bwd_dw(tf, TOP_GRAD(pid_out), H->dy_out, tf->dlogits, H->gf, TOP_PARAM(pid_out), tf->sh.Nreg, D, tf->sh.Vl);
        dx_job out = { tf, tf->reg_a, { tf->dlogits }, { TOP_PARAM(pid_out) }, 1, D, { tf->sh.Vl }, { TOP_GRAD(pid_out) }, H->gf };
        region_enter_backward_produce(tf, tf->res_a, tf->reg_a, D, dx_rows, &out, out.dy, out.w, out.out, 1);
        op_out(tf, tf->res_a, nres);
        zeros(dh, nres);
        hp_rmsnorm_backward(dh, TOP_GRAD(pid_norm), tf->res_a, kept_stream(tf, L), TOP_PARAM(pid_norm),
                            H->rstdf, tf->sh.Nres, D);
        op_out(tf, dh, nres);
        if (!tf->input_only) unit_reduce(tf, L + 1);   // (an I leaves it to its W)
        unit_after_backward(tf, L + 1);
    }

    for (int l = l1 - 1; l >= l0; l--) {
        unit_gather(tf, 1 + l);
        unit_zero_grads(tf, 1 + l);
        block_backward(tf, l, dh);
        if (!tf->input_only) unit_reduce(tf, 1 + l);
        unit_after_backward(tf, 1 + l);
    }

    if (!first) return;
    unit_gather(tf, 0);
    unit_zero_grads(tf, 0);
    region_exit_backward(tf, tf->reg_a, dh, D);
    if (tf->input_only) {   // the embedding has weight grads only: all of it is W's
        memcpy(tf->heads[tf->slot].dy_embed, tf->reg_a, (size_t)tf->sh.Nreg * D * sizeof(float));
    } else {
        hp_embedding_backward(TOP_GRAD(pid_tok), tf->reg_a, mb_tokens(tf), tf->sh.v0, tf->sh.Vl,
                              tf->sh.Nreg, D);
        unit_reduce(tf, 0);
    }
    unit_after_backward(tf, 0);
}

void hp_transformer_weight_grads_layers(hp_transformer *tf, int l0, int l1, int first, int last) {
    const int L = tf->m.n_layers, D = tf->sh.D, Nr = tf->sh.Nreg;
    const int qd = tf->sh.Hl * tf->sh.hd, kvd = tf->sh.Hkvl * tf->sh.hd;
    hp_head_acts *H = &tf->heads[tf->slot];
    if (last) {
        const float *dy_out = H->dy_out;
        if (H->dy_out_stored) {   // into the backward scratch, free between the I and the W
            restore_packed(tf, tf->dlogits, H->dy_out_stored, (size_t)Nr * tf->sh.Vl);
            dy_out = tf->dlogits;
        }
        if (H->gf_stored) restore_packed(tf, H->gf, H->gf_stored, (size_t)Nr * D);
        unit_gather(tf, L + 1);   // (kept for the step: a unit kept in 2 bytes is widened again)
        linear_bwd_add(tf, NULL, TOP_GRAD(pid_out), dy_out, H->gf, TOP_PARAM(pid_out), Nr, D, tf->sh.Vl);
        unit_reduce(tf, L + 1);
    }
    for (int l = l1 - 1; l >= l0; l--) {
        hp_block_acts *A = block_work(tf, l);
        if (acts(tf, l)->stored && !A->moe) stored_move(tf, l, A, G_ATTN | G_FFN | G_DY, 0);
        unit_gather(tf, 1 + l);   // (kept for the step: the precision may read the weights)
        PREC(block_begin, l, 0);
        if (!A->moe) {   // a MoE block ran its whole backward in the I
            linear_bwd_add(tf, NULL, GRAD(l, BP_W2), A->dy_w2, ffn_act_again(tf, A), PARAM(l, BP_W2), Nr,
                           tf->sh.Fl, D);
            linear_bwd_add(tf, NULL, GRAD(l, BP_W1), A->dy_w1, A->g2, PARAM(l, BP_W1), Nr, D, tf->sh.Fl);
            linear_bwd_add(tf, NULL, GRAD(l, BP_W3), A->dy_w3, A->g2, PARAM(l, BP_W3), Nr, D, tf->sh.Fl);
            linear_bwd_add(tf, NULL, GRAD(l, BP_WO), A->dy_wo, A->att, PARAM(l, BP_WO), Nr, qd, D);
            linear_bwd_add(tf, NULL, GRAD(l, BP_WQ), A->dy_q, A->g1, PARAM(l, BP_WQ), Nr, D, qd);
            linear_bwd_add(tf, NULL, GRAD(l, BP_WK), A->dy_k, A->g1, PARAM(l, BP_WK), Nr, D, kvd);
            linear_bwd_add(tf, NULL, GRAD(l, BP_WV), A->dy_v, A->g1, PARAM(l, BP_WV), Nr, D, kvd);
        }
        tf->hk.prec.block_end(tf->hk.prec.ctx);
        unit_reduce(tf, 1 + l);
    }
    if (first) {
        hp_embedding_backward(TOP_GRAD(pid_tok), H->dy_embed, mb_tokens(tf), tf->sh.v0, tf->sh.Vl, Nr, D);
        unit_reduce(tf, 0);
    }
}

void hp_transformer_backward(hp_transformer *tf) {
    hp_transformer_backward_layers(tf, 0, tf->m.n_layers, 1, 1);
}
