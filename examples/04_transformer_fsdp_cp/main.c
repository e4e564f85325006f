// 04_transformer_fsdp_cp - recipe M5 (A-CP, B-3): context parallel on the `tiny` transformer.
// The sequence is cut into 2*cp chunks and cp rank i holds chunk i and chunk 2*cp-1-i (causal
// load balance); attention gathers K/V (--cp-rotate allgather, TorchTitan's default) or passes
// them around a ring (--cp-rotate ring) and merges partial results by log-sum-exp. FSDP2 shards
// parameters over fsdp = dp_shard*cp, so cp ranks also act as data-parallel shards for the
// weights (TorchTitan: "fsdp already contains cp"). Checked against one process.
//
//   mpirun -np 4 example_04_transformer_fsdp_cp --dp-shard 2 --cp 2 --cp-rotate ring
#include <stdio.h>
#include <mpi.h>
#include "example_common.h"
#include "hyperpar/cp.h"

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, world;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    ex_args a;
    int rc = ex_parse(&a, argc, argv, "tiny", rank);
    if (!rc) rc = ex_validate(&a, world, rank, 0);   // seq_len % (2*cp*tp) == 0 among the rules
    if (!rc) {
        ex_print_mesh(&a, rank);
        const hp_group_kind kinds[] = { HP_G_CP, HP_G_FSDP };
        ex_print_groups(&a, kinds, 2, rank);
        const int S = a.run.seq_len, C = a.dims.cp;
        if (rank == 0) {
            printf("sequence of %d tokens, rotate %s; positions held by each cp rank:\n", S,
                   a.run.cp_rotate == HP_ROTATE_RING ? "ring" : "allgather");
            int pos[4096];
            for (int c = 0; c < C && S / C <= 4096; c++) {
                hp_cp_positions(pos, S, C, c, a.run.cp_load_balance);
                printf("  cp rank %d: %d..%d and %d..%d\n", c, pos[0], pos[S / (2 * C) - 1], pos[S / (2 * C)],
                       pos[S / C - 1]);
            }
        }
        rc = ex_train(&a, rank, 3, "layers.0.attention.wk.weight");   // the trainer on this layout
        if (!rc) rc = ex_verify(&a, rank);
    }
    MPI_Finalize();
    return rc;
}
