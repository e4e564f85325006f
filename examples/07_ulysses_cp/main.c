// 07_ulysses_cp - Ulysses sequence parallel, alone or as 2-D Ulysses x ring attention (USP), on
// the `tiny` transformer (`tiny-moe` for U7): recipes U1-U7. A rank holds S/(U*C) tokens of a sequence with all the
// heads; around attention an all-to-all over the ulysses group trades heads for tokens (H/U
// query heads over all S/C cp-local tokens), the core runs (ring attention over cp when C > 1),
// and the reverse all-to-all brings each rank its own tokens back. With fewer kv heads than U,
// each kv head is repeated and its gradients summed. FSDP2 shards over dp_shard*ulysses*cp.
//
// Names: VeOmni <-> TorchTitan <-> hyperpar
//   ulysses_size (sequence parallel)  ->  (none in TorchTitan)          ->  dims.ulysses, --ulysses
//   context parallel / ring           ->  context_parallel_degree (cp)  ->  dims.cp, --cp
//   include_sp_in_fsdp                ->  fsdp over dp_shard x cp       ->  fsdp = dp_shard*ulysses*cp
//
//   mpiexec -n 4 ./example_07_ulysses_cp                       # ulysses 2 x cp 2 (U4)
//   mpiexec -n 2 ./example_07_ulysses_cp                       # ulysses 2 (U1)
//   mpiexec -n 8 ./example_07_ulysses_cp --ulysses 8 --cp 1    # U3: 8 > 4 kv heads, kv repeated x2
// Flags: --ulysses U (default 2 on an even world), --cp C (default 2 when 4 divides the world),
// --dp-shard S (default: the rest), the other degrees (--tp, --ep, ...), --model NAME (default
// tiny), --cp-rotate allgather|ring (default ring). Exit: 0 verified, 1 verification failed,
// 2 bad layout.
#include <stdio.h>
#include <string.h>
#include <mpi.h>
#include <hyperpar/dims.h>
#include <hyperpar/inspect.h>
#include <hyperpar/train.h>
#include <hyperpar/ulysses.h>
#include <hyperpar/verify.h>

int main(int argc, char **argv) {
    hp_dims dims = hp_dims_default();
    MPI_Init(&argc, &argv);
    int rank, world;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    dims.ulysses = world % 2 == 0 ? 2 : 1;   // ulysses 2 x cp 2 where they fit, dp_shard the rest
    dims.cp = world % 4 == 0 ? 2 : 1;
    dims.world = world;
    hp_model_config model;
    hp_model_config_by_name("tiny", &model);   // 8 query heads, 4 kv heads, D 64
    hp_run_config run;
    hp_run_config_default(&run);
    run.cp_rotate = HP_ROTATE_RING;            // ring attention inside each cp group (or --cp-rotate)
    run.steps = 3;
    run.batch = 2 * world;
    int bad = 0;   // the index of a flag that is not a degree, or a degree without a number
    for (int i = 1, n = 2; i < argc && !bad; i += n) {
        const char *v = argv[i + 1];   // argv[argc] is NULL
        n = 2;
        if (!strcmp(argv[i], "--model")) bad = hp_model_config_by_name(v, &model) ? i : 0;   // U7: tiny-moe
        else if ((n = hp_layout_flag(&dims, &run, argv[i], v)) <= 0) bad = i;   // degrees, --cp-rotate, ...
    }
    char err[256];
    if (bad) snprintf(err, sizeof err, "bad flag '%s' (--ulysses U --cp C --dp-shard S --model NAME "
                      "--cp-rotate allgather|ring)", argv[bad]);
    if (bad || hp_dims_validate(&dims, &model, &run, err, sizeof err) != 0) {   // U | heads, ...
        if (rank == 0) fprintf(stderr, "07_ulysses_cp: %s\n", err);
        MPI_Finalize();
        return HP_EXIT_CONFIG;
    }
    const int U = dims.ulysses, C = dims.cp, kv_t = model.n_kv_heads / dims.tp;
    if (rank == 0) {
        hp_print_dims(stdout, &dims);
        hp_print_groups(stdout, &dims, HP_G_ULYSSES);   // the all-to-alls around attention
        if (C > 1) hp_print_groups(stdout, &dims, HP_G_CP);
        printf("a rank holds %d of %d tokens; attention sees %d query heads over %d tokens; kv heads "
               "repeated x%d\n", run.seq_len / (U * C), run.seq_len, model.n_heads / (dims.tp * U),
               run.seq_len / C, hp_ulysses_kv_repeat(kv_t, U));
    }

    // the loss is the same number on every rank
    hp_trainer *tr = hp_trainer_init(MPI_COMM_WORLD, &model, &dims, &run, err, sizeof err);
    int rc = tr ? HP_EXIT_OK : HP_EXIT_CONFIG;
    if (!tr && rank == 0) fprintf(stderr, "07_ulysses_cp: %s\n", err);
    for (int step = 0; tr && rc == HP_EXIT_OK && step < run.steps; step++) {
        hp_step_stats st;
        rc = hp_trainer_step(tr, &st);
        if (rank == 0) printf("step %d | loss %.6f | %.1f ms\n", st.step, st.loss, st.ms);
    }
    if (!tr) {
        MPI_Finalize();
        return rc;
    }
    // FSDP shards wq over dp_shard*ulysses*cp: the sequence ranks share the parameters
    hp_print_param_placement(tr, "layers.0.attention.wq.weight", stdout);
    hp_trainer_free(tr);

    // the verifier: the same step on one process, every gradient and parameter compared
    const int vrc = hp_verify_summary(MPI_COMM_WORLD, &model, &dims, &run, stdout);
    MPI_Finalize();
    return rc != HP_EXIT_OK ? rc : vrc;
}
