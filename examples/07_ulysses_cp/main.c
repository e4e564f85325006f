// 07_ulysses_cp - Ulysses sequence parallel, alone or as 2-D Ulysses x ring attention, on the
// public API: build the layout, train a few steps, look at one sharded parameter, verify.
//
// Names: VeOmni <-> TorchTitan <-> hyperpar
//   ulysses_size (sequence parallel)  ->  (none in TorchTitan)          ->  dims.ulysses, --ulysses
//   context parallel / ring           ->  context_parallel_degree (cp)  ->  dims.cp, --cp
//   include_sp_in_fsdp                ->  fsdp over dp_shard x cp       ->  fsdp = dp_shard*ulysses*cp
//   sp group all-to-all               ->  (none)                        ->  group "ulysses"
//
//   mpiexec -n 4 ./example_07_ulysses_cp               # ulysses 2 x cp 2 (ring attention inside)
//   mpiexec -n 8 ./example_07_ulysses_cp 8 1           # ulysses 8 > 4 kv heads: kv repeated x2
// Exit codes: 0 trained and verified, 1 verification failed, 2 bad layout.
#include <stdio.h>
#include <stdlib.h>
#include <mpi.h>
#include <hyperpar/dims.h>
#include <hyperpar/mesh.h>
#include <hyperpar/train.h>
#include <hyperpar/ulysses.h>
#include <hyperpar/verify.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, world;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    hp_model_config model;
    hp_model_config_by_name("tiny", &model);   // 8 query heads, 4 kv heads, D 64
    hp_run_config run;
    hp_run_config_default(&run);
    run.steps = 3;
    run.cp_rotate = HP_ROTATE_RING;

    // ulysses U and cp C from the command line (default 2 x 2); dp_shard takes the rest
    hp_dims dims = hp_dims_default();
    dims.ulysses = argc > 1 ? atoi(argv[1]) : 2;
    dims.cp = argc > 2 ? atoi(argv[2]) : 2;
    dims.world = world;
    char err[256];
    if (hp_dims_validate(&dims, &model, &run, err, sizeof err) != 0) {
        if (rank == 0) fprintf(stderr, "07_ulysses_cp: %s\n", err);
        MPI_Finalize();
        return HP_EXIT_CONFIG;
    }
    const int kv_t = model.n_kv_heads / dims.tp;
    if (rank == 0) {
        printf("07_ulysses_cp: ulysses %d x cp %d x dp_shard %d on %d ranks\n", dims.ulysses,
               dims.cp, dims.dp_shard, world);
        printf("  each rank holds %d of %d tokens; attention runs on %d query heads over %d tokens;"
               " kv heads repeated x%d\n", run.seq_len / (dims.cp * dims.ulysses), run.seq_len,
               model.n_heads / (dims.tp * dims.ulysses), run.seq_len / dims.cp,
               hp_ulysses_kv_repeat(kv_t, dims.ulysses));
        int members[64], me;
        const int n = hp_mesh_group(&dims, HP_G_ULYSSES, 0, members, &me);
        printf("  rank 0's ulysses group:");
        for (int i = 0; i < n; i++) printf(" %d", members[i]);
        printf("\n");
    }

    // train a few steps: the loss is the same number on every rank
    hp_trainer *tr = hp_trainer_init(MPI_COMM_WORLD, &model, &dims, &run, err, sizeof err);
    if (!tr) {
        if (rank == 0) fprintf(stderr, "07_ulysses_cp: %s\n", err);
        MPI_Finalize();
        return HP_EXIT_CONFIG;
    }
    int rc = HP_EXIT_OK;
    for (int i = 0; i < run.steps && rc == HP_EXIT_OK; i++) {
        hp_step_stats st;
        rc = hp_trainer_step(tr, &st);
        if (rank == 0) printf("step %d | loss %.6f | grad norm %.4f\n", st.step, st.loss, st.grad_norm);
    }

    // one parameter: FSDP shards it over dp_shard*ulysses*cp; gathered, it is the full tensor
    const hp_param_table *t = hp_trainer_params(tr);
    const int wq = hp_params_find(t, "layers.0.attention.wq.weight");
    float *full = rank == 0 ? malloc((size_t)t->full_numel * sizeof(float)) : NULL;
    hp_trainer_gather_params(tr, full);
    if (rank == 0 && wq >= 0)
        printf("  layers.0.attention.wq.weight [%lld, %lld]: rank 0 keeps %lld of its rows; "
               "gathered [0][0] = %.6f\n", (long long)t->p[wq].shape[0], (long long)t->p[wq].shape[1],
               (long long)t->p[wq].shard_rows, full[t->p[wq].full_offset]);
    free(full);
    hp_trainer_free(tr);

    // the verifier: the same step on one process, every gradient and parameter compared
    const int vrc = hp_verify_summary(MPI_COMM_WORLD, &model, &dims, &run, stdout);
    MPI_Finalize();
    return rc != HP_EXIT_OK ? rc : vrc;
}
