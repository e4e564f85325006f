// plan_memory.c - a rank's bytes by category, before anything is allocated (hp plan --memory).
// defines: hp_plan_memory_table, hp_plan_memory_run, hp_plan_memory_predict,
//          hp_plan_memory_full_ac, hp_plan_memory_busiest
//
// The persistent and FSDP terms repeat fsdp.c's allocations from the parameter table, so they
// are exact: four shard buffers (p, g, m, v), two buffers of the largest unsharded unit that
// is not its shards (params.h; one spare float each), and
// a staging buffer of (group size x shard) of the largest (unit, stack) span, plus one float;
// with the staging, the comm layer's own buffers (comm_layer_bytes), exact the same way.
// The activations are the model's buffers under the run's AC mode (plan_activations.c), the
// scratch the per-rank buffers and the largest transient of one attention backward.
// The parameter-table terms do not depend on the run config: hp_plan_memory_table computes
// them once, hp_plan_memory_run the rest for each run config (the search's inner loop).
// The largest single buffer (what `hp run` refuses beyond 2^31-1 elements) comes from the
// same shapes: the gathered unit, the expert rows, the logits, a block's widest activation
// and cp's gathered K/V.
#include <string.h>
#include "hyperpar/float8.h"
#include "hyperpar/params.h"
#include "hyperpar/pipeline.h"
#include "hyperpar/plan.h"
#include "hyperpar/ulysses.h"

#define F4 ((double)sizeof(float))

// The end of the (unit, stack) span starting at row i of the table (one contiguous run of
// rows: the table is in unit order) and, in *n, its shard floats.
static int span_end(const hp_param_table *t, int i, double *n) {
    const hp_param *first = &t->p[i];
    int64_t end = first->shard_offset + first->shard_numel;
    int j = i + 1;
    for (; j < t->n && t->p[j].unit == first->unit && t->p[j].stack == first->stack; j++)
        end = t->p[j].shard_offset + t->p[j].shard_numel;
    *n = (double)(end - first->shard_offset);
    return j;
}

// fsdp.c's comm_buf: the largest G * n over every unit's dense and expert spans.
static double staging_floats(const hp_param_table *t) {
    double need = 0, n;
    for (int i = 0, j; i < t->n; i = j) {
        j = span_end(t, i, &n);
        if (n * t->p[i].fsdp_size > need) need = n * t->p[i].fsdp_size;
    }
    return need + 1;
}

// The comm layer's own buffers (comm.h), in memtrack's comm_scratch with the staging:
// - the fixed-order scratch, sized for the largest group and element a deterministic
//   reduction runs on: the grad norm's f64 all-reduce over the world (trainer.c, every step),
//   which no other group (a subgroup) or element (4 or 8 bytes) exceeds; none at world 1;
// - the nonblocking gradient reductions: each span posts one (fsdp.c: a reduce-scatter of n
//   over its shard group, then an all-reduce over dp_replicate), and the slots hold
//   hp_comm_async_slots x (the largest send copy + the largest rows) of them, reserved by
//   fsdp.c at init.
static double comm_layer_bytes(const hp_param_table *t, const hp_dims *d) {
    double send = 0, rows = 0, n;
    for (int i = 0, j; i < t->n; i = j) {
        size_t s, r;
        j = span_end(t, i, &n);
        hp_comm_async_floats(t->p[i].fsdp_size, (size_t)n, d->dp_replicate, &s, &r);
        if ((double)s > send) send = (double)s;
        if ((double)r > rows) rows = (double)r;
    }
    return (double)hp_comm_fixed_scratch_bytes(d->world, sizeof(double)) +
           hp_comm_async_slots((size_t)send, (size_t)rows) * (send + rows) * F4;
}

// The table's largest buffer: a gathered unit (work_p), or the staging buffer holding one
// gathered (unit, stack) span with its padding, whichever is larger. From the table's terms,
// so that hp_plan_memory_run can start again from it for every run config.
static void largest_of_table(hp_plan_memory *out) {
    const double unit = out->fsdp_working / (2 * F4);
    const double staged = (out->comm_scratch - out->comm_layer) / F4 - 1;
    out->largest_elems = staged > unit ? staged : unit;
    out->largest_name = "a gathered FSDP unit";
}

// What the rank's table decides (shards, gathered units, staging), for one precision policy:
// under bf16 params (or the fp8 all-gather) every unit is gathered (hp_params_gather_every_unit).
static int table_values(const hp_model_config *m, const hp_dims *d, int rank, int bf16,
                        hp_plan_memory *out) {
    hp_param_table t;
    if (hp_params_build(&t, m, d, rank) != 0) return -1;
    if (bf16) hp_params_gather_every_unit(&t);
    out->params_total = t.full_numel;
    out->shard_numel = t.shard_numel;
    out->params = (double)t.shard_numel * F4;
    out->grads = out->params;
    out->optimizer = 2 * out->params;
    out->fsdp_working = 2 * ((double)t.max_gathered_work + 1) * F4;   // units not their shards
    out->comm_layer = comm_layer_bytes(&t, d);
    out->comm_scratch = staging_floats(&t) * F4 + out->comm_layer;
    out->unit_places = ((double)t.gathered_work + 1) * F4;   // fsdp.c: acc_g's or kept_p's size
    hp_params_free(&t);
    largest_of_table(out);
    out->persistent = out->params + out->grads + out->optimizer;
    return 0;
}

int hp_plan_memory_table(const hp_model_config *m, const hp_dims *d, int rank, hp_plan_memory *out) {
    memset(out, 0, sizeof *out);
    return table_values(m, d, rank, 0, out);
}

// One microbatch's shapes on a rank (hp_transformer_alloc's Nreg, Nres, ...): reg rows of the
// block, res rows of the residual stream (1/T of them under SP), the tp-local widths, and nk,
// the K floats of one attention call: under Ulysses the gathered layout's (the sequence of the
// cp rank, the kv heads repeated to fill the ulysses group, 1/U of them).
typedef struct run_shapes {
    double reg, res, D, qd, kvd, Fl, Vl, Sc, Sc_cp, nk, hd;
    int M, n_moe;
} run_shapes;

static run_shapes run_shapes_of(const hp_model_config *m, const hp_dims *d, const hp_run_config *rc) {
    const int T = d->tp, U = d->ulysses, sp = d->sp > 0 && T > 1, M = hp_run_microbatches(rc);
    const double Bl = (double)(rc->batch / hp_dims_batch(d) / M), hd = hp_model_head_dim(m);
    run_shapes s = { .M = M, .D = m->dim, .Fl = m->ffn_hidden / T, .Vl = m->vocab_size / T, .hd = hd };
    s.Sc_cp = rc->seq_len / d->cp;
    s.Sc = (double)(rc->seq_len / d->cp / d->ulysses);
    s.reg = Bl * s.Sc;
    s.res = sp ? Bl * (double)((int)s.Sc / T) : s.reg;
    s.qd = (double)(m->n_heads / T) * hd;
    s.kvd = (double)(m->n_kv_heads / T) * hd;
    s.nk = s.reg * s.kvd * (U > 1 ? hp_ulysses_kv_repeat(m->n_kv_heads / T, U) : 1);
    for (int l = 0; l < m->n_layers; l++) s.n_moe += hp_model_is_moe_layer(m, l);
    return s;
}

// The per-rank scratch (category scratch of memtrack.h): transformer.c's backward buffers
// (res_a/b, reg_a/b, reg_q/k/v/att, reg_f1..3, dlogits), tp.c's tp_buf and ce_tl, the step's
// token ids, labels, positions, RoPE table and routing record (trainer.c; each of those
// eight is one element longer than its data), and the largest transient of one backward call: under
// Ulysses its gathered dout/dq/dk/dv (ulysses.c), under cp the K/V (and dK/dV) of every source
// that cp_attention.c's backward holds (all-gather: mine + all + dall = (2 + 4C) n, ring: cur
// + nxt = 8 n, plus the Sl source positions; n = s->nk, Sl the cp-local length).
static double scratch_floats(const hp_model_config *m, const hp_dims *d, const hp_run_config *rc,
                             const run_shapes *s) {
    const int U = d->ulysses, C = d->cp, M = s->M;
    const double reg = s->reg, res = s->res, D = s->D, qd = s->qd, kvd = s->kvd, nk = s->nk;
    double f = 3 * reg * D + 2 * res * D + reg * (2 * qd + 2 * kvd) + 3 * reg * s->Fl + reg * s->Vl + reg;
    f += 2 * reg * M + s->Sc + s->Sc_cp + s->Sc * s->hd + (double)s->n_moe * reg * M * m->top_k + 8;
    double call = U > 1 ? 2 * reg * qd + 2 * nk : 0;
    if (C > 1) call += s->Sc_cp + (rc->cp_rotate == HP_ROTATE_RING ? 8 * nk : (2 + 4.0 * C) * nk);
    // async TP (tp.c): the members' partials of my rows, T*res*D (+1), and 2T MPI requests
    // (counted as 8 bytes each)
    if (rc->async_tp && d->tp > 1 && d->sp > 0) f += (double)d->tp * res * D + 1 + 4.0 * d->tp;
    return f + call;
}

// Keeps the larger of out's largest buffer and (elems, what).
static void keep_largest(hp_plan_memory *out, double elems, const char *what) {
    if (elems > out->largest_elems) {
        out->largest_elems = elems;
        out->largest_name = what;
    }
}

// The largest buffers of the run's shapes, on top of the table's gathered unit: the expert
// rows of a MoE block (sized for every routed entry of the ep group landing here: moe.c's xe
// and h1), the logits, a block's widest activation (reg_f1, reg_q, reg_a) and cp's gathered
// K/V (all-gather: C sources of K and V; ring: K, V, dK, dV of one).
static void largest_of_run(const hp_model_config *m, const hp_dims *d, const hp_run_config *rc,
                           const run_shapes *s, hp_plan_memory *out) {
    if (m->num_experts > 0) {
        const double cap = (double)d->ep * (s->reg / hp_dims_token_split(d)) * m->top_k;
        const double Fel = m->moe_hidden / hp_dims_expert_tp(d);
        keep_largest(out, cap * (s->D > Fel ? s->D : Fel), "the expert rows of a MoE block");
    }
    keep_largest(out, s->reg * s->Vl, "the logits");
    const double wide = s->Fl > s->qd ? s->Fl : s->qd;
    keep_largest(out, s->reg * (wide > s->D ? wide : s->D), "an activation of a block");
    if (d->cp > 1)
        keep_largest(out, (rc->cp_rotate == HP_ROTATE_RING ? 4.0 : 2.0 * d->cp) * s->nk,
                     "the K/V of the cp group");
}

int hp_plan_memory_run(const hp_model_config *m, const hp_dims *d, const hp_run_config *rc, int rank,
                       int n_slots, hp_plan_memory *out) {
    const int bf16 = rc->mp_param == HP_DTYPE_BFLOAT16;
    // (the fp8 all-gather's copies are casts too: every unit gathered, under fp32 params as well)
    const int f8ag = rc->float8_fsdp_all_gather && rc->float8 == HP_FLOAT8_TENSORWISE;
    const int cast_copies = bf16 || f8ag;
    if (cast_copies && table_values(m, d, rank, 1, out) != 0) return -1;
    // fsdp.c: acc_g with accumulation (microbatches or pp); kept_p when units are kept apart,
    // in 2 bytes under bf16 params (kept_bf16; not with the fp8 all-gather); loc_g (each
    // unit's local grads of one microbatch) with accumulation under bf16 when a split backward
    // (zbv) writes them late, else work_g serves
    const int kept_apart = hp_run_units_kept_apart(rc->reshard_after_forward, d->pp);
    const double kept = kept_apart * out->unit_places / (bf16 && !f8ag ? 2 : 1);
    out->accumulation_if_microbatched = out->unit_places * (1 + (bf16 && hp_pp_splits_backward(d))) + kept;
    out->accumulation = hp_run_microbatches(rc) > 1 || d->pp > 1 ? out->accumulation_if_microbatched : kept;
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
    const run_shapes s = run_shapes_of(m, d, rc);
    out->scratch = scratch_floats(m, d, rc, &s) * F4;
    largest_of_table(out);   // (a run config before this one may have raised it)
    largest_of_run(m, d, rc, &s, out);
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

int hp_plan_memory_busiest(const hp_model_config *m, const hp_dims *d, const hp_run_config *rc,
                           int rank, hp_plan_memory *out, int *busiest_rank) {
    const int pp = d->pp > 1 ? d->pp : 1, inner = d->world / pp;
    double largest = 0;
    const char *largest_name = NULL;
    for (int p = 0; p < pp; p++) {
        const int r = p * inner + rank % inner;
        hp_plan_memory mem;
        if (hp_plan_memory_predict(m, d, rc, r, &mem) != 0) return -1;
        if (p == 0 || mem.peak > out->peak) {
            *out = mem;
            if (busiest_rank) *busiest_rank = r;
        }
        if (p == 0 || mem.largest_elems > largest) {
            largest = mem.largest_elems;
            largest_name = mem.largest_name;
        }
    }
    out->largest_elems = largest;
    out->largest_name = largest_name;
    return 0;
}
