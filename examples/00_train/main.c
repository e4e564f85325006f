// 00_train - the smallest complete training program on hyperpar's public API: the `tiny`
// Llama-style transformer with FSDP2 over every rank it is started on, on batches it builds
// itself (a short text's bytes) and hands to the trainer each step, logged as `hp run` logs.
//
//   mpicc main.c $(pkg-config --cflags --libs hyperpar) -o train
//   mpiexec -n 4 ./train [DIR]    # any number of ranks: dp_shard = world; DIR: metrics.jsonl, loss.svg
//
// Rank 0 prints TorchTitan's step line (docs/metrics.md), e.g.
//   step:  1  loss:  5.8303  grad_norm:  1.3351  lr: 1.0e-03  memory: ...  tps: ...
// Exit codes: 0 trained, 1 a step failed (non-finite loss), 2 the layout or a batch is illegal.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <mpi.h>
#include <hyperpar/dims.h>
#include <hyperpar/job.h>
#include <hyperpar/metrics.h>
#include <hyperpar/train.h>

static const char text[] = "It was the best of times, it was the worst of times, it was the age of wisdom, "
                           "it was the age of foolishness, it was the epoch of belief, it was the epoch of "
                           "incredulity, it was the season of Light, it was the season of Darkness. ";

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, world;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world);

    // The job, as a TOML job file would give it (job.h): hp run's defaults, the tiny model
    // (V 256, D 64, 2 layers: a byte is a token), AdamW with 2 warm-up steps.
    hp_job job;
    hp_job_defaults(&job);
    job.run.steps = 5;
    job.run.batch = 2 * world;        // every data-parallel rank gets two whole sequences
    job.run.optimizer = HP_OPT_ADAMW;
    job.run.lr = 2e-3f;
    job.run.warmup_steps = 2;         // lr 1e-3, 2e-3, 2e-3, ...
    job.dump_folder = argc > 1 ? argv[1] : NULL;
    job.dims.world = world;           // dp_shard = -1: inferred, FSDP2 over all ranks
    char err[512];
    hp_trainer *tr = NULL;
    if (hp_job_resolve(&job) != 0 || hp_dims_validate(&job.dims, &job.model, &job.run, err, sizeof err) != 0 ||
        !(tr = hp_trainer_init(MPI_COMM_WORLD, &job.model, &job.dims, &job.run, err, sizeof err))) {
        if (rank == 0) fprintf(stderr, "00_train: %s\n", err);
        MPI_Finalize();
        return HP_EXIT_CONFIG;
    }
    hp_validation val;                // (off: validation.enable is not set)
    hp_validation_open(&val, &job, rank == 0);
    hp_metrics *mt = hp_metrics_open(&job, tr, &val, 1, 1, MPI_COMM_WORLD);

    // The global batch, the same on every rank (each takes its own shard): row g of step k is
    // seq_len + 1 bytes of the text from window (k-1)*B + g on; inputs [0, S), labels [1, S].
    const int B = job.run.batch, S = job.run.seq_len, n = (int)strlen(text);
    int32_t *ids = malloc((size_t)B * (S + 1) * sizeof *ids);
    int rc = ids && mt ? HP_EXIT_OK : HP_EXIT_FAIL;
    for (int k = 1; k <= job.run.steps && rc == HP_EXIT_OK; k++) {
        for (int g = 0; g < B; g++)
            for (int i = 0; i <= S; i++)
                ids[g * (S + 1) + i] = (unsigned char)text[((size_t)((k - 1) * B + g) * (S + 1) + i) % n];
        hp_batch batch = { .tokens = ids, .n_seqs = B, .seq_len = S };
        hp_step_stats st;   // forward + backward, reduce-scatter, clipping, optimiser on shards
        rc = hp_trainer_step_batch(tr, &batch, &st, err, sizeof err);
        if (rc == HP_EXIT_CONFIG && rank == 0) fprintf(stderr, "00_train: %s\n", err);
        if (rc == HP_EXIT_OK) hp_metrics_step(mt, &st, st.ms * 1e-3, 0);   // the line, metrics.jsonl
    }
    if (mt && hp_metrics_close(mt) != 0 && rc == HP_EXIT_OK) rc = HP_EXIT_FAIL;
    hp_validation_close(&val);
    free(ids);
    hp_trainer_free(tr);
    MPI_Finalize();
    return rc;
}
