// fsdp.c - FSDP2 / HSDP / DDP: parameters live as padded dim-chunks (torch.chunk semantics)
// of their tp/ep-local tensors, one unit (embeddings, each block, [norm, output]) is
// all-gathered before its forward, freed after it or kept to its backward (the
// reshard_after_forward policy, config.h hp_run_unit_keep), and its gradients are
// reduce-scattered back to shards. HSDP adds an all-reduce of the shard gradients over
// dp_replicate; DDP is the case fsdp size 1.
// Dense parameters use the fsdp group (dp_shard x cp), routed experts with EP the efsdp group.
//
// Gradients are plain sums: the loss is already sum-CE / N_global (TorchTitan #2206), so
// nothing is divided here, whatever the group sizes (the #1551 / #167178 lessons).
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "hyperpar/bf16.h"
#include "hyperpar/failpoint.h"
#include "hyperpar/float8.h"
#include "hyperpar/memtrack.h"
#include "hyperpar/pipeline.h"
#include "hyperpar/rng.h"
#include "hyperpar/structure.h"
#include "kernels/parallel.h"   // hp_par_zero
#include "precision/float8_linears.h"   // hp_float8_param_converted
#include "fsdp_internal.h"

// ---------------------------------------------------------------------------------------
// geometry of one parameter's chunks

typedef struct chunk_geom { int64_t outer, rows, inner, chunk; } chunk_geom;

static chunk_geom geom(const hp_param *p) {
    chunk_geom g = { 1, p->local_shape[p->fsdp_dim], 1, p->fsdp_chunk };
    for (int i = 0; i < p->fsdp_dim; i++) g.outer *= p->local_shape[i];
    for (int i = p->fsdp_dim + 1; i < p->ndim; i++) g.inner *= p->local_shape[i];
    return g;
}

// Copies chunk k of the local tensor to (to_shard = 1) or from (0) a padded shard; to a
// shard, its padding rows (chunk k past the tensor's rows) are written as zeros.
void hp_fsdp_chunk_copy(const hp_param *p, int k, float *local, float *shard, int to_shard) {
    const chunk_geom g = geom(p);
    int64_t rows_k = g.rows - (int64_t)k * g.chunk;
    rows_k = rows_k < 0 ? 0 : (rows_k > g.chunk ? g.chunk : rows_k);
    const size_t run = (size_t)(rows_k * g.inner) * sizeof(float);
    const size_t pad = (size_t)((g.chunk - rows_k) * g.inner) * sizeof(float);
    for (int64_t o = 0; o < g.outer; o++) {
        float *s = shard + o * g.chunk * g.inner;
        if (to_shard && pad) memset((char *)s + run, 0, pad);
        if (!run) continue;
        float *l = local + (o * g.rows + (int64_t)k * g.chunk) * g.inner;
        if (to_shard) memcpy(s, l, run);
        else          memcpy(l, s, run);
    }
}

// The params of unit u in one stack: indices [i0, i1), their shards [s0, s0+n) of the shard
// buffer (contiguous: the table orders params by unit, dense before experts), and the group
// of size G they are sharded over.
int hp_fsdp_stack_span_of(const hp_fsdp_state *fs, int u, hp_stack st, stack_span *sp) {
    sp->i0 = sp->i1 = -1;
    for (int i = 0; i < fs->pt->n; i++) {
        const hp_param *p = &fs->pt->p[i];
        if (p->unit != u || p->stack != st) continue;
        if (sp->i0 < 0) sp->i0 = i;
        sp->i1 = i + 1;
    }
    if (sp->i0 < 0) return 0;
    const hp_param *first = &fs->pt->p[sp->i0], *last = &fs->pt->p[sp->i1 - 1];
    sp->s0 = first->shard_offset;
    sp->n = last->shard_offset + last->shard_numel - sp->s0;
    sp->group = (hp_group_kind)first->fsdp_group;
    sp->G = first->fsdp_size;
    return 1;
}

// ---------------------------------------------------------------------------------------
// allocation and init

int hp_fsdp_init(hp_fsdp_state *fs, const hp_param_table *pt, hp_comm *comm, const hp_dims *d, int M,
                 const hp_run_config *rc) {
    const hp_reshard_policy policy = rc->reshard_after_forward;
    memset(fs, 0, sizeof *fs);
    fs->bf16 = rc->mp_param == HP_DTYPE_BFLOAT16;
    fs->reduce_bf16 = fs->bf16 && rc->mp_reduce == HP_DTYPE_BFLOAT16;
    fs->pt = pt;
    fs->comm = comm;
    fs->d = *d;
    fs->M = M;
    fs->work_unit = -1;
    fs->f8ag = rc->float8_fsdp_all_gather && rc->float8 == HP_FLOAT8_TENSORWISE;
    if (fs->f8ag) {
        const size_t np = pt->n > 0 ? (size_t)pt->n : 1;
        fs->f8_on = calloc(np, 1);
        fs->f8_valid = calloc(np, 1);
        fs->f8_amax = calloc(np, sizeof(float));
        if (!fs->f8_on || !fs->f8_valid || !fs->f8_amax) return -1;
        for (int i = 0; i < pt->n; i++) {
            const hp_param *p = &pt->p[i];
            fs->f8_on[i] = p->stack == HP_STACK_DENSE && p->ndim == 2 &&
                           hp_float8_param_converted(rc->float8, rc->float8_filter, p->name, p->shape[0],
                                                     p->shape[1]);
        }
    }
    const size_t n = (size_t)pt->shard_numel;
    fs->p_shard = hp_mem_alloc(HP_MEM_PARAMS, n * sizeof(float));
    fs->g_shard = hp_mem_alloc(HP_MEM_GRADS, n * sizeof(float));
    fs->m_shard = hp_mem_alloc(HP_MEM_OPTIMIZER, n * sizeof(float));
    fs->v_shard = hp_mem_alloc(HP_MEM_OPTIMIZER, n * sizeof(float));
    // one gathered unit: only units that are not their shards (params.h) pass through it
    const size_t work = (size_t)pt->max_gathered_work + 1;
    fs->work_p = hp_mem_alloc(HP_MEM_FSDP_WORKING, work * sizeof(float));
    fs->work_g = hp_mem_alloc(HP_MEM_FSDP_WORKING, work * sizeof(float));
    // staging: group size x one stack's shard of the largest unit
    int64_t need = 0;
    stack_span sp;
    for (int u = 0; u < pt->n_units; u++)
        for (int st = 0; st < 2; st++)
            if (hp_fsdp_stack_span_of(fs, u, (hp_stack)st, &sp) && sp.n * sp.G > need) need = sp.n * sp.G;
    fs->comm_buf = hp_mem_alloc(HP_MEM_COMM_SCRATCH, ((size_t)need + 1) * sizeof(float));
    // the nonblocking reductions' slots, sized once for the largest span's (and how many)
    size_t send = 0, rows = 0;
    for (int u = 0; u < pt->n_units; u++)
        for (int st = 0; st < 2; st++) {
            size_t s, r;
            if (!hp_fsdp_stack_span_of(fs, u, (hp_stack)st, &sp)) continue;
            hp_comm_async_floats(sp.G, (size_t)sp.n, d->dp_replicate, &s, &r);
            if (s > send) send = s;
            if (r > rows) rows = r;
        }
    hp_comm_async_reserve(comm, send, rows);
    // how long each unit stays gathered (keep_of); the head alone kept to its backward stays
    // in work_p (nothing is gathered between its forward and its backward)
    fs->policy = policy;
    const size_t units = pt->n_units > 0 ? (size_t)pt->n_units : 1;
    // gradient accumulation keeps every unit's unsharded grads until the step's last
    // microbatch; units kept apart (under pp: gathered once per step and kept until the
    // unit's last backward, TorchTitan's reshard_after_forward = not pp_enabled) have a place
    // each in kept_p
    const int accumulate = M > 1 || d->pp > 1, kept_apart = hp_run_units_kept_apart(policy, d->pp);
    if (accumulate || kept_apart) {
        fs->acc_offset = hp_mem_alloc(HP_MEM_OTHER, units * sizeof(int64_t));
        fs->unit_kept = hp_mem_alloc(HP_MEM_OTHER, units * sizeof(int));
        int64_t total = 0;   // a unit that is its shards accumulates in g_shard
        for (int u = 0; fs->acc_offset && u < pt->n_units; u++) {
            fs->acc_offset[u] = total;
            if (pt->unit_in_shards[u] < 0) total += pt->unit_work_numel[u];
        }
        if (accumulate) fs->acc_g = hp_mem_alloc(HP_MEM_ACCUMULATION, ((size_t)total + 1) * sizeof(float));
        // bf16: a unit's local grads live from its backward to their rounding into acc_g, which
        // follows at once unless a split backward's W writes them later; otherwise work_g (not
        // used under accumulation) holds the one unit's
        if (accumulate && fs->bf16 && hp_pp_splits_backward(d)) {
            fs->loc_g = hp_mem_alloc(HP_MEM_ACCUMULATION, ((size_t)total + 1) * sizeof(float));
            if (!fs->loc_g) return -1;
        } else if (accumulate && fs->bf16) {
            fs->loc_g = fs->work_g;
        }
        // the kept copies of bf16 values in 2 bytes (not the fp8 all-gather's: its weights are
        // dequantised fp8, not bf16 values), widened one unit at a time into work_p (unused
        // otherwise when units are kept apart)
        if (kept_apart && fs->bf16 && !fs->f8ag)
            fs->kept_bf16 = hp_mem_alloc(HP_MEM_ACCUMULATION, ((size_t)total + 1) * sizeof(hp_bf16));
        else if (kept_apart)
            fs->kept_p = hp_mem_alloc(HP_MEM_ACCUMULATION, ((size_t)total + 1) * sizeof(float));
        if (!fs->acc_offset || !fs->unit_kept || (accumulate && !fs->acc_g) ||
            (kept_apart && !fs->kept_p && !fs->kept_bf16))
            return -1;
    }
    return (fs->p_shard && fs->g_shard && fs->m_shard && fs->v_shard && fs->work_p &&
            fs->work_g && fs->comm_buf) ? 0 : -1;
}

void hp_fsdp_free(hp_fsdp_state *fs) {
    if (fs->loc_g == fs->work_g) fs->loc_g = NULL;   // (work_g's, freed with it)
    hp_mem_free(fs->p_shard); hp_mem_free(fs->g_shard); hp_mem_free(fs->m_shard); hp_mem_free(fs->v_shard);
    hp_mem_free(fs->work_p); hp_mem_free(fs->work_g); hp_mem_free(fs->comm_buf);
    hp_mem_free(fs->acc_g); hp_mem_free(fs->loc_g); hp_mem_free(fs->acc_offset);
    hp_mem_free(fs->kept_bf16);
    free(fs->acc_shadow);
    for (int i = 0; i < fs->n_pending; i++) free(fs->pending[i].staged);
    free(fs->pending); hp_mem_free(fs->kept_p); hp_mem_free(fs->unit_kept);
    free(fs->f8_on); free(fs->f8_valid); free(fs->f8_amax);
    memset(fs, 0, sizeof *fs);
}

// Every element's value depends only on (seed, parameter name, global index): model.md.
void hp_fsdp_init_params(hp_fsdp_state *fs, uint64_t seed) {
    for (int i = 0; i < fs->pt->n; i++) {
        const hp_param *p = &fs->pt->p[i];
        const uint64_t stream = hp_name_id(p->name);
        float *dst = fs->p_shard + p->shard_offset;
        for (int64_t k = 0; k < p->shard_numel; k++) {
            const int64_t li = hp_param_shard_to_local(p, k);
            dst[k] = li < 0 ? 0.0f : hp_param_init_value(p, seed, stream, hp_param_global_index(p, li));
        }
    }
}

void hp_fsdp_set_params(hp_fsdp_state *fs, const float *full) {
    for (int i = 0; i < fs->pt->n; i++) {
        const hp_param *p = &fs->pt->p[i];
        float *dst = fs->p_shard + p->shard_offset;
        for (int64_t k = 0; k < p->shard_numel; k++) {
            const int64_t li = hp_param_shard_to_local(p, k);
            dst[k] = li < 0 ? 0.0f : full[p->full_offset + hp_param_global_index(p, li)];
        }
    }
    memset(fs->m_shard, 0, (size_t)fs->pt->shard_numel * sizeof(float));
    memset(fs->v_shard, 0, (size_t)fs->pt->shard_numel * sizeof(float));
}

// ---------------------------------------------------------------------------------------
// the unit lifecycle

// A unit that is its shards (params.h): its tensors are views of p_shard and g_shard, so its
// gather copies nothing, its release poisons nothing (they are the live parameters) and its
// gradients are reduced where the backward accumulated them. The values and the order of
// every operation are those of the work buffers; only the copies go.
int hp_fsdp_in_shards(const hp_fsdp_state *fs, int u) { return fs->pt->unit_in_shards[u] >= 0; }

// One unit's unsharded parameters as the model reads them: its shards, the shared work
// buffer (with kept_bf16 the unit widened there), or under pp the unit's own slot.
static float *unit_params(hp_fsdp_state *fs, int u) {
    if (hp_fsdp_in_shards(fs, u)) return fs->p_shard + fs->pt->unit_in_shards[u];
    return fs->kept_p ? fs->kept_p + fs->acc_offset[u] : fs->work_p;
}
static int units_kept_apart(const hp_fsdp_state *fs) { return fs->kept_p || fs->kept_bf16; }
static hp_bf16 *unit_kept_bf16(hp_fsdp_state *fs, int u) { return fs->kept_bf16 + fs->acc_offset[u]; }
float *hp_fsdp_param(hp_fsdp_state *fs, int i) {
    return unit_params(fs, fs->pt->p[i].unit) + fs->pt->p[i].work_offset;
}
// One unit's unsharded grads summed over the step's microbatches, which the reduction
// stages: its shards, the shared work buffer, or under gradient accumulation the unit's own
// slot of acc_g, which lives across the step's microbatches.
static float *unit_grads(hp_fsdp_state *fs, int u) {
    if (hp_fsdp_in_shards(fs, u)) return fs->g_shard + fs->pt->unit_in_shards[u];
    return fs->acc_g ? fs->acc_g + fs->acc_offset[u] : fs->work_g;
}
float *hp_fsdp_grad_of(hp_fsdp_state *fs, int i) {
    return unit_grads(fs, fs->pt->p[i].unit) + fs->pt->p[i].work_offset;
}
// Where the backward writes: the sum itself in fp32; under bf16 with accumulation the unit's
// local slot, rounded and added into the sum per microbatch (hp_fsdp_reduce_unit).
static float *unit_local_grads(hp_fsdp_state *fs, int u) {
    if (!fs->loc_g) return unit_grads(fs, u);
    return fs->loc_g == fs->work_g ? fs->work_g : fs->loc_g + fs->acc_offset[u];
}
float *hp_fsdp_grad(hp_fsdp_state *fs, int i) {
    return unit_local_grads(fs, fs->pt->p[i].unit) + fs->pt->p[i].work_offset;
}

// 1 while unit u's gathered parameters are kept: in its kept_p (kept_bf16) place, or in
// work_p (which holds one unit at a time)
static int still_gathered(const hp_fsdp_state *fs, int u) {
    return units_kept_apart(fs) ? fs->unit_kept[u] : fs->work_unit == u;
}

static void check_reductions(hp_fsdp_state *fs);

static void uncast_own_chunks(hp_fsdp_state *fs, int u) {
    for (int i = 0; i < fs->pt->n; i++) {
        const hp_param *p = &fs->pt->p[i];
        if (p->unit == u && p->on_rank)
            hp_fsdp_chunk_copy(p, p->fsdp_rank, hp_fsdp_param(fs, i), fs->p_shard + p->shard_offset, 0);
    }
}

// The structure check of a gathered unit (structure.h): this rank's own chunk of every tensor
// of unit u, as the model is about to read it, must be the policy's cast of the rank's current
// master shard (bf16: the §3 rounding; fp32: the shard itself). A unit kept past an optimizer
// step, or a copy that skipped the cast, differs. A unit that is its shards is the master.
static void check_gathered(hp_fsdp_state *fs, int u) {
    if (hp_fsdp_in_shards(fs, u)) return;
    for (int i = 0; i < fs->pt->n; i++) {
        const hp_param *p = &fs->pt->p[i];
        if (p->unit != u || !p->on_rank || p->shard_numel == 0 || hp_fsdp_f8_param(fs, i)) continue;
        float *own = malloc((size_t)p->shard_numel * sizeof(float));
        if (!own) hp_fail_line_and_abort(1, "hp: out of memory (structure check)");
        hp_fsdp_chunk_copy(p, p->fsdp_rank, hp_fsdp_param(fs, i), own, 1);
        const float *master = fs->p_shard + p->shard_offset;
        int64_t bad = -1;
        for (int64_t k = 0; k < p->shard_numel && bad < 0; k++) {
            const float want = fs->bf16 ? hp_bf16_round_float(master[k]) : master[k];
            if (memcmp(&own[k], &want, sizeof want) != 0) bad = k;
        }
        free(own);
        if (bad < 0) { hp_structure_pass(HP_CHECK_GATHER); continue; }
        hp_structure_fail(HP_CHECK_GATHER, "unit %d, %s, shard element %lld: the gathered copy is "
                          "not the %s of this rank's master", u, p->name, (long long)bad,
                          fs->bf16 ? "bf16 cast" : "value");
    }
}

void hp_fsdp_gather_unit(hp_fsdp_state *fs, int u) {
    hp_comm_progress(fs->comm);   // gradient exchanges in flight (between computations)
    if (still_gathered(fs, u)) {   // kept since its forward (hp_unit_keep)
        // (the bug of bf16_kept_window_stale: the work buffer keeps the unit widened last)
        if (fs->kept_bf16 && fs->work_unit != u && !hp_failpoint(HP_FP_BF16_KEPT_WINDOW_STALE)) {
            hp_par_bf16_unpack(fs->work_p, unit_kept_bf16(fs, u), (size_t)fs->pt->unit_work_numel[u]);
            fs->work_unit = u;
        }
        if (hp_structure_enabled()) check_gathered(fs, u);
        if (hp_structure_enabled() && fs->f8ag) hp_fsdp_check_fp8_gather(fs, u);
        return;
    }
    stack_span sp;
    for (int st = 0; st < 2; st++) {
        if (!hp_fsdp_stack_span_of(fs, u, (hp_stack)st, &sp)) continue;
        // a group of one (DDP, one process) holds the whole unit: its tensors are copied
        // straight from the shards, not through the staging copy of the all-gather (which
        // is still called, with nothing to move, so that the call counts stay the same)
        const float *staged = fs->p_shard + sp.s0;
        // (the bug of float8_fsdp_gather_bf16, pytorch/ao#590: the fp8 all-gather gathers the
        //  bf16 weights, and the linear casts them after, with the amax of the bf16 values)
        if (fs->f8ag && hp_fsdp_span_converted(fs, &sp) && !hp_failpoint(HP_FP_FLOAT8_FSDP_GATHER_BF16)) {
            staged = hp_fsdp_gather_fp8(fs, &sp);
        } else if (fs->bf16) {
            staged = hp_fsdp_gather_bf16(fs, &sp);
        } else if (sp.G > 1) {
            hp_allgather(fs->comm, sp.group, fs->comm_buf, staged, (size_t)sp.n);
            staged = fs->comm_buf;
        } else {
            hp_allgather(fs->comm, sp.group, fs->comm_buf, staged, 0);
        }
        if (hp_fsdp_in_shards(fs, u)) continue;   // its tensors are the shards
        for (int i = sp.i0; i < sp.i1; i++)
            for (int k = 0; k < sp.G; k++)
                hp_fsdp_chunk_copy(&fs->pt->p[i], k, hp_fsdp_param(fs, i),
                           (float *)staged + k * sp.n + (fs->pt->p[i].shard_offset - sp.s0), 0);
    }
    // (the bug of bf16_gather_uncast: this rank's own chunk of its copy keeps the fp32 master,
    //  the cast skipped where the rank copies its own shard)
    if (fs->bf16 && hp_failpoint(HP_FP_BF16_GATHER_UNCAST)) uncast_own_chunks(fs, u);
    // kept in 2 bytes: the work buffer's copy is bf16 values (its checks below see a cast
    // that went wrong: a value that is not bf16 would reach the store truncated)
    if (fs->kept_bf16 && !hp_fsdp_in_shards(fs, u))
        hp_par_bf16_pack_exact(unit_kept_bf16(fs, u), fs->work_p, (size_t)fs->pt->unit_work_numel[u]);
    if (units_kept_apart(fs)) fs->unit_kept[u] = 1;
    if (!fs->kept_p) fs->work_unit = u;
    if (hp_structure_enabled()) check_gathered(fs, u);
    if (hp_structure_enabled() && fs->f8ag) hp_fsdp_check_fp8_gather(fs, u);
}

// Poisons unit u's gathered copy with NaN: any use of a resharded unit then shows up in the
// verifier instead of silently reading stale values. A unit that is its shards has no copy.
// With kept_bf16: its 2-byte copy, and work_p only while it holds this unit.
static void poison(hp_fsdp_state *fs, int u) {
    if (hp_fsdp_in_shards(fs, u)) return;
    const int64_t n = fs->pt->unit_work_numel[u];
    if (fs->kept_bf16) {
        const hp_bf16 nan = hp_bf16_from_float(NAN);
        hp_bf16 *k = unit_kept_bf16(fs, u);
        for (int64_t i = 0; i < n; i++) k[i] = nan;
        if (fs->work_unit != u) return;
    }
    float *w = unit_params(fs, u);
    for (int64_t i = 0; i < n; i++) w[i] = NAN;
}

// Reshard: the unsharded copy is gone.
static void reshard(hp_fsdp_state *fs, int u) {
    poison(fs, u);
    if (units_kept_apart(fs)) fs->unit_kept[u] = 0;
    if (fs->work_unit == u) fs->work_unit = -1;
}

static hp_unit_keep keep_of(const hp_fsdp_state *fs, int u) {
    return hp_run_unit_keep(fs->policy, fs->d.pp, u == fs->pt->n_units - 1);
}

void hp_fsdp_after_forward(hp_fsdp_state *fs, int u) {
    if (keep_of(fs, u) == HP_KEEP_NONE) { reshard(fs, u); return; }
    // (the bug of kept_unit_freed: the kept copy is freed, but the unit still counts as
    // gathered, so its backward reads the freed buffer instead of gathering it again)
    if (hp_failpoint(HP_FP_KEPT_UNIT_FREED)) poison(fs, u);
}

void hp_fsdp_after_backward(hp_fsdp_state *fs, int u) {
    if (keep_of(fs, u) != HP_KEEP_STEP) reshard(fs, u);   // else at hp_fsdp_release_all
}

void hp_fsdp_release_all(hp_fsdp_state *fs) {
    hp_comm_async_wait_all(fs->comm);   // every unit's reduced gradients are in g_shard
    // (the bug of bf16_grad_reduce: the reduction's result comes back in bf16)
    if (fs->bf16 && hp_failpoint(HP_FP_BF16_GRAD_REDUCE))
        hp_bf16_round(fs->g_shard, (size_t)fs->pt->shard_numel);
    if (fs->n_pending) check_reductions(fs);
    // (the bug of kept_unit_stale: kept units survive the step, so the next one trains the
    // parameters from before this step's optimizer update)
    if (hp_failpoint(HP_FP_KEPT_UNIT_STALE)) return;
    for (int u = 0; u < fs->pt->n_units; u++)
        if (still_gathered(fs, u)) reshard(fs, u);
}

// Under accumulation only the first microbatch starts from zero: the later ones add to it,
// so each grad is ((g_0 + g_1) + g_2) + ... in microbatch order (pipeline.md).
void hp_fsdp_zero_unit_grads(hp_fsdp_state *fs, int u, int mb) {
    if (mb == 0) hp_par_zero(unit_local_grads(fs, u), (size_t)fs->pt->unit_work_numel[u]);
}

// The structure check of the accumulation (structure.h): a shadow sums the same rounded local
// grads in fp32, microbatch by microbatch; after the last one the unit's sum must equal it.
static void check_accumulation(hp_fsdp_state *fs, int u, int mb, const float *local, const float *sum,
                               size_t n) {
    if (!fs->acc_shadow && !(fs->acc_shadow = malloc(((size_t)fs->pt->gathered_work + 1) * sizeof(float))))
        hp_fail_line_and_abort(1, "hp: out of memory (structure check)");
    float *shadow = fs->acc_shadow + fs->acc_offset[u];
    for (size_t i = 0; i < n; i++) {
        shadow[i] = mb == 0 ? local[i] : shadow[i] + local[i];
        if (fs->reduce_bf16) shadow[i] = hp_bf16_round_float(shadow[i]);
    }
    if (mb != fs->M - 1) return;
    for (size_t i = 0; i < n; i++)
        if (memcmp(&shadow[i], &sum[i], sizeof(float)) != 0) {
            hp_structure_fail(HP_CHECK_ACCUMULATE, "unit %d, element %zu: the sum over %d microbatches "
                              "is %.9g, their fp32 sum in order %.9g", u, i, fs->M, (double)sum[i],
                              (double)shadow[i]);
            return;
        }
    hp_structure_pass(HP_CHECK_ACCUMULATE);
}

// bf16 (precision.md §2.1 rows 5-8): one microbatch's local grads of unit u are rounded to bf16
// (each one rounding of its op's fp32 sum) and widened into the fp32 sum over microbatches
// (written by the first, added to by the later ones); the local slot is cleared for the next.
static void round_local_grads(hp_fsdp_state *fs, int u, int mb) {
    const size_t n = (size_t)fs->pt->unit_work_numel[u];
    float *local = unit_local_grads(fs, u), *sum = unit_grads(fs, u);
    hp_bf16_round(local, n);
    if (local == sum) return;   // one microbatch: the rounded grads are the sum
    if (mb == 0) memcpy(sum, local, n * sizeof(float));
    else for (size_t i = 0; i < n; i++) sum[i] += local[i];
    // the bf16 reduce policy keeps the running sum in bf16 (so does the bug of
    // bf16_microbatch_sum under the fp32 one)
    if (fs->reduce_bf16 || hp_failpoint(HP_FP_BF16_MICROBATCH_SUM)) hp_bf16_round(sum, n);
    if (hp_structure_enabled()) check_accumulation(fs, u, mb, local, sum, n);
    hp_par_zero(local, n);
}

// x *= f: only the failpoints of hp_fsdp_reduce_unit scale (the real reduction is a sum)
static void scale(float *x, int64_t n, float f) {
    for (int64_t i = 0; i < n; i++) x[i] *= f;
}

// 1 when a failpoint alters the reduction between its reduce-scatter and all-reduce: that
// stack takes the blocking calls, with the fault in between. Otherwise the unit's exchange
// is posted nonblocking (staged in its own slot: the next unit may stage at once), travels while
// the next unit's backward computes and is completed at the step's end, so a rank waits for
// its slower partners once a step instead of once a unit. The sums are the same, in member
// order.
static int reduction_faulty(int stack) {
    return hp_failpoint(HP_FP_FSDP_GRAD_AVERAGE) || hp_failpoint(HP_FP_HSDP_ALLREDUCE_DROPPED) ||
           hp_failpoint(HP_FP_DDP_GRAD_AVERAGE) ||
           (stack == HP_STACK_EXPERT && hp_failpoint(HP_FP_EXPERT_DIVIDE_FACTOR));
}

// The structure check of the gradient reduction (structure.h): each reduction's staged inputs
// are kept until it completes; then the group exchanges them apart from the step (raw MPI, not
// counted) and every rank recomputes its shard as the policy says - the fp32 sum in member
// order over the shard group, then over dp_replicate - and compares it with what the reduction
// left in g_shard, bit for bit.
void hp_fsdp_keep_reduce_inputs(hp_fsdp_state *fs, const stack_span *sp, const float *staged) {
    if (fs->n_pending == fs->cap_pending) {
        const int cap = fs->cap_pending ? 2 * fs->cap_pending : 16;
        fsdp_reduce_record *p = realloc(fs->pending, (size_t)cap * sizeof *p);
        if (!p) hp_fail_line_and_abort(1, "hp: out of memory (structure check)");
        fs->pending = p;
        fs->cap_pending = cap;
    }
    const size_t total = (size_t)(sp->n * sp->G);
    fsdp_reduce_record *r = &fs->pending[fs->n_pending++];
    *r = (fsdp_reduce_record){ sp->s0, sp->n, sp->G, sp->group, malloc(total * sizeof(float) + 1) };
    if (!r->staged) hp_fail_line_and_abort(1, "hp: out of memory (structure check)");
    memcpy(r->staged, staged, total * sizeof(float));
}

// want (n) = rows 0..G-1 (each n) summed in member order: in fp32, or under the bf16 reduce
// each add rounded to bf16
static void sum_rows_in_order(const hp_fsdp_state *fs, float *want, const float *rows, int G, size_t n) {
    for (size_t i = 0; i < n; i++) {
        float s = rows[i];
        for (int k = 1; k < G; k++) {
            s += rows[(size_t)k * n + i];
            if (fs->reduce_bf16) s = hp_bf16_round_float(s);
        }
        want[i] = s;
    }
}

static void check_reductions(hp_fsdp_state *fs) {
    for (int q = 0; q < fs->n_pending; q++) {
        const fsdp_reduce_record *r = &fs->pending[q];
        const size_t n = (size_t)r->n;
        const int R = fs->d.dp_replicate;
        float *rows = malloc(n * (size_t)(r->G > R ? r->G : R) * sizeof(float) + 1);
        float *want = malloc(n * sizeof(float) + 1);
        if (!rows || !want) hp_fail_line_and_abort(1, "hp: out of memory (structure check)");
        const int cnt = (int)n;
        MPI_Alltoall(r->staged, cnt, MPI_FLOAT, rows, cnt, MPI_FLOAT, hp_comm_mpi(fs->comm, r->group));
        sum_rows_in_order(fs, want, rows, r->G, n);
        if (R > 1) {
            MPI_Allgather(want, cnt, MPI_FLOAT, rows, cnt, MPI_FLOAT, hp_comm_mpi(fs->comm, HP_G_DP_REPLICATE));
            sum_rows_in_order(fs, want, rows, R, n);
        }
        const float *got = fs->g_shard + r->s0;
        size_t bad = n;
        for (size_t i = 0; i < n && bad == n; i++)
            if (memcmp(&got[i], &want[i], sizeof(float)) != 0) bad = i;
        if (bad == n) hp_structure_pass(HP_CHECK_REDUCE);
        else hp_structure_fail(HP_CHECK_REDUCE, "shard span at %lld, element %zu: reduced to %.9g, the "
                               "%s sum in member order is %.9g", (long long)r->s0, bad, (double)got[bad],
                               fs->reduce_bf16 ? "bf16" : "fp32", (double)want[bad]);
        free(rows);
        free(want);
        free(r->staged);
    }
    fs->n_pending = 0;
}

// Reduces once per step: after the backward of the last microbatch.
void hp_fsdp_reduce_unit(hp_fsdp_state *fs, int u, int mb) {
    hp_comm_progress(fs->comm);   // the units posted before: sum what has arrived
    if (fs->bf16) round_local_grads(fs, u, mb);
    if (mb != fs->M - 1) return;
    // 1. replicated-over-tp params whose grads are partial sums over tp (SP norms, gate)
    for (int i = 0; i < fs->pt->n; i++) {
        const hp_param *p = &fs->pt->p[i];
        if (p->unit == u && p->tp_grad_partial && !hp_failpoint(HP_FP_TP_PARTIAL_GRAD_DROPPED)) {
            hp_allreduce_sum(fs->comm, HP_G_TP, hp_fsdp_grad_of(fs, i), (size_t)p->local_numel);
            // (tp's sum stays fp32; under the bf16 reduce the grads it leaves are bf16 again)
            if (fs->reduce_bf16) hp_bf16_round(hp_fsdp_grad_of(fs, i), (size_t)p->local_numel);
        }
    }
    // 2. reduce-scatter over the shard group, 3. all-reduce over dp_replicate (HSDP / DDP)
    stack_span sp;
    for (int st = 0; st < 2; st++) {
        if (!hp_fsdp_stack_span_of(fs, u, (hp_stack)st, &sp)) continue;
        float *g = fs->g_shard + sp.s0;
        if (fs->reduce_bf16) { hp_fsdp_reduce_in_bf16(fs, &sp, g); continue; }
        const int faulty = reduction_faulty(st);
        // a group of one stages in place, in its shards: its reduce-scatter is the identity
        // (the same bits, without a staging copy and a copy back); a larger one stages in the
        // nonblocking reduction's own copy of its input when it makes one (not a copy more)
        float *staged = g;
        if (sp.G > 1 || faulty) {
            float *slot = faulty ? NULL : hp_reduce_scatter_staging(fs->comm, sp.group, (size_t)sp.n,
                                                                    HP_G_DP_REPLICATE);
            staged = slot ? slot : fs->comm_buf;
        }
        // a unit that is its shards is staged already: nothing to copy
        if (staged != g || !hp_fsdp_in_shards(fs, u) || hp_failpoint(HP_FP_UNIT_IN_SHARDS_RESTAGED)) {
            // (the bug of unit_in_shards_restaged: such a unit staged like a gathered one into
            // a cleared buffer, which is its own gradients)
            if (staged == g && hp_failpoint(HP_FP_UNIT_IN_SHARDS_RESTAGED))
                memset(staged, 0, (size_t)(sp.n * sp.G) * sizeof(float));
            // every slot is written whole, padding as zeros (the shards tile the span)
            // (the bug of fsdp_shard_offset: chunk k staged in slot k+1, a neighbour's shard)
            const int slot_shift = hp_failpoint(HP_FP_FSDP_SHARD_OFFSET) ? 1 : 0;
            for (int i = sp.i0; i < sp.i1; i++)
                for (int k = 0; k < sp.G; k++)
                    hp_fsdp_chunk_copy(&fs->pt->p[i], k, hp_fsdp_grad_of(fs, i),
                               staged + ((k + slot_shift) % sp.G) * sp.n +
                                   (fs->pt->p[i].shard_offset - sp.s0), 1);
        }
        if (hp_structure_enabled() && (sp.G > 1 || fs->d.dp_replicate > 1))
            hp_fsdp_keep_reduce_inputs(fs, &sp, staged);
        if (!faulty) {   // completes at the step's end (hp_fsdp_release_all)
            hp_reduce_scatter_start(fs->comm, sp.group, g, staged, (size_t)sp.n,
                                    HP_G_DP_REPLICATE);
            continue;
        }
        hp_reduce_scatter(fs->comm, sp.group, g, staged, (size_t)sp.n);
        if (hp_failpoint(HP_FP_FSDP_GRAD_AVERAGE))   // the bug: FSDP's default mean
            scale(g, sp.n, 1.0f / (float)sp.G);
        if (st == HP_STACK_EXPERT && hp_failpoint(HP_FP_EXPERT_DIVIDE_FACTOR))   // the old R*S*C
            scale(g, sp.n, 1.0f / (float)(fs->d.dp_replicate * fs->d.dp_shard * fs->d.cp));
        if (!hp_failpoint(HP_FP_HSDP_ALLREDUCE_DROPPED))
            hp_allreduce_sum(fs->comm, HP_G_DP_REPLICATE, g, (size_t)sp.n);
        if (hp_failpoint(HP_FP_DDP_GRAD_AVERAGE))    // the bug: DDP's default mean
            scale(g, sp.n, 1.0f / (float)fs->d.dp_replicate);
    }
}

// ---------------------------------------------------------------------------------------
// gathering full tensors for the verifier and --dump (raw MPI: not part of the step's
// traffic accounting)

double hp_fsdp_gather_full(hp_fsdp_state *fs, MPI_Comm world, const hp_model_config *m,
                           const float *shard, float *full) {
    int world_size, rank;
    MPI_Comm_size(world, &world_size);
    MPI_Comm_rank(world, &rank);
    // under pp each pp rank holds other parameters: every rank sends its shards padded to
    // the largest shard buffer of any pp rank (the same for every rank of one pp block)
    int64_t n = fs->pt->shard_numel;
    for (int q = 0; q < fs->d.pp && fs->d.pp > 1; q++) {
        hp_param_table t;
        if (hp_params_build(&t, m, &fs->d, q * (world_size / fs->d.pp)) != 0) continue;
        if (t.shard_numel > n) n = t.shard_numel;
        hp_params_free(&t);
    }
    float *padded = calloc((size_t)n + 1, sizeof(float));
    memcpy(padded, shard, (size_t)fs->pt->shard_numel * sizeof(float));
    float *all = NULL;
    unsigned char *seen = NULL;
    double worst = 0.0;
    if (rank == 0) {
        all = malloc((size_t)(n * world_size) * sizeof(float) + 1);
        seen = calloc((size_t)fs->pt->full_numel, 1);
    }
    hp_gather_to_root(fs->comm, all, padded, (size_t)n);   // watched; not counted
    free(padded);
    if (rank == 0) {
        for (int r = 0; r < world_size; r++) {
            hp_param_table t;
            hp_params_build(&t, m, &fs->d, r);
            for (int i = 0; i < t.n; i++) {
                const hp_param *p = &t.p[i];
                const float *src = all + (int64_t)r * n + p->shard_offset;
                for (int64_t k = 0; k < p->shard_numel; k++) {
                    const int64_t li = hp_param_shard_to_local(p, k);
                    if (li < 0) continue;
                    const int64_t gi = p->full_offset + hp_param_global_index(p, li);
                    if (seen[gi]) {
                        const double diff = fabs((double)full[gi] - (double)src[k]);
                        if (!(diff <= worst)) worst = isnan(diff) ? INFINITY : diff;
                    }
                    full[gi] = src[k];
                    seen[gi] = 1;
                }
            }
            hp_params_free(&t);
        }
        for (int64_t i = 0; i < fs->pt->full_numel; i++)
            if (!seen[i]) { worst = INFINITY; break; }   // an element nobody owns
    }
    free(all);
    free(seen);
    return worst;
}
