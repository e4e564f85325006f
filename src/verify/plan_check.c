// plan_check.c - the planner's prediction against what a run measured on one rank: the
// persistent bytes and every (group, op) of a step equal, the peak within a tolerance of the
// measured high-water mark. This equality at a few ranks is what makes the same formulas'
// prediction at 16k ranks believable (docs/planner.md, "Measured memory").
// defines: hp_plan_check_run, hp_verify_record_add_measured
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "hyperpar/plan.h"
#include "hyperpar/verify.h"

// The first (group, op) whose prediction differs from the count, or 0 when all agree; the
// data-dependent ones (hp_traffic_predict's UINT64_MAX: the EP all-to-all) are counted apart.
static int compare_traffic(const hp_model_config *m, const hp_dims *d, const hp_run_config *rc,
                           int rank, const hp_plan_measured *x, hp_plan_check *out) {
    uint64_t formula[HP_G_COUNT][HP_OP_COUNT], pred[HP_G_COUNT][HP_OP_COUNT];
    hp_traffic_predict(m, d, rc, rank, formula);
    hp_plan_traffic_predict(m, d, rc, rank, pred, NULL);
    for (int g = 0; g < HP_G_COUNT; g++)
        for (int op = 0; op < HP_OP_COUNT; op++) {
            const uint64_t p = pred[g][op], c = x->bytes[g][op];
            if (formula[g][op] == UINT64_MAX) { out->n_data_dependent++; continue; }
            if (p == 0 && c == 0) continue;
            out->n_ops++;
            if (p != c) {
                snprintf(out->why, sizeof out->why, "traffic %s %s: predicted %llu B, counted %llu B",
                         hp_group_name((hp_group_kind)g), hp_op_name((hp_op_kind)op),
                         (unsigned long long)p, (unsigned long long)c);
                return 1;
            }
        }
    return 0;
}

int hp_plan_check_run(const hp_model_config *m, const hp_dims *d, const hp_run_config *rc, int rank,
                      const hp_plan_measured *x, double peak_tol, hp_plan_check *out) {
    memset(out, 0, sizeof *out);
    hp_plan_memory pm;
    if (hp_plan_memory_predict(m, d, rc, rank, &pm) != 0) {
        snprintf(out->why, sizeof out->why, "no prediction for this layout");
        return -1;
    }
    const hp_mem_stats *s = &x->mem;
    out->persistent_predicted = pm.persistent;
    out->persistent_measured = (double)(s->current[HP_MEM_PARAMS] + s->current[HP_MEM_GRADS] +
                                        s->current[HP_MEM_OPTIMIZER]);
    out->peak_predicted = pm.peak;
    out->peak_measured = (double)s->total_peak;
    out->peak_ratio = out->peak_measured > 0 ? pm.peak / out->peak_measured : 0;
    int bad = 0;
    if (pm.params_total != x->params_total) {
        snprintf(out->why, sizeof out->why, "params_total: predicted %lld, measured %lld",
                 (long long)pm.params_total, (long long)x->params_total);
        bad = 1;
    } else if (out->persistent_predicted != out->persistent_measured) {
        snprintf(out->why, sizeof out->why, "persistent bytes: predicted %.0f, measured %.0f",
                 out->persistent_predicted, out->persistent_measured);
        bad = 1;
    } else if (compare_traffic(m, d, rc, rank, x, out)) {
        bad = 1;
    } else if (!(fabs(out->peak_ratio - 1) <= peak_tol)) {
        snprintf(out->why, sizeof out->why,
                 "peak: predicted %.0f B, measured high-water mark %.0f B (ratio %.3f, tolerance %g)",
                 out->peak_predicted, out->peak_measured, out->peak_ratio, peak_tol);
        bad = 1;
    }
    out->pass = !bad;
    return bad;
}

void hp_verify_record_add_measured(hp_verify_record *rec, const hp_plan_measured *x,
                                   const hp_plan_check *chk) {
    const hp_mem_stats *s = &x->mem;
    rec->measured = 1;
    rec->params_total = (double)x->params_total;
    for (int c = 0; c < HP_MEM_COUNT; c++) {
        rec->mem_current[c] = (double)s->current[c];
        rec->mem_peak[c] = (double)s->peak[c];
    }
    rec->mem_persistent = (double)(s->current[HP_MEM_PARAMS] + s->current[HP_MEM_GRADS] +
                                   s->current[HP_MEM_OPTIMIZER]);
    rec->mem_peak_total = (double)s->total_peak;
    rec->n_traffic = 0;
    for (int g = 0; g < HP_G_COUNT; g++)
        for (int op = 0; op < HP_OP_COUNT; op++) {
            if (!x->bytes[g][op] || rec->n_traffic >= HP_VERIFY_MAX_TRAFFIC) continue;
            const int i = rec->n_traffic++;
            snprintf(rec->traffic_group[i], sizeof rec->traffic_group[i], "%s", hp_group_name((hp_group_kind)g));
            snprintf(rec->traffic_op[i], sizeof rec->traffic_op[i], "%s", hp_op_name((hp_op_kind)op));
            rec->traffic_bytes[i] = (double)x->bytes[g][op];
        }
    if (!chk) return;
    rec->plan_checked = 1;
    rec->plan_pass = chk->pass;
    rec->plan_peak_predicted = chk->peak_predicted;
    rec->plan_peak_ratio = chk->peak_ratio;
    snprintf(rec->plan_why, sizeof rec->plan_why, "%s", chk->why);
}
