// 08_pipeline - pipeline parallel on the `tiny` transformer deepened to 4 blocks: recipes
// P1-P10, C4, C5 (with the other degrees; `tiny-moe` for P9, P10, C5). The blocks are cut into
// stages (stage 0 also holds the embeddings, the last one the norm and output head), each pp
// rank runs its stages, activations travel forward and their
// gradients backward between neighbours, and the schedule orders the microbatches: gpipe (all
// forwards, then all backwards), 1f1b, interleaved-1f1b (V stages a rank), or zbv (zero-bubble
// V: the backward split into input and weight parts). The loss comes from the last stage.
//
//   mpiexec -n 2 ./example_08_pipeline                               # pp 2, 1f1b, 4 microbatches
//   mpiexec -n 2 ./example_08_pipeline --pp-schedule zbv                # P4
//   mpiexec -n 2 ./example_08_pipeline --pp-schedule interleaved-1f1b   # P3: 2 stages a rank
//   mpiexec -n 4 ./example_08_pipeline --pp-schedule gpipe --pp-microbatches 8
// Flags: --pp-schedule S, --pp-microbatches M (default 4), --pp-virtual V, --model NAME (default
// tiny, always 4 blocks), --cp-rotate allgather|ring, the degrees (--pp, --dp-shard, --tp, --sp,
// ...; default pp = every rank, the other degrees 1).
// Exit: 0 verified, 1 verification failed, 2 bad layout.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <mpi.h>
#include <hyperpar/dims.h>
#include <hyperpar/inspect.h>
#include <hyperpar/pipeline.h>
#include <hyperpar/train.h>
#include <hyperpar/verify.h>

int main(int argc, char **argv) {
    hp_model_config model;
    hp_model_config_by_name("tiny", &model);
    model.n_layers = 4;                   // what --layers 4 does: enough blocks for 4 stages
    MPI_Init(&argc, &argv);
    int rank, world;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    hp_run_config run;
    hp_run_config_default(&run);          // batch 8: every microbatch 8/M sequences
    run.steps = 3;
    run.microbatches = 4;
    hp_dims dims = hp_dims_default();
    dims.pp = world;
    dims.dp_shard = 1;
    dims.world = world;
    dims.pp_schedule = hp_pp_schedule_parse("1f1b");

    char err[256] = "";
    for (int i = 1, n = 2; i < argc && !*err; i += n) {
        const char *v = i + 1 < argc ? argv[i + 1] : "";
        n = 2;
        if (!strcmp(argv[i], "--model") && !hp_model_config_by_name(v, &model)) model.n_layers = 4;
        else if ((n = hp_layout_flag(&dims, &run, argv[i], v)) <= 0)   // --pp-schedule, --pp, --tp, ...
            snprintf(err, sizeof err, "bad flag '%s %s' (--pp-schedule gpipe|1f1b|interleaved-1f1b|zbv "
                     "--pp-microbatches M --pp-virtual V --model NAME --cp-rotate allgather|ring, degrees)",
                     argv[i], v);
    }
    if (!*err) hp_dims_validate(&dims, &model, &run, err, sizeof err);   // L >= stages, M >= pp for zbv, ...
    if (*err) {
        if (rank == 0) fprintf(stderr, "08_pipeline: %s\n", err);
        MPI_Finalize();
        return HP_EXIT_CONFIG;
    }
    hp_pp_layout lay;
    hp_pp_layout_init(&lay, &dims, model.n_layers);
    if (rank == 0) {
        hp_print_dims(stdout, &dims);
        hp_print_groups(stdout, &dims, HP_G_PP);   // activations flow along these
        printf("%s, %d microbatches, ideal bubble %.3f\n", hp_pp_schedule_name(dims.pp_schedule),
               run.microbatches, hp_pp_ideal_bubble(&lay, run.microbatches));
        for (int s = 0; s < lay.n_stages; s++)
            printf("  stage %d on pp rank %d: blocks %d..%d\n", s, lay.stage_rank[s], lay.stage_first[s],
                   lay.stage_first[s] + lay.stage_layers[s] - 1);
    }

    hp_trainer *tr = hp_trainer_init(MPI_COMM_WORLD, &model, &dims, &run, err, sizeof err);
    if (!tr) {
        if (rank == 0) fprintf(stderr, "08_pipeline: %s\n", err);
        MPI_Finalize();
        return HP_EXIT_CONFIG;
    }
    int rc = HP_EXIT_OK;
    hp_step_stats st;
    for (int i = 0; i < run.steps && rc == HP_EXIT_OK; i++) {
        rc = hp_trainer_step(tr, &st);   // the loss is the last stage's, broadcast to every rank
        if (rank == 0)
            printf("step %d | loss %.6f | %.1f ms, pp rank 0 idle %.3f of it\n", st.step, st.loss, st.ms,
                   hp_trainer_pp_idle(tr));
    }
    // each pp rank waits on the others for part of the step: the bubble, measured
    double mine[2] = { hp_trainer_pp_idle(tr), hp_trainer_pp_slots(tr) };
    double *all = rank == 0 ? malloc(sizeof mine * (size_t)world) : NULL;   // rank 0 gathers
    MPI_Gather(mine, 2, MPI_DOUBLE, all, 2, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    for (int r = 0; all && r < world; r++)
        printf("  pp rank %d: idle %.3f of the last step, %.0f microbatches in flight\n", r, all[2 * r],
               all[2 * r + 1]);
    free(all);
    // the last block lives only on its stage's rank: the other ranks hold none of it
    char last[64];
    snprintf(last, sizeof last, "layers.%d.feed_forward.w1.weight", model.n_layers - 1);
    hp_print_param_placement(tr, last, stdout);
    hp_trainer_free(tr);

    const int vrc = hp_verify_summary(MPI_COMM_WORLD, &model, &dims, &run, stdout);
    MPI_Finalize();
    return rc != HP_EXIT_OK ? rc : vrc;
}
