// 00_train - the smallest complete training program on hyperpar's public API: it trains the
// `tiny` Llama-style transformer with FSDP2 over every rank it is started on, on batches it
// builds itself (a short text's bytes) and hands to the trainer each step.
//
//   mpicc main.c $(pkg-config --cflags --libs hyperpar) -o train
//   mpiexec -n 4 ./train          # any number of ranks: dp_shard = world
//
// Rank 0 prints one line per step:
//   step 1 | loss 5.830254 | grad norm 1.3351 | lr 1.0e-03 | 7.3 ms
// Exit codes: 0 trained, 1 a step failed (non-finite loss), 2 the layout or a batch is illegal.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <mpi.h>
#include <hyperpar/dims.h>
#include <hyperpar/train.h>

static const char text[] = "It was the best of times, it was the worst of times, it was the age of wisdom, "
                           "it was the age of foolishness, it was the epoch of belief, it was the epoch of "
                           "incredulity, it was the season of Light, it was the season of Darkness. ";

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, world;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world);

    // The model (docs/model.md's `tiny`: V 256, D 64, 2 layers: a byte is a token) and the run.
    hp_model_config model;
    hp_model_config_by_name("tiny", &model);
    hp_run_config run;
    hp_run_config_default(&run);   // seq_len 32, seed 1234
    run.steps = 5;
    run.batch = 2 * world;         // every data-parallel rank gets two whole sequences
    run.optimizer = HP_OPT_ADAMW;
    run.lr = 2e-3f;
    run.warmup_steps = 2;          // lr 1e-3, 2e-3, 2e-3, ...

    // The layout: dp_shard = -1 is inferred from the world size (FSDP2 over all ranks).
    hp_dims dims = hp_dims_default();
    dims.world = world;
    char err[512];
    hp_trainer *tr = NULL;
    if (hp_dims_validate(&dims, &model, &run, err, sizeof err) != 0 ||
        !(tr = hp_trainer_init(MPI_COMM_WORLD, &model, &dims, &run, err, sizeof err))) {
        if (rank == 0) fprintf(stderr, "00_train: %s\n", err);
        MPI_Finalize();
        return HP_EXIT_CONFIG;
    }
    if (rank == 0) printf("00_train: tiny on %d ranks, dp_shard = %d\n", world, dims.dp_shard);

    // The global batch, the same on every rank (each takes its own shard): row g of step k is
    // seq_len + 1 bytes of the text from window (k-1)*B + g on; inputs [0, S), labels [1, S].
    const int B = run.batch, S = run.seq_len, n = (int)strlen(text);
    int32_t *ids = malloc((size_t)B * (S + 1) * sizeof *ids);
    int rc = ids ? HP_EXIT_OK : HP_EXIT_FAIL;
    for (int k = 1; k <= run.steps && rc == HP_EXIT_OK; k++) {
        for (int g = 0; g < B; g++)
            for (int i = 0; i <= S; i++)
                ids[g * (S + 1) + i] = (unsigned char)text[((size_t)((k - 1) * B + g) * (S + 1) + i) % n];
        hp_batch batch = { .tokens = ids, .n_seqs = B, .seq_len = S };
        hp_step_stats st;   // forward + backward, reduce-scatter, clipping, optimiser on shards
        rc = hp_trainer_step_batch(tr, &batch, &st, err, sizeof err);
        if (rc == HP_EXIT_CONFIG && rank == 0) fprintf(stderr, "00_train: %s\n", err);
        else if (rank == 0)   // the loss: the global mean over the whole batch, alike on every rank
            printf("step %d | loss %.6f | grad norm %.4f | lr %.1e | %.1f ms\n", st.step, st.loss,
                   st.grad_norm, st.lr, st.ms);
    }

    free(ids);
    hp_trainer_free(tr);
    MPI_Finalize();
    return rc;
}
