// comm.h - collectives over one MPI sub-communicator per mesh group.
// defines: hp_comm (opaque), hp_comm_init/free, collectives, traffic counters
//
//   hp_comm *comm = hp_comm_init(MPI_COMM_WORLD, &dims, /*deterministic=*/1);
//   hp_allreduce_sum(comm, HP_G_TP, buf, n);        // sums buf over rank's tp group
//   hp_reduce_scatter(comm, HP_G_FSDP, shard, full, shard_n);
//   printf("%llu\n", (unsigned long long)hp_comm_bytes(comm, HP_G_FSDP, HP_OP_REDUCE_SCATTER));
//   hp_comm_free(comm);
//
// Deterministic mode fixes the reduction order: every reduction is an exchange of the
// operands followed by a sum in group-rank order, so the same job twice is bit-identical
// and a sum is independent of the MPI library's algorithm choice.
//
// Traffic counting (bytes, per group kind and op, on this rank; groups of size 1 count 0;
// element size 4 for float/int, 8 for f64/i64; calls are counted even when bytes are 0):
//   all-reduce      n*4            (the buffer handed in)
//   all-gather      n*4            (this rank's chunk)
//   reduce-scatter  size*n*4       (the full input)
//   all-to-all      sum of send counts to OTHER ranks * elem size
//   broadcast       n*4 on the root, 0 elsewhere
//   send/recv       n*4 sent (0 when dst is this rank: a local copy)
// docs/traffic.md derives each recipe's per-step totals from these rules.
#ifndef HYPERPAR_COMM_H
#define HYPERPAR_COMM_H
#include <mpi.h>
#include <stddef.h>
#include <stdint.h>
#include "mesh.h"

typedef enum hp_op_kind {
    HP_OP_ALLREDUCE = 0, HP_OP_ALLGATHER, HP_OP_REDUCE_SCATTER, HP_OP_ALLTOALL,
    HP_OP_BROADCAST, HP_OP_SENDRECV, HP_OP_COUNT
} hp_op_kind;

typedef struct hp_comm hp_comm;

// Builds every group of mesh.h with MPI_Comm_split (collective over world).
// dims must be validated and dims->world == size of world.
hp_comm *hp_comm_init(MPI_Comm world, const hp_dims *dims, int deterministic);
void     hp_comm_free(hp_comm *comm);

int      hp_comm_size(const hp_comm *comm, hp_group_kind g);
int      hp_comm_rank(const hp_comm *comm, hp_group_kind g);   // index inside the group
MPI_Comm hp_comm_mpi(const hp_comm *comm, hp_group_kind g);
const hp_dims   *hp_comm_dims(const hp_comm *comm);
const hp_coords *hp_comm_coords(const hp_comm *comm);          // this rank's coordinates

void hp_allreduce_sum(hp_comm *comm, hp_group_kind g, float *buf, size_t n);
void hp_allreduce_max(hp_comm *comm, hp_group_kind g, float *buf, size_t n);
void hp_allreduce_sum_f64(hp_comm *comm, hp_group_kind g, double *buf, size_t n);
void hp_allreduce_sum_i64(hp_comm *comm, hp_group_kind g, int64_t *buf, size_t n);
// recv (size*n) = concatenation of every member's send (n), in group-rank order.
void hp_allgather(hp_comm *comm, hp_group_kind g, float *recv, const float *send, size_t n);
void hp_allgather_int(hp_comm *comm, hp_group_kind g, int *recv, const int *send, size_t n);
// recv (n) = sum over members of their send[my_index*n .. +n) (send is size*n).
void hp_reduce_scatter(hp_comm *comm, hp_group_kind g, float *recv, const float *send, size_t n);
// Variable all-to-all of floats; counts and displacements are derived from the counts
// (packed in group-rank order). Counts in elements.
void hp_alltoallv(hp_comm *comm, hp_group_kind g, float *recv, const int *recv_counts,
                  const float *send, const int *send_counts);
// Equal-split all-to-all of ints: n_per_rank ints to each member.
void hp_alltoall_int(hp_comm *comm, hp_group_kind g, int *recv, const int *send, int n_per_rank);
void hp_broadcast(hp_comm *comm, hp_group_kind g, float *buf, size_t n, int root);
// Sends n floats to group member dst and receives n floats from member src.
void hp_sendrecv(hp_comm *comm, hp_group_kind g, float *recv, int src, const float *send,
                 int dst, size_t n);
void hp_barrier(hp_comm *comm, hp_group_kind g);

uint64_t hp_comm_bytes(const hp_comm *comm, hp_group_kind g, hp_op_kind op);
uint64_t hp_comm_calls(const hp_comm *comm, hp_group_kind g, hp_op_kind op);
void     hp_comm_reset_stats(hp_comm *comm);
const char *hp_op_name(hp_op_kind op);

#endif
