// 06_moe_ep_tp_etp - recipes S2 (B-7), S1b, C2 and C3 on the `tiny-moe` transformer with tensor
// parallel: attention/dense FFN split over tp, experts over ep and, inside an expert, over etp.
// TorchTitan's rule: etp is 1 (EP borrows the TP ranks: the sparse mesh re-splits S*C*T as
// [efsdp, ep, etp]) or tp (each expert is split like a TP FFN, EP spans dp_shard*cp only).
//
//   mpirun -np 4 example_06_moe_ep_tp_etp --dp-shard 2 --tp 2 --ep 2 --etp 2   (S2: etp = tp)
//   mpirun -np 4 example_06_moe_ep_tp_etp --dp-shard 2 --tp 2 --ep 4 --etp 1   (S1b: etp = 1)
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
    if (!rc) rc = ex_validate(&a, world, rank, 0);   // ep > 1 => etp in {1, tp}, ...
    if (!rc) {
        ex_print_mesh(&a, rank);
        const hp_group_kind kinds[] = { HP_G_TP, HP_G_FSDP, HP_G_EP, HP_G_ETP, HP_G_EFSDP };
        ex_print_groups(&a, kinds, 5, rank);
        rc = ex_train(&a, rank, 3, "layers.0.moe.experts.w2");   // the trainer on this layout
        if (!rc) rc = ex_verify(&a, rank);
    }
    MPI_Finalize();
    return rc;
}
