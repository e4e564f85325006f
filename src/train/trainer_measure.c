// trainer_measure.c - what a run measured, for the comparison with the planner (plan.h's
// hp_plan_check_run): the tracking allocator's counters and the last step's traffic (the sum
// of its phases' brackets: trainer.c).
// defines: hp_trainer_count_bytes, hp_trainer_memory_stats, hp_trainer_step_bytes,
//          hp_trainer_measured
#include <string.h>
#include "train/trainer_internal.h"

void hp_trainer_count_bytes(hp_trainer *tr, int sign) {
    for (int g = 0; g < HP_G_COUNT; g++)
        for (int op = 0; op < HP_OP_COUNT; op++) {
            const uint64_t now = hp_comm_bytes(tr->comm, (hp_group_kind)g, (hp_op_kind)op);
            if (sign < 0) tr->step_start[g][op] = now;
            else tr->step_bytes[g][op] += now - tr->step_start[g][op];
        }
}

void hp_trainer_memory_stats(const hp_trainer *tr, hp_mem_stats *out) {
    (void)tr;   // the counters are the process's (memtrack.h)
    hp_mem_get_stats(out);
}

void hp_trainer_step_bytes(const hp_trainer *tr, uint64_t bytes[HP_G_COUNT][HP_OP_COUNT]) {
    memcpy(bytes, tr->step_bytes, sizeof tr->step_bytes);
}

void hp_trainer_measured(const hp_trainer *tr, hp_plan_measured *out) {
    memset(out, 0, sizeof *out);
    out->params_total = tr->pt.full_numel;
    hp_trainer_memory_stats(tr, &out->mem);
    hp_trainer_step_bytes(tr, out->bytes);
}
