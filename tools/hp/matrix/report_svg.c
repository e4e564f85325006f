// report_svg.c - report.svg (hand-written SVG): one small loss-trajectory panel per recipe, a
// log-scale bar chart of each recipe's worst relative error against the tolerance, the
// negative cases, and a timeline per pipeline recipe.
// defines: tool_report_svg
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "report.h"
#include "metrics/svg.h"

#define C_PASS      "#1a7f37"
#define C_FAIL      "#cf222e"
#define C_PASS_BG   "#eef8f0"
#define C_FAIL_BG   "#fdecec"
#define C_PARALLEL  "#f08c00"
#define C_REFERENCE "#1c3f94"

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
    hp_svg_text(f, px + 6, py + 15, "font-size=\"12\" font-weight=\"bold\"", buf);
    snprintf(buf, sizeof buf, "%s %s", hp_level_name(x->r->level), tool_verdict_name(x->verdict));
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" font-weight=\"bold\" text-anchor=\"end\" fill=\"%s\">%s</text>\n",
            px + pw - 6, py + 15, ok ? C_PASS : C_FAIL, buf);
    tool_recipe_dims_text(x->r, dims, sizeof dims);
    snprintf(buf, sizeof buf, "%s w%d%s", dims, x->world, x->r->EP == 1 && strcmp(x->r->model, "tiny") ? " moe" : "");
    hp_svg_text(f, px + 6, py + 28, "font-size=\"9.5\" fill=\"#444\"", buf);

    // plot area
    const double ax = px + 44, ay = py + 36, aw = pw - 52, ah = ph - 62;
    if (!x->have_json || x->steps < 1) {
        if (x->verdict == TOOL_V_TIMEOUT) snprintf(buf, sizeof buf, "no result (timed out)");
        else if (x->exit_code > 128) snprintf(buf, sizeof buf, "no result (signal %d)", x->exit_code - 128);
        else snprintf(buf, sizeof buf, "no result (exit %d)", x->exit_code);
        hp_svg_text(f, px + pw / 2, ay + ah / 2, "font-size=\"11\" text-anchor=\"middle\" fill=\"" C_FAIL "\"", buf);
        char why[48];
        snprintf(why, sizeof why, "%.44s", x->failure);
        hp_svg_text(f, px + pw / 2, ay + ah / 2 + 14, "font-size=\"8.5\" text-anchor=\"middle\" fill=\"#444\"", why);
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
    hp_svg_text(f, ax - 3, ay + 8, "font-size=\"8\" text-anchor=\"end\" fill=\"#555\"", buf);
    snprintf(buf, sizeof buf, "%.4f", lo);
    hp_svg_text(f, ax - 3, ay + ah, "font-size=\"8\" text-anchor=\"end\" fill=\"#555\"", buf);
    hp_svg_text(f, ax - 3, ay + ah / 2 + 3, "font-size=\"8\" text-anchor=\"end\" fill=\"#555\"", "loss");
    for (int s = 0; s < x->steps; s++) {
        double gx = ax + (x->steps > 1 ? aw * s / (x->steps - 1) : aw / 2);
        snprintf(buf, sizeof buf, "%d", s + 1);
        hp_svg_text(f, gx, ay + ah + 10, "font-size=\"8\" text-anchor=\"middle\" fill=\"#555\"", buf);
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
    tool_fmt_err(e1, sizeof e1, tool_recipe_worst_rel(x));
    tool_fmt_err(e2, sizeof e2, x->traj_worst);
    snprintf(buf, sizeof buf, "worst rel %s  traj %s  det %s", e1, e2, tool_det_text(x->deterministic));
    hp_svg_text(f, px + 6, py + ph - 5, "font-size=\"8.5\" fill=\"#333\"", buf);
}

// One block per pipeline recipe: a lane per pp rank, a box per action of the last step (F
// forward, B backward, I and W the split backward), on a common time axis per recipe, so the
// gaps are the bubble a reader sees.
static void svg_pp_timelines(FILE *f, const tool_matrix_report *m, double x0, double y0, double w,
                             double lane_h) {
    static const char *const fill[4] = { "#4c78a8", "#54a24b", "#f58518", "#b279a2" };
    static const char *const name[4] = { "F", "B", "I", "W" };
    char buf[256];
    hp_svg_text(f, x0, y0, "font-size=\"14\" font-weight=\"bold\"",
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
        hp_svg_text(f, x0, y + 10, "font-size=\"11\" font-weight=\"bold\"", buf);
        for (int p = 0; p < x->pp_ranks; p++) {
            const double ly = y + 14 + p * lane_h;
            snprintf(buf, sizeof buf, "pp rank %d", p);
            hp_svg_text(f, lx - 6, ly + lane_h - 3, "font-size=\"9\" text-anchor=\"end\" fill=\"#444\"", buf);
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
    hp_svg_escaped(f, buf);
    fputs("</text>\n", f);
    snprintf(buf, sizeof buf, "%d passed, %d failed of %d recipes  |  %d of %d negative cases refused%s  |  %s, %d run%s each, %.0f s",
             m->n_pass, m->n_fail, m->n_rec, m->n_neg_ok, m->n_neg, m->n_neg_wrong ? " (WRONG ones in red)" : "",
             m->selection, m->repeat, m->repeat == 1 ? "" : "s", m->seconds);
    hp_svg_text(f, margin, 50, "font-size=\"13\" fill=\"#222\"", buf);
    // legend
    double lx = margin, ly = 66;
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"" C_PARALLEL "\" stroke-width=\"4\" stroke-opacity=\"0.75\"/>\n",
            lx, ly - 4, lx + 26, ly - 4);
    hp_svg_text(f, lx + 31, ly, "font-size=\"11\"", "parallel run (loss per step)");
    lx += 200;
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"" C_REFERENCE "\" stroke-width=\"1.3\" stroke-dasharray=\"4,3\"/>\n",
            lx, ly - 4, lx + 26, ly - 4);
    hp_svg_text(f, lx + 31, ly, "font-size=\"11\"", "single-process reference");
    lx += 190;
    fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"12\" height=\"10\" fill=\"" C_PASS_BG "\" stroke=\"" C_PASS "\"/>\n", lx, ly - 9);
    hp_svg_text(f, lx + 16, ly, "font-size=\"11\"", "pass");
    lx += 50;
    fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"12\" height=\"10\" fill=\"" C_FAIL_BG "\" stroke=\"" C_FAIL "\" stroke-width=\"2\"/>\n", lx, ly - 9);
    hp_svg_text(f, lx + 16, ly, "font-size=\"11\"", "fail");
    lx += 50;
    hp_svg_text(f, lx, ly, "font-size=\"11\" fill=\"#444\"",
             "worst rel = max(loss, gradient, parameter) relative error of step 1; traj = 5-step loss; det = bit-identical reruns");

    for (int i = 0; i < m->n_rec; i++) {
        int c = i % cols, r = i / cols;
        svg_panel(f, &m->rec[i], margin + c * (pw + gap), grid_y + r * (ph + gap), pw, ph);
    }

    // bar chart: worst relative error per recipe, log scale, tolerance line
    const double bx = margin + 52, bw = W - bx - margin - 110;
    const int dec_lo = -13, dec_hi = -1;   // 1e-13 .. 1e-1
    hp_svg_text(f, margin, bar_y - 14, "font-size=\"14\" font-weight=\"bold\"",
             "worst relative error of step 1 per recipe (log scale) against the tolerance");
    fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#fafafa\" stroke=\"#bbb\"/>\n", bx, bar_y, bw, bar_h);
    for (int e = dec_lo; e <= dec_hi; e++) {
        double y = bar_y + bar_h - bar_h * (e - dec_lo) / (double)(dec_hi - dec_lo);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e2e2e2\"/>\n", bx, y, bx + bw, y);
        snprintf(buf, sizeof buf, "1e%d", e);
        hp_svg_text(f, bx - 4, y + 3, "font-size=\"9\" text-anchor=\"end\" fill=\"#555\"", buf);
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
        hp_svg_escaped(f, buf);
        fputs("</title></rect>\n", f);
        if (v < 0) hp_svg_text(f, cx, bar_y + 12, "font-size=\"8\" text-anchor=\"middle\" fill=\"white\"", "n/a");
        if (v == 0) hp_svg_text(f, cx, bar_y + bar_h - 4, "font-size=\"9\" text-anchor=\"middle\" fill=\"#222\"", "0");
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"10\" text-anchor=\"end\" fill=\"%s\" transform=\"rotate(-55 %.1f %.1f)\">",
                cx + 3, bar_y + bar_h + 12, ok ? "#222" : C_FAIL, cx + 3, bar_y + bar_h + 12);
        hp_svg_escaped(f, x->r->id);
        fputs("</text>\n", f);
    }
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"" C_FAIL "\" stroke-width=\"1.5\" stroke-dasharray=\"6,3\"/>\n",
            bx, tol_y, bx + bw, tol_y);
    snprintf(buf, sizeof buf, "tolerance %.0e", hp_verify_tol.grad);
    hp_svg_text(f, bx + bw + 6, tol_y + 4, "font-size=\"11\" fill=\"" C_FAIL "\"", buf);

    // negative cases: one mark each
    if (m->n_neg) {
        snprintf(buf, sizeof buf, "negative cases (must exit 2 with one line naming the rule): %d of %d refused correctly",
                 m->n_neg_ok, m->n_neg);
        hp_svg_text(f, margin, neg_y, "font-size=\"14\" font-weight=\"bold\"", buf);
        const double cw = (W - 2 * margin) / neg_cols;
        for (int i = 0; i < m->n_neg; i++) {
            const tool_negative_result *g = &m->neg[i];
            double x0 = margin + (i % neg_cols) * cw, y0 = neg_y + 10 + (i / neg_cols) * neg_row_h;
            fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"11\" height=\"11\" rx=\"2\" fill=\"%s\"/>\n", x0, y0 + 2,
                    g->ok ? C_PASS : C_FAIL);
            fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"10.5\" fill=\"%s\"><title>", x0 + 16, y0 + 12,
                    g->ok ? "#222" : C_FAIL);
            hp_svg_escaped(f, g->line);
            fputs("</title>", f);
            snprintf(buf, sizeof buf, "%s  %s", g->n->id, g->ok ? "refused-ok" : "WRONG");
            hp_svg_escaped(f, buf);
            fputs("</text>\n", f);
        }
    }
    if (n_pp) svg_pp_timelines(f, m, margin, pp_y, W - 2 * margin, lane_h);
    fputs("</svg>\n", f);
    fclose(f);
    return 0;
}
