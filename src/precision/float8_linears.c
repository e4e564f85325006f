// float8_linears.c - which of the model's linears float8 converts (TorchTitan's filter), their
// dims and which of their amax are MAX-reduced over tp: pure functions, for the run time
// (float8.c) and for the planner's traffic formulas.
// defines: hp_float8_roles, hp_float8_role_dims, hp_float8_reduced, hp_float8_block_role_on,
//          hp_float8_block_amax_reduced, hp_float8_block_sp_gathers, hp_float8_param_converted
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "precision/float8_linears.h"
#include "precision/float8_roles.h"

// The linears a block may have that the float8 filter converts (the dense FFN in dense blocks,
// the shared and the routed experts in MoE blocks), in the order their kept amax are stored;
// the routed experts' (from HP_F8_FIRST_EXPERT on) are kept apart, per local expert.
const hp_block_param hp_float8_roles[HP_F8_N_ROLES] = { BP_WQ, BP_WK, BP_WV, BP_WO, BP_W1, BP_W2, BP_W3,
                                        BP_SW1, BP_SW2, BP_SW3, BP_EW1, BP_EW2, BP_EW3 };

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
void hp_float8_role_dims(const hp_model_config *m, const hp_local_shapes *sh, hp_block_param r,
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
void hp_float8_reduced(hp_float8_amax_n *red, hp_float8_recipe r, int N, int in, int out,
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
int hp_float8_block_role_on(const hp_model_config *m, const hp_local_shapes *sh, int l, int k,
                         const char *filter) {
    const int ffn = hp_float8_roles[k] == BP_W1 || hp_float8_roles[k] == BP_W2 || hp_float8_roles[k] == BP_W3;
    const int shared = hp_float8_roles[k] == BP_SW1 || hp_float8_roles[k] == BP_SW2 || hp_float8_roles[k] == BP_SW3;
    if (ffn && hp_model_is_moe_layer(m, l)) return 0;   // (MoE blocks: the experts instead)
    if (shared && (!hp_model_is_moe_layer(m, l) || m->n_shared_experts == 0)) return 0;
    if (hp_float8_is_expert(k) && (!hp_model_is_moe_layer(m, l) || sh->El < 1)) return 0;
    int out, in, out_l, in_l;
    hp_float8_role_dims(m, sh, hp_float8_roles[k], &out, &in, &out_l, &in_l);
    char fqn[96];
    snprintf(fqn, sizeof fqn, "layers.%d.%s", l, hp_transformer_role_name(hp_float8_roles[k]));
    return converted(fqn, out, in, filter);
}

void hp_float8_block_amax_reduced(const hp_model_config *m, const hp_local_shapes *sh, int recipe,
                                  const char *filter, int fsdp_f8, int l, uint64_t *fwd, uint64_t *bwd,
                                  uint64_t *fwd_entry, uint64_t *bwd_entry) {
    *fwd = *bwd = *fwd_entry = *bwd_entry = 0;
    if (recipe == HP_FLOAT8_OFF) return;
    for (int k = 0; k < HP_F8_N_ROLES; k++) {
        if (!hp_float8_block_role_on(m, sh, l, k, filter)) continue;
        int out, in, out_l, in_l;
        hp_float8_role_dims(m, sh, hp_float8_roles[k], &out, &in, &out_l, &in_l);
        hp_float8_amax_n red;
        if (!hp_float8_is_expert(k)) {
            hp_float8_reduced(&red, (hp_float8_recipe)recipe, sh->Nreg, in_l, out_l, in_l < in, out_l < out);
            *fwd += (uint64_t)(red.x + (fsdp_f8 ? 0 : red.w));   // (fp8 all-gather: at the gather)
            *bwd += (uint64_t)(red.dy + red.wt);
            continue;
        }
        // One call per local expert over its c rows; a count is a + b c (b != 0: an amax per
        // row over the split hidden): a per local expert, b per routed entry computed here.
        hp_float8_amax_n red1;
        hp_float8_reduced(&red, (hp_float8_recipe)recipe, 0, in_l, out_l, in_l < in, out_l < out);
        hp_float8_reduced(&red1, (hp_float8_recipe)recipe, 1, in_l, out_l, in_l < in, out_l < out);
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
        while (k < HP_F8_N_ROLES && hp_float8_roles[k] != rs[i]) k++;
        if (k == HP_F8_N_ROLES || !hp_float8_block_role_on(m, sh, l, k, filter)) return 0;
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
    for (int k = 0; k < HP_F8_N_ROLES && !hp_float8_is_expert(k); k++) {   // (the routed experts: never fp8-gathered)
        char want[96];
        snprintf(want, sizeof want, "layers.%d.%s.weight", l, hp_transformer_role_name(hp_float8_roles[k]));
        if (strcmp(name, want) != 0) continue;
        char fqn[96];
        snprintf(fqn, sizeof fqn, "layers.%d.%s", l, hp_transformer_role_name(hp_float8_roles[k]));
        return out <= INT32_MAX && in <= INT32_MAX && converted(fqn, (int)out, (int)in, filter);
    }
    return 0;
}

