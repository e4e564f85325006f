// 04_transformer_fsdp_cp - context parallel on the `tiny` transformer (recipe M5: A-CP, B-3):
// every sequence is cut over the cp ranks, load-balanced for causal attention (cp rank i holds
// chunk i and chunk 2C-1-i of 2C), and attention meets the other ranks' keys by all-gathering
// K/V (TorchTitan's default) or rotating them around a ring, merging partial results by
// log-sum-exp. FSDP2 shards the parameters over fsdp = dp_shard*cp: the cp ranks hold other
// tokens of the same sequences, so they share the parameters' shards.
//
//   mpiexec -n 2 ./example_04_transformer_fsdp_cp                          # cp 2 (M5-s1)
//   mpiexec -n 4 ./example_04_transformer_fsdp_cp --cp-rotate ring            # cp 2 x dp_shard 2
//   mpiexec -n 4 ./example_04_transformer_fsdp_cp --cp 4 --seq-len 64
// Flags: --cp C (default 2 on an even world, else 1), --dp-shard S (default: the rest),
// --cp-rotate allgather|ring, --seq-len N (2*cp must divide it). Exit: 0 verified, 1 failed, 2 bad layout.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <mpi.h>
#include <hyperpar/cp.h>
#include <hyperpar/dims.h>
#include <hyperpar/inspect.h>
#include <hyperpar/train.h>
#include <hyperpar/verify.h>

int main(int argc, char **argv) {
    hp_run_config run;
    hp_run_config_default(&run);   // seq_len 32: 2C chunks of 32/(2C) tokens
    run.steps = 3;
    MPI_Init(&argc, &argv);
    int rank, world;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    run.batch = 2 * world;
    hp_dims dims = hp_dims_default();   // cp 2 where it fits, dp_shard the rest
    dims.cp = world % 2 == 0 ? 2 : 1;
    dims.world = world;
    hp_model_config model;
    hp_model_config_by_name("tiny", &model);

    char err[256] = "";
    for (int i = 1, n = 1; i < argc && !*err; i += n)   // --cp, --cp-rotate, --seq-len, ...
        if ((n = hp_layout_flag(&dims, &run, argv[i], i + 1 < argc ? argv[i + 1] : NULL)) <= 0)
            snprintf(err, sizeof err, "bad flag '%s' (--cp C --dp-shard S --cp-rotate allgather|ring "
                     "--seq-len N --cp-no-balance, or another of hp run's layout flags)", argv[i]);
    if (!*err) hp_dims_validate(&dims, &model, &run, err, sizeof err);   // 2*cp*tp | seq_len, ...
    hp_trainer *tr = *err ? NULL : hp_trainer_init(MPI_COMM_WORLD, &model, &dims, &run, err, sizeof err);
    if (!tr) {
        if (rank == 0) fprintf(stderr, "04_transformer_fsdp_cp: %s\n", err);
        MPI_Finalize();
        return HP_EXIT_CONFIG;
    }

    // The mesh and the sequence split: which global positions each cp rank's tokens have.
    const int S = run.seq_len, C = dims.cp, half = S / (2 * C);
    if (rank == 0) {
        hp_print_dims(stdout, &dims);
        hp_print_groups(stdout, &dims, HP_G_CP);     // the ranks splitting one sequence
        hp_print_groups(stdout, &dims, HP_G_FSDP);   // dp_shard x cp: one shard group
        printf("%d tokens a sequence, K/V by %s:\n", S, run.cp_rotate == HP_ROTATE_RING ? "ring" : "all-gather");
        int *pos = malloc(sizeof(int) * (size_t)(S / C));
        for (int c = 0; pos && c < C; c++) {
            hp_cp_positions(pos, S, C, c, run.cp_load_balance);
            printf("  cp rank %d: positions %d..%d and %d..%d\n", c, pos[0], pos[half - 1], pos[half],
                   pos[2 * half - 1]);
        }
        free(pos);
    }

    int rc = HP_EXIT_OK;
    for (int step = 1; step <= run.steps && rc == HP_EXIT_OK; step++) {
        hp_step_stats st;
        rc = hp_trainer_step(tr, &st);   // the loss: summed over every cp rank's tokens / N_global
        if (rank == 0) printf("step %d | loss %.6f | %.0f tokens/s\n", st.step, st.loss, st.tokens_per_s);
    }
    // wk is column-parallel (tp) and FSDP-sharded over dp_shard*cp: here, cp alone shards it.
    hp_print_param_placement(tr, "layers.0.attention.wk.weight", stdout);
    hp_trainer_free(tr);

    rc = rc != HP_EXIT_OK ? rc : hp_verify_summary(MPI_COMM_WORLD, &model, &dims, &run, stdout);
    MPI_Finalize();
    return rc;
}
