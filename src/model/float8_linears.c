// float8_linears.c - which of the model's linears run in float8 and their amax bookkeeping
// (precision.md §5.2-5.4, docs/float8.md). The kernels (float8_linear.c) take amax values as
// inputs; here each is computed on this rank's tensors and, when its dim is a tp shard (the
// local dim smaller than the model's), handed to the float8 hook to be MAX-reduced, so every
// scale is the scale of the whole tensor. The forward's amax of x and w are kept per slot,
// block and linear: the backward's tensorwise casts and an activation-checkpointing recompute
// reuse them (the recompute casts with the forward's scales, pytorch/torchtitan#1056).
// The routed experts (moe.experts.w1/w2/w3, one linear per local expert over the rows routed
// to it) keep theirs per expert, and an amax over an expert's split hidden dim goes to the
// expert hook (expert tensor parallel) instead of the tp one.
// defines: hp_float8_linears_init, hp_float8_linears_free, hp_float8_linear_fwd,
//          hp_float8_linear_bwd, hp_float8_layer_begin, hp_float8_tensorwise,
//          hp_float8_prepare_x / _dy, hp_float8_sp_gather_consume, hp_float8_block_amax_reduced,
//          hp_float8_block_sp_gathers, hp_float8_param_converted
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "hyperpar/comm.h"
#include "hyperpar/failpoint.h"
#include "hyperpar/kernels.h"
#include "hyperpar/structure.h"
#include "kernels/gemm.h"
#include "model/float8_linears.h"
#include "model/transformer.h"

// The linears a block may have that the float8 filter converts (the dense FFN in dense blocks,
// the shared and the routed experts in MoE blocks), in the order their kept amax are stored;
// the routed experts' (from FIRST_EXPERT on) are kept apart, per local expert.
static const hp_block_param roles[] = { BP_WQ, BP_WK, BP_WV, BP_WO, BP_W1, BP_W2, BP_W3,
                                        BP_SW1, BP_SW2, BP_SW3, BP_EW1, BP_EW2, BP_EW3 };
enum { N_ROLES = (int)(sizeof roles / sizeof roles[0]), FIRST_EXPERT = 10, N_EXPERT_ROLES = 3 };

static int is_expert(int k) { return k >= FIRST_EXPERT; }

static int f8_rows_amax(hp_float8_recipe r) { return r == HP_FLOAT8_ROWWISE || r == HP_FLOAT8_ROWWISE_GW_HP; }

struct hp_float8_linears {
    hp_float8_recipe recipe;
    unsigned char *on;    // (L, N_ROLES) 1: converted
    float *kept;          // (n_slots, L, N_ROLES, stride): x's amax, then w's
    size_t stride;        // Nreg + the widest local out
    float *ekept;         // (n_slots, L, N_EXPERT_ROLES, El, estride): an expert's x amax, w's
    size_t estride;       // erows + the widest local out
    int erows;            // x amax an expert keeps: under the rowwise recipes the most rows one
                          //   local expert computes, (E/El) * Nreg/token_split; 1 under tensorwise
    float *bwd;           // backward amax scratch: dy (max(Nreg, erows)), wt, dyt, xt (widest each)
    int widest;
    // Tensorwise, within one block's forward or backward (hp_float8_layer_begin clears them):
    // a linear called by row blocks (the tp regions' blocks, async TP) casts every block with
    // the amax of its whole tensor. x_set / w_set: its kept x / w amax are this forward's
    // (taken from the whole input before the blocks, or from a float8 SP all-gather, or by its
    // first call); dy_set: dy_amax[k] is this backward's (the same ways).
    unsigned char x_set[N_ROLES], w_set[N_ROLES], dy_set[N_ROLES];
    float dy_amax[N_ROLES];
};

// TorchTitan's module filter: both dims divisible by 16, the name contains no filter entry;
// `output` and `router.gate` always stay in the param dtype (they are not block linears here).
static int converted(const char *fqn, int out, int in, const char *filter) {
    if (out % 16 != 0 || in % 16 != 0) return 0;
    for (const char *p = filter; p && *p;) {
        const char *c = strchr(p, ',');
        const size_t n = c ? (size_t)(c - p) : strlen(p);
        char entry[128];
        snprintf(entry, sizeof entry, "%.*s", (int)(n < sizeof entry ? n : sizeof entry - 1), p);
        if (entry[0] && strstr(fqn, entry)) return 0;
        p += n + (c != NULL);
    }
    return 1;
}

// Full (model) and local dims of a role's weight (out, in), and which of them is a tp shard.
static void role_dims(const hp_model_config *m, const hp_local_shapes *sh, hp_block_param r,
                      int *out, int *in, int *out_l, int *in_l) {
    const int hd = sh->hd, q = m->n_heads * hd, kv = m->n_kv_heads * hd, D = m->dim;
    const int ql = sh->Hl * hd, kvl = sh->Hkvl * hd, fs = m->moe_hidden * m->n_shared_experts;
    switch (r) {
    case BP_EW1:
    case BP_EW3: *out = m->moe_hidden; *in = D; *out_l = sh->Fel; *in_l = D; break;
    case BP_EW2: *out = D; *in = m->moe_hidden; *out_l = D; *in_l = sh->Fel; break;
    case BP_SW1:
    case BP_SW3: *out = fs; *in = D; *out_l = sh->Fsl; *in_l = D; break;
    case BP_SW2: *out = D; *in = fs; *out_l = D; *in_l = sh->Fsl; break;
    case BP_WQ: *out = q;  *in = D; *out_l = ql;  *in_l = D; break;
    case BP_WK:
    case BP_WV: *out = kv; *in = D; *out_l = kvl; *in_l = D; break;
    case BP_WO: *out = D;  *in = q; *out_l = D;   *in_l = ql; break;
    case BP_W2: *out = D;  *in = m->ffn_hidden; *out_l = D; *in_l = sh->Fl; break;
    default:    *out = m->ffn_hidden; *in = D; *out_l = sh->Fl; *in_l = D; break;   // w1, w3
    }
}

// Which amax of a linear are MAX-reduced over tp: the ones over a dim that is a tp shard (the
// local dim smaller than the model's); an amax per index of a sharded dim covers this rank's
// indices only and stays. Counts of the values, 0 for the ones not reduced.
static void reduced(hp_float8_amax_n *red, hp_float8_recipe r, int N, int in, int out,
                    int in_split, int out_split) {
    hp_float8_amax_n n;
    hp_float8_amax_sizes(&n, r, N, in, out);
    red->x = in_split ? n.x : 0;                                                // x over in
    red->w = (r == HP_FLOAT8_TENSORWISE ? in_split || out_split : in_split) ? n.w : 0;
    red->dy = out_split ? n.dy : 0;                                             // dy over out
    red->wt = (r == HP_FLOAT8_ROWWISE ? out_split : in_split || out_split) ? n.wt : 0;
    red->dyt = red->xt = 0;                                                     // over N: never split
}

// A block's linears of the model that a float8 filter converts (their full dims and name).
// The routed experts' full weight is one expert's (Fe, D) / (D, Fe), named
// layers.L.moe.experts.w1 as TorchTitan's GroupedExperts.
static int block_role_on(const hp_model_config *m, const hp_local_shapes *sh, int l, int k,
                         const char *filter) {
    const int ffn = roles[k] == BP_W1 || roles[k] == BP_W2 || roles[k] == BP_W3;
    const int shared = roles[k] == BP_SW1 || roles[k] == BP_SW2 || roles[k] == BP_SW3;
    if (ffn && hp_model_is_moe_layer(m, l)) return 0;   // (MoE blocks: the experts instead)
    if (shared && (!hp_model_is_moe_layer(m, l) || m->n_shared_experts == 0)) return 0;
    if (is_expert(k) && (!hp_model_is_moe_layer(m, l) || sh->El < 1)) return 0;
    int out, in, out_l, in_l;
    role_dims(m, sh, roles[k], &out, &in, &out_l, &in_l);
    char fqn[96];
    snprintf(fqn, sizeof fqn, "layers.%d.%s", l, hp_transformer_role_name(roles[k]));
    return converted(fqn, out, in, filter);
}

void hp_float8_block_amax_reduced(const hp_model_config *m, const hp_local_shapes *sh, int recipe,
                                  const char *filter, int fsdp_f8, int l, uint64_t *fwd, uint64_t *bwd,
                                  uint64_t *fwd_entry, uint64_t *bwd_entry) {
    *fwd = *bwd = *fwd_entry = *bwd_entry = 0;
    if (recipe == HP_FLOAT8_OFF) return;
    for (int k = 0; k < N_ROLES; k++) {
        if (!block_role_on(m, sh, l, k, filter)) continue;
        int out, in, out_l, in_l;
        role_dims(m, sh, roles[k], &out, &in, &out_l, &in_l);
        hp_float8_amax_n red;
        if (!is_expert(k)) {
            reduced(&red, (hp_float8_recipe)recipe, sh->Nreg, in_l, out_l, in_l < in, out_l < out);
            *fwd += (uint64_t)(red.x + (fsdp_f8 ? 0 : red.w));   // (fp8 all-gather: at the gather)
            *bwd += (uint64_t)(red.dy + red.wt);
            continue;
        }
        // One call per local expert over its c rows; a count is a + b c (b != 0: an amax per
        // row over the split hidden): a per local expert, b per routed entry computed here.
        hp_float8_amax_n red1;
        reduced(&red, (hp_float8_recipe)recipe, 0, in_l, out_l, in_l < in, out_l < out);
        reduced(&red1, (hp_float8_recipe)recipe, 1, in_l, out_l, in_l < in, out_l < out);
        const uint64_t El = (uint64_t)sh->El;
        *fwd += El * (uint64_t)(red.x + red.w);
        *bwd += El * (uint64_t)(red.dy + red.wt);
        *fwd_entry += (uint64_t)(red1.x + red1.w - red.x - red.w);
        *bwd_entry += (uint64_t)(red1.dy + red1.wt - red.dy - red.wt);
    }
}

// The roles whose input a block's tp regions all-gather (forward: wq/wk/wv, w1/w3; backward:
// the grad_output of wo, w2). A gather moves float8 when every one of its consumers converts.
static const hp_block_param attn_in[] = { BP_WQ, BP_WK, BP_WV }, ffn_in[] = { BP_W1, BP_W3 };
static const hp_block_param attn_dy[] = { BP_WO }, ffn_dy[] = { BP_W2 };

static int roles_on(const hp_model_config *m, const hp_local_shapes *sh, int l, const char *filter,
                    const hp_block_param *rs, int n) {
    for (int i = 0; i < n; i++) {
        int k = 0;
        while (k < N_ROLES && roles[k] != rs[i]) k++;
        if (k == N_ROLES || !block_role_on(m, sh, l, k, filter)) return 0;
    }
    return 1;
}

void hp_float8_block_sp_gathers(const hp_model_config *m, const hp_local_shapes *sh, int recipe,
                                const char *filter, int l, int *fwd, int *bwd) {
    *fwd = *bwd = 0;
    if (recipe != HP_FLOAT8_TENSORWISE || !sh->sp || sh->T <= 1) return;
    *fwd = roles_on(m, sh, l, filter, attn_in, 3);
    *bwd = roles_on(m, sh, l, filter, attn_dy, 1);
    if (!hp_model_is_moe_layer(m, l)) {   // (MoE blocks: the router reads the gathered input)
        *fwd += roles_on(m, sh, l, filter, ffn_in, 2);
        *bwd += roles_on(m, sh, l, filter, ffn_dy, 1);
    }
}

int hp_float8_param_converted(int recipe, const char *filter, const char *name, int64_t out, int64_t in) {
    if (recipe == HP_FLOAT8_OFF) return 0;
    int l = -1, at = 0;
    if (sscanf(name, "layers.%d.%n", &l, &at) != 1 || at == 0) return 0;
    for (int k = 0; k < N_ROLES && !is_expert(k); k++) {   // (the routed experts: never fp8-gathered)
        char want[96];
        snprintf(want, sizeof want, "layers.%d.%s.weight", l, hp_transformer_role_name(roles[k]));
        if (strcmp(name, want) != 0) continue;
        char fqn[96];
        snprintf(fqn, sizeof fqn, "layers.%d.%s", l, hp_transformer_role_name(roles[k]));
        return out <= INT32_MAX && in <= INT32_MAX && converted(fqn, (int)out, (int)in, filter);
    }
    return 0;
}

int hp_float8_linears_init(hp_transformer *tf, int recipe, const char *filter) {
    if (recipe == HP_FLOAT8_OFF) return 0;
    hp_float8_linears *f = calloc(1, sizeof *f);
    if (!f) return -1;
    tf->f8 = f;
    f->recipe = (hp_float8_recipe)recipe;
    const int L = tf->m.n_layers;
    int widest = tf->sh.D;
    f->on = calloc((size_t)L * N_ROLES, 1);
    if (!f->on) return -1;
    for (int l = 0; l < L; l++)
        for (int k = 0; k < N_ROLES; k++) {
            int out, in, out_l, in_l;
            role_dims(&tf->m, &tf->sh, roles[k], &out, &in, &out_l, &in_l);
            if (out_l > widest) widest = out_l;
            if (in_l > widest) widest = in_l;
            f->on[(size_t)l * N_ROLES + k] = tf->blocks[l].pid[roles[k]] >= 0 &&
                                             block_role_on(&tf->m, &tf->sh, l, k, filter);
        }
    f->widest = widest;
    f->stride = (size_t)tf->sh.Nreg + (size_t)widest;
    f->kept = calloc((size_t)tf->n_slots * L * N_ROLES * f->stride, sizeof(float));
    // a local expert computes at most one entry per row of each ep member's routed rows (top-k
    // picks K distinct experts)
    const int El = tf->sh.El > 0 ? tf->sh.El : 1, ts = tf->sh.token_split > 0 ? tf->sh.token_split : 1;
    f->erows = tf->sh.El < 1 ? 0 : f8_rows_amax(f->recipe) ? tf->m.num_experts / El * (tf->sh.Nreg / ts) : 1;
    f->estride = (size_t)f->erows + (size_t)widest;
    f->ekept = calloc((size_t)tf->n_slots * L * N_EXPERT_ROLES * El * f->estride, sizeof(float));
    const size_t rows = (size_t)(f->erows > tf->sh.Nreg ? f->erows : tf->sh.Nreg);
    f->bwd = calloc(rows + 3 * (size_t)widest, sizeof(float));
    return f->kept && f->ekept && f->bwd ? 0 : -1;
}

void hp_float8_linears_free(hp_transformer *tf) {
    hp_float8_linears *f = tf->f8;
    if (!f) return;
    free(f->on); free(f->kept); free(f->ekept); free(f->bwd); free(f);
    tf->f8 = NULL;
}

// A converted linear of block tf->f8_layer: its role index k and, for a routed expert's
// weight (a slice of the (El, out, in) parameter), the local expert e (-1 otherwise).
typedef struct { int k, e; } f8_linear;

// The converted linear whose weight is w: k = -1 when w is none.
static f8_linear find(const hp_transformer *tf, const float *w) {
    const int l = tf->f8_layer;
    f8_linear none = { -1, -1 };
    if (!tf->f8 || l < 0) return none;
    for (int k = 0; k < N_ROLES; k++) {
        const int pid = tf->blocks[l].pid[roles[k]];
        if (pid < 0) continue;
        const float *p = tf->hk.unit.param(tf->hk.unit.ctx, pid);
        const int on = tf->f8->on[(size_t)l * N_ROLES + k];
        if (!is_expert(k)) {
            if (p == w) return on ? (f8_linear){ k, -1 } : none;
            continue;
        }
        int out, in, out_l, in_l;
        role_dims(&tf->m, &tf->sh, roles[k], &out, &in, &out_l, &in_l);
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
static void reduce(const hp_transformer *tf, f8_linear c, float *amax, int n) {
    if (n <= 0) return;
    if (c.e < 0 && tf->hk.float8.amax_reduce) tf->hk.float8.amax_reduce(tf->hk.float8.ctx, amax, n);
    if (c.e >= 0 && tf->hk.float8.expert_amax_reduce)
        tf->hk.float8.expert_amax_reduce(tf->hk.float8.ctx, amax, n);
}

// The kept forward amax of a linear for the running slot: x's (1 under tensorwise, else N
// values, a row each), then w's; a routed expert's per local expert (x's at most erows values).
static hp_float8_amax kept_amax(const hp_transformer *tf, f8_linear c, int N) {
    const hp_float8_linears *f = tf->f8;
    const size_t sl = (size_t)tf->slot * tf->m.n_layers + tf->f8_layer;
    if (c.e >= 0) {
        const size_t El = (size_t)tf->sh.El;
        float *base = f->ekept + ((sl * N_EXPERT_ROLES + (size_t)(c.k - FIRST_EXPERT)) * El + (size_t)c.e) * f->estride;
        return (hp_float8_amax){ .x = base, .w = base + f->erows };
    }
    float *base = f->kept + (sl * N_ROLES + (size_t)c.k) * f->stride;
    return (hp_float8_amax){ .x = base, .w = base + (f->recipe == HP_FLOAT8_TENSORWISE ? 1 : N) };
}

void hp_float8_layer_begin(hp_transformer *tf, int l) {
    tf->f8_layer = l;
    hp_float8_linears *f = tf->f8;
    if (!f) return;
    memset(f->x_set, 0, sizeof f->x_set);
    memset(f->w_set, 0, sizeof f->w_set);
    memset(f->dy_set, 0, sizeof f->dy_set);
}

int hp_float8_tensorwise(const hp_transformer *tf) { return tf->f8 && tf->f8->recipe == HP_FLOAT8_TENSORWISE; }

// The dense linear c's amax of its forward input x (N, in): the whole tensor's, MAX-reduced
// over tp when in is a tp shard, kept for its casts (tensorwise; not in a recompute, which
// keeps the forward's). (The routed experts run one call each over all their rows.)
static void take_x_amax(hp_transformer *tf, f8_linear c, const float *x, int N, int in) {
    hp_float8_linears *f = tf->f8;
    if (c.e >= 0 || f->x_set[c.k] || tf->f8_recompute) return;
    int fo, fi, out_l, in_l;
    role_dims(&tf->m, &tf->sh, roles[c.k], &fo, &fi, &out_l, &in_l);
    float *ax = kept_amax(tf, c, N).x;
    ax[0] = hp_float8_amax_all(x, (size_t)N * in);
    if (in_l < fi) reduce(tf, c, ax, 1);
    f->x_set[c.k] = 1;
}

// The dense linear c's amax of its grad_output dy (N, out) in this backward, the same way.
static void take_dy_amax(hp_transformer *tf, f8_linear c, const float *dy, int N, int out) {
    hp_float8_linears *f = tf->f8;
    if (c.e >= 0 || f->dy_set[c.k]) return;
    int fo, fi, out_l, in_l;
    role_dims(&tf->m, &tf->sh, roles[c.k], &fo, &fi, &out_l, &in_l);
    f->dy_amax[c.k] = hp_float8_amax_all(dy, (size_t)N * out);
    if (out_l < fo) reduce(tf, c, &f->dy_amax[c.k], 1);
    f->dy_set[c.k] = 1;
}

void hp_float8_prepare_x(hp_transformer *tf, const float *w, const float *x, int N, int in) {
    const f8_linear c = find(tf, w);
    if (c.k >= 0 && hp_float8_tensorwise(tf)) take_x_amax(tf, c, x, N, in);
}

void hp_float8_prepare_dy(hp_transformer *tf, const float *w, const float *dy, int N, int out) {
    const f8_linear c = find(tf, w);
    if (c.k >= 0 && hp_float8_tensorwise(tf)) take_dy_amax(tf, c, dy, N, out);
}

int hp_float8_linear_converted(const hp_transformer *tf, const float *w) { return find(tf, w).k >= 0; }

int hp_float8_sp_gather_consume(hp_transformer *tf, float *out, const float *in, int D,
                                const float *const *w, int n_w, int backward, hp_region_rows_fn *rows,
                                void *rows_ctx) {
    hp_float8_linears *f = tf->f8;
    const hp_region_hooks *rh = &tf->hk.region;
    if (!f || f->recipe != HP_FLOAT8_TENSORWISE || n_w <= 0 || !rh->gather_fp8_consume ||
        !rh->sp_gathers(rh->ctx))
        return 0;
    // (zbv's I: its W casts dy again from the kept copy, with an amax of its own: plain gather)
    if (backward && tf->input_only) return 0;
    for (int i = 0; i < n_w; i++)
        if (find(tf, w[i]).k < 0) return 0;
    const size_t n = (size_t)tf->sh.Nres * D;
    float amax;
    const int again = tf->f8_recompute && hp_failpoint(HP_FP_FLOAT8_RECOMPUTE_SCALE);
    if (!backward && tf->f8_recompute && !again) {   // the forward's, kept by its first consumer
        amax = kept_amax(tf, find(tf, w[0]), tf->sh.Nreg).x[0];
    } else {
        amax = hp_float8_amax_all(in, n);
        if (!again) reduce(tf, find(tf, w[0]), &amax, 1);   // (a dense linear's: over tp)
    }
    // the consumers cast with the gathered tensor's amax (their cast of its dequantised codes
    // gives back those codes), never with one of their row blocks'
    for (int i = 0; i < n_w; i++) {
        const f8_linear c = find(tf, w[i]);
        if (backward) {
            f->dy_amax[c.k] = amax;
            f->dy_set[c.k] = 1;
        } else if (!tf->f8_recompute || again) {
            kept_amax(tf, c, tf->sh.Nreg).x[0] = amax;
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
static void check_gathered_weight(const hp_transformer *tf, int k, const float *w, float amax, size_t n) {
    const float s = hp_fp8_scale(amax, HP_FP8_E4M3, 0);
    for (size_t i = 0; i < n; i++) {
        const float v = hp_fp8_to_float(hp_fp8_from_float(w[i] * s, HP_FP8_E4M3), HP_FP8_E4M3) / s;
        if (memcmp(&v, &w[i], sizeof v) != 0) {
            hp_structure_fail(HP_CHECK_FLOAT8_CAST, "block %d, %s: gathered weight element %zu (%.9g) "
                              "is not an e4m3 value with the all-gather's scale (recast: %.9g)",
                              tf->f8_layer, hp_transformer_role_name(roles[k]), i, (double)w[i], (double)v);
            return;
        }
    }
    hp_structure_pass(HP_CHECK_FLOAT8_CAST);
}

int hp_float8_linear_fwd(const hp_transformer *tf, float *y, const float *x, const float *w, int N,
                         int in, int out) {
    const f8_linear c = find(tf, w);
    const int k = c.k;
    if (k < 0) return 0;
    if (c.e >= 0 && f8_rows_amax(tf->f8->recipe) && N > tf->f8->erows)
        hp_fail_line_and_abort(1, "float8: expert %d of block %d computes %d rows, room for %d",
                               c.e, tf->f8_layer, N, tf->f8->erows);
    hp_float8_amax a = kept_amax(tf, c, N);
    // (float8_recompute_scale: the bug's recompute takes its amax again, on this rank's shard
    //  only, and keeps it for the backward: pytorch/torchtitan#1056's recompute that is not
    //  bitwise, where the scales of a recomputed cast differ from the forward's)
    const int again = tf->f8_recompute && hp_failpoint(HP_FP_FLOAT8_RECOMPUTE_SCALE);
    if (!tf->f8_recompute || again) {   // a recompute casts with the forward's scales, kept here
        int fo, fi, out_l, in_l;
        role_dims(&tf->m, &tf->sh, roles[k], &fo, &fi, &out_l, &in_l);
        const hp_float8_recipe r = tf->f8->recipe;
        hp_float8_amax_n red;
        reduced(&red, r, N, in, out, in_l < fi && !again, out_l < fo && !again);
        hp_float8_linears *f = tf->f8;
        const int tw = r == HP_FLOAT8_TENSORWISE && !again && c.e < 0;
        const float x_kept = a.x[0], w_kept = a.w[0];
        hp_float8_forward_amax(&a, x, w, r, N, in, out);
        // tensorwise: a dense linear's whole-tensor amax once (a row block's would be its own)
        if (tw && f->x_set[k]) a.x[0] = x_kept;
        else reduce(tf, c, a.x, red.x);
        if (tw && f->w_set[k]) {
            a.w[0] = w_kept;
        } else {
            // the fp8 all-gather's weight: its amax is the gather's (over fsdp and tp already), so
            // the cast gives back the gathered codes; the amax of its dequantised values would not
            const int pid = tf->blocks[tf->f8_layer].pid[roles[k]];
            if (c.e >= 0 || !(tf->hk.float8.weight_amax && tf->hk.float8.weight_amax(tf->hk.float8.ctx, pid, a.w)))
                reduce(tf, c, a.w, red.w);
            else if (hp_structure_enabled())
                check_gathered_weight(tf, k, w, a.w[0], (size_t)out * (size_t)in);
        }
        if (tw) f->x_set[k] = f->w_set[k] = 1;
    }
    hp_float8_linear_forward(y, x, w, &a, tf->f8->recipe, N, in, out);
    return 1;
}

// The structure check of a written dgrad (structure.h): dx must be hp_gemm of the casts the
// recipe's table prescribes (precision.md §5.2: grad_output e5m2 per tensor under tensorwise,
// e4m3 per row (pow2) under the rowwise recipes; w e4m3 with the forward's scale, per column
// (pow2) or per tensor (pow2)), each cast redone here with float8.h's quantize / dequantize.
// A dgrad accumulated into dx (dx_beta 1: the MoE block's) is checked against the same GEMM
// with beta 1 onto the dx it found (before).
static void check_dgrad(const hp_transformer *tf, f8_linear lin, const float *dx, const float *before,
                        float beta, const float *dy, const float *w, const hp_float8_amax *a, int N,
                        int in, int out) {
    const int k = lin.k;
    const hp_float8_recipe r = tf->f8->recipe;
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
    if (lin.e >= 0) snprintf(name, sizeof name, "%s[local %d]", hp_transformer_role_name(roles[k]), lin.e);
    else snprintf(name, sizeof name, "%s", hp_transformer_role_name(roles[k]));
    if (bad != (size_t)-1)
        hp_structure_fail(HP_CHECK_FLOAT8_CAST, "block %d, %s, microbatch %d: dgrad element %zu is "
                          "%.9g, the product of the prescribed casts %.9g", tf->f8_layer, name, tf->mb,
                          bad, (double)dx[bad], (double)want[bad]);
    else
        hp_structure_pass(HP_CHECK_FLOAT8_CAST);
    free(dyq); free(wq); free(want); free(q);
}

int hp_float8_linear_bwd(const hp_transformer *tf, float *dx, float *dw, const float *dy,
                         const float *x, const float *w, int N, int in, int out, float dx_beta) {
    const f8_linear c = find(tf, w);
    const int k = c.k;
    if (k < 0) return 0;
    hp_float8_linears *f = tf->f8;
    const hp_float8_recipe r = f->recipe;
    hp_float8_amax a = kept_amax(tf, c, N);
    a.dy = f->bwd;
    a.wt = a.dy + (f->erows > tf->sh.Nreg ? f->erows : tf->sh.Nreg);
    a.dyt = a.wt + f->widest;
    a.xt = a.dyt + f->widest;
    int fo, fi, out_l, in_l;
    role_dims(&tf->m, &tf->sh, roles[k], &fo, &fi, &out_l, &in_l);
    hp_float8_amax_n red;
    reduced(&red, r, N, in, out, in_l < fi, out_l < fo);
    hp_float8_backward_amax(&a, dy, x, w, r, N, in, out);
    if (r == HP_FLOAT8_TENSORWISE && c.e < 0) {   // the whole tensor's, once per backward (blocks, dw)
        if (f->dy_set[k]) a.dy[0] = f->dy_amax[k];
        else reduce(tf, c, a.dy, red.dy);
        f->dy_amax[k] = a.dy[0];
        f->dy_set[k] = 1;
    } else {
        reduce(tf, c, a.dy, red.dy);
    }
    reduce(tf, c, a.wt, red.wt);
    float *before = NULL;   // (the structure check of an accumulated dgrad: the dx it found)
    const int check = dx && N > 0 && in > 0 && out > 0 && hp_structure_enabled();
    if (check && dx_beta != 0.0f && (before = malloc((size_t)N * in * sizeof(float))) != NULL)
        memcpy(before, dx, (size_t)N * in * sizeof(float));
    hp_float8_linear_backward(dx, dw, dy, x, w, &a, r, tf->bf16, dx_beta, N, in, out);
    if (check && (dx_beta == 0.0f || before)) check_dgrad(tf, c, dx, before, dx_beta, dy, w, &a, N, in, out);
    free(before);
    return 1;
}

int hp_float8_moe_fwd(void *ctx, float *y, const float *x, const float *w, int N, int in, int out) {
    return hp_float8_linear_fwd(ctx, y, x, w, N, in, out);
}

int hp_float8_moe_bwd(void *ctx, float *dx, float *dw, const float *dy, const float *x,
                      const float *w, int N, int in, int out) {
    return hp_float8_linear_bwd(ctx, dx, dw, dy, x, w, N, in, out, 1.0f);
}
