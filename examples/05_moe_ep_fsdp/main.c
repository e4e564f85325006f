// 05_moe_ep_fsdp - expert parallel with dual-stack FSDP2 on the `tiny-moe` transformer (8
// experts, top 2): recipes S1 (B-6), A-EP and S3. The experts of every MoE layer are split over
// the ep ranks and each token is dispatched to the ranks holding its experts, by all-to-all
// (default) or by all-gather (S3: another path that must give the same step). Two FSDP stacks:
// dense parameters are sharded over fsdp = dp_shard*cp, each rank's experts over the ranks
// left over, efsdp = dp_shard*cp*tp/(ep*etp). EP re-uses the dp_shard ranks: it adds none.
//
//   mpiexec -n 4 ./example_05_moe_ep_fsdp                            # dp_shard 4, ep 4 (S1)
//   mpiexec -n 2 ./example_05_moe_ep_fsdp                            # ep 2 (A-EP)
//   mpiexec -n 4 ./example_05_moe_ep_fsdp --dispatcher allgather     # S3
//   mpiexec -n 4 ./example_05_moe_ep_fsdp --ep 2                     # efsdp 2: experts sharded too
// Flags: --ep EP (default: the largest that divides the world and the 8 experts), --dp-shard S,
// --dispatcher alltoall|allgather. Exit: 0 verified, 1 verification failed, 2 bad layout.
#include <stdio.h>
#include <string.h>
#include <mpi.h>
#include <hyperpar/dims.h>
#include <hyperpar/inspect.h>
#include <hyperpar/train.h>
#include <hyperpar/verify.h>

int main(int argc, char **argv) {
    hp_model_config model;
    hp_model_config_by_name("tiny-moe", &model);   // 8 routed experts + 1 shared, top 2
    MPI_Init(&argc, &argv);
    int rank, world;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world);

    // dp_shard = world (inferred); ep splits those same ranks' experts
    hp_dims dims = hp_dims_default();
    for (dims.ep = world; dims.ep > 1 && (world % dims.ep || model.num_experts % dims.ep);) dims.ep--;
    dims.world = world;
    hp_run_config run;
    hp_run_config_default(&run);
    run.steps = 3;
    run.batch = 2 * world;
    char err[256] = "";
    for (int i = 1, n = 1; i < argc && !*err; i += n)   // --ep, --dispatcher, ...
        if ((n = hp_layout_flag(&dims, &run, argv[i], i + 1 < argc ? argv[i + 1] : NULL)) <= 0)
            snprintf(err, sizeof err, "bad flag '%s' (--ep EP --dp-shard S --dispatcher alltoall|allgather, "
                     "or another of hp run's layout flags)", argv[i]);
    if (!*err) hp_dims_validate(&dims, &model, &run, err, sizeof err);   // ep | S*C*T, ep | experts, ...
    if (*err) {
        if (rank == 0) fprintf(stderr, "05_moe_ep_fsdp: %s\n", err);
        MPI_Finalize();
        return HP_EXIT_CONFIG;
    }
    if (rank == 0) {
        hp_print_dims(stdout, &dims);
        hp_print_groups(stdout, &dims, HP_G_FSDP);    // the dense stack's shard group
        hp_print_groups(stdout, &dims, HP_G_EP);      // tokens travel inside these
        hp_print_groups(stdout, &dims, HP_G_EFSDP);   // the expert stack's shard group
        const int per = model.num_experts / dims.ep;
        printf("ep rank e holds experts %d*e .. %d*e+%d of %d; tokens dispatched by %s\n", per, per, per - 1,
               model.num_experts, run.dispatcher == HP_DISPATCH_ALLGATHER ? "all-gather" : "all-to-all");
    }

    hp_trainer *tr = hp_trainer_init(MPI_COMM_WORLD, &model, &dims, &run, err, sizeof err);
    int rc = tr ? HP_EXIT_OK : HP_EXIT_CONFIG;
    if (!tr && rank == 0) fprintf(stderr, "05_moe_ep_fsdp: %s\n", err);
    for (int i = 0; tr && i < run.steps && rc == HP_EXIT_OK; i++) {
        hp_step_stats st;
        rc = hp_trainer_step(tr, &st);   // route, dispatch, experts, combine; both stacks reduced
        if (rank == 0) printf("step %d | loss %.6f | grad norm %.4f\n", st.step, st.loss, st.grad_norm);
    }
    if (tr) {
        // the two stacks side by side: a dense weight over fsdp, the experts over ep then efsdp
        hp_print_param_placement(tr, "layers.0.attention.wo.weight", stdout);
        hp_print_param_placement(tr, "layers.0.moe.experts.w1", stdout);
        hp_trainer_free(tr);
        // also compares which experts every token chose with the single process
        rc = rc != HP_EXIT_OK ? rc : hp_verify_summary(MPI_COMM_WORLD, &model, &dims, &run, stdout);
    }
    MPI_Finalize();
    return rc;
}
