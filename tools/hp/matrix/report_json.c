// report_json.c - report.json, the results of `hp matrix` for programs (cJSON): every recipe
// with its numbers, the negative cases and the faults.
// defines: tool_report_json
#include <stdio.h>
#include <cjson/cJSON.h>
#include "util/file_io.h"
#include "report.h"

int tool_report_json(const char *path, const tool_matrix_report *m) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddBoolToObject(j, "pass", m->n_fail == 0 && m->n_neg_wrong == 0 &&
                                     m->n_faults_caught == m->n_faults);
    cJSON_AddStringToObject(j, "selection", m->selection);
    cJSON_AddNumberToObject(j, "repeat", m->repeat);
    cJSON_AddNumberToObject(j, "seconds", m->seconds);
    cJSON_AddNumberToObject(j, "passed", m->n_pass);
    cJSON_AddNumberToObject(j, "failed", m->n_fail);
    cJSON_AddNumberToObject(j, "negative_ok", m->n_neg_ok);
    cJSON_AddNumberToObject(j, "negative_wrong", m->n_neg_wrong);
    cJSON_AddNumberToObject(j, "tolerance", hp_verify_tol.grad);
    char cond[512];
    tool_report_conditions(m, cond, sizeof cond);
    cJSON_AddStringToObject(j, "blas_conditions", cond);
    cJSON *ra = cJSON_AddArrayToObject(j, "recipes");
    for (int i = 0; i < m->n_rec; i++) {
        const tool_recipe_result *x = &m->rec[i];
        const hp_recipe *r = x->r;
        cJSON *o = cJSON_CreateObject();
        char flags[512];
        hp_recipe_flags(r, flags, sizeof flags);
        cJSON_AddStringToObject(o, "id", r->id);
        cJSON_AddStringToObject(o, "row", r->row);
        cJSON_AddStringToObject(o, "level", hp_level_name(r->level));
        cJSON_AddStringToObject(o, "model", r->model);
        cJSON *dm = cJSON_AddObjectToObject(o, "dims");
        cJSON_AddNumberToObject(dm, "dp_replicate", r->R);
        cJSON_AddNumberToObject(dm, "dp_shard", r->S);
        cJSON_AddNumberToObject(dm, "cp", r->C);
        cJSON_AddNumberToObject(dm, "tp", r->T);
        cJSON_AddNumberToObject(dm, "sp", r->sp);
        cJSON_AddNumberToObject(dm, "ep", r->EP);
        cJSON_AddNumberToObject(dm, "etp", r->ET);
        if (r->rotate) cJSON_AddStringToObject(dm, "cp_rotate", r->rotate);
        if (r->dispatcher) cJSON_AddStringToObject(dm, "dispatcher", r->dispatcher);
        cJSON_AddStringToObject(o, "flags", flags);
        cJSON_AddNumberToObject(o, "world", x->world);
        cJSON_AddStringToObject(o, "verdict", tool_verdict_name(x->verdict));
        cJSON_AddBoolToObject(o, "pass", x->verdict == TOOL_V_PASS);
        cJSON_AddNumberToObject(o, "exit_code", x->exit_code);
        cJSON_AddNumberToObject(o, "seconds", x->seconds);
        cJSON_AddNumberToObject(o, "runs", x->runs);
        if (x->deterministic >= 0) cJSON_AddBoolToObject(o, "deterministic", x->deterministic);
        else cJSON_AddNullToObject(o, "deterministic");
        if (r->same_as) cJSON_AddStringToObject(o, "same_as", r->same_as);
        if (x->same_as_rel >= 0) cJSON_AddNumberToObject(o, "same_as_rel", x->same_as_rel);
        if (x->have_json) {
            cJSON *l = cJSON_AddArrayToObject(o, "losses");
            cJSON *lr = cJSON_AddArrayToObject(o, "losses_ref");
            for (int s = 0; s < x->steps; s++) {
                cJSON_AddItemToArray(l, cJSON_CreateNumber(x->losses[s]));
                cJSON_AddItemToArray(lr, cJSON_CreateNumber(x->losses_ref[s]));
            }
            cJSON_AddNumberToObject(o, "loss_rel_err", x->loss_rel_err);
            cJSON_AddNumberToObject(o, "traj_worst", x->traj_worst);
            cJSON_AddStringToObject(o, "worst_grad", x->worst_grad);
            cJSON_AddNumberToObject(o, "worst_grad_rel", x->worst_grad_rel);
            cJSON_AddStringToObject(o, "worst_param", x->worst_param);
            cJSON_AddNumberToObject(o, "worst_param_rel", x->worst_param_rel);
            cJSON_AddStringToObject(o, "precision", hp_recipe_precision(x->r));
            if (x->closeness >= 0) {
                cJSON_AddNumberToObject(o, "closeness_worst", x->closeness_worst);
                cJSON_AddNumberToObject(o, "closeness", x->closeness);
                cJSON_AddStringToObject(o, "closeness_worst_of", x->closeness_worst_of);
            }
            cJSON_AddNumberToObject(o, "structure_checks", x->structure_checks);
            cJSON_AddNumberToObject(o, "structure_mismatches", x->structure_mismatches);
            cJSON_AddNumberToObject(o, "tol_grad", x->tol_grad);
            cJSON_AddNumberToObject(o, "tol_param", x->tol_param);
            cJSON_AddBoolToObject(o, "init_equal", x->init_equal);
            cJSON_AddNumberToObject(o, "replica_diff", x->replica_diff);
            cJSON_AddBoolToObject(o, "traffic_ok", x->traffic_ok);
            cJSON_AddNumberToObject(o, "bytes_counted", x->bytes_counted);
            cJSON_AddNumberToObject(o, "bytes_predicted", x->bytes_predicted);
            cJSON_AddNumberToObject(o, "route_flips", x->route_flips);
        }
        if (x->plan_checked) {
            cJSON_AddBoolToObject(o, "plan_pass", x->plan_pass);
            cJSON_AddNumberToObject(o, "plan_peak_ratio", x->plan_peak_ratio);
        }
        if (x->failure[0]) cJSON_AddStringToObject(o, "failure", x->failure);
        if (x->log[0]) cJSON_AddStringToObject(o, "log", x->log);
        cJSON_AddItemToArray(ra, o);
    }
    cJSON *na = cJSON_AddArrayToObject(j, "negative");
    for (int i = 0; i < m->n_neg; i++) {
        const tool_negative_result *g = &m->neg[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "id", g->n->id);
        cJSON_AddStringToObject(o, "rule", g->n->rule);
        cJSON_AddStringToObject(o, "args", g->n->args);
        cJSON_AddNumberToObject(o, "expected_exit", g->n->code);
        cJSON_AddStringToObject(o, "expected_regex", g->n->err_regex);
        cJSON_AddNumberToObject(o, "exit_code", g->exit_code);
        cJSON_AddNumberToObject(o, "seconds", g->seconds);
        cJSON_AddNumberToObject(o, "stderr_lines", g->n_lines);
        cJSON_AddStringToObject(o, "stderr", g->line);
        cJSON_AddStringToObject(o, "verdict", g->ok ? "refused-ok" : "WRONG");
        if (!g->ok) cJSON_AddStringToObject(o, "why", g->why);
        cJSON_AddItemToArray(na, o);
    }
    if (m->n_faults) {
        cJSON *fa = cJSON_AddArrayToObject(j, "faults");
        for (int i = 0; i < m->n_faults; i++) {
            const tool_fault_result *x = &m->faults[i];
            cJSON *o = cJSON_CreateObject();
            cJSON_AddStringToObject(o, "failpoint", x->fp->name);
            cJSON_AddStringToObject(o, "what", x->fp->what);
            cJSON_AddStringToObject(o, "recipe", x->fp->recipe);
            cJSON_AddStringToObject(o, "flags", x->fp->flags);
            cJSON_AddStringToObject(o, "touches", x->fp->touches);
            cJSON_AddBoolToObject(o, "caught", x->caught);
            cJSON_AddNumberToObject(o, "exit_code", x->exit_code);
            cJSON_AddNumberToObject(o, "seconds", x->seconds);
            if (x->have_json) {
                cJSON_AddStringToObject(o, "failure", x->failure);
                cJSON_AddStringToObject(o, "worst_grad", x->worst_grad);
                cJSON_AddNumberToObject(o, "worst_grad_rel", x->worst_grad_rel);
                cJSON_AddStringToObject(o, "worst_param", x->worst_param);
                cJSON_AddNumberToObject(o, "worst_param_rel", x->worst_param_rel);
                cJSON_AddNumberToObject(o, "loss_rel_err", x->loss_rel_err);
                if (x->grad_norm_rel >= 0) cJSON_AddNumberToObject(o, "grad_norm_rel", x->grad_norm_rel);
            }
            if (!x->caught) cJSON_AddStringToObject(o, "why", x->why);
            if (x->log[0]) cJSON_AddStringToObject(o, "log", x->log);
            cJSON_AddItemToArray(fa, o);
        }
        cJSON_AddNumberToObject(j, "faults_caught", m->n_faults_caught);
    }
    const int rc = hp_json_save(j, path);
    cJSON_Delete(j);
    if (rc != 0) fprintf(stderr, "hp matrix: cannot write '%s'\n", path);
    return rc;
}
