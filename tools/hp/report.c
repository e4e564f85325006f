// report.c - renders the results of `hp matrix`: the console table, report.md, report.json and
// report.svg (hand-written SVG: one small loss-trajectory panel per recipe, a log-scale bar
// chart of each recipe's worst relative error against the tolerance, the negative cases).
// defines: tool_verdict_name, tool_recipe_worst_rel, tool_recipe_dims_text, tool_report_table,
//          tool_report_markdown, tool_report_json, tool_report_svg
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>
#include "util/file_io.h"
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

static void fmt_err(char *out, int cap, double v) {
    if (v < 0) snprintf(out, (size_t)cap, "-");
    else snprintf(out, (size_t)cap, "%.2e", v);
}

static const char *det_text(int d) { return d == 1 ? "yes" : d == 0 ? "NO" : "-"; }

// The largest relative error of a fault's run and where: "4.11e-03 (loss)".
static void fault_worst(const tool_fault_result *x, char *out, int cap) {
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
static void plan_text(const tool_recipe_result *x, char *out, size_t cap) {
    if (!x->plan_checked) snprintf(out, cap, "-");
    else snprintf(out, cap, "%s %.3f", x->plan_pass ? "=" : "DIFF", x->plan_peak_ratio);
}

// One line: how many recipes the planner predicted exactly, and the worst peak ratio.
static void plan_summary(FILE *out, const tool_matrix_report *m, const char *bold) {
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
        fprintf(out, "%-13s %-3s %-30s %5s %9s %-40s %-24s %-11s %6s %4s  %s\n", "recipe", "lvl", "dims",
                "world", "loss rel", "worst grad rel (tensor)", "bytes counted / formula", "plan peak",
                "time", "det", "verdict");
    for (int i = 0; i < m->n_rec; i++) {
        const tool_recipe_result *x = &m->rec[i];
        char dims[64], lre[16], gre[16], grad[64], bytes[48];
        tool_recipe_dims_text(x->r, dims, sizeof dims);
        fmt_err(lre, sizeof lre, x->have_json ? x->loss_rel_err : -1);
        fmt_err(gre, sizeof gre, x->have_json ? x->worst_grad_rel : -1);
        snprintf(grad, sizeof grad, "%s %.30s", gre, x->have_json ? x->worst_grad : "");
        if (x->have_json)
            snprintf(bytes, sizeof bytes, "%.0f / %.0f %s", x->bytes_counted, x->bytes_predicted,
                     x->traffic_ok ? "ok" : "DIFF");
        else
            snprintf(bytes, sizeof bytes, "-");
        char plan[24];
        plan_text(x, plan, sizeof plan);
        fprintf(out, "%-13s %-3s %-30s %5d %9s %-40s %-24s %-11s %5.1fs %4s  %s\n", x->r->id,
                hp_level_name(x->r->level), dims, x->world, lre, grad, bytes, plan, x->seconds,
                det_text(x->deterministic), tool_verdict_name(x->verdict));
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
            fmt_err(gre, sizeof gre, x->have_json ? x->worst_grad_rel : -1);
            fault_worst(x, worst, sizeof worst);
            fprintf(out, "%-24s %-10s %-7s %-34.34s %9s %-30.30s %s\n", x->fp->name, x->fp->recipe,
                    x->caught ? "caught" : "MISSED", x->failure, gre, x->worst_grad, worst);
            if (!x->caught) fprintf(out, "  %s: %s\n", x->fp->name, x->why);
        }
    }
    fprintf(out, "\nmatrix: %d passed, %d failed of %d recipes; %d of %d negative cases refused correctly; %.1f s (%s)\n",
            m->n_pass, m->n_fail, m->n_rec, m->n_neg_ok, m->n_neg, m->seconds, m->selection);
    if (m->n_faults)
        fprintf(out, "faults: %d of %d failpoints caught by the verifier\n", m->n_faults_caught, m->n_faults);
    plan_summary(out, m, "");
}

// ---------------------------------------------------------------------------------------------
// Markdown

// Markdown table cells must not contain '|' or newlines.
static void md_cell(FILE *f, const char *s) {
    for (; *s; s++) {
        if (*s == '|') fputs("\\|", f);
        else if (*s == '\n') fputc(' ', f);
        else fputc(*s, f);
    }
}

// A tolerance as the docs write it: 1e-5, not printf's 1e-05.
static const char *tol_text(double v, char *buf, size_t cap) {
    char e[24];
    snprintf(e, sizeof e, "%.0e", v);
    char *x = strchr(e, 'e');
    if (x && (x[1] == '-' || x[1] == '+')) {
        char *d = x + 2;
        while (d[0] == '0' && d[1]) memmove(d, d + 1, strlen(d));
        if (x[1] == '+') memmove(x + 1, x + 2, strlen(x + 1));
    }
    snprintf(buf, cap, "%s", e);
    return buf;
}

// The "faults caught" table: one row per failpoint run (hp matrix --faults).
static void md_faults_table(FILE *f, const tool_matrix_report *m) {
    char tol[32];
    fprintf(f, "Each failpoint (include/hyperpar/failpoint.h) is a one-line bug compiled into the code; "
               "its row is the smallest recipe it affects run with `HP_FAILPOINT=<name>` and "
               "`--verify`. *Caught*: exit 1 and the verifier names what the fault touches (the regex "
               "of the registry). *What failed*: the first failed check, and the worst gradient with its "
               "relative Frobenius error; *worst error*: the largest relative error of the loss, the "
               "global grad norm and the gradients (tolerance %s each).\n\n",
            tol_text(hp_verify_tol.grad, tol, sizeof tol));
    fprintf(f, "| failpoint | recipe | what failed | worst error | caught |\n");
    fprintf(f, "|---|---|---|---|---|\n");
    for (int i = 0; i < m->n_faults; i++) {
        const tool_fault_result *x = &m->faults[i];
        char gre[16], worst[48];
        fmt_err(gre, sizeof gre, x->have_json ? x->worst_grad_rel : -1);
        fault_worst(x, worst, sizeof worst);
        fprintf(f, "| %s | %s | ", x->fp->name, x->fp->recipe);
        if (x->have_json) {
            md_cell(f, x->failure[0] ? x->failure : "-");
            fprintf(f, "; worst grad `%s` %s | %s | ", x->worst_grad, gre, worst);
        } else {
            fprintf(f, "- | - | ");
        }
        if (x->caught) fprintf(f, "yes |\n");
        else { fprintf(f, "**NO**: "); md_cell(f, x->why); fprintf(f, " |\n"); }
    }
    fprintf(f, "\n%d of %d failpoints caught.\n", m->n_faults_caught, m->n_faults);
}

int tool_report_faults_markdown(const char *path, const tool_matrix_report *m) {
    FILE *f = fopen(path, "w");
    if (!f) { fprintf(stderr, "hp matrix: cannot write '%s'\n", path); return -1; }
    fprintf(f, "# Faults caught\n\n");
    md_faults_table(f, m);
    fprintf(f, "\n| failpoint | the bug |\n|---|---|\n");
    for (int i = 0; i < m->n_faults; i++) {
        fprintf(f, "| %s | ", m->faults[i].fp->name);
        md_cell(f, m->faults[i].fp->what);
        fprintf(f, " |\n");
    }
    fclose(f);
    return 0;
}

int tool_report_markdown(const char *path, const tool_matrix_report *m) {
    FILE *f = fopen(path, "w");
    if (!f) { fprintf(stderr, "hp matrix: cannot write '%s'\n", path); return -1; }
    const int all_ok = m->n_fail == 0 && m->n_neg_wrong == 0 && m->n_faults_caught == m->n_faults;
    fprintf(f, "# hyperpar completeness matrix\n\n");
    fprintf(f, "**%s**: %d of %d recipes passed, %d failed; %d of %d negative cases refused correctly. "
               "Selection `%s`, each recipe run %d time%s, %.1f s in all.\n\n",
            all_ok ? "PASS" : "FAIL", m->n_pass, m->n_rec, m->n_fail, m->n_neg_ok, m->n_neg, m->selection,
            m->repeat, m->repeat == 1 ? "" : "s", m->seconds);
    plan_summary(f, m, "**");
    fprintf(f, "\n![matrix](report.svg)\n\n");
    char tg[32], tl[32], tt[32];
    fprintf(f, "Each recipe runs `hp run <flags> --verify --verify-steps 5`: one global batch, forward + "
               "backward + one SGD step on the parallel mesh and in a single process (every degree 1, same "
               "seed and batch); the loss, every gradient and every updated parameter are gathered to full "
               "tensors and compared (relative Frobenius error <= %s per tensor, loss <= %s, 5-step loss "
               "trajectory <= %s), and the bytes each collective moved are compared with the formula. "
               "*plan peak* = `hp plan`'s prediction for world rank 0 against what the run measured there "
               "(persistent bytes and every (group, op) of a step equal, `=`; the number is predicted / "
               "measured peak bytes, within 10%%; docs/planner.md). "
               "*det* = the repeated runs are bit-identical (every gradient of step 1 byte for byte, and the losses). Degrees: P pp, R dp_replicate, "
               "S dp_shard, U ulysses, C cp, T tp, EP ep, ET etp; world = P*R*S*U*C*T.\n\n",
            tol_text(hp_verify_tol.grad, tg, sizeof tg), tol_text(hp_verify_tol.loss, tl, sizeof tl),
            tol_text(hp_verify_tol.traj, tt, sizeof tt));
    fprintf(f, "| recipe | level | dims | world | loss rel err | worst grad rel (tensor) | worst param rel (tensor) | "
               "traj worst | bytes counted / formula | plan peak | time | det | verdict |\n");
    fprintf(f, "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (int i = 0; i < m->n_rec; i++) {
        const tool_recipe_result *x = &m->rec[i];
        char dims[64], a[16], b[16], c[16], d[16];
        tool_recipe_dims_text(x->r, dims, sizeof dims);
        fmt_err(a, sizeof a, x->have_json ? x->loss_rel_err : -1);
        fmt_err(b, sizeof b, x->have_json ? x->worst_grad_rel : -1);
        fmt_err(c, sizeof c, x->have_json ? x->worst_param_rel : -1);
        fmt_err(d, sizeof d, x->have_json ? x->traj_worst : -1);
        fprintf(f, "| %s | %s | %s | %d | %s | ", x->r->id, hp_level_name(x->r->level), dims, x->world, a);
        if (x->have_json) fprintf(f, "%s `%s` | %s `%s` | %s | ", b, x->worst_grad, c, x->worst_param, d);
        else fprintf(f, "- | - | - | ");
        if (x->have_json) fprintf(f, "%.0f / %.0f %s", x->bytes_counted, x->bytes_predicted, x->traffic_ok ? "ok" : "**DIFF**");
        else fprintf(f, "-");
        char plan[24];
        plan_text(x, plan, sizeof plan);
        fprintf(f, " | %s", plan);
        fprintf(f, " | %.1f s | %s | %s%s%s |\n", x->seconds, det_text(x->deterministic),
                x->verdict == TOOL_V_PASS ? "" : "**", tool_verdict_name(x->verdict), x->verdict == TOOL_V_PASS ? "" : "**");
    }
    int n_bad = 0;
    for (int i = 0; i < m->n_rec; i++) n_bad += m->rec[i].verdict != TOOL_V_PASS;
    if (n_bad) {
        fprintf(f, "\n## Failures\n\n");
        for (int i = 0; i < m->n_rec; i++) {
            const tool_recipe_result *x = &m->rec[i];
            if (x->verdict == TOOL_V_PASS) continue;
            char flags[512];
            hp_recipe_flags(x->r, flags, sizeof flags);
            if (x->verdict == TOOL_V_TIMEOUT) fprintf(f, "- **%s** (%s): ", x->r->id, tool_verdict_name(x->verdict));
            else fprintf(f, "- **%s** (%s, exit %d): ", x->r->id, tool_verdict_name(x->verdict), x->exit_code);
            md_cell(f, x->failure);
            fprintf(f, "  \n  reproduce: `hp run %s --verify`", flags);
            if (x->log[0]) fprintf(f, "; log: `%s`", x->log);
            fprintf(f, "\n");
        }
    }
    if (m->n_faults) {
        fprintf(f, "\n## Faults caught\n\n");
        md_faults_table(f, m);
    }
    fprintf(f, "\n## Recipes\n\n| recipe | row | what it proves | same as | example |\n|---|---|---|---|---|\n");
    for (int i = 0; i < m->n_rec; i++) {
        const hp_recipe *r = m->rec[i].r;
        fprintf(f, "| %s | %s | %s | %s | [%s](../examples/%s) |\n", r->id, r->row, r->what,
                r->same_as ? r->same_as : "", r->example, r->example);
    }
    if (m->n_neg) {
        fprintf(f, "\n## Negative cases\n\nEach must exit %d fast with one stderr line naming the rule and the numbers.\n\n", 2);
        fprintf(f, "| case | rule | command | exit | time | stderr line | verdict |\n|---|---|---|---|---|---|---|\n");
        for (int i = 0; i < m->n_neg; i++) {
            const tool_negative_result *g = &m->neg[i];
            fprintf(f, "| %s | ", g->n->id);
            md_cell(f, g->n->rule);
            fprintf(f, " | `hp ");
            md_cell(f, g->n->args);
            fprintf(f, "` | %d | %.2f s | `", g->exit_code, g->seconds);
            md_cell(f, g->line);
            fprintf(f, "` | %s", g->ok ? "refused-ok" : "**WRONG**: ");
            if (!g->ok) md_cell(f, g->why);
            fprintf(f, " |\n");
        }
    }
    fclose(f);
    return 0;
}

// ---------------------------------------------------------------------------------------------
// JSON

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

// ---------------------------------------------------------------------------------------------
// SVG

#define C_PASS      "#1a7f37"
#define C_FAIL      "#cf222e"
#define C_PASS_BG   "#eef8f0"
#define C_FAIL_BG   "#fdecec"
#define C_PARALLEL  "#f08c00"
#define C_REFERENCE "#1c3f94"

static void svg_text_escaped(FILE *f, const char *s) {
    for (; *s; s++) {
        switch (*s) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        default:  fputc(*s, f);
        }
    }
}

// <text> with escaped content; attrs is raw SVG attribute text.
static void svg_text(FILE *f, double x, double y, const char *attrs, const char *s) {
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" %s>", x, y, attrs);
    svg_text_escaped(f, s);
    fputs("</text>\n", f);
}

static void svg_polyline(FILE *f, const double *v, int n, double x0, double w, double y0, double h,
                         double lo, double hi, const char *attrs) {
    fputs("<polyline fill=\"none\" points=\"", f);
    for (int s = 0; s < n; s++) {
        double x = x0 + (n > 1 ? w * s / (n - 1) : w / 2);
        double y = y0 + h - h * (v[s] - lo) / (hi - lo);
        fprintf(f, "%s%.1f,%.1f", s ? " " : "", x, y);
    }
    fprintf(f, "\" %s/>\n", attrs);
}

// One recipe: its 5-step loss trajectory, parallel against the reference.
static void svg_panel(FILE *f, const tool_recipe_result *x, double px, double py, double pw, double ph) {
    const int ok = x->verdict == TOOL_V_PASS;
    char buf[160], dims[64];
    fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" rx=\"4\" fill=\"%s\" stroke=\"%s\" stroke-width=\"%s\"/>\n",
            px, py, pw, ph, ok ? C_PASS_BG : C_FAIL_BG, ok ? C_PASS : C_FAIL, ok ? "1" : "2");
    snprintf(buf, sizeof buf, "%s", x->r->id);
    svg_text(f, px + 6, py + 15, "font-size=\"12\" font-weight=\"bold\"", buf);
    snprintf(buf, sizeof buf, "%s %s", hp_level_name(x->r->level), tool_verdict_name(x->verdict));
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" font-weight=\"bold\" text-anchor=\"end\" fill=\"%s\">%s</text>\n",
            px + pw - 6, py + 15, ok ? C_PASS : C_FAIL, buf);
    tool_recipe_dims_text(x->r, dims, sizeof dims);
    snprintf(buf, sizeof buf, "%s w%d%s", dims, x->world, x->r->EP == 1 && strcmp(x->r->model, "tiny") ? " moe" : "");
    svg_text(f, px + 6, py + 28, "font-size=\"9.5\" fill=\"#444\"", buf);

    // plot area
    const double ax = px + 44, ay = py + 36, aw = pw - 52, ah = ph - 62;
    if (!x->have_json || x->steps < 1) {
        if (x->verdict == TOOL_V_TIMEOUT) snprintf(buf, sizeof buf, "no result (timed out)");
        else if (x->exit_code > 128) snprintf(buf, sizeof buf, "no result (signal %d)", x->exit_code - 128);
        else snprintf(buf, sizeof buf, "no result (exit %d)", x->exit_code);
        svg_text(f, px + pw / 2, ay + ah / 2, "font-size=\"11\" text-anchor=\"middle\" fill=\"" C_FAIL "\"", buf);
        char why[48];
        snprintf(why, sizeof why, "%.44s", x->failure);
        svg_text(f, px + pw / 2, ay + ah / 2 + 14, "font-size=\"8.5\" text-anchor=\"middle\" fill=\"#444\"", why);
        return;
    }
    double lo = x->losses[0], hi = x->losses[0];
    for (int s = 0; s < x->steps; s++) {
        double a = x->losses[s], b = x->losses_ref[s];
        lo = fmin(lo, fmin(a, b));
        hi = fmax(hi, fmax(a, b));
    }
    if (!(hi > lo)) { hi = lo + 1e-3; lo -= 1e-3; }
    const double pad = 0.08 * (hi - lo);
    lo -= pad; hi += pad;
    fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"white\" stroke=\"#bbb\"/>\n", ax, ay, aw, ah);
    snprintf(buf, sizeof buf, "%.4f", hi);
    svg_text(f, ax - 3, ay + 8, "font-size=\"8\" text-anchor=\"end\" fill=\"#555\"", buf);
    snprintf(buf, sizeof buf, "%.4f", lo);
    svg_text(f, ax - 3, ay + ah, "font-size=\"8\" text-anchor=\"end\" fill=\"#555\"", buf);
    svg_text(f, ax - 3, ay + ah / 2 + 3, "font-size=\"8\" text-anchor=\"end\" fill=\"#555\"", "loss");
    for (int s = 0; s < x->steps; s++) {
        double gx = ax + (x->steps > 1 ? aw * s / (x->steps - 1) : aw / 2);
        snprintf(buf, sizeof buf, "%d", s + 1);
        svg_text(f, gx, ay + ah + 10, "font-size=\"8\" text-anchor=\"middle\" fill=\"#555\"", buf);
    }
    // the parallel run wide and light, the reference thin and dashed on top: where they agree
    // the dashes run along the middle of the wide line
    svg_polyline(f, x->losses, x->steps, ax, aw, ay, ah, lo, hi,
                 "stroke=\"" C_PARALLEL "\" stroke-width=\"4\" stroke-opacity=\"0.75\" stroke-linejoin=\"round\"");
    svg_polyline(f, x->losses_ref, x->steps, ax, aw, ay, ah, lo, hi,
                 "stroke=\"" C_REFERENCE "\" stroke-width=\"1.3\" stroke-dasharray=\"4,3\"");
    for (int s = 0; s < x->steps; s++) {
        double gx = ax + (x->steps > 1 ? aw * s / (x->steps - 1) : aw / 2);
        double gy = ay + ah - ah * (x->losses_ref[s] - lo) / (hi - lo);
        fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"1.8\" fill=\"" C_REFERENCE "\"/>\n", gx, gy);
    }
    char e1[16], e2[16];
    fmt_err(e1, sizeof e1, tool_recipe_worst_rel(x));
    fmt_err(e2, sizeof e2, x->traj_worst);
    snprintf(buf, sizeof buf, "worst rel %s  traj %s  det %s", e1, e2, det_text(x->deterministic));
    svg_text(f, px + 6, py + ph - 5, "font-size=\"8.5\" fill=\"#333\"", buf);
}

// One block per pipeline recipe: a lane per pp rank, a box per action of the last step (F
// forward, B backward, I and W the split backward), on a common time axis per recipe, so the
// gaps are the bubble a reader sees.
static void svg_pp_timelines(FILE *f, const tool_matrix_report *m, double x0, double y0, double w,
                             double lane_h) {
    static const char *const fill[4] = { "#4c78a8", "#54a24b", "#f58518", "#b279a2" };
    static const char *const name[4] = { "F", "B", "I", "W" };
    char buf[256];
    svg_text(f, x0, y0, "font-size=\"14\" font-weight=\"bold\"",
             "pipeline recipes: the measured last step, pp rank x time (F forward, B backward, I / W the split backward)");
    double y = y0 + 20;
    const double lx = x0 + 150, lw = w - 160;
    for (int i = 0; i < m->n_rec; i++) {
        const tool_recipe_result *x = &m->rec[i];
        if (x->pp_ranks <= 0) continue;
        double end = 0;
        for (int p = 0; p < x->pp_ranks; p++)
            for (int a = 0; a < x->pp_n[p]; a++) if (x->pp_t1[p][a] > end) end = x->pp_t1[p][a];
        if (end <= 0) end = 1;
        snprintf(buf, sizeof buf, "%s (%.1f ms)", x->r->id, end);
        svg_text(f, x0, y + 10, "font-size=\"11\" font-weight=\"bold\"", buf);
        for (int p = 0; p < x->pp_ranks; p++) {
            const double ly = y + 14 + p * lane_h;
            snprintf(buf, sizeof buf, "pp rank %d", p);
            svg_text(f, lx - 6, ly + lane_h - 3, "font-size=\"9\" text-anchor=\"end\" fill=\"#444\"", buf);
            fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#f3f3f3\"/>\n",
                    lx, ly, lw, lane_h - 2);
            for (int a = 0; a < x->pp_n[p]; a++) {
                const int op = x->pp_op[p][a] < 4 ? x->pp_op[p][a] : 0;
                const double bx = lx + lw * x->pp_t0[p][a] / end;
                double bw = lw * (x->pp_t1[p][a] - x->pp_t0[p][a]) / end;
                if (bw < 0.8) bw = 0.8;
                fprintf(f, "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" fill=\"%s\"><title>%s %.2f-%.2f ms</title></rect>\n",
                        bx, ly, bw, lane_h - 2, fill[op], name[op], x->pp_t0[p][a], x->pp_t1[p][a]);
            }
        }
        y += 24 + x->pp_ranks * lane_h;
    }
}

int tool_report_svg(const char *path, const tool_matrix_report *m) {
    FILE *f = fopen(path, "w");
    if (!f) { fprintf(stderr, "hp matrix: cannot write '%s'\n", path); return -1; }
    const int cols = 6;
    const double pw = 205, ph = 132, gap = 8, margin = 16;
    const double W = margin * 2 + cols * pw + (cols - 1) * gap;
    const int rows = (m->n_rec + cols - 1) / cols;
    const double grid_y = 78;
    const double grid_h = rows * ph + (rows > 0 ? (rows - 1) * gap : 0);
    const double bar_y = grid_y + grid_h + 40, bar_h = 230, bar_label_h = 70;
    const int neg_cols = 4;
    const int neg_rows = (m->n_neg + neg_cols - 1) / neg_cols;
    const double neg_y = bar_y + bar_h + bar_label_h + 30, neg_row_h = 17;
    // pipeline recipes: the measured timeline of their verified run's last step
    int n_pp = 0, pp_lanes = 0;
    for (int i = 0; i < m->n_rec; i++)
        if (m->rec[i].pp_ranks > 0) { n_pp++; pp_lanes += m->rec[i].pp_ranks; }
    const double pp_y = neg_y + (m->n_neg ? 24 + neg_rows * neg_row_h : 0) + 30, lane_h = 13;
    const double H = pp_y + (n_pp ? 30 + n_pp * 24 + pp_lanes * lane_h : 0) + margin;
    const int all_ok = m->n_fail == 0 && m->n_neg_wrong == 0;
    char buf[512];

    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
               "font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\">\n", W, H, W, H);
    fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
    // title: the counts a person needs first
    snprintf(buf, sizeof buf, "hyperpar completeness matrix: %s", all_ok ? "ALL PASS" : "FAILURES");
    fprintf(f, "<text x=\"%.1f\" y=\"30\" font-size=\"20\" font-weight=\"bold\" fill=\"%s\">", margin, all_ok ? C_PASS : C_FAIL);
    svg_text_escaped(f, buf);
    fputs("</text>\n", f);
    snprintf(buf, sizeof buf, "%d passed, %d failed of %d recipes  |  %d of %d negative cases refused%s  |  %s, %d run%s each, %.0f s",
             m->n_pass, m->n_fail, m->n_rec, m->n_neg_ok, m->n_neg, m->n_neg_wrong ? " (WRONG ones in red)" : "",
             m->selection, m->repeat, m->repeat == 1 ? "" : "s", m->seconds);
    svg_text(f, margin, 50, "font-size=\"13\" fill=\"#222\"", buf);
    // legend
    double lx = margin, ly = 66;
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"" C_PARALLEL "\" stroke-width=\"4\" stroke-opacity=\"0.75\"/>\n",
            lx, ly - 4, lx + 26, ly - 4);
    svg_text(f, lx + 31, ly, "font-size=\"11\"", "parallel run (loss per step)");
    lx += 200;
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"" C_REFERENCE "\" stroke-width=\"1.3\" stroke-dasharray=\"4,3\"/>\n",
            lx, ly - 4, lx + 26, ly - 4);
    svg_text(f, lx + 31, ly, "font-size=\"11\"", "single-process reference");
    lx += 190;
    fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"12\" height=\"10\" fill=\"" C_PASS_BG "\" stroke=\"" C_PASS "\"/>\n", lx, ly - 9);
    svg_text(f, lx + 16, ly, "font-size=\"11\"", "pass");
    lx += 50;
    fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"12\" height=\"10\" fill=\"" C_FAIL_BG "\" stroke=\"" C_FAIL "\" stroke-width=\"2\"/>\n", lx, ly - 9);
    svg_text(f, lx + 16, ly, "font-size=\"11\"", "fail");
    lx += 50;
    svg_text(f, lx, ly, "font-size=\"11\" fill=\"#444\"",
             "worst rel = max(loss, gradient, parameter) relative error of step 1; traj = 5-step loss; det = bit-identical reruns");

    for (int i = 0; i < m->n_rec; i++) {
        int c = i % cols, r = i / cols;
        svg_panel(f, &m->rec[i], margin + c * (pw + gap), grid_y + r * (ph + gap), pw, ph);
    }

    // bar chart: worst relative error per recipe, log scale, tolerance line
    const double bx = margin + 52, bw = W - bx - margin - 110;
    const int dec_lo = -13, dec_hi = -1;   // 1e-13 .. 1e-1
    svg_text(f, margin, bar_y - 14, "font-size=\"14\" font-weight=\"bold\"",
             "worst relative error of step 1 per recipe (log scale) against the tolerance");
    fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#fafafa\" stroke=\"#bbb\"/>\n", bx, bar_y, bw, bar_h);
    for (int e = dec_lo; e <= dec_hi; e++) {
        double y = bar_y + bar_h - bar_h * (e - dec_lo) / (double)(dec_hi - dec_lo);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e2e2e2\"/>\n", bx, y, bx + bw, y);
        snprintf(buf, sizeof buf, "1e%d", e);
        svg_text(f, bx - 4, y + 3, "font-size=\"9\" text-anchor=\"end\" fill=\"#555\"", buf);
    }
    const double tol_y = bar_y + bar_h - bar_h * (log10(hp_verify_tol.grad) - dec_lo) / (double)(dec_hi - dec_lo);
    const int n = m->n_rec > 0 ? m->n_rec : 1;
    const double slot = bw / n, barw = slot * 0.7;
    for (int i = 0; i < m->n_rec; i++) {
        const tool_recipe_result *x = &m->rec[i];
        const int ok = x->verdict == TOOL_V_PASS;
        double v = tool_recipe_worst_rel(x);
        double cx = bx + slot * (i + 0.5);
        double top;
        if (v < 0) top = bar_y;                       // no numbers: a full red bar
        else {
            double e = v > 0 ? log10(v) : dec_lo;
            if (e < dec_lo) e = dec_lo;
            if (e > dec_hi) e = dec_hi;
            top = bar_y + bar_h - bar_h * (e - dec_lo) / (double)(dec_hi - dec_lo);
        }
        fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\" fill-opacity=\"%s\"><title>",
                cx - barw / 2, top, barw, bar_y + bar_h - top, ok ? C_PASS : C_FAIL, v < 0 ? "0.35" : "0.85");
        snprintf(buf, sizeof buf, "%s: %s %.3g", x->r->id, tool_verdict_name(x->verdict), v);
        svg_text_escaped(f, buf);
        fputs("</title></rect>\n", f);
        if (v < 0) svg_text(f, cx, bar_y + 12, "font-size=\"8\" text-anchor=\"middle\" fill=\"white\"", "n/a");
        if (v == 0) svg_text(f, cx, bar_y + bar_h - 4, "font-size=\"9\" text-anchor=\"middle\" fill=\"#222\"", "0");
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"10\" text-anchor=\"end\" fill=\"%s\" transform=\"rotate(-55 %.1f %.1f)\">",
                cx + 3, bar_y + bar_h + 12, ok ? "#222" : C_FAIL, cx + 3, bar_y + bar_h + 12);
        svg_text_escaped(f, x->r->id);
        fputs("</text>\n", f);
    }
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"" C_FAIL "\" stroke-width=\"1.5\" stroke-dasharray=\"6,3\"/>\n",
            bx, tol_y, bx + bw, tol_y);
    snprintf(buf, sizeof buf, "tolerance %.0e", hp_verify_tol.grad);
    svg_text(f, bx + bw + 6, tol_y + 4, "font-size=\"11\" fill=\"" C_FAIL "\"", buf);

    // negative cases: one mark each
    if (m->n_neg) {
        snprintf(buf, sizeof buf, "negative cases (must exit 2 with one line naming the rule): %d of %d refused correctly",
                 m->n_neg_ok, m->n_neg);
        svg_text(f, margin, neg_y, "font-size=\"14\" font-weight=\"bold\"", buf);
        const double cw = (W - 2 * margin) / neg_cols;
        for (int i = 0; i < m->n_neg; i++) {
            const tool_negative_result *g = &m->neg[i];
            double x0 = margin + (i % neg_cols) * cw, y0 = neg_y + 10 + (i / neg_cols) * neg_row_h;
            fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"11\" height=\"11\" rx=\"2\" fill=\"%s\"/>\n", x0, y0 + 2,
                    g->ok ? C_PASS : C_FAIL);
            fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"10.5\" fill=\"%s\"><title>", x0 + 16, y0 + 12,
                    g->ok ? "#222" : C_FAIL);
            svg_text_escaped(f, g->line);
            fputs("</title>", f);
            snprintf(buf, sizeof buf, "%s  %s", g->n->id, g->ok ? "refused-ok" : "WRONG");
            svg_text_escaped(f, buf);
            fputs("</text>\n", f);
        }
    }
    if (n_pp) svg_pp_timelines(f, m, margin, pp_y, W - 2 * margin, lane_h);
    fputs("</svg>\n", f);
    fclose(f);
    return 0;
}
