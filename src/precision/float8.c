// float8.c - TorchTitan's float8 converter on the model's linears (docs/float8.md): the block
// linears its filter converts (float8_linears.c) run in float8, everything else in the
// precision it wraps (fp32 or the bf16 policy). The kernels (kernels/float8_linear.c) take
// amax values as inputs; here each is computed on this rank's tensors and, when its dim is a tp
// shard (the local dim smaller than the model's), handed to the model's float8 hook to be
// MAX-reduced, so every scale is the scale of the whole tensor. The forward's amax of x and w
// are kept per slot, block and linear: the backward's tensorwise casts and an
// activation-checkpointing recompute reuse them (the recompute casts with the forward's scales,
// pytorch/torchtitan#1056). The routed experts (moe.experts.w1/w2/w3, one linear per local
// expert over the rows routed to it) keep theirs per expert, and an amax over an expert's split
// hidden dim goes to the expert hook (expert tensor parallel) instead of the tp one.
// The float8 failpoints of the linears live here (float8_recompute_scale).
// defines: hp_precision_float8_apply
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "hyperpar/comm.h"
#include "hyperpar/failpoint.h"
#include "hyperpar/kernels.h"
#include "hyperpar/structure.h"
#include "kernels/gemm.h"
#include "precision/float8_roles.h"
#include "precision/precision.h"

typedef struct hp_float8_linears {
    const hp_transformer *tf;   // the model it converts (its shapes, parameters, slot, hooks)
    hp_precision_hooks base;    // the precision it wraps: what runs the linears it leaves
    int bf16;                   // the base is the bf16 policy (a wgrad accumulates in bf16 terms)
    int layer, recompute;       // the block whose linears run now (-1: none) and whether its
                                //   forward is a recompute (which casts with the forward's scales)
    hp_float8_recipe recipe;
    unsigned char *on;    // (L, HP_F8_N_ROLES) 1: converted
    float *kept;          // (n_slots, L, HP_F8_N_ROLES, stride): x's amax, then w's
    size_t stride;        // Nreg + the widest local out
    float *ekept;         // (n_slots, L, HP_F8_N_EXPERT_ROLES, El, estride): an expert's x amax, w's
    size_t estride;       // erows + the widest local out
    int erows;            // x amax an expert keeps: under the rowwise recipes the most rows one
                          //   local expert computes, (E/El) * Nreg/token_split; 1 under tensorwise
    float *bwd;           // backward amax scratch: dy (max(Nreg, erows)), wt, dyt, xt (widest each)
    int widest;
    // Tensorwise, within one block's forward or backward (layer_begin clears them):
    // a linear called by row blocks (the tp regions' blocks, async TP) casts every block with
    // the amax of its whole tensor. x_set / w_set: its kept x / w amax are this forward's
    // (taken from the whole input before the blocks, or from a float8 SP all-gather, or by its
    // first call); dy_set: dy_amax[k] is this backward's (the same ways).
    unsigned char x_set[HP_F8_N_ROLES], w_set[HP_F8_N_ROLES], dy_set[HP_F8_N_ROLES];
    float dy_amax[HP_F8_N_ROLES];
} hp_float8_linears;

static void linears_free(void *ctx) {
    hp_float8_linears *f = ctx;
    if (!f) return;
    if (f->base.release) f->base.release(f->base.ctx);
    free(f->on); free(f->kept); free(f->ekept); free(f->bwd); free(f);
}

static int linears_init(hp_float8_linears *f, int recipe, const char *filter) {
    const hp_transformer *tf = f->tf;
    f->recipe = (hp_float8_recipe)recipe;
    f->layer = -1;
    const int L = tf->m.n_layers;
    int widest = tf->sh.D;
    f->on = calloc((size_t)L * HP_F8_N_ROLES, 1);
    if (!f->on) return -1;
    for (int l = 0; l < L; l++)
        for (int k = 0; k < HP_F8_N_ROLES; k++) {
            int out, in, out_l, in_l;
            hp_float8_role_dims(&tf->m, &tf->sh, hp_float8_roles[k], &out, &in, &out_l, &in_l);
            if (out_l > widest) widest = out_l;
            if (in_l > widest) widest = in_l;
            f->on[(size_t)l * HP_F8_N_ROLES + k] = tf->blocks[l].pid[hp_float8_roles[k]] >= 0 &&
                                             hp_float8_block_role_on(&tf->m, &tf->sh, l, k, filter);
        }
    f->widest = widest;
    f->stride = (size_t)tf->sh.Nreg + (size_t)widest;
    f->kept = calloc((size_t)tf->n_slots * L * HP_F8_N_ROLES * f->stride, sizeof(float));
    // a local expert computes at most one entry per row of each ep member's routed rows (top-k
    // picks K distinct experts)
    const int El = tf->sh.El > 0 ? tf->sh.El : 1, ts = tf->sh.token_split > 0 ? tf->sh.token_split : 1;
    f->erows = tf->sh.El < 1 ? 0 : hp_float8_rows_amax(f->recipe) ? tf->m.num_experts / El * (tf->sh.Nreg / ts) : 1;
    f->estride = (size_t)f->erows + (size_t)widest;
    f->ekept = calloc((size_t)tf->n_slots * L * HP_F8_N_EXPERT_ROLES * El * f->estride, sizeof(float));
    const size_t rows = (size_t)(f->erows > tf->sh.Nreg ? f->erows : tf->sh.Nreg);
    f->bwd = calloc(rows + 3 * (size_t)widest, sizeof(float));
    return f->kept && f->ekept && f->bwd ? 0 : -1;
}

// A converted linear of block f->layer: its role index k and, for a routed expert's
// weight (a slice of the (El, out, in) parameter), the local expert e (-1 otherwise).
typedef struct { int k, e; } f8_linear;

// The converted linear whose weight is w: k = -1 when w is none.
static f8_linear find(hp_float8_linears *f, const float *w) {
    const hp_transformer *tf = f->tf;
    const int l = f->layer;
    f8_linear none = { -1, -1 };
    if (l < 0) return none;
    for (int k = 0; k < HP_F8_N_ROLES; k++) {
        const int pid = tf->blocks[l].pid[hp_float8_roles[k]];
        if (pid < 0) continue;
        const float *p = tf->hk.unit.param(tf->hk.unit.ctx, pid);
        const int on = f->on[(size_t)l * HP_F8_N_ROLES + k];
        if (!hp_float8_is_expert(k)) {
            if (p == w) return on ? (f8_linear){ k, -1 } : none;
            continue;
        }
        int out, in, out_l, in_l;
        hp_float8_role_dims(&tf->m, &tf->sh, hp_float8_roles[k], &out, &in, &out_l, &in_l);
        // (addresses compared as integers: w may lie outside the parameter)
        const uintptr_t one = (uintptr_t)out_l * (uintptr_t)in_l * sizeof(float);
        const uintptr_t a = (uintptr_t)w, b = (uintptr_t)p;
        if (a >= b && a < b + (uintptr_t)tf->sh.El * one && (a - b) % one == 0)
            return on ? (f8_linear){ k, (int)((a - b) / one) } : none;
    }
    return none;
}

// An amax over a split dim: a dense linear's over tp, a routed expert's over the ranks its
// hidden dim is split across (the expert hook: etp).
static void reduce(hp_float8_linears *f, f8_linear c, float *amax, int n) {
    const hp_transformer *tf = f->tf;
    if (n <= 0) return;
    if (c.e < 0 && tf->hk.float8.amax_reduce) tf->hk.float8.amax_reduce(tf->hk.float8.ctx, amax, n);
    if (c.e >= 0 && tf->hk.float8.expert_amax_reduce)
        tf->hk.float8.expert_amax_reduce(tf->hk.float8.ctx, amax, n);
}

// The kept forward amax of a linear for the running slot: x's (1 under tensorwise, else N
// values, a row each), then w's; a routed expert's per local expert (x's at most erows values).
static hp_float8_amax kept_amax(hp_float8_linears *f, f8_linear c, int N) {
    const hp_transformer *tf = f->tf;
    const size_t sl = (size_t)tf->slot * tf->m.n_layers + f->layer;
    if (c.e >= 0) {
        const size_t El = (size_t)tf->sh.El;
        float *base = f->ekept + ((sl * HP_F8_N_EXPERT_ROLES + (size_t)(c.k - HP_F8_FIRST_EXPERT)) * El + (size_t)c.e) * f->estride;
        return (hp_float8_amax){ .x = base, .w = base + f->erows };
    }
    float *base = f->kept + (sl * HP_F8_N_ROLES + (size_t)c.k) * f->stride;
    return (hp_float8_amax){ .x = base, .w = base + (f->recipe == HP_FLOAT8_TENSORWISE ? 1 : N) };
}

static void layer_begin(hp_float8_linears *f, int l) {
    f->layer = l;
        if (!f) return;
    memset(f->x_set, 0, sizeof f->x_set);
    memset(f->w_set, 0, sizeof f->w_set);
    memset(f->dy_set, 0, sizeof f->dy_set);
}

static int tensorwise(hp_float8_linears *f) { return f->recipe == HP_FLOAT8_TENSORWISE; }

// The dense linear c's amax of its forward input x (N, in): the whole tensor's, MAX-reduced
// over tp when in is a tp shard, kept for its casts (tensorwise; not in a recompute, which
// keeps the forward's). (The routed experts run one call each over all their rows.)
static void take_x_amax(hp_float8_linears *f, f8_linear c, const float *x, int N, int in) {
    const hp_transformer *tf = f->tf;
        if (c.e >= 0 || f->x_set[c.k] || f->recompute) return;
    int fo, fi, out_l, in_l;
    hp_float8_role_dims(&tf->m, &tf->sh, hp_float8_roles[c.k], &fo, &fi, &out_l, &in_l);
    float *ax = kept_amax(f, c, N).x;
    ax[0] = hp_float8_amax_all(x, (size_t)N * in);
    if (in_l < fi) reduce(f, c, ax, 1);
    f->x_set[c.k] = 1;
}

// The dense linear c's amax of its grad_output dy (N, out) in this backward, the same way.
static void take_dy_amax(hp_float8_linears *f, f8_linear c, const float *dy, int N, int out) {
    const hp_transformer *tf = f->tf;
        if (c.e >= 0 || f->dy_set[c.k]) return;
    int fo, fi, out_l, in_l;
    hp_float8_role_dims(&tf->m, &tf->sh, hp_float8_roles[c.k], &fo, &fi, &out_l, &in_l);
    f->dy_amax[c.k] = hp_float8_amax_all(dy, (size_t)N * out);
    if (out_l < fo) reduce(f, c, &f->dy_amax[c.k], 1);
    f->dy_set[c.k] = 1;
}

static void prepare_x(hp_float8_linears *f, const float *w, const float *x, int N, int in) {
    const f8_linear c = find(f, w);
    if (c.k >= 0 && tensorwise(f)) take_x_amax(f, c, x, N, in);
}

static void prepare_dy(hp_float8_linears *f, const float *w, const float *dy, int N, int out) {
    const f8_linear c = find(f, w);
    if (c.k >= 0 && tensorwise(f)) take_dy_amax(f, c, dy, N, out);
}

static int linear_converted(hp_float8_linears *f, const float *w) { return find(f, w).k >= 0; }

static int sp_gather_consume(hp_float8_linears *f, const hp_region_hooks *rh, float *out, const float *in, int D,
                                const float *const *w, int n_w, int backward, hp_region_rows_fn *rows,
                                void *rows_ctx) {
    const hp_transformer *tf = f->tf;
        if (!f || f->recipe != HP_FLOAT8_TENSORWISE || n_w <= 0 || !rh->gather_fp8_consume ||
        !rh->sp_gathers(rh->ctx))
        return 0;
    // (zbv's I: its W casts dy again from the kept copy, with an amax of its own: plain gather)
    if (backward && tf->input_only) return 0;
    for (int i = 0; i < n_w; i++)
        if (find(f, w[i]).k < 0) return 0;
    const size_t n = (size_t)tf->sh.Nres * D;
    float amax;
    const int again = f->recompute && hp_failpoint(HP_FP_FLOAT8_RECOMPUTE_SCALE);
    if (!backward && f->recompute && !again) {   // the forward's, kept by its first consumer
        amax = kept_amax(f, find(f, w[0]), tf->sh.Nreg).x[0];
    } else {
        amax = hp_float8_amax_all(in, n);
        if (!again) reduce(f, find(f, w[0]), &amax, 1);   // (a dense linear's: over tp)
    }
    // the consumers cast with the gathered tensor's amax (their cast of its dequantised codes
    // gives back those codes), never with one of their row blocks'
    for (int i = 0; i < n_w; i++) {
        const f8_linear c = find(f, w[i]);
        if (backward) {
            f->dy_amax[c.k] = amax;
            f->dy_set[c.k] = 1;
        } else if (!f->recompute || again) {
            kept_amax(f, c, tf->sh.Nreg).x[0] = amax;
            f->x_set[c.k] = 1;
        }
    }
    const hp_fp8_format format = backward ? hp_float8_grad_format(f->recipe) : HP_FP8_E4M3;
    rh->gather_fp8_consume(rh->ctx, out, in, D, hp_fp8_scale(amax, format, 0), format, rows, rows_ctx);
    return 1;
}

// The structure check of an fp8-all-gathered weight (structure.h): its values are fp8 codes
// dequantised with the gather's scale, so the linear's cast with that scale must give every
// value back, bit for bit: the GEMM multiplies the gathered codes, not a second rounding.
static void check_gathered_weight(hp_float8_linears *f, int k, const float *w, float amax, size_t n) {
    const float s = hp_fp8_scale(amax, HP_FP8_E4M3, 0);
    for (size_t i = 0; i < n; i++) {
        const float v = hp_fp8_to_float(hp_fp8_from_float(w[i] * s, HP_FP8_E4M3), HP_FP8_E4M3) / s;
        if (memcmp(&v, &w[i], sizeof v) != 0) {
            hp_structure_fail(HP_CHECK_FLOAT8_CAST, "block %d, %s: gathered weight element %zu (%.9g) "
                              "is not an e4m3 value with the all-gather's scale (recast: %.9g)",
                              f->layer, hp_transformer_role_name(hp_float8_roles[k]), i, (double)w[i], (double)v);
            return;
        }
    }
    hp_structure_pass(HP_CHECK_FLOAT8_CAST);
}

static int linear_fwd(hp_float8_linears *f, float *y, const float *x, const float *w, int N,
                         int in, int out) {
    const hp_transformer *tf = f->tf;
    const f8_linear c = find(f, w);
    const int k = c.k;
    if (k < 0) return 0;
    if (c.e >= 0 && hp_float8_rows_amax(f->recipe) && N > f->erows)
        hp_fail_line_and_abort(1, "float8: expert %d of block %d computes %d rows, room for %d",
                               c.e, f->layer, N, f->erows);
    hp_float8_amax a = kept_amax(f, c, N);
    // (float8_recompute_scale: the bug's recompute takes its amax again, on this rank's shard
    //  only, and keeps it for the backward: pytorch/torchtitan#1056's recompute that is not
    //  bitwise, where the scales of a recomputed cast differ from the forward's)
    const int again = f->recompute && hp_failpoint(HP_FP_FLOAT8_RECOMPUTE_SCALE);
    if (!f->recompute || again) {   // a recompute casts with the forward's scales, kept here
        int fo, fi, out_l, in_l;
        hp_float8_role_dims(&tf->m, &tf->sh, hp_float8_roles[k], &fo, &fi, &out_l, &in_l);
        const hp_float8_recipe r = f->recipe;
        hp_float8_amax_n red;
        hp_float8_reduced(&red, r, N, in, out, in_l < fi && !again, out_l < fo && !again);
                const int tw = r == HP_FLOAT8_TENSORWISE && !again && c.e < 0;
        const float x_kept = a.x[0], w_kept = a.w[0];
        hp_float8_forward_amax(&a, x, w, r, N, in, out);
        // tensorwise: a dense linear's whole-tensor amax once (a row block's would be its own)
        if (tw && f->x_set[k]) a.x[0] = x_kept;
        else reduce(f, c, a.x, red.x);
        if (tw && f->w_set[k]) {
            a.w[0] = w_kept;
        } else {
            // the fp8 all-gather's weight: its amax is the gather's (over fsdp and tp already), so
            // the cast gives back the gathered codes; the amax of its dequantised values would not
            const int pid = tf->blocks[f->layer].pid[hp_float8_roles[k]];
            if (c.e >= 0 || !(tf->hk.float8.weight_amax && tf->hk.float8.weight_amax(tf->hk.float8.ctx, pid, a.w)))
                reduce(f, c, a.w, red.w);
            else if (hp_structure_enabled())
                check_gathered_weight(f, k, w, a.w[0], (size_t)out * (size_t)in);
        }
        if (tw) f->x_set[k] = f->w_set[k] = 1;
    }
    hp_float8_linear_forward(y, x, w, &a, f->recipe, N, in, out);
    return 1;
}

// The structure check of a written dgrad (structure.h): dx must be hp_gemm of the casts the
// recipe's table prescribes (precision.md §5.2: grad_output e5m2 per tensor under tensorwise,
// e4m3 per row (pow2) under the rowwise recipes; w e4m3 with the forward's scale, per column
// (pow2) or per tensor (pow2)), each cast redone here with float8.h's quantize / dequantize.
// A dgrad accumulated into dx (dx_beta 1: the MoE block's) is checked against the same GEMM
// with beta 1 onto the dx it found (before).
static void check_dgrad(hp_float8_linears *f, f8_linear lin, const float *dx, const float *before,
                        float beta, const float *dy, const float *w, const hp_float8_amax *a, int N,
                        int in, int out) {
    const hp_transformer *tf = f->tf;
    const int k = lin.k;
    const hp_float8_recipe r = f->recipe;
    const int rw = r != HP_FLOAT8_TENSORWISE;
    const hp_fp8_format gf = rw ? HP_FP8_E4M3 : HP_FP8_E5M2;
    float *dyq = malloc((size_t)N * out * sizeof(float)), *wq = malloc((size_t)out * in * sizeof(float));
    float *want = malloc((size_t)N * in * sizeof(float));
    hp_fp8 *q = malloc((size_t)(out > in ? out : in) * sizeof(hp_fp8));
    if (!dyq || !wq || !want || !q) { free(dyq); free(wq); free(want); free(q); return; }
    for (int i = 0; i < N; i++) {   // dy: row i with its scale (one for all under tensorwise)
        const float s = hp_fp8_scale(a->dy[rw ? i : 0], gf, rw);
        hp_fp8_quantize(q, dy + (size_t)i * out, (size_t)out, s, gf);
        hp_fp8_dequantize(dyq + (size_t)i * out, q, (size_t)out, s, gf);
    }
    for (int o = 0; o < out; o++) {   // w: element (o, c) with column c's scale, or the tensor's
        for (int c = 0; c < in; c++) {
            const float am = r == HP_FLOAT8_TENSORWISE ? a->w[0] : r == HP_FLOAT8_ROWWISE ? a->wt[c] : a->wt[0];
            const float s = hp_fp8_scale(am, HP_FP8_E4M3, rw);
            hp_fp8_quantize(q, w + (size_t)o * in + c, 1, s, HP_FP8_E4M3);
            hp_fp8_dequantize(wq + (size_t)o * in + c, q, 1, s, HP_FP8_E4M3);
        }
    }
    if (beta != 0.0f) memcpy(want, before, (size_t)N * in * sizeof(float));
    hp_gemm(HP_GEMM_N, HP_GEMM_N, N, in, out, 1.0f, dyq, out, wq, in, beta, want, in);
    size_t bad = (size_t)-1;
    for (size_t i = 0; i < (size_t)N * in && bad == (size_t)-1; i++)
        if (memcmp(&want[i], &dx[i], sizeof(float)) != 0) bad = i;
    char name[80];
    if (lin.e >= 0) snprintf(name, sizeof name, "%s[local %d]", hp_transformer_role_name(hp_float8_roles[k]), lin.e);
    else snprintf(name, sizeof name, "%s", hp_transformer_role_name(hp_float8_roles[k]));
    if (bad != (size_t)-1)
        hp_structure_fail(HP_CHECK_FLOAT8_CAST, "block %d, %s, microbatch %d: dgrad element %zu is "
                          "%.9g, the product of the prescribed casts %.9g", f->layer, name, tf->mb,
                          bad, (double)dx[bad], (double)want[bad]);
    else
        hp_structure_pass(HP_CHECK_FLOAT8_CAST);
    free(dyq); free(wq); free(want); free(q);
}

static int linear_bwd(hp_float8_linears *f, float *dx, float *dw, const float *dy,
                         const float *x, const float *w, int N, int in, int out, float dx_beta) {
    const hp_transformer *tf = f->tf;
    const f8_linear c = find(f, w);
    const int k = c.k;
    if (k < 0) return 0;
        const hp_float8_recipe r = f->recipe;
    hp_float8_amax a = kept_amax(f, c, N);
    a.dy = f->bwd;
    a.wt = a.dy + (f->erows > tf->sh.Nreg ? f->erows : tf->sh.Nreg);
    a.dyt = a.wt + f->widest;
    a.xt = a.dyt + f->widest;
    int fo, fi, out_l, in_l;
    hp_float8_role_dims(&tf->m, &tf->sh, hp_float8_roles[k], &fo, &fi, &out_l, &in_l);
    hp_float8_amax_n red;
    hp_float8_reduced(&red, r, N, in, out, in_l < fi, out_l < fo);
    hp_float8_backward_amax(&a, dy, x, w, r, N, in, out);
    if (r == HP_FLOAT8_TENSORWISE && c.e < 0) {   // the whole tensor's, once per backward (blocks, dw)
        if (f->dy_set[k]) a.dy[0] = f->dy_amax[k];
        else reduce(f, c, a.dy, red.dy);
        f->dy_amax[k] = a.dy[0];
        f->dy_set[k] = 1;
    } else {
        reduce(f, c, a.dy, red.dy);
    }
    reduce(f, c, a.wt, red.wt);
    float *before = NULL;   // (the structure check of an accumulated dgrad: the dx it found)
    const int check = dx && N > 0 && in > 0 && out > 0 && hp_structure_enabled();
    if (check && dx_beta != 0.0f && (before = malloc((size_t)N * in * sizeof(float))) != NULL)
        memcpy(before, dx, (size_t)N * in * sizeof(float));
    hp_float8_linear_backward(dx, dw, dy, x, w, &a, r, f->bf16, dx_beta, N, in, out);
    if (check && (dx_beta == 0.0f || before)) check_dgrad(f, c, dx, before, dx_beta, dy, w, &a, N, in, out);
    free(before);
    return 1;
}


// ---------------------------------------------------------------------------------------
// the precision hooks: float8 where a linear converts, the wrapped precision elsewhere

static void f8_block_begin(void *ctx, int l, int recompute) {
    hp_float8_linears *f = ctx;
    layer_begin(f, l);
    f->recompute = recompute;
    f->base.block_begin(f->base.ctx, l, recompute);
}
static void f8_block_end(void *ctx) {
    hp_float8_linears *f = ctx;
    f->layer = -1;
    f->recompute = 0;
    f->base.block_end(f->base.ctx);
}
static void f8_op_output(void *ctx, float *x, size_t n) {
    hp_float8_linears *f = ctx;
    f->base.op_output(f->base.ctx, x, n);
}
static void f8_tp_partial(void *ctx, float *x, size_t n) {
    hp_float8_linears *f = ctx;
    f->base.tp_partial(f->base.ctx, x, n);
}
static void f8_keep(void *ctx, void *dst, const float *src, size_t n, const char *what, int mb) {
    hp_float8_linears *f = ctx;
    f->base.keep(f->base.ctx, dst, src, n, what, mb);
}
static void f8_restore(void *ctx, float *dst, const void *src, size_t n) {
    hp_float8_linears *f = ctx;
    f->base.restore(f->base.ctx, dst, src, n);
}

static void f8_forward(void *ctx, float *y, const float *x, const float *w, int N, int in, int out) {
    hp_float8_linears *f = ctx;
    if (!linear_fwd(f, y, x, w, N, in, out)) f->base.linear_forward(f->base.ctx, y, x, w, N, in, out);
}
static void f8_backward(void *ctx, float *dx, float *dw, const float *dy, const float *x, const float *w,
                        int N, int in, int out) {
    hp_float8_linears *f = ctx;
    if (!linear_bwd(f, dx, dw, dy, x, w, N, in, out, 1.0f))
        f->base.linear_backward(f->base.ctx, dx, dw, dy, x, w, N, in, out);
}
// A converted linear's dx by row blocks: tensorwise makes its dw over all rows in the dw half
// (with the backward's amax of dy), rowwise both in this one call over all rows.
static void f8_backward_dx(void *ctx, float *dx, float *dw, const float *dy, const float *x, const float *w,
                           int N, int in, int out, int first) {
    hp_float8_linears *f = ctx;
    if (!linear_bwd(f, dx, tensorwise(f) ? NULL : dw, dy, x, w, N, in, out, first ? 0.0f : 1.0f))
        f->base.linear_backward_dx(f->base.ctx, dx, dw, dy, x, w, N, in, out, first);
}
static void f8_backward_dw(void *ctx, float *dw, const float *dy, const float *x, const float *w, int N,
                           int in, int out) {
    hp_float8_linears *f = ctx;
    if (!linear_converted(f, w)) {
        f->base.linear_backward_dw(f->base.ctx, dw, dy, x, w, N, in, out);
        return;
    }
    if (tensorwise(f)) linear_bwd(f, NULL, dw, dy, x, w, N, in, out, 0.0f);
}

// The regions whose collective feeds or drains GEMMs, handed the GEMMs by row block. A float8
// linear casts with the amax of its whole tensor: under tensorwise it is taken before the
// blocks (prepare_x / _dy) or comes with the float8 SP all-gather of a region whose consumers
// (weights w, n_w of them) all convert (sp_gather_consume), so the blocks (and async TP) stay;
// a region mixing converted and plain consumers, and every rowwise one (its per-row and
// per-column amax want the whole tensor too; --async-tp is refused with it), runs its GEMMs
// once over all rows around the plain collective.
static int n_converted(hp_float8_linears *f, const float *const *w, int n_w) {
    int n = 0;
    for (int i = 0; i < n_w; i++) n += linear_converted(f, w[i]);
    return n;
}
static void f8_enter_consume(void *ctx, const hp_region_hooks *rh, float *out, const float *in, int D,
                             int nreg, hp_region_rows_fn *rows, void *rows_ctx, const float *const *w, int n_w) {
    hp_float8_linears *f = ctx;
    const int conv = n_converted(f, w, n_w);
    if (tensorwise(f) && conv == 0) {
        rh->enter_consume(rh->ctx, out, in, D, rows, rows_ctx);
        return;
    }
    if (tensorwise(f) && conv == n_w && sp_gather_consume(f, rh, out, in, D, w, n_w, 0, rows, rows_ctx)) return;
    rh->enter(rh->ctx, out, in, D);
    rows(rows_ctx, 0, nreg);
}
// (x (nreg, in): the producer's input, whose amax its blocks cast with)
static void f8_exit_produce(void *ctx, const hp_region_hooks *rh, float *out, float *partial, int D, int nreg,
                            hp_region_rows_fn *rows, void *rows_ctx, const float *w, const float *x, int in) {
    hp_float8_linears *f = ctx;
    if (!tensorwise(f)) {
        rows(rows_ctx, 0, nreg);
        rh->exit(rh->ctx, out, partial, D);
        return;
    }
    prepare_x(f, w, x, nreg, in);
    rh->exit_produce(rh->ctx, out, partial, D, rows, rows_ctx);
}
static void f8_exit_backward_consume(void *ctx, const hp_region_hooks *rh, float *din, const float *dout,
                                     int D, int nreg, hp_region_rows_fn *rows, void *rows_ctx,
                                     const float *const *w, int n_w) {
    hp_float8_linears *f = ctx;
    const int conv = n_converted(f, w, n_w);
    if (tensorwise(f) && conv == 0) {
        rh->exit_backward_consume(rh->ctx, din, dout, D, rows, rows_ctx);
        return;
    }
    if (tensorwise(f) && conv == n_w && sp_gather_consume(f, rh, din, dout, D, w, n_w, 1, rows, rows_ctx))
        return;
    rh->exit_backward(rh->ctx, din, dout, D);
    rows(rows_ctx, 0, nreg);
}
// (dy[i] (nreg, out[i]): the producers' grad_outputs, whose amax their blocks cast with)
static void f8_enter_backward_produce(void *ctx, const hp_region_hooks *rh, float *din, float *dout, int D,
                                      int nreg, hp_region_rows_fn *rows, void *rows_ctx,
                                      const float *const *dy, const float *const *w, const int *out, int n) {
    hp_float8_linears *f = ctx;
    if (!tensorwise(f)) {
        rows(rows_ctx, 0, nreg);
        rh->enter_backward(rh->ctx, din, dout, D);
        return;
    }
    for (int i = 0; i < n; i++) prepare_dy(f, w[i], dy[i], nreg, out[i]);
    rh->enter_backward_produce(rh->ctx, din, dout, D, rows, rows_ctx);
}

int hp_precision_float8_apply(hp_transformer *tf, int recipe, const char *filter, int bf16) {
    if (recipe == HP_FLOAT8_OFF) return 0;
    hp_float8_linears *f = calloc(1, sizeof *f);
    if (!f) return -1;
    f->tf = tf;
    f->base = tf->hk.prec;
    f->bf16 = bf16;
    hp_precision_hooks *h = &tf->hk.prec;
    *h = (hp_precision_hooks){
        .ctx = f, .release = linears_free,
        .block_begin = f8_block_begin, .block_end = f8_block_end,
        .op_output = f8_op_output, .tp_partial = f8_tp_partial,
        .linear_forward = f8_forward, .linear_backward = f8_backward,
        .linear_backward_dx = f8_backward_dx, .linear_backward_dw = f8_backward_dw,
        .enter_consume = f8_enter_consume, .exit_produce = f8_exit_produce,
        .exit_backward_consume = f8_exit_backward_consume, .enter_backward_produce = f8_enter_backward_produce,
        .stored_bytes = f->base.stored_bytes,
        .keep = f->base.keep ? f8_keep : NULL, .restore = f->base.restore ? f8_restore : NULL,
    };
    return linears_init(f, recipe, filter);
}
