// test_pipeline.c - the pipeline layout and schedules (pipeline.h), without MPI: for every
// schedule and a range of P, V, M and L, each stage's layers tile the model, every (stage,
// microbatch) gets exactly one forward and one backward (I and W under zbv) on its own pp
// rank, each stage's backwards run in ascending microbatch order, and the action lists of all
// ranks together never deadlock (hp_pp_ideal_bubble simulates them). Prints the ideal bubbles.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "hyperpar/pipeline.h"
#include "test_check.h"


static void check_schedule(int schedule, int P, int V, int M, int L) {
    hp_dims d = hp_dims_default();
    d.pp = P;
    d.pp_schedule = schedule;
    d.pp_virtual = V;
    hp_pp_layout lay;
    CHECK(hp_pp_layout_init(&lay, &d, L) == 0, "layout %s P%d V%d", hp_pp_schedule_name(schedule), P, V);
    const int S = lay.n_stages;
    int covered = 0;
    for (int s = 0; s < S; s++) {
        CHECK(lay.stage_first[s] == covered, "stage %d starts at %d, want %d", s, lay.stage_first[s], covered);
        covered += lay.stage_layers[s];
        CHECK(lay.stage_layers[s] >= 1, "stage %d is empty", s);
    }
    CHECK(covered == L, "stages cover %d of %d layers", covered, L);
    int *seen = calloc((size_t)S * M * 4, sizeof(int)), *last_b = malloc((size_t)S * sizeof(int));
    int *last_w = malloc((size_t)S * sizeof(int));
    for (int s = 0; s < S; s++) last_b[s] = last_w[s] = -1;
    hp_pp_action *act = malloc((size_t)(3 * V * M + 4) * sizeof *act);
    for (int p = 0; p < P; p++) {
        const int n = hp_pp_schedule_build(&lay, M, p, act);
        CHECK(n > 0, "%s P%d V%d M%d: rank %d has no schedule (%d)", hp_pp_schedule_name(schedule), P, V, M, p, n);
        for (int a = 0; a < n; a++) {
            const int s = act[a].stage, j = act[a].mb, op = act[a].op;
            CHECK(lay.stage_rank[s] == p, "action on stage %d runs on rank %d, not %d", s, p, lay.stage_rank[s]);
            seen[((size_t)s * M + j) * 4 + op]++;
            if (op == HP_PP_B || op == HP_PP_I) {
                CHECK(j == last_b[s] + 1, "%s: stage %d backward of microbatch %d after %d",
                      hp_pp_schedule_name(schedule), s, j, last_b[s]);
                last_b[s] = j;
            }
            if (op == HP_PP_W) {
                CHECK(j == last_w[s] + 1, "stage %d W of microbatch %d after %d", s, j, last_w[s]);
                last_w[s] = j;
            }
        }
    }
    for (int s = 0; s < S; s++)
        for (int j = 0; j < M; j++) {
            const int *c = &seen[((size_t)s * M + j) * 4];
            CHECK(c[HP_PP_F] == 1, "stage %d mb %d: %d forwards", s, j, c[HP_PP_F]);
            if (schedule == HP_PP_ZBV)
                CHECK(c[HP_PP_I] == 1 && c[HP_PP_W] == 1 && c[HP_PP_B] == 0, "stage %d mb %d: I %d W %d B %d",
                      s, j, c[HP_PP_I], c[HP_PP_W], c[HP_PP_B]);
            else
                CHECK(c[HP_PP_B] == 1, "stage %d mb %d: %d backwards", s, j, c[HP_PP_B]);
        }
    const double bubble = hp_pp_ideal_bubble(&lay, M);
    CHECK(bubble >= 0 && bubble < 1, "%s P%d V%d M%d: the lists deadlock (bubble %g)",
          hp_pp_schedule_name(schedule), P, V, M, bubble);
    free(seen); free(last_b); free(last_w); free(act);
}

int main(void) {
    const struct { int schedule, V; } kinds[] = {
        { HP_PP_GPIPE, 1 }, { HP_PP_1F1B, 1 }, { HP_PP_INTERLEAVED_1F1B, 2 },
        { HP_PP_INTERLEAVED_1F1B, 3 }, { HP_PP_ZBV, 2 },
    };
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
        for (int P = 2; P <= 8; P *= 2)
            for (int M = 1; M <= 16; M++) {
                if (kinds[k].schedule == HP_PP_INTERLEAVED_1F1B && M % P) continue;
                if (kinds[k].schedule == HP_PP_ZBV && M < P) continue;
                for (int extra = 0; extra <= 3; extra++)
                    check_schedule(kinds[k].schedule, P, kinds[k].V, M, P * kinds[k].V + extra);
            }
    // the placement rules of pipeline.md
    hp_dims d = hp_dims_default();
    d.pp = 4; d.pp_schedule = HP_PP_ZBV; d.pp_virtual = 2;
    hp_pp_layout lay;
    hp_pp_layout_init(&lay, &d, 9);
    const int want_rank[8] = { 0, 1, 2, 3, 3, 2, 1, 0 }, want_layers[8] = { 2, 1, 1, 1, 1, 1, 1, 1 };
    for (int s = 0; s < 8; s++) {
        CHECK(lay.stage_rank[s] == want_rank[s], "zbv stage %d on rank %d, want %d", s, lay.stage_rank[s], want_rank[s]);
        CHECK(lay.stage_layers[s] == want_layers[s], "stage %d has %d layers, want %d", s, lay.stage_layers[s], want_layers[s]);
    }
    d.pp_schedule = HP_PP_INTERLEAVED_1F1B;
    hp_pp_layout_init(&lay, &d, 8);
    for (int s = 0; s < 8; s++) CHECK(lay.stage_rank[s] == s % 4, "loop stage %d on rank %d", s, lay.stage_rank[s]);
    // the ideal bubbles the note quotes
    printf("ideal bubble (F = 1, B = 2, I = W = 1):\n");
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
        for (int P = 2; P <= 4; P *= 2) {
            hp_dims e = hp_dims_default();
            e.pp = P; e.pp_schedule = kinds[k].schedule; e.pp_virtual = kinds[k].V;
            hp_pp_layout l2;
            hp_pp_layout_init(&l2, &e, 2 * P * kinds[k].V);
            const int M = 2 * P;
            printf("  %-17s V %d  P %d  M %2d: %.3f\n", hp_pp_schedule_name(kinds[k].schedule), kinds[k].V,
                   P, M, hp_pp_ideal_bubble(&l2, M));
        }
    return test_summary("test_pipeline");
}
