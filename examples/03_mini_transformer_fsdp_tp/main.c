// 03_mini_transformer_fsdp_tp - recipes M4, B1, B2, B4, M6 (and M1, M7) on the Llama-style
// `tiny` transformer, the C twin of PyTorch's fsdp_tp_example.py: the mesh comes from the
// degrees on the command line, the trainer applies TorchTitan's order (TP(+SP) on attention and
// FFN -> CP on attention -> FSDP2 over fsdp = dp_shard*cp, HSDP replicas over dp_replicate),
// and hp_verify_run proves the step equals the single-process step: loss, every gradient,
// every updated parameter, a 5-step loss trajectory and the bytes each collective moved.
//
//   mpirun -np 4 example_03_mini_transformer_fsdp_tp --dp-shard 2 --tp 2 --sp     (B2)
//   mpirun -np 8 example_03_mini_transformer_fsdp_tp --dp-shard 2 --cp 2 --tp 2   (M6)
#include <stdio.h>
#include <mpi.h>
#include "example_common.h"

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, world;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    ex_args a;
    int rc = ex_parse(&a, argc, argv, "tiny", rank);
    if (!rc) rc = ex_validate(&a, world, rank, 0);   // world = R*S*C*T*P, or one line naming the rule
    if (!rc) {
        ex_print_mesh(&a, rank);
        const hp_group_kind kinds[] = { HP_G_TP, HP_G_CP, HP_G_FSDP, HP_G_DP_REPLICATE };
        ex_print_groups(&a, kinds, 4, rank);
        rc = ex_train(&a, rank, 3, "layers.0.attention.wq.weight");   // the trainer on this layout
        if (!rc) rc = ex_verify(&a, rank);
    }
    MPI_Finalize();
    return rc;
}
