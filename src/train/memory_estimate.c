// memory_estimate.c - what one rank of a job will allocate, computed from the degrees and
// the parameter table before anything is allocated, so that a run that cannot fit is
// refused with both figures instead of dying in malloc or the OOM killer.
// defines: hp_memory_estimate
//
// The terms mirror the allocations of fsdp.c (shards, one gathered unit, staging),
// transformer.c (per-block activations and backward scratch), moe.c / ep_dispatch.c
// (routing and expert buffers, sized for the worst case of every entry landing here) and
// cp_attention.c (the K/V of the whole cp group). It is an upper estimate: the exact
// per-category accounting belongs to the planner.
#include <string.h>
#include "hyperpar/params.h"
#include "hyperpar/shapes.h"
#include "hyperpar/train.h"

#define F4 ((double)sizeof(float))

// Keeps the largest single buffer (in elements) and its name.
static void track(hp_memory_estimate_t *e, double elems, const char *what) {
    if (elems > e->largest_elems) {
        e->largest_elems = elems;
        snprintf(e->largest_name, sizeof e->largest_name, "%s", what);
    }
}

int hp_memory_estimate(const hp_model_config *m, const hp_dims *d, const hp_run_config *rc,
                       int rank, hp_memory_estimate_t *e) {
    memset(e, 0, sizeof *e);
    hp_param_table t;
    if (hp_params_build(&t, m, d, rank) != 0) return -1;
    hp_coords co;
    hp_mesh_coords(d, rank, &co);
    hp_local_shapes sh;
    hp_local_shapes_init(&sh, m, d, rc, &co);
    // activations are those of one microbatch (over the cp-local tokens: an upper estimate
    // under Ulysses); the step's token ids are all kept
    const double Bl = sh.Bl, Sc = sh.Sc_cp;
    const double reg = Bl * Sc, res = sh.sp ? reg / sh.T : reg, D = sh.D, hd = sh.hd;
    const double qd = (double)sh.Hl * hd, kvd = (double)sh.Hkvl * hd;
    const double Fl = sh.Fl, Vl = sh.Vl;

    // shards of params, grads and AdamW m, v; one gathered unit and its grads; the staging
    // buffer of a gather / reduce-scatter (the fsdp group times the largest shard of a unit)
    double max_unit_shard = 0;
    for (int u = 0; u < t.n_units; u++) {
        double s = 0;   // the unit's shards (contiguous in the shard buffer)
        for (int i = 0; i < t.n; i++) if (t.p[i].unit == u) s += (double)t.p[i].shard_numel;
        if (s > max_unit_shard) max_unit_shard = s;
    }
    int fsdp_max = 1;
    for (int i = 0; i < t.n; i++) if (t.p[i].fsdp_size > fsdp_max) fsdp_max = t.p[i].fsdp_size;
    e->persistent_bytes = 4 * (double)t.shard_numel * F4;
    e->working_bytes = (2 * (double)t.max_unit_work + 2 * fsdp_max * max_unit_shard) * F4;
    if (sh.M > 1) {   // accumulation keeps every unit's unsharded grads for the whole step
        double all_units = 0;
        for (int u = 0; u < t.n_units; u++) all_units += (double)t.unit_work_numel[u];
        e->working_bytes += all_units * F4;
    }
    track(e, (double)t.max_unit_work, "a gathered FSDP unit");

    // activations kept for the backward, per block, and the head's
    double acts = 0;
    for (int l = 0; l < m->n_layers; l++) {
        acts += 4 * res * D + 2 * res + 2 * reg * D + 2 * reg * qd + 2 * reg * kvd + reg * (qd / hd);
        if (!hp_model_is_moe_layer(m, l)) { acts += 3 * reg * Fl; continue; }
        const int ep = d->ep;
        const double E = m->num_experts, K = m->top_k, n = reg / sh.token_split;
        const double Fel = sh.Fel, Fsl = sh.Fsl;
        const double cap = ep * n * K;   // every entry of the ep group could choose this rank
        acts += reg * (2 * D + 2 * E + 2 * K) + 6 * reg * Fsl + n * (K + 2 * E);
        acts += 2 * n * K * D + cap * D * 5 + cap * Fel * 6 + 2 * ep * n * (D + K);
        track(e, cap * (D > Fel ? D : Fel), "the expert rows of a MoE block");
    }
    acts += 2 * res * D + res + reg * D + 2 * reg * Vl + 3 * reg;
    track(e, reg * Vl, "the logits");
    track(e, reg * (Fl > D ? Fl : D), "an activation of a block");
    e->activation_bytes = acts * F4;

    // backward scratch of transformer.c, and the ring's K/V of the whole cp group
    double scratch = 3 * reg * D + 2 * res * D + reg * (2 * qd + 2 * kvd) + 3 * reg * Fl;
    if (d->cp > 1) scratch += 6 * (double)d->cp * reg * kvd;
    scratch += 3 * reg + (double)rc->seq_len;   // tokens, labels, positions (ints)
    e->scratch_bytes = scratch * F4;
    e->total_bytes = e->persistent_bytes + e->working_bytes + e->activation_bytes + e->scratch_bytes;
    hp_params_free(&t);
    return 0;
}
