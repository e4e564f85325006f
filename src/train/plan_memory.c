// plan_memory.c - a rank's bytes by category, before anything is allocated (hp plan --memory).
// defines: hp_plan_memory_predict, hp_plan_memory_full_ac
//
// The persistent and FSDP terms repeat fsdp.c's allocations from the parameter table, so they
// are exact: four shard buffers (p, g, m, v), two buffers of the largest unsharded unit, and
// a staging buffer of (group size x shard) of the largest (unit, stack) span, plus one float.
// Activations and scratch come from hp_memory_estimate (an upper estimate, see there).
#include <string.h>
#include <stdlib.h>
#include "hyperpar/params.h"
#include "hyperpar/pipeline.h"
#include "hyperpar/plan.h"
#include "hyperpar/train.h"

#define F4 ((double)sizeof(float))

// fsdp.c's comm_buf: the largest G * n over every unit's dense and expert spans.
static double staging_floats(const hp_param_table *t) {
    double need = 0;
    for (int u = 0; u < t->n_units; u++)
        for (int st = 0; st < 2; st++) {
            int64_t s0 = -1, end = 0;
            int G = 1;
            for (int i = 0; i < t->n; i++) {
                const hp_param *p = &t->p[i];
                if (p->unit < u) continue;
                if (p->unit > u) break;   // the table is in unit order
                if (p->stack != (hp_stack)st) continue;
                if (s0 < 0) { s0 = p->shard_offset; G = p->fsdp_size; }
                end = p->shard_offset + p->shard_numel;
            }
            if (s0 >= 0 && (double)(end - s0) * G > need) need = (double)(end - s0) * G;
        }
    return need + 1;
}

static int pp_activations(const hp_model_config *m, const hp_dims *d, const hp_run_config *rc,
                          int rank, hp_plan_memory *out);

int hp_plan_memory_predict(const hp_model_config *m, const hp_dims *d, const hp_run_config *rc,
                           int rank, hp_plan_memory *out) {
    memset(out, 0, sizeof *out);
    hp_param_table t;
    if (hp_params_build(&t, m, d, rank) != 0) return -1;
    out->params_total = t.full_numel;
    out->shard_numel = t.shard_numel;
    out->params = (double)t.shard_numel * F4;
    out->grads = out->params;
    out->optimizer = 2 * out->params;
    out->fsdp_working = 2 * (double)t.max_unit_work * F4;
    out->comm_scratch = staging_floats(&t) * F4;
    double total = 0;   // fsdp.c: acc_g (and kept_p under pp)
    for (int u = 0; u < t.n_units; u++) total += (double)t.unit_work_numel[u];
    out->accumulation_if_microbatched = (total + 1) * F4 * (d->pp > 1 ? 2 : 1);
    if (hp_run_microbatches(rc) > 1 || d->pp > 1) out->accumulation = out->accumulation_if_microbatched;
    hp_params_free(&t);
    hp_memory_estimate_t e;
    if (hp_memory_estimate(m, d, rc, rank, &e) != 0) return -1;
    out->activations = e.activation_bytes;
    // ep_dispatch.c sizes its expert rows (and moe.c the expert activations) for every routed
    // entry of the ep group landing on this rank, cap = ep*n*K; memory_estimate.c charges
    // cap*(5*D + 6*Fe/etp) floats a MoE layer for them. Uniform routing needs cap = n*K.
    out->activations_uniform = e.activation_bytes;
    if (m->num_experts > 0 && d->ep > 1) {
        const double n = (double)(rc->batch / hp_dims_batch(d) / hp_run_microbatches(rc)) *
                         (double)(rc->seq_len / d->cp) / hp_dims_token_split(d);
        const double Fel = (double)m->moe_hidden / hp_dims_expert_tp(d), K = m->top_k;
        int n_moe = 0;
        for (int l = 0; l < m->n_layers; l++) n_moe += hp_model_is_moe_layer(m, l);
        out->activations_uniform -= n_moe * (d->ep - 1) * n * K * (5.0 * m->dim + 6.0 * Fel) * F4;
    }
    out->scratch = e.scratch_bytes;
    if (d->pp > 1) {
        if (pp_activations(m, d, rc, rank, out) != 0) return -1;
        out->activations_uniform = out->activations;
    }
    out->persistent = out->params + out->grads + out->optimizer;
    out->peak = out->persistent + out->fsdp_working + out->comm_scratch + out->accumulation +
                out->activations + out->scratch;
    return 0;
}

// The activations of the same layout with n_layers L of which the first n_dense are dense.
static int acts_with(const hp_model_config *m, int L, int n_dense, const hp_dims *d,
                     const hp_run_config *rc, int rank, double *bytes) {
    hp_model_config x = *m;
    x.n_layers = L;
    x.n_dense_layers = n_dense;
    hp_memory_estimate_t e;
    if (hp_memory_estimate(&x, d, rc, rank, &e) != 0) return -1;
    *bytes = e.activation_bytes;
    return 0;
}

// hp_memory_estimate's activations are a sum over blocks plus the head's, so one block of
// each kind is the difference of the estimates for 2 and 1 blocks. Full AC keeps each block's
// input (the residual stream, Nres x D, sequence-sharded under SP) and the activations of the
// one block being recomputed, plus the head's.
int hp_plan_memory_full_ac(const hp_model_config *m, const hp_dims *d, const hp_run_config *rc,
                           int rank, hp_plan_memory *out) {
    out->activations_full_ac = 0;
    if (d->pp > 1) return 0;
    double a1, a2, a2m = 0;
    const int moe = m->num_experts > 0;
    if (acts_with(m, 1, 1, d, rc, rank, &a1) || acts_with(m, 2, 2, d, rc, rank, &a2)) return -1;
    if (moe && acts_with(m, 2, 1, d, rc, rank, &a2m)) return -1;
    const double dense_block = a2 - a1, head = a1 - dense_block;
    const double block = moe ? (a2m - a1 > dense_block ? a2m - a1 : dense_block) : dense_block;
    const int T = d->tp, sp = d->sp > 0 && T > 1;
    const double Bl = (double)(rc->batch / hp_dims_batch(d) / hp_run_microbatches(rc));
    const double reg = Bl * (double)(rc->seq_len / d->cp), res = sp ? reg / T : reg;
    out->activations_full_ac = (double)m->n_layers * res * m->dim * F4 + block + head;
    return 0;
}

// One microbatch's activations of one block of each kind and of the head, by the difference of
// the estimates for 2 and 1 blocks (memory_estimate.c sums per block), at pp 1 on the same
// inner coordinates (pp is the outermost mesh axis).
static int block_bytes(const hp_model_config *m, const hp_dims *d, const hp_run_config *rc, int rank,
                       double *dense_block, double *moe_block, double *head) {
    hp_dims d1 = *d;
    d1.pp = 1;
    d1.world = d->world / d->pp;
    const int r1 = rank % d1.world;
    double a1, a2, a2m = 0;
    if (acts_with(m, 1, 1, &d1, rc, r1, &a1) || acts_with(m, 2, 2, &d1, rc, r1, &a2)) return -1;
    if (m->num_experts > 0 && acts_with(m, 2, 1, &d1, rc, r1, &a2m)) return -1;
    *dense_block = a2 - a1;
    *head = a1 - *dense_block;
    *moe_block = m->num_experts > 0 ? a2m - a1 : *dense_block;
    return 0;
}

// Under pp (pipeline_run.c) a microbatch holds an activation slot on this rank from its first
// forward here to its last backward here, and a slot keeps the activations of every block of
// this rank's stages (and the head's, where it lives). The slots in use at once follow from
// this rank's action list of the schedule.
static int pp_activations(const hp_model_config *m, const hp_dims *d, const hp_run_config *rc,
                          int rank, hp_plan_memory *out) {
    hp_pp_layout lay;
    if (hp_pp_layout_init(&lay, d, m->n_layers) != 0) return -1;
    double dense_block, moe_block, head;
    if (block_bytes(m, d, rc, rank, &dense_block, &moe_block, &head) != 0) return -1;
    hp_coords co;
    hp_mesh_coords(d, rank, &co);
    double slot = 0;
    for (int l = 0; l < m->n_layers; l++)
        if (lay.stage_rank[hp_pp_layer_stage(&lay, l)] == co.p)
            slot += hp_model_is_moe_layer(m, l) ? moe_block : dense_block;
    if (lay.stage_rank[hp_pp_unit_stage(&lay, m->n_layers + 1)] == co.p) slot += head;
    const int M = hp_run_microbatches(rc);
    hp_pp_action *act = malloc((size_t)(3 * lay.V * M + 4) * sizeof *act);
    int *last = malloc((size_t)M * sizeof(int)), *seen = calloc((size_t)M, sizeof(int));
    int rc_out = -1;
    const int n = act && last && seen ? hp_pp_schedule_build(&lay, M, co.p, act) : -1;
    if (n >= 0) {
        for (int i = 0; i < n; i++)
            if (act[i].op != HP_PP_F) last[act[i].mb] = i;   // its last backward action here
        int live = 0, peak = 0;
        for (int i = 0; i < n; i++) {
            const int mb = act[i].mb;
            if (act[i].op == HP_PP_F && !seen[mb]) { seen[mb] = 1; if (++live > peak) peak = live; }
            if (act[i].op != HP_PP_F && last[mb] == i) live--;
        }
        out->pp_in_flight = peak;
        out->activations = peak * slot;
        rc_out = 0;
    }
    free(act);
    free(last);
    free(seen);
    return rc_out;
}
