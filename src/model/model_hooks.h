// model_hooks.h - the calls the model makes into whatever parallelism is on, as a table of
// function pointers with their contexts. The model (transformer.c, moe.c) sees its local
// shapes, its activations, parameter and gradient pointers and these hooks, never a style:
// the train layer fills the table from the style objects (src/train/trainer_hooks.c). With
// every degree 1 each hook is a copy or the plain computation.
#ifndef HP_MODEL_HOOKS_H
#define HP_MODEL_HOOKS_H
#include "hyperpar/float8.h"
#include "hyperpar/moe.h"
#include "model/precision_hooks.h"

// Parameter units (embeddings = 0, block l = 1 + l, head = L + 1): where a unit's unsharded
// parameters and grads are, and their lifecycle (FSDP2 / HSDP / DDP). mb is the running
// microbatch: grads start from zero at the first, are reduced after the last.
typedef struct hp_unit_hooks {
    void *ctx;
    void (*gather)(void *ctx, int u);               // before the unit's forward / backward
    void (*after_forward)(void *ctx, int u);        // after its forward (it may be freed)
    void (*after_backward)(void *ctx, int u);       // after its backward
    void (*zero_grads)(void *ctx, int u, int mb);   // before the unit's backward
    void (*reduce)(void *ctx, int u, int mb);       // after the unit's (weight) grads are done
    float *(*param)(void *ctx, int i);              // parameter i of the table, unsharded local
    float *(*grad)(void *ctx, int i);               // its gradient
} hp_unit_hooks;

// Tensor-parallel regions (Megatron's f / g) and the vocab-parallel loss. enter: in (res, D)
// -> out (reg, D); exit: partial in (reg, D) -> out (res, D); each with its backward.
// cross_entropy returns the CE sum over valid rows of logits (reg, Vl), keeping m and se (reg).
// enter_consume: enter, then rows(rows_ctx, row0, nrows) computes the GEMMs that read the
// entered rows [row0, +nrows), once per row block (async TP overlaps them with the gather);
// exit_produce: rows() writes the partial's rows, then exit (async TP: each member's rows
// leave as soon as they are computed). The blocks cover all reg rows exactly once.
// exit_backward_consume / enter_backward_produce: the same around the backward's collectives
// (the gathered dout feeding input-gradient GEMMs; the input gradient's rows before its sum).
typedef void hp_region_rows_fn(void *rows_ctx, int row0, int nrows);
typedef struct hp_region_hooks {
    void *ctx;
    void (*enter)(void *ctx, float *out, const float *in, int D);
    void (*enter_backward)(void *ctx, float *din, float *dout, int D);
    void (*exit)(void *ctx, float *out, float *in, int D);
    void (*exit_backward)(void *ctx, float *din, const float *dout, int D);
    double (*cross_entropy)(void *ctx, const float *logits, const int *labels, float *m, float *se);
    void (*enter_consume)(void *ctx, float *out, const float *in, int D, hp_region_rows_fn *rows,
                          void *rows_ctx);
    void (*exit_produce)(void *ctx, float *out, float *partial, int D, hp_region_rows_fn *rows,
                         void *rows_ctx);
    void (*exit_backward_consume)(void *ctx, float *din, const float *dout, int D,
                                  hp_region_rows_fn *rows, void *rows_ctx);
    void (*enter_backward_produce)(void *ctx, float *din, float *dout, int D,
                                   hp_region_rows_fn *rows, void *rows_ctx);
    // Float8 tensorwise inputs (precision.md §5.4): sp_gathers says whether enter (and
    // exit_backward) all-gather the sequence; gather_fp8_consume is that all-gather of in (res,
    // D) cast with scale to 1-byte codes of format, dequantized into out (reg, D), then rows()
    // over its row blocks as enter_consume (async TP overlaps them with the gather).
    int  (*sp_gathers)(void *ctx);
    void (*gather_fp8_consume)(void *ctx, float *out, const float *in, int D, float scale,
                               hp_fp8_format format, hp_region_rows_fn *rows, void *rows_ctx);
} hp_region_hooks;

// The attention core on this rank's q (reg, Hl*hd), k, v (reg, Hkvl*hd) after RoPE: plain
// causal, ring / all-gather CP, or Ulysses around them. state_init makes one block slot's
// state (what the core keeps for its backward beyond out and lse; *state NULL when nothing),
// returns 0 or -1. forward overwrites out (reg, Hl*hd) and lse (reg, Hl); backward
// accumulates into dq, dk, dv.
typedef struct hp_attention_hooks {
    void *ctx;
    int  (*state_init)(void *ctx, void **state);
    void (*state_free)(void *state);
    void (*forward)(void *ctx, void *state, float *out, float *lse, const float *q,
                    const float *k, const float *v);
    void (*backward)(void *ctx, void *state, float *dq, float *dk, float *dv, const float *dout,
                     const float *out, const float *lse, const float *q, const float *k,
                     const float *v);
} hp_attention_hooks;

// Float8 linears (docs/float8.md; the precision's float8 linears call these): amax_reduce turns the local amax values (n) of an
// operand into the ones of the whole tensor over the ranks the amax's dim is split across (a
// MAX all-reduce over tp); the model calls it only for an amax over a dim that is a tp shard
// (local dims smaller than the model's), the same calls in the same order on every tp rank.
// NULL: one rank holds every dim. expert_amax_reduce does the same for a routed expert's amax
// over its hidden dim, split across the ranks that split every expert's hidden (expert tensor
// parallel), called only when that split is on (an expert's local hidden smaller than the
// model's), the same calls in the same order on each of those ranks (they compute the same rows).
// weight_amax (--float8-fsdp-all-gather, precision.md §5.4): 1 and *amax when parameter i's
// unsharded copy is the fp8 all-gather's (values value(q) / scale, scale from *amax, the
// MAX over the fsdp and tp groups of the fp32 master shards'): the linear casts with that amax,
// which gives back the gathered fp8 codes, and reduces nothing more; 0: it takes its own.
typedef struct hp_float8_hooks {
    void *ctx;
    void (*amax_reduce)(void *ctx, float *amax, int n);
    void (*expert_amax_reduce)(void *ctx, float *amax, int n);
    int  (*weight_amax)(void *ctx, int i, float *amax);
} hp_float8_hooks;

typedef struct hp_model_hooks {
    hp_unit_hooks unit;
    hp_region_hooks region;
    hp_attention_hooks attn;
    const hp_moe_dispatch_ops *moe;   // MoE dispatch / combine, its context and algorithm
    void *moe_ctx;
    hp_dispatcher moe_mode;
    hp_float8_hooks float8;
    hp_precision_hooks prec;   // the precision the model runs in (precision_hooks.h)
} hp_model_hooks;

#endif
