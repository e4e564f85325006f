// 03_mini_transformer_fsdp_tp - FSDP2 x tensor parallel (+ sequence parallel) on the Llama-style
// `tiny` transformer, the C twin of PyTorch's fsdp_tp_example.py. TorchTitan's order: wq/wk/wv
// and w1/w3 split column-wise over tp, wo and w2 row-wise, the norms' activations sharded by
// tokens (SP); each tp-local piece is then sharded again over fsdp = dp_shard*cp (FSDP2), and
// dp_replicate adds HSDP replicas. Recipes M1, M4, B1, B2, B4, M6, M7.
//
//   mpiexec -n 4 ./example_03_mini_transformer_fsdp_tp                   # tp 2 x dp_shard 2 (B2)
//   mpiexec -n 4 ./example_03_mini_transformer_fsdp_tp --no-sp           # B1: TP without SP
//   mpiexec -n 8 ./example_03_mini_transformer_fsdp_tp --cp 2            # M6: (1,2,2,2)
//   mpiexec -n 8 ./example_03_mini_transformer_fsdp_tp --dp-replicate 2  # M7: HSDP x TP
// Flags: --tp T (default 2 on an even world, else 1), --dp-replicate R, --dp-shard S (default:
// the rest of the world), --cp C, --no-sp, --cp-rotate allgather|ring (K/V under cp > 1).
// Exit: 0 verified, 1 verification failed, 2 bad layout.
#include <stdio.h>
#include <string.h>
#include <mpi.h>
#include <hyperpar/dims.h>
#include <hyperpar/inspect.h>
#include <hyperpar/train.h>
#include <hyperpar/verify.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, world;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world);

    // The degrees: tp 2 where it fits, dp_shard -1 = whatever the world leaves (FSDP2).
    // Sequence parallel defaults to on whenever tp > 1 (TorchTitan's default).
    hp_dims dims = hp_dims_default();
    dims.tp = world % 2 == 0 ? 2 : 1;
    dims.world = world;
    hp_model_config model;
    hp_model_config_by_name("tiny", &model);   // D 64, 8 query heads, 4 kv heads, FFN 128
    hp_run_config run;
    hp_run_config_default(&run);
    run.steps = 3;
    run.batch = 2 * world;   // R*S divides the world, so it divides this batch too
    char err[256] = "";
    for (int i = 1, n = 1; i < argc && !*err; i += n) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if ((n = hp_layout_flag(&dims, &run, argv[i], v)) <= 0)   // degrees, --cp-rotate, ...
            snprintf(err, sizeof err, "bad flag '%s' (--tp T --dp-replicate R --dp-shard S --cp C --no-sp "
                     "--cp-rotate allgather|ring, or another of hp run's layout flags)", argv[i]);
    }
    if (!*err) hp_dims_validate(&dims, &model, &run, err, sizeof err);   // one line naming the rule
    if (!*err && rank == 0) {
        hp_print_dims(stdout, &dims);
        hp_print_groups(stdout, &dims, HP_G_TP);            // the colwise/rowwise splits
        hp_print_groups(stdout, &dims, HP_G_FSDP);          // who shards each tp-local piece
        if (dims.cp > 1) hp_print_groups(stdout, &dims, HP_G_CP);
        if (dims.dp_replicate > 1) hp_print_groups(stdout, &dims, HP_G_DP_REPLICATE);
    }

    // The trainer builds one communicator per group and shards every parameter by the table.
    hp_trainer *tr = *err ? NULL : hp_trainer_init(MPI_COMM_WORLD, &model, &dims, &run, err, sizeof err);
    if (!tr) {
        if (rank == 0) fprintf(stderr, "03_mini_transformer_fsdp_tp: %s\n", err);
        MPI_Finalize();
        return HP_EXIT_CONFIG;
    }
    int rc = HP_EXIT_OK;
    for (int i = 0; i < run.steps && rc == HP_EXIT_OK; i++) {
        hp_step_stats st;
        rc = hp_trainer_step(tr, &st);   // all-gather units, forward, backward, reduce-scatter, SGD
        if (rank == 0) printf("step %d | loss %.6f | grad norm %.4f\n", st.step, st.loss, st.grad_norm);
    }

    // wq is Shard(0) on tp (column-wise: its output features) and Shard(0) again on fsdp.
    hp_print_param_placement(tr, "layers.0.attention.wq.weight", stdout);
    hp_trainer_free(tr);

    // The proof: the same job on one process; loss, every gradient and parameter, the bytes.
    if (rc == HP_EXIT_OK) rc = hp_verify_summary(MPI_COMM_WORLD, &model, &dims, &run, stdout);
    MPI_Finalize();
    return rc;
}
