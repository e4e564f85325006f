// plan_pipeline.c - `hp plan` under pp > 1: the stages (layers, pp rank), and the schedule as a
// grid of pp rank x time slot with its ideal bubble (pipeline.md "What a user sees").
// defines: tool_plan_print_pipeline
#include <stdlib.h>
#include <string.h>
#include "hyperpar/pipeline.h"
#include "plan_tool.h"

// Cells like F3, B2, I1, W0; slots as hp_pp_ideal_bubble times them (F = I = W = 1, B = 2), so
// a gap in a row is that rank waiting.
void tool_plan_print_pipeline(FILE *out, const hp_dims *d, int n_layers, int M) {
    hp_pp_layout lay;
    if (d->pp <= 1 || hp_pp_layout_init(&lay, d, n_layers) != 0) return;
    fprintf(out, "\npipeline: pp %d, schedule %s, %d stage%s per pp rank, %d microbatch%s\n", lay.P,
            hp_pp_schedule_name(lay.schedule), lay.V, lay.V == 1 ? "" : "s", M, M == 1 ? "" : "es");
    for (int s = 0; s < lay.n_stages; s++) {
        const int l0 = lay.stage_first[s], n = lay.stage_layers[s];
        fprintf(out, "  stage %2d  pp rank %2d  blocks %d..%d%s%s\n", s, lay.stage_rank[s], l0,
                l0 + n - 1, s == 0 ? "  + tok_embeddings" : "",
                s == lay.n_stages - 1 ? "  + norm, output (the loss)" : "");
    }
    const double bubble = hp_pp_ideal_bubble(&lay, M);
    if (bubble < 0) { fprintf(out, "  the schedule does not fit %d microbatches\n", M); return; }
    // replay the lists against their dependencies to place every action in time
    const int cap = 3 * lay.V * M + 4, S = lay.n_stages;
    hp_pp_action *act = malloc((size_t)lay.P * cap * sizeof *act);
    int *n_act = calloc((size_t)lay.P, sizeof(int)), *next = calloc((size_t)lay.P, sizeof(int));
    int *free_at = calloc((size_t)lay.P, sizeof(int));
    int *f_end = malloc((size_t)S * M * sizeof(int)), *i_end = malloc((size_t)S * M * sizeof(int));
    int *start = malloc((size_t)lay.P * cap * sizeof(int));
    if (!act || !n_act || !next || !free_at || !f_end || !i_end || !start) goto done;
    for (int c = 0; c < S * M; c++) f_end[c] = i_end[c] = -1;
    for (int p = 0; p < lay.P; p++) n_act[p] = hp_pp_schedule_build(&lay, M, p, act + (size_t)p * cap);
    int makespan = 0;
    for (int progress = 1; progress;) {
        progress = 0;
        for (int p = 0; p < lay.P; p++)
            while (next[p] < n_act[p]) {
                const hp_pp_action *a = &act[(size_t)p * cap + next[p]];
                const int c = a->stage * M + a->mb;
                int dep = 0, dur = a->op == HP_PP_B ? 2 : 1;
                if (a->op == HP_PP_F && a->stage > 0) { if (f_end[c - M] < 0) break; dep = f_end[c - M]; }
                if (a->op == HP_PP_W) { if (i_end[c] < 0) break; dep = i_end[c]; }
                if (a->op == HP_PP_B || a->op == HP_PP_I) {
                    if (f_end[c] < 0 || (a->stage < S - 1 && i_end[c + M] < 0)) break;
                    dep = f_end[c];
                    if (a->stage < S - 1 && i_end[c + M] > dep) dep = i_end[c + M];
                }
                const int t = dep > free_at[p] ? dep : free_at[p];
                start[(size_t)p * cap + next[p]] = t;
                free_at[p] = t + dur;
                if (a->op == HP_PP_F) f_end[c] = free_at[p];
                else if (a->op != HP_PP_W) i_end[c] = free_at[p];
                if (free_at[p] > makespan) makespan = free_at[p];
                next[p]++;
                progress = 1;
            }
    }
    static const char op_char[] = { 'F', 'B', 'I', 'W' };
    const int width = (lay.V > 1 ? 6 : 4) + (M > 9) + (S > 9);
    fprintf(out, "  schedule (pp rank x time slot; F forward, B backward = 2 slots, I/W the split "
            "backward; the stage is given when a rank holds several):\n");
    for (int p = 0; p < lay.P && makespan <= 400; p++) {
        char *row = malloc((size_t)makespan * width + 1);
        if (!row) break;
        memset(row, ' ', (size_t)makespan * width);
        row[(size_t)makespan * width] = '\0';
        for (int k = 0; k < n_act[p]; k++) {
            const hp_pp_action *a = &act[(size_t)p * cap + k];
            const int t = start[(size_t)p * cap + k], dur = a->op == HP_PP_B ? 2 : 1;
            char cell[16];
            if (lay.V > 1) snprintf(cell, sizeof cell, "%c%d.%d", op_char[a->op], a->mb, a->stage);
            else snprintf(cell, sizeof cell, "%c%d", op_char[a->op], a->mb);
            for (int u = 0; u < dur; u++)
                memcpy(row + (size_t)(t + u) * width, u ? "  ..  " : cell,
                       strlen(u ? ".." : cell) < (size_t)width ? strlen(u ? ".." : cell) : (size_t)width - 1);
        }
        fprintf(out, "  rank %2d |%s|\n", p, row);
        free(row);
    }
    fprintf(out, "  ideal bubble: %.3f of each rank's time idle (%d slots)\n", bubble, makespan);
done:
    free(act); free(n_act); free(next); free(free_at); free(f_end); free(i_end); free(start);
}
