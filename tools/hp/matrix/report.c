// report.c - the results of `hp matrix` as text: what every rendering shares (a verdict's name,
// a recipe's degrees and worst error, the error and planner cells), and the console table.
// The files are report_md.c (report.md, faults.md), report_json.c and report_svg.c.
// defines: tool_verdict_name, tool_recipe_worst_rel, tool_recipe_dims_text, tool_fmt_err,
//          tool_det_text, tool_fault_worst, tool_plan_text, tool_plan_summary, tool_report_table
#include <math.h>
#include <string.h>
#include "hyperpar/blas.h"
#include "report.h"

const char *tool_verdict_name(tool_verdict v) {
    switch (v) {
    case TOOL_V_PASS:     return "PASS";
    case TOOL_V_FAIL:     return "FAIL";
    case TOOL_V_NONDET:   return "NONDET";
    case TOOL_V_MISMATCH: return "MISMATCH";
    case TOOL_V_REFUSED:  return "REFUSED";
    case TOOL_V_CRASH:    return "CRASH";
    case TOOL_V_TIMEOUT:  return "TIMEOUT";
    }
    return "?";
}

double tool_recipe_worst_rel(const tool_recipe_result *r) {
    if (!r->have_json) return -1;
    double w = r->loss_rel_err;
    if (r->worst_grad_rel > w) w = r->worst_grad_rel;
    if (r->worst_param_rel > w) w = r->worst_param_rel;
    return w;
}

void tool_recipe_dims_text(const hp_recipe *r, char *out, int cap) {
    int n = 0;
    if (r->P > 1) n += snprintf(out + n, (size_t)(cap - n), "P%d ", r->P);
    n += snprintf(out + n, (size_t)(cap - n), "R%d S%d ", r->R, r->S);
    if (r->U > 1) n += snprintf(out + n, (size_t)(cap - n), "U%d ", r->U);
    n += snprintf(out + n, (size_t)(cap - n), "C%d T%d", r->C, r->T);
    if (n < 0 || n >= cap) return;
    if (r->T > 1) n += snprintf(out + n, (size_t)(cap - n), r->sp == 0 ? " noSP" : " SP");
    if (n < cap && (r->EP > 1 || r->ET > 1)) n += snprintf(out + n, (size_t)(cap - n), " EP%d ET%d", r->EP, r->ET);
    if (n < cap && r->rotate) n += snprintf(out + n, (size_t)(cap - n), " %s", !strcmp(r->rotate, "ring") ? "ring" : "ag");
    if (n < cap && r->dispatcher) snprintf(out + n, (size_t)(cap - n), " disp-%s", !strcmp(r->dispatcher, "allgather") ? "ag" : "a2a");
}

void tool_fmt_err(char *out, int cap, double v) {
    if (v < 0) snprintf(out, (size_t)cap, "-");
    else snprintf(out, (size_t)cap, "%.2e", v);
}

const char *tool_det_text(int d) { return d == 1 ? "yes" : d == 0 ? "NO" : "-"; }

// The largest relative error of a fault's run and where: "4.11e-03 (loss)".
void tool_fault_worst(const tool_fault_result *x, char *out, int cap) {
    const double v[3] = { x->loss_rel_err, x->grad_norm_rel, x->worst_grad_rel };
    static const char *const what[3] = { "loss", "grad norm", "gradient" };
    int k = -1;
    for (int i = 0; i < 3 && x->have_json; i++)
        if (v[i] >= 0 && (k < 0 || v[i] > v[k])) k = i;
    if (k < 0) { snprintf(out, (size_t)cap, "-"); return; }
    snprintf(out, (size_t)cap, "%.2e (%s)", v[k], what[k]);
}

// ---------------------------------------------------------------------------------------------
// console

// The planner column: "= 0.998" (persistent bytes and every (group, op) equal; predicted /
// measured peak), "DIFF 0.85" when the check failed, "-" when it did not run.
void tool_plan_text(const tool_recipe_result *x, char *out, size_t cap) {
    if (!x->plan_checked) snprintf(out, cap, "-");
    else snprintf(out, cap, "%s %.3f", x->plan_pass ? "=" : "DIFF", x->plan_peak_ratio);
}

void tool_report_conditions(const tool_matrix_report *m, char *out, size_t cap) {
    out[0] = '\0';
    size_t used = 0;
    for (int i = 0; i < m->n_rec && used + 1 < cap; i++) {
        if (!m->rec[i].blas_core[0]) continue;
        const tool_recipe_result *x = &m->rec[i];
        char one[280];
        hp_blas_conditions_text(one, sizeof one, x->blas, x->blas_core, x->blas_threads_min, x->blas_threads_max);
        if (x->gemm[0]) {   // (the products ran on another backend: its bits)
            const size_t len = strlen(one);
            snprintf(one + len, sizeof one - len, " and gemm %s", x->gemm);
        }
        if (strstr(out, one)) continue;   // each distinct set once
        used += (size_t)snprintf(out + used, cap - used, "%s%s", used ? "; " : "", one);
    }
}

// One line: how many recipes the planner predicted exactly, and the worst peak ratio.
void tool_plan_summary(FILE *out, const tool_matrix_report *m, const char *bold) {
    int n = 0, ok = 0, worst = -1;
    for (int i = 0; i < m->n_rec; i++) {
        const tool_recipe_result *x = &m->rec[i];
        if (!x->plan_checked) continue;
        n++;
        ok += x->plan_pass;
        if (worst < 0 || fabs(x->plan_peak_ratio - 1) > fabs(m->rec[worst].plan_peak_ratio - 1)) worst = i;
    }
    if (!n) return;
    fprintf(out, "%splanner%s: %d of %d recipes predicted exactly (persistent bytes, every (group, op) of a "
            "step) with the peak within 10%%; worst peak ratio %.4f (%s)\n", bold, bold, ok, n,
            m->rec[worst].plan_peak_ratio, m->rec[worst].r->id);
}

void tool_report_table(FILE *out, const tool_matrix_report *m) {
    if (m->n_rec || !m->n_faults)   // hp matrix --faults-only: no recipe table
        fprintf(out, "%-13s %-3s %-4s %-30s %5s %9s %-40s %-10s %-24s %-11s %6s %4s  %s\n", "recipe", "lvl",
                "prec", "dims", "world", "loss rel", "worst grad rel (tensor)", "closeness",
                "bytes counted / formula", "plan peak", "time", "det", "verdict");
    for (int i = 0; i < m->n_rec; i++) {
        const tool_recipe_result *x = &m->rec[i];
        char dims[64], lre[16], gre[16], grad[64], bytes[48];
        tool_recipe_dims_text(x->r, dims, sizeof dims);
        tool_fmt_err(lre, sizeof lre, x->have_json ? x->loss_rel_err : -1);
        tool_fmt_err(gre, sizeof gre, x->have_json ? x->worst_grad_rel : -1);
        snprintf(grad, sizeof grad, "%s %.30s", gre, x->have_json ? x->worst_grad : "");
        if (x->have_json)
            snprintf(bytes, sizeof bytes, "%.0f / %.0f %s", x->bytes_counted, x->bytes_predicted,
                     x->traffic_ok ? "ok" : "DIFF");
        else
            snprintf(bytes, sizeof bytes, "-");
        char plan[24];
        tool_plan_text(x, plan, sizeof plan);
        char close[24] = "-";   // bf16: the worst closeness ratio / its bound c
        if (x->have_json && x->closeness >= 0)
            snprintf(close, sizeof close, "%.2f/%.1f", x->closeness_worst, x->closeness);
        fprintf(out, "%-13s %-3s %-4s %-30s %5d %9s %-40s %-10s %-24s %-11s %5.1fs %4s  %s\n", x->r->id,
                hp_level_name(x->r->level), hp_recipe_precision(x->r), dims, x->world, lre, grad, close,
                bytes, plan, x->seconds, tool_det_text(x->deterministic), tool_verdict_name(x->verdict));
    }
    for (int i = 0; i < m->n_rec; i++) {
        const tool_recipe_result *x = &m->rec[i];
        if (x->verdict == TOOL_V_PASS) continue;
        fprintf(out, "  %s: %s", x->r->id, x->failure);
        if (x->log[0]) fprintf(out, " (log: %s)", x->log);
        fputc('\n', out);
    }
    if (m->n_neg) {
        fprintf(out, "\n%-20s %4s %7s  %-10s %s\n", "negative case", "exit", "time", "verdict", "stderr line");
        for (int i = 0; i < m->n_neg; i++) {
            const tool_negative_result *g = &m->neg[i];
            fprintf(out, "%-20s %4d %6.2fs  %-10s %.110s\n", g->n->id, g->exit_code, g->seconds,
                    g->ok ? "refused-ok" : "WRONG", g->line);
            if (!g->ok) fprintf(out, "  %s: %s\n", g->n->id, g->why);
        }
    }
    if (m->n_faults) {
        fprintf(out, "\n%-24s %-10s %-7s %-34s %-40s %s\n", "failpoint", "recipe", "verdict",
                "first failed check", "worst grad rel (tensor)", "worst error");
        for (int i = 0; i < m->n_faults; i++) {
            const tool_fault_result *x = &m->faults[i];
            char gre[16], worst[48];
            tool_fmt_err(gre, sizeof gre, x->have_json ? x->worst_grad_rel : -1);
            tool_fault_worst(x, worst, sizeof worst);
            fprintf(out, "%-24s %-10s %-7s %-34.34s %9s %-30.30s %s\n", x->fp->name, x->fp->recipe,
                    x->caught ? "caught" : "MISSED", x->failure, gre, x->worst_grad, worst);
            if (!x->caught) fprintf(out, "  %s: %s\n", x->fp->name, x->why);
        }
    }
    fprintf(out, "\nmatrix: %d passed, %d failed of %d recipes; %d of %d negative cases refused correctly; %.1f s (%s)\n",
            m->n_pass, m->n_fail, m->n_rec, m->n_neg_ok, m->n_neg, m->seconds, m->selection);
    if (m->n_faults)
        fprintf(out, "faults: %d of %d failpoints caught by the verifier\n", m->n_faults_caught, m->n_faults);
    tool_plan_summary(out, m, "");
    char cond[512];
    tool_report_conditions(m, cond, sizeof cond);
    if (*cond) fprintf(out, "conditions of the bitwise promises: %s (docs/verification.md)\n", cond);
}
