// 05_moe_ep_fsdp - recipes S1 (B-6), A-EP and S3 on the `tiny-moe` transformer: experts split
// over ep ranks, tokens dispatched to their experts by all-to-all (--dispatcher alltoall) or by
// all-gather (--dispatcher allgather, recipe S3: another path that must give the same step),
// and two FSDP stacks (docs/design_moe_fsdp_dual_stack.md in hyper-parallel): dense parameters
// sharded over fsdp = dp_shard*cp, experts over efsdp = dp_shard*cp*tp/(ep*etp).
//
//   mpirun -np 4 example_05_moe_ep_fsdp --dp-shard 4 --ep 4                         (S1)
//   mpirun -np 4 example_05_moe_ep_fsdp --dp-shard 4 --ep 4 --dispatcher allgather  (S3)
#include <stdio.h>
#include <mpi.h>
#include "example_common.h"

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, world;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    ex_args a;
    int rc = ex_parse(&a, argc, argv, "tiny-moe", rank);
    if (!rc) rc = ex_validate(&a, world, rank, 0);   // ep | S*C*T, num_experts % ep == 0, ...
    if (!rc) {
        ex_print_mesh(&a, rank);
        const hp_group_kind kinds[] = { HP_G_FSDP, HP_G_EP, HP_G_EFSDP };
        ex_print_groups(&a, kinds, 3, rank);
        if (rank == 0)
            printf("experts: ep rank e holds experts [e*%d, (e+1)*%d); dispatch by %s\n",
                   a.model.num_experts / a.dims.ep, a.model.num_experts / a.dims.ep,
                   a.run.dispatcher == HP_DISPATCH_ALLGATHER ? "all-gather" : "all-to-all");
        rc = ex_train(&a, rank, 3, "layers.0.moe.experts.w1");   // the trainer on this layout
        if (!rc) rc = ex_verify(&a, rank);
    }
    MPI_Finalize();
    return rc;
}
