// run_json.c - a run's verification record (the library reads its --json: verify_record.h)
// into the matrix's result of the recipe (report.h).
// defines: tool_recipe_result_take
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include "report.h"

void tool_recipe_result_take(tool_recipe_result *x, const hp_verify_record *v) {
    x->have_json = v->verified;   // a plain run's file is not a verification result
    if (v->world > 0) x->world = v->world;
    x->steps = v->steps < v->steps_ref ? v->steps : v->steps_ref;
    if (x->steps > TOOL_MATRIX_MAX_STEPS) x->steps = TOOL_MATRIX_MAX_STEPS;
    for (int s = 0; s < x->steps; s++) {
        x->losses[s] = v->losses[s];
        x->losses_ref[s] = v->losses_ref[s];
    }
    x->loss_rel_err = v->loss_rel_err;
    x->traj_worst = v->traj_worst;
    x->worst_grad_rel = v->worst_grad_rel;
    x->worst_param_rel = v->worst_param_rel;
    x->tol_grad = v->tol_grad;
    x->tol_param = v->tol_param;
    snprintf(x->worst_grad, sizeof x->worst_grad, "%s", v->worst_grad);
    snprintf(x->worst_param, sizeof x->worst_param, "%s", v->worst_param);
    x->bytes_counted = v->bytes_counted;
    x->bytes_predicted = v->bytes_predicted;
    x->traffic_ok = v->traffic_ok;
    x->init_equal = v->init_equal;
    x->replica_diff = v->replica_diff;
    const int bf16 = !strcmp(v->precision, "bfloat16");
    x->closeness_worst = bf16 ? v->closeness_worst : -1;
    x->closeness = bf16 ? v->closeness : -1;
    snprintf(x->closeness_worst_of, sizeof x->closeness_worst_of, "%s", bf16 ? v->closeness_worst_of : "");
    x->structure_checks = v->structure_checks;
    x->structure_mismatches = v->structure_mismatches;
    double flips = 0.0;   // summed in double: an int sum of large counts would overflow
    for (int i = 0; i < v->n_moe_layers; i++) flips += v->route_flips[i];
    x->route_flips = flips >= (double)INT_MAX ? INT_MAX : flips <= (double)INT_MIN ? INT_MIN : (int)flips;
    snprintf(x->failure, sizeof x->failure, "%s", v->failure);
    snprintf(x->blas, sizeof x->blas, "%s", v->blas);
    snprintf(x->blas_core, sizeof x->blas_core, "%s", v->blas_core);
    snprintf(x->gemm, sizeof x->gemm, "%s", v->gemm);
    x->blas_threads_min = v->blas_threads_min;
    x->blas_threads_max = v->blas_threads_max;
    x->pp_ranks = v->pp_ranks < TOOL_REPORT_PP_RANKS ? v->pp_ranks : TOOL_REPORT_PP_RANKS;
    for (int p = 0; p < x->pp_ranks; p++) {
        x->pp_n[p] = v->pp_n[p] < TOOL_REPORT_PP_ACTIONS ? v->pp_n[p] : TOOL_REPORT_PP_ACTIONS;
        for (int a = 0; a < x->pp_n[p]; a++) {
            x->pp_op[p][a] = (unsigned char)v->pp_timeline[p][a][0];
            x->pp_t0[p][a] = v->pp_timeline[p][a][3];
            x->pp_t1[p][a] = v->pp_timeline[p][a][4];
        }
    }
}
