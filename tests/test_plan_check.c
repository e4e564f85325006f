// test_plan_check.c - hp_plan_check_run (plan.h), no MPI: a measurement built from the
// prediction itself passes; one planted difference at a time (4 persistent bytes, one byte of
// one (group, op), a peak 11% off, a wrong parameter count) fails with a line naming it; the
// EP all-to-all, data-dependent, is left out and counted as such.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "hyperpar/plan.h"
#include "hyperpar/verify.h"
#include "test_check.h"


// What a run that matches the planner exactly would measure: every category at its predicted
// bytes, the traffic of hp_plan_traffic_predict.
static void as_predicted(const hp_model_config *m, const hp_dims *d, const hp_run_config *rc,
                         hp_plan_measured *x) {
    hp_plan_memory pm;
    hp_plan_memory_predict(m, d, rc, 0, &pm);
    memset(x, 0, sizeof *x);
    x->params_total = pm.params_total;
    const double cat[HP_MEM_COUNT] = { pm.params, pm.grads, pm.optimizer, pm.fsdp_working,
                                       pm.comm_scratch, pm.accumulation, pm.activations, pm.scratch, 0 };
    for (int c = 0; c < HP_MEM_COUNT; c++) {
        x->mem.current[c] = x->mem.peak[c] = (size_t)cat[c];
        x->mem.total_peak += (size_t)cat[c];
    }
    hp_plan_traffic_predict(m, d, rc, 0, x->bytes, NULL);
}

static void layout(const char *model, int S, int T, int EP, hp_model_config *m, hp_dims *d, hp_run_config *rc) {
    hp_model_config_by_name(model, m);
    hp_run_config_default(rc);
    *d = hp_dims_default();
    d->dp_shard = S; d->tp = T; d->ep = EP;
    d->world = S * T;
    char err[256];
    if (hp_dims_validate(d, m, rc, err, sizeof err) != 0) { fprintf(stderr, "layout: %s\n", err); check_failed++; }
}

int main(void) {
    hp_model_config m;
    hp_dims d;
    hp_run_config rc;
    hp_plan_measured x, y;
    hp_plan_check c;
    layout("tiny", 2, 2, 1, &m, &d, &rc);
    as_predicted(&m, &d, &rc, &x);
    CHECK(hp_plan_check_run(&m, &d, &rc, 0, &x, HP_PLAN_PEAK_TOL, &c) == 0 && c.pass && !c.why[0],
          "the prediction itself must pass: %s", c.why);
    CHECK(c.n_ops > 0 && c.n_data_dependent == 0 && c.peak_ratio == 1.0,
          "ops %d, data-dependent %d, ratio %g", c.n_ops, c.n_data_dependent, c.peak_ratio);

    y = x; y.mem.current[HP_MEM_OPTIMIZER] += 4;
    CHECK(hp_plan_check_run(&m, &d, &rc, 0, &y, HP_PLAN_PEAK_TOL, &c) == 1 && strstr(c.why, "persistent"),
          "4 optimizer bytes more: %s", c.why);
    y = x; y.bytes[HP_G_TP][HP_OP_REDUCE_SCATTER] += 1;
    CHECK(hp_plan_check_run(&m, &d, &rc, 0, &y, HP_PLAN_PEAK_TOL, &c) == 1 && strstr(c.why, "traffic tp reduce_scatter"),
          "one tp reduce-scatter byte more: %s", c.why);
    y = x; y.bytes[HP_G_DP_REPLICATE][HP_OP_ALLREDUCE] = 8;   // a collective the plan has not
    CHECK(hp_plan_check_run(&m, &d, &rc, 0, &y, HP_PLAN_PEAK_TOL, &c) == 1 && strstr(c.why, "dp_replicate"),
          "an unpredicted collective: %s", c.why);
    y = x; y.mem.total_peak = (size_t)((double)x.mem.total_peak * 0.89);   // predicted = 1.12 measured
    CHECK(hp_plan_check_run(&m, &d, &rc, 0, &y, HP_PLAN_PEAK_TOL, &c) == 1 && strstr(c.why, "peak"),
          "peak 11%% lower: %s", c.why);
    y = x; y.mem.total_peak = (size_t)((double)x.mem.total_peak * 1.05);
    CHECK(hp_plan_check_run(&m, &d, &rc, 0, &y, HP_PLAN_PEAK_TOL, &c) == 0, "peak 5%% higher: %s", c.why);
    y = x; y.params_total += 1;
    CHECK(hp_plan_check_run(&m, &d, &rc, 0, &y, HP_PLAN_PEAK_TOL, &c) == 1 && strstr(c.why, "params_total"),
          "params_total: %s", c.why);

    // MoE under EP: the all-to-all follows the routing; any count of it passes, the rest not
    layout("tiny-moe", 2, 1, 2, &m, &d, &rc);
    as_predicted(&m, &d, &rc, &x);
    x.bytes[HP_G_EP][HP_OP_ALLTOALL] += 12345;
    CHECK(hp_plan_check_run(&m, &d, &rc, 0, &x, HP_PLAN_PEAK_TOL, &c) == 0 && c.n_data_dependent == 1,
          "ep all-to-all left out: %s (%d)", c.why, c.n_data_dependent);

    // the record carries it to JSON and back (verify_json.c)
    hp_verify_record rec, back;
    hp_verify_record_init(&rec);
    hp_verify_record_add_measured(&rec, &x, &c);
    char *text = hp_verify_record_print(&rec);
    CHECK(text && hp_verify_record_parse(&back, text, strlen(text)) == 0, "record round trip");
    CHECK(back.measured && back.plan_checked && back.plan_pass && back.n_traffic == rec.n_traffic &&
          back.mem_persistent == rec.mem_persistent && back.params_total == (double)x.params_total &&
          back.mem_peak[HP_MEM_ACTIVATIONS] == rec.mem_peak[HP_MEM_ACTIVATIONS],
          "record fields after the round trip");
    free(text);
    return test_summary("test_plan_check");
}
