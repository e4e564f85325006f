// 06_moe_ep_tp_etp - expert parallel with tensor parallel on the `tiny-moe` transformer:
// recipes S2 (B-7), S1b, C2 and C3. Attention and the dense weights are split over tp as in
// 03; the experts over ep and, inside one expert, over etp. TorchTitan's rule (ETP era): etp is
// tp (each expert split like a TP FFN; EP spans dp_shard*cp) or 1 (EP borrows the tp ranks: the
// sparse mesh re-splits dp_shard*cp*tp as [efsdp, ep, etp], and every tp rank dispatches its
// own slice of the tokens). Whatever ep*etp leaves of dp_shard*cp*tp shards the experts (efsdp).
//
//   mpiexec -n 4 ./example_06_moe_ep_tp_etp                          # tp 2, ep 2, etp 2 (S2)
//   mpiexec -n 4 ./example_06_moe_ep_tp_etp --ep 4 --etp 1           # S1b: EP borrows TP
//   mpiexec -n 8 ./example_06_moe_ep_tp_etp --cp 2 --ep 4 --etp 1    # C2
// Flags: --tp T (default 2 on an even world), --ep EP (default: what dp_shard*cp leaves, at
// most 8), --etp ET (default tp), --dp-replicate R, --dp-shard S, --cp C, --no-sp,
// --cp-rotate allgather|ring (K/V under cp > 1).
// Exit: 0 verified, 1 verification failed, 2 bad layout.
#include <stdio.h>
#include <string.h>
#include <mpi.h>
#include <hyperpar/dims.h>
#include <hyperpar/inspect.h>
#include <hyperpar/train.h>
#include <hyperpar/verify.h>

int main(int argc, char **argv) {
    int rank, world;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    hp_model_config model;
    hp_model_config_by_name("tiny-moe", &model);

    // Defaults: tp 2, etp = tp, and ep over the dp_shard ranks (ep must divide S*C when etp = tp).
    hp_dims dims = hp_dims_default();
    dims.tp = world % 2 == 0 ? 2 : 1;
    dims.ep = world / dims.tp;
    while (dims.ep > 1 && (model.num_experts % dims.ep || (world / dims.tp) % dims.ep)) dims.ep--;
    dims.etp = dims.ep > 1 ? dims.tp : 1;
    dims.world = world;
    hp_run_config run;
    hp_run_config_default(&run);
    run.batch = 2 * world;
    run.steps = 3;
    char err[256] = "";
    for (int i = 1, n = 1; i < argc && !*err; i += n) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if ((n = hp_layout_flag(&dims, &run, argv[i], v)) <= 0)   // degrees, --cp-rotate, ...
            snprintf(err, sizeof err, "bad flag '%s' (--tp T --ep EP --etp ET --dp-replicate R --dp-shard S --cp C "
                     "--cp-rotate allgather|ring, or another of hp run's layout flags)", argv[i]);
    }
    if (!*err) hp_dims_validate(&dims, &model, &run, err, sizeof err);   // etp in {1, tp}, ep | ..., ...
    hp_trainer *tr = *err ? NULL : hp_trainer_init(MPI_COMM_WORLD, &model, &dims, &run, err, sizeof err);
    if (!tr) {
        if (rank == 0) fprintf(stderr, "06_moe_ep_tp_etp: %s\n", err);
        MPI_Finalize();
        return HP_EXIT_CONFIG;
    }
    if (rank == 0) {
        hp_print_dims(stdout, &dims);
        // the dense mesh's tp groups next to the sparse mesh's [efsdp, ep, etp] groups
        const hp_group_kind kinds[] = { HP_G_TP, HP_G_EP, HP_G_ETP, HP_G_EFSDP };
        for (int k = 0; k < 4; k++) hp_print_groups(stdout, &dims, kinds[k]);
        printf("each token's experts: %d of %d, %d per ep rank, each split %d ways (%s)\n", model.top_k,
               model.num_experts, model.num_experts / dims.ep, hp_dims_expert_tp(&dims),
               dims.etp == 1 && dims.tp > 1 ? "EP borrows the tp ranks" : "etp = tp");
    }

    int rc = HP_EXIT_OK;
    hp_step_stats st = { 0 };
    while (st.step < run.steps && rc == HP_EXIT_OK) {
        rc = hp_trainer_step(tr, &st);   // TP regions, EP dispatch, ETP partial sums, two FSDP stacks
        if (rank == 0) printf("step %d | loss %.6f | grad norm %.4f\n", st.step, st.loss, st.grad_norm);
    }
    // w2 of the experts: Shard(0) over ep (which experts), row-wise over etp, then efsdp
    hp_print_param_placement(tr, "layers.0.moe.experts.w2", stdout);
    hp_trainer_free(tr);

    const int verdict = hp_verify_summary(MPI_COMM_WORLD, &model, &dims, &run, stdout);
    MPI_Finalize();
    return rc != HP_EXIT_OK ? rc : verdict;
}
