// trainer_hooks.c - the model's hooks (model/model_hooks.h) filled from the trainer's style
// states: units -> FSDP (fsdp.c), regions and the loss -> TP/SP (tp.c), the attention core
// -> CP ring (cp_attention.c) with Ulysses around it (ulysses.c), MoE dispatch -> EP
// (ep_dispatch.c), float8 amax -> a MAX all-reduce over tp (etp = tp for the routed experts),
// and the precision (src/precision/). The only place that knows which style or precision
// serves which hook.
#include <stdlib.h>
#include <string.h>
#include "hyperpar/cp.h"
#include "hyperpar/failpoint.h"
#include "hyperpar/structure.h"
#include "hyperpar/ulysses.h"
#include "parallel/ep_dispatch.h"
#include "precision/precision.h"
#include "train/trainer_internal.h"

// ---- units: FSDP2 / HSDP / DDP
static void unit_gather(void *ctx, int u) { hp_fsdp_gather_unit(ctx, u); }
static void unit_after_forward(void *ctx, int u) { hp_fsdp_after_forward(ctx, u); }
static void unit_after_backward(void *ctx, int u) { hp_fsdp_after_backward(ctx, u); }
static void unit_zero_grads(void *ctx, int u, int mb) { hp_fsdp_zero_unit_grads(ctx, u, mb); }
static void unit_reduce(void *ctx, int u, int mb) { hp_fsdp_reduce_unit(ctx, u, mb); }
static float *unit_param(void *ctx, int i) { return hp_fsdp_param(ctx, i); }
static float *unit_grad(void *ctx, int i) { return hp_fsdp_grad(ctx, i); }

// ---- regions and the loss: TP + SP + loss parallel
static void region_enter(void *ctx, float *out, const float *in, int D) {
    hp_tp_region_enter(ctx, out, in, D);
}
static void region_enter_backward(void *ctx, float *din, float *dout, int D) {
    hp_tp_region_enter_backward(ctx, din, dout, D);
}
static void region_exit(void *ctx, float *out, float *in, int D) {
    hp_tp_region_exit(ctx, out, in, D);
}
static void region_exit_backward(void *ctx, float *din, const float *dout, int D) {
    hp_tp_region_exit_backward(ctx, din, dout, D);
}
static void region_enter_consume(void *ctx, float *out, const float *in, int D,
                                 hp_region_rows_fn *rows, void *rows_ctx) {
    hp_tp_region_enter_consume(ctx, out, in, D, rows, rows_ctx);
}
static int region_sp_gathers(void *ctx) { return hp_tp_sp_gathers(ctx); }
static void region_gather_fp8_consume(void *ctx, float *out, const float *in, int D, float scale,
                                      hp_fp8_format format, hp_region_rows_fn *rows, void *rows_ctx) {
    hp_tp_region_gather_fp8_consume(ctx, out, in, D, scale, format, rows, rows_ctx);
}
static void region_exit_produce(void *ctx, float *out, float *partial, int D,
                                hp_region_rows_fn *rows, void *rows_ctx) {
    hp_tp_region_exit_produce(ctx, out, partial, D, rows, rows_ctx);
}
static void region_exit_backward_consume(void *ctx, float *din, const float *dout, int D,
                                         hp_region_rows_fn *rows, void *rows_ctx) {
    hp_tp_region_exit_backward_consume(ctx, din, dout, D, rows, rows_ctx);
}
static void region_enter_backward_produce(void *ctx, float *din, float *dout, int D,
                                          hp_region_rows_fn *rows, void *rows_ctx) {
    hp_tp_region_enter_backward_produce(ctx, din, dout, D, rows, rows_ctx);
}
static double region_cross_entropy(void *ctx, const float *logits, const int *labels, float *m,
                                   float *se) {
    return hp_tp_cross_entropy(ctx, logits, labels, m, se);
}

// ---- the attention core: Ulysses (a per-block state) around ring CP, or ring CP alone
static int attn_state_init(void *ctx, void **state) {
    hp_attn_style *a = ctx;
    *state = NULL;
    if (a->U <= 1) return 0;
    hp_ulysses_attn *ua = hp_ulysses_attn_init(a->sh.Bl, a->sh.Sc, a->sh.Hl, a->sh.Hkvl, a->sh.hd, a->U,
                                               a->C, a->bf16);
    if (!ua) return -1;
    *state = ua;
    // one set of exchange buffers for the rank's attentions: they run one at a time
    if (!a->scratch_from) a->scratch_from = ua;
    return hp_ulysses_attn_share_scratch(ua, a->scratch_from);
}
static void attn_state_free(void *state) { hp_ulysses_attn_free(state); }

static void attn_forward(void *ctx, void *state, float *out, float *lse, const float *q,
                         const float *k, const float *v) {
    const hp_attn_style *a = ctx;
    if (state)   // Ulysses: heads <-> tokens around the core (ring attention inside when cp > 1)
        hp_ulysses_attention_forward(state, a->comm, a->rotate, a->load_balance, out, q, k, v,
                                     a->pos_cp);
    else
        hp_cp_attention_forward(a->comm, a->rotate, a->load_balance, a->bf16, out, lse, q, k, v, a->pos,
                                a->sh.Bl, a->sh.Sc, a->sh.Hl, a->sh.Hkvl, a->sh.hd);
}
static void attn_backward(void *ctx, void *state, float *dq, float *dk, float *dv,
                          const float *dout, const float *out, const float *lse, const float *q,
                          const float *k, const float *v) {
    const hp_attn_style *a = ctx;
    if (state)
        hp_ulysses_attention_backward(state, a->comm, a->rotate, a->load_balance, dq, dk, dv,
                                      dout, a->pos_cp);
    else
        hp_cp_attention_backward(a->comm, a->rotate, a->load_balance, a->bf16, dq, dk, dv, dout, out, lse,
                                 q, k, v, a->pos, a->sh.Bl, a->sh.Sc, a->sh.Hl, a->sh.Hkvl,
                                 a->sh.hd);
}

void hp_attn_style_init(hp_attn_style *a, hp_trainer *tr) {
    *a = (hp_attn_style){
        .comm = tr->comm, .rotate = tr->rc.cp_rotate, .load_balance = tr->rc.cp_load_balance,
        .pos = tr->pos, .pos_cp = tr->pos_cp, .U = tr->d.ulysses, .C = tr->d.cp, .sh = tr->sh,
        .bf16 = tr->rc.mp_param == HP_DTYPE_BFLOAT16,
    };
}

// ---- float8: amax MAX-reduced over tp (precision.md §5.4). Under the structure check the
// prescribed value, the MAX of every rank's local amax, is reduced again from a kept copy of
// the inputs and compared bit for bit with what the linear will use (structure.h). A routed
// expert's hidden dim is split over etp, which is the tp group in this mesh (mesh.h).
static void float8_amax_max_tp(hp_trainer *tr, float *amax, int n, hp_failpoint_id local_bug) {
    if (tr->d.tp <= 1 || n <= 0) return;
    float *want = NULL;
    if (hp_structure_enabled() && (want = malloc((size_t)n * sizeof *want)) != NULL)
        memcpy(want, amax, (size_t)n * sizeof *want);
    // (float8_amax_local_tp, float8_expert_amax_local: the bug reduces, but each rank casts
    //  with its own amax: the scales of one tensor differ between tp (etp) ranks, pytorch/ao#590's
    //  kind; the bytes moved are the same)
    if (!hp_failpoint(local_bug)) {
        hp_allreduce_max(tr->comm, HP_G_TP, amax, (size_t)n);
    } else {
        float *lost = malloc((size_t)n * sizeof *lost);
        if (lost) {
            memcpy(lost, amax, (size_t)n * sizeof *lost);
            hp_allreduce_max(tr->comm, HP_G_TP, lost, (size_t)n);
            free(lost);
        }
    }
    if (!want) return;
    // (the check's own reduction goes outside the traffic counters)
    hp_mpi_allreduce(hp_comm_mpi(tr->comm, HP_G_TP), want, n, MPI_FLOAT, MPI_MAX, "float8-amax-check");
    int bad = -1;
    for (int i = 0; i < n && bad < 0; i++)
        if (memcmp(&want[i], &amax[i], sizeof *want) != 0) bad = i;
    if (bad >= 0)
        hp_structure_fail(HP_CHECK_FLOAT8_SCALE, "%samax %d of %d is %.9g on tp rank %d, the MAX over "
                          "the %s group %.9g: the scale is not the whole tensor's",
                          local_bug == HP_FP_FLOAT8_EXPERT_AMAX_LOCAL ? "routed expert " : "", bad, n,
                          (double)amax[bad], tr->co.t,
                          local_bug == HP_FP_FLOAT8_EXPERT_AMAX_LOCAL ? "etp" : "tp", (double)want[bad]);
    else
        hp_structure_pass(HP_CHECK_FLOAT8_SCALE);
    free(want);
}
static void float8_amax_reduce(void *ctx, float *amax, int n) {
    float8_amax_max_tp(ctx, amax, n, HP_FP_FLOAT8_AMAX_LOCAL_TP);
}
static void float8_expert_amax_reduce(void *ctx, float *amax, int n) {
    float8_amax_max_tp(ctx, amax, n, HP_FP_FLOAT8_EXPERT_AMAX_LOCAL);
}

// ---- float8 under --float8-fsdp-all-gather: a weight's amax is the one its fp8 all-gather
// cast with (fsdp.c), taken over fsdp and tp there
static int float8_weight_amax(void *ctx, int i, float *amax) {
    hp_trainer *tr = ctx;
    return hp_fsdp_float8_amax(&tr->fsdp, i, amax);
}

void hp_trainer_hooks(hp_trainer *tr, hp_model_hooks *hk) {
    *hk = (hp_model_hooks){
        .unit = { &tr->fsdp, unit_gather, unit_after_forward, unit_after_backward, unit_zero_grads,
                  unit_reduce, unit_param, unit_grad },
        .region = { &tr->tp, region_enter, region_enter_backward, region_exit,
                    region_exit_backward, region_cross_entropy, region_enter_consume, region_exit_produce,
                    region_exit_backward_consume, region_enter_backward_produce, region_sp_gathers,
                    region_gather_fp8_consume },
        .attn = { &tr->attn, attn_state_init, attn_state_free, attn_forward, attn_backward },
        // (the bf16 policy's token rows travel in 2 bytes)
        .moe = tr->rc.mp_param == HP_DTYPE_BFLOAT16 ? hp_ep_moe_ops_bf16() : hp_ep_moe_ops(),
        .moe_ctx = tr->comm, .moe_mode = tr->rc.dispatcher,
        .float8 = { tr, float8_amax_reduce, float8_expert_amax_reduce, float8_weight_amax },
    };
}

// ---- the precision, applied as the styles are (TorchTitan's MixedPrecisionPolicy and float8
// converter): fp32 or the bf16 policy, with its 2-byte storage where the run keeps it
int hp_trainer_precision(hp_trainer *tr, hp_model_hooks *hk) {
    return hp_precision_init(&hk->prec, tr->rc.mp_param == HP_DTYPE_BFLOAT16, hp_run_bf16_stored(&tr->rc));
}

// After the model is made: float8 linears over that precision, where the run converts them.
int hp_trainer_precision_convert(hp_trainer *tr) {
    return hp_precision_float8_apply(&tr->tf, tr->rc.float8, tr->rc.float8_filter,
                                     tr->rc.mp_param == HP_DTYPE_BFLOAT16);
}
