// 00_train - the smallest complete training program on hyperpar's public API: it trains the
// `tiny` Llama-style transformer for a few steps with FSDP2 over every rank it is started on.
//
//   mpicc main.c $(pkg-config --cflags --libs hyperpar) -o train
//   mpiexec -n 4 ./train          # any number of ranks: dp_shard = world
//
// Rank 0 prints one line per step: "step 1 | loss 5.545... | grad norm 0.8...".
// Exit codes: 0 trained, 1 a step failed (non-finite loss), 2 the layout is illegal.
#include <stdio.h>
#include <mpi.h>
#include <hyperpar/dims.h>
#include <hyperpar/train.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, world;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world);

    // The model (docs/model.md's `tiny`: V 256, D 64, 2 layers) and the run's settings.
    hp_model_config model;
    hp_model_config_by_name("tiny", &model);
    hp_run_config run;
    hp_run_config_default(&run);   // seq_len 32, SGD, synthetic data, seed 1234
    run.steps = 5;
    run.batch = 2 * world;         // every data-parallel rank gets two whole sequences

    // The layout: every degree 1 except dp_shard, which hp_dims_validate infers from the
    // world size (-1 = infer), so this is FSDP2 sharding every parameter over all ranks.
    // Validation checks every rule (degrees, model sizes, batch split) and names the one broken.
    hp_dims dims = hp_dims_default();
    dims.world = world;
    char err[256];
    if (hp_dims_validate(&dims, &model, &run, err, sizeof err) != 0) {
        if (rank == 0) fprintf(stderr, "00_train: %s\n", err);
        MPI_Finalize();
        return HP_EXIT_CONFIG;
    }

    // Collective: builds the mesh's communicators, shards the parameters, allocates buffers.
    hp_trainer *tr = hp_trainer_init(MPI_COMM_WORLD, &model, &dims, &run, err, sizeof err);
    if (!tr) {
        if (rank == 0) fprintf(stderr, "00_train: %s\n", err);
        MPI_Finalize();
        return HP_EXIT_CONFIG;
    }
    if (rank == 0) printf("00_train: tiny on %d ranks, dp_shard = %d\n", world, dims.dp_shard);

    // One step = forward + backward, gradient reduce-scatter, clipping, optimiser on shards.
    // The loss is the global mean over the whole batch, the same number on every rank.
    int rc = HP_EXIT_OK;
    for (int i = 0; i < run.steps && rc == HP_EXIT_OK; i++) {
        hp_step_stats st;
        rc = hp_trainer_step(tr, &st);
        if (rank == 0)
            printf("step %d | loss %.6f | grad norm %.4f | %.1f ms\n", st.step, st.loss,
                   st.grad_norm, st.ms);
    }

    hp_trainer_free(tr);
    MPI_Finalize();
    return rc;
}
