// plan_memory.c - a rank's bytes by category, before anything is allocated (hp plan --memory).
// defines: hp_plan_memory_table, hp_plan_memory_run, hp_plan_memory_predict,
//          hp_plan_memory_full_ac
//
// The persistent and FSDP terms repeat fsdp.c's allocations from the parameter table, so they
// are exact: four shard buffers (p, g, m, v), two buffers of the largest unsharded unit, and
// a staging buffer of (group size x shard) of the largest (unit, stack) span, plus one float.
// The activations are the model's buffers under the run's AC mode (plan_activations.c), the
// scratch the per-rank buffers and the largest transient of one attention backward.
// The parameter-table terms do not depend on the run config: hp_plan_memory_table computes
// them once, hp_plan_memory_run the rest for each run config (the search's inner loop).
#include <string.h>
#include "hyperpar/params.h"
#include "hyperpar/pipeline.h"
#include "hyperpar/plan.h"
#include "hyperpar/ulysses.h"

#define F4 ((double)sizeof(float))

// fsdp.c's comm_buf: the largest G * n over every unit's dense and expert spans. The table is
// in unit order with each (unit, stack) one contiguous run of rows, so one pass finds them.
static double staging_floats(const hp_param_table *t) {
    double need = 0;
    for (int i = 0; i < t->n;) {
        const hp_param *first = &t->p[i];
        int64_t end = first->shard_offset + first->shard_numel;
        int j = i + 1;
        for (; j < t->n && t->p[j].unit == first->unit && t->p[j].stack == first->stack; j++)
            end = t->p[j].shard_offset + t->p[j].shard_numel;
        const double span = (double)(end - first->shard_offset) * first->fsdp_size;
        if (span > need) need = span;
        i = j;
    }
    return need + 1;
}

int hp_plan_memory_table(const hp_model_config *m, const hp_dims *d, int rank, hp_plan_memory *out) {
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
    hp_params_free(&t);
    out->persistent = out->params + out->grads + out->optimizer;
    return 0;
}

// The per-rank scratch (category scratch of memtrack.h): transformer.c's backward buffers
// (res_a/b, reg_a/b, reg_q/k/v/att, reg_f1..3, dlogits), tp.c's tp_buf and ce_tl, the step's
// token ids, labels, positions and routing record (trainer.c; each of those seven is one
// element longer than its data), and the largest transient of one backward call: under
// Ulysses its gathered dout/dq/dk/dv (ulysses.c), under cp the K/V (and dK/dV) of every source
// that cp_attention.c's backward holds (all-gather: mine + all + dall = (2 + 4C) n, ring: cur
// + nxt = 8 n, plus the Sl source positions; n = one rank's K floats, Sl its cp-local length).
static double scratch_floats(const hp_model_config *m, const hp_dims *d, const hp_run_config *rc) {
    const int T = d->tp, U = d->ulysses, C = d->cp, sp = d->sp > 0 && T > 1, M = hp_run_microbatches(rc);
    const double Sc_cp = rc->seq_len / d->cp, Sc = (double)(rc->seq_len / d->cp / d->ulysses);
    const double reg = (double)(rc->batch / hp_dims_batch(d) / M) * Sc;
    const double res = sp ? (double)(rc->batch / hp_dims_batch(d) / M) * (double)((int)Sc / T) : reg;
    const double D = m->dim, hd = hp_model_head_dim(m), qd = (double)(m->n_heads / T) * hd;
    const double kvd = (double)(m->n_kv_heads / T) * hd, Fl = m->ffn_hidden / T, Vl = m->vocab_size / T;
    int n_moe = 0;
    for (int l = 0; l < m->n_layers; l++) n_moe += hp_model_is_moe_layer(m, l);
    double f = 3 * reg * D + 2 * res * D + reg * (2 * qd + 2 * kvd) + 3 * reg * Fl + reg * Vl + reg;
    f += 2 * reg * M + Sc + Sc_cp + (double)n_moe * reg * M * m->top_k + 7;
    // the K floats of one rank's attention call: under Ulysses the gathered layout's (the
    // sequence of the cp rank, the kv heads repeated to fill the ulysses group, 1/U of them)
    const double nk = reg * kvd * (U > 1 ? hp_ulysses_kv_repeat(m->n_kv_heads / T, U) : 1);
    double call = U > 1 ? 2 * reg * qd + 2 * nk : 0;
    if (C > 1) call += Sc_cp + (rc->cp_rotate == HP_ROTATE_RING ? 8 * nk : (2 + 4.0 * C) * nk);
    return f + call;
}

int hp_plan_memory_run(const hp_model_config *m, const hp_dims *d, const hp_run_config *rc, int rank,
                       int n_slots, hp_plan_memory *out) {
    out->accumulation = hp_run_microbatches(rc) > 1 || d->pp > 1 ? out->accumulation_if_microbatched : 0;
    hp_plan_activations a, au;
    if (hp_plan_activations_with_slots(m, d, rc, rank, 0, n_slots, &a) != 0) return -1;
    out->activations = a.total;
    out->activations_recompute = a.recompute;
    out->pp_in_flight = d->pp > 1 ? a.n_slots : 0;
    out->activations_uniform = a.total;
    if (m->num_experts > 0 && d->ep > 1) {
        if (hp_plan_activations_with_slots(m, d, rc, rank, 1, a.n_slots, &au) != 0) return -1;
        out->activations_uniform = au.total;
    }
    out->scratch = scratch_floats(m, d, rc) * F4;
    out->persistent = out->params + out->grads + out->optimizer;
    out->peak = out->persistent + out->fsdp_working + out->comm_scratch + out->accumulation +
                out->activations + out->scratch;
    return 0;
}

int hp_plan_memory_predict(const hp_model_config *m, const hp_dims *d, const hp_run_config *rc,
                           int rank, hp_plan_memory *out) {
    return hp_plan_memory_table(m, d, rank, out) != 0 ? -1 : hp_plan_memory_run(m, d, rc, rank, 0, out);
}

int hp_plan_memory_full_ac(const hp_model_config *m, const hp_dims *d, const hp_run_config *rc,
                           int rank, hp_plan_memory *out) {
    out->activations_full_ac = 0;
    if (d->pp > 1 && d->pp_schedule == HP_PP_ZBV) return 0;
    hp_run_config full = *rc;
    full.ac_every = 1;
    hp_plan_activations a;
    if (hp_plan_activations_predict(m, d, &full, rank, 0, &a) != 0) return -1;
    out->activations_full_ac = a.total;
    return 0;
}
