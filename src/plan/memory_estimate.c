// memory_estimate.c - hp_memory_estimate, the older name of the planner's prediction: what
// one rank of a job will allocate, grouped in four sums, with the largest single buffer.
// defines: hp_memory_estimate
//
// There is one memory model, the planner's (plan_memory.c, exact against the tracking
// allocator: `hp matrix`, plan_vs_run_*); this only regroups hp_plan_memory_predict's
// categories for callers written against train.h (which includes plan.h, where it is declared).
#include <stdio.h>
#include <string.h>
#include "hyperpar/plan.h"

int hp_memory_estimate(const hp_model_config *m, const hp_dims *d, const hp_run_config *rc,
                       int rank, hp_memory_estimate_t *e) {
    memset(e, 0, sizeof *e);
    hp_plan_memory p;
    if (hp_plan_memory_predict(m, d, rc, rank, &p) != 0) return -1;
    e->persistent_bytes = p.persistent;
    e->working_bytes = p.fsdp_working + p.comm_scratch + p.accumulation;
    e->activation_bytes = p.activations;
    e->scratch_bytes = p.scratch;
    e->total_bytes = p.peak;
    e->largest_elems = p.largest_elems;
    snprintf(e->largest_name, sizeof e->largest_name, "%s", p.largest_name);
    return 0;
}
