// report_md.c - report.md, the Markdown report of `hp matrix` (summary, the recipe table with
// its errors, the planner line, the negative cases, the faults caught), and faults.md, the
// "faults caught" table alone that docs/verification.md shows.
// defines: tool_report_markdown, tool_report_faults_markdown
#include <stdio.h>
#include <string.h>
#include "report.h"

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
        tool_fmt_err(gre, sizeof gre, x->have_json ? x->worst_grad_rel : -1);
        tool_fault_worst(x, worst, sizeof worst);
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
    tool_plan_summary(f, m, "**");
    char cond[512];
    tool_report_conditions(m, cond, sizeof cond);
    if (*cond)
        fprintf(f, "\n**Conditions** of the bitwise promises (the reruns, docs/verification.md): this binary with "
                   "%s. Another BLAS core or thread count may change the last bits; the tolerances hold on any.\n",
                cond);
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
    fprintf(f, "| recipe | level | precision | dims | world | loss rel err | worst grad rel (tensor) | worst param rel (tensor) | "
               "traj worst | bf16 closeness (worst / c) | structure | bytes counted / formula | plan peak | time | det | verdict |\n");
    fprintf(f, "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (int i = 0; i < m->n_rec; i++) {
        const tool_recipe_result *x = &m->rec[i];
        char dims[64], a[16], b[16], c[16], d[16];
        tool_recipe_dims_text(x->r, dims, sizeof dims);
        tool_fmt_err(a, sizeof a, x->have_json ? x->loss_rel_err : -1);
        tool_fmt_err(b, sizeof b, x->have_json ? x->worst_grad_rel : -1);
        tool_fmt_err(c, sizeof c, x->have_json ? x->worst_param_rel : -1);
        tool_fmt_err(d, sizeof d, x->have_json ? x->traj_worst : -1);
        fprintf(f, "| %s | %s | %s | %s | %d | %s | ", x->r->id, hp_level_name(x->r->level),
                hp_recipe_precision(x->r), dims, x->world, a);
        if (x->have_json) fprintf(f, "%s `%s` | %s `%s` | %s | ", b, x->worst_grad, c, x->worst_param, d);
        else fprintf(f, "- | - | - | ");
        if (x->have_json && x->closeness >= 0)
            fprintf(f, "%.3f / %.1f `%s` | ", x->closeness_worst, x->closeness, x->closeness_worst_of);
        else fprintf(f, "- | ");
        if (x->have_json)
            fprintf(f, "%.0f of %.0f ok | ", x->structure_checks - x->structure_mismatches, x->structure_checks);
        else fprintf(f, "- | ");
        if (x->have_json) fprintf(f, "%.0f / %.0f %s", x->bytes_counted, x->bytes_predicted, x->traffic_ok ? "ok" : "**DIFF**");
        else fprintf(f, "-");
        char plan[24];
        tool_plan_text(x, plan, sizeof plan);
        fprintf(f, " | %s", plan);
        fprintf(f, " | %.1f s | %s | %s%s%s |\n", x->seconds, tool_det_text(x->deterministic),
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
