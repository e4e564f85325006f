// 08_pipeline - pipeline parallel on the public API: the stages a schedule lays out, a few
// training steps with each pp rank's idle fraction, and the verifier against one process.
//
//   mpiexec -n 2 ./example_08_pipeline              # pp 2, 1f1b, 4 microbatches, tiny deepened to 4 blocks
//   mpiexec -n 2 ./example_08_pipeline zbv 4        # zero-bubble V: the backward split into I and W
//   mpiexec -n 4 ./example_08_pipeline gpipe 8      # pp 4 when started on 4 ranks
// Exit codes: 0 trained and verified, 1 verification failed, 2 bad layout.
#include <stdio.h>
#include <stdlib.h>
#include <mpi.h>
#include <hyperpar/dims.h>
#include <hyperpar/pipeline.h>
#include <hyperpar/train.h>
#include <hyperpar/verify.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, world;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    hp_model_config model;
    hp_model_config_by_name("tiny", &model);
    model.n_layers = 4;                         // what --layers 4 does: one more block per stage
    hp_run_config run;
    hp_run_config_default(&run);
    run.steps = 3;
    run.microbatches = argc > 2 ? atoi(argv[2]) : 4;

    // every rank a pipeline stage: pp = world, the schedule from the command line
    hp_dims dims = hp_dims_default();
    dims.pp = world;
    dims.dp_shard = 1;
    dims.pp_schedule = hp_pp_schedule_parse(argc > 1 ? argv[1] : "1f1b");
    dims.world = world;
    char err[256];
    if (dims.pp_schedule < 0 || hp_dims_validate(&dims, &model, &run, err, sizeof err) != 0) {
        if (rank == 0) fprintf(stderr, "08_pipeline: %s\n", dims.pp_schedule < 0 ? "unknown schedule" : err);
        MPI_Finalize();
        return HP_EXIT_CONFIG;
    }
    hp_pp_layout lay;
    hp_pp_layout_init(&lay, &dims, model.n_layers);
    if (rank == 0) {
        printf("08_pipeline: %s, pp %d, %d microbatches, ideal bubble %.3f\n",
               hp_pp_schedule_name(dims.pp_schedule), dims.pp, run.microbatches,
               hp_pp_ideal_bubble(&lay, run.microbatches));
        for (int s = 0; s < lay.n_stages; s++)
            printf("  stage %d on pp rank %d: blocks %d..%d\n", s, lay.stage_rank[s],
                   lay.stage_first[s], lay.stage_first[s] + lay.stage_layers[s] - 1);
    }

    hp_trainer *tr = hp_trainer_init(MPI_COMM_WORLD, &model, &dims, &run, err, sizeof err);
    if (!tr) {
        if (rank == 0) fprintf(stderr, "08_pipeline: %s\n", err);
        MPI_Finalize();
        return HP_EXIT_CONFIG;
    }
    int rc = HP_EXIT_OK;
    for (int i = 0; i < run.steps && rc == HP_EXIT_OK; i++) {
        hp_step_stats st;
        rc = hp_trainer_step(tr, &st);   // the loss comes from the last stage, the same on all
        if (rank == 0) printf("step %d | loss %.6f | grad norm %.4f\n", st.step, st.loss, st.grad_norm);
    }
    printf("  pp rank %d: idle %.3f of the last step, %d microbatches in flight\n", rank,
           hp_trainer_pp_idle(tr), hp_trainer_pp_slots(tr));
    hp_trainer_free(tr);

    const int vrc = hp_verify_summary(MPI_COMM_WORLD, &model, &dims, &run, stdout);
    MPI_Finalize();
    return rc != HP_EXIT_OK ? rc : vrc;
}
