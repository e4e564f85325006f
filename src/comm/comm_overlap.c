// comm_overlap.c - the all-gather and reduce-scatter of async TP (docs/async_tp.md), cut open
// so the caller computes between the posting and the last arrival: a GEMM on each shard as it
// lands, a partial for each member before it leaves. Direct exchange (every member sends its
// chunk straight to every other), so a member's shard can be waited for by itself.
// defines: hp_allgather_post(_bf16, _bytes), hp_allgather_wait_member, hp_allgather_finish,
//          hp_reduce_scatter_post, hp_reduce_scatter_send, hp_reduce_scatter_finish
//
// Counters, wire bytes and arithmetic are those of hp_allgather and hp_reduce_scatter (comm.h):
// counted when posted; the reduce-scatter sums the members' blocks in member order 0..size-1,
// fp32, as the deterministic hp_reduce_scatter does (hp_fixed_reduce_rows), so the two give
// the same bits. Every wait goes through the watchdog. Requests live in the caller's array
// (2*size entries: receives from member j at [j], sends to member j at [size + j]), so a
// callback running between the calls may use every other comm call.
#include <string.h>
#include "comm_internal.h"

enum { TAG_AG = 0x4810, TAG_RS = 0x4811 };

static void null_reqs(MPI_Request *reqs, int size) {
    for (int j = 0; j < 2 * size; j++) reqs[j] = MPI_REQUEST_NULL;
}

static void allgather_post(hp_comm *comm, hp_group_kind g, char *recv, const void *send, size_t n,
                           MPI_Request *reqs, MPI_Datatype dt, size_t esz, const char *who) {
    const int size = hp_comm_count(comm, g, HP_OP_ALLGATHER, (uint64_t)n * esz, who);
    hp_comm_count_wire(comm, g, HP_OP_ALLGATHER, (uint64_t)(size - 1) * n * esz);
    const int me = comm->rank[g];
    null_reqs(reqs, size);
    memmove(recv + (size_t)me * n * esz, send, n * esz);
    if (n == 0) return;
    const int cnt = hp_comm_int_count(n, who);
    for (int j = 0; j < size; j++) {
        if (j == me) continue;
        HP_MPI_CHECK(MPI_Irecv(recv + (size_t)j * n * esz, cnt, dt, j, TAG_AG, comm->group[g], &reqs[j]));
        HP_MPI_CHECK(MPI_Isend(recv + (size_t)me * n * esz, cnt, dt, j, TAG_AG, comm->group[g],
                               &reqs[size + j]));
    }
}

void hp_allgather_post(hp_comm *comm, hp_group_kind g, float *recv, const float *send, size_t n,
                       MPI_Request *reqs) {
    allgather_post(comm, g, (char *)recv, send, n, reqs, MPI_FLOAT, sizeof(float), "hp_allgather_post");
}

void hp_allgather_post_bf16(hp_comm *comm, hp_group_kind g, uint16_t *recv, const uint16_t *send,
                            size_t n, MPI_Request *reqs) {
    allgather_post(comm, g, (char *)recv, send, n, reqs, MPI_UINT16_T, sizeof(uint16_t),
                   "hp_allgather_post_bf16");
}

void hp_allgather_post_bytes(hp_comm *comm, hp_group_kind g, void *recv, const void *send, size_t n,
                             MPI_Request *reqs) {
    allgather_post(comm, g, (char *)recv, send, n, reqs, MPI_BYTE, 1, "hp_allgather_post_bytes");
}

void hp_allgather_wait_member(hp_comm *comm, hp_group_kind g, MPI_Request *reqs, int j) {
    hp_comm_wait(comm, 1, &reqs[j], "all-gather (async tp)", hp_group_name(g));
}

void hp_allgather_finish(hp_comm *comm, hp_group_kind g, MPI_Request *reqs) {
    hp_comm_wait(comm, 2 * comm->size[g], reqs, "all-gather (async tp)", hp_group_name(g));
}

void hp_reduce_scatter_post(hp_comm *comm, hp_group_kind g, float *rows, size_t n, MPI_Request *reqs) {
    const char *who = "hp_reduce_scatter_post";
    const int size = hp_comm_group_size(comm, g, who);
    hp_comm_count(comm, g, HP_OP_REDUCE_SCATTER, (uint64_t)size * n * sizeof(float), who);
    hp_comm_count_wire(comm, g, HP_OP_REDUCE_SCATTER, (uint64_t)(size - 1) * n * sizeof(float));
    const int me = comm->rank[g];
    null_reqs(reqs, size);
    if (n == 0) return;
    const int cnt = hp_comm_int_count(n, who);
    for (int j = 0; j < size; j++)
        if (j != me)
            HP_MPI_CHECK(MPI_Irecv(rows + (size_t)j * n, cnt, MPI_FLOAT, j, TAG_RS, comm->group[g], &reqs[j]));
}

void hp_reduce_scatter_send(hp_comm *comm, hp_group_kind g, const float *block, size_t n, int dst,
                            MPI_Request *reqs) {
    if (n == 0 || dst == comm->rank[g]) return;
    HP_MPI_CHECK(MPI_Isend(block, hp_comm_int_count(n, "hp_reduce_scatter_send"), MPI_FLOAT, dst,
                           TAG_RS, comm->group[g], &reqs[comm->size[g] + dst]));
}

void hp_reduce_scatter_finish(hp_comm *comm, hp_group_kind g, float *recv, const float *rows,
                              const float *own, size_t n, MPI_Request *reqs) {
    const int size = comm->size[g];
    hp_comm_wait(comm, 2 * size, reqs, "reduce-scatter (async tp)", hp_group_name(g));
    if (n == 0) return;
    for (int j = 0; j < size; j++) comm->rows[j] = rows + (size_t)j * n;
    comm->rows[comm->rank[g]] = own;
    hp_fixed_reduce_rows(recv, comm->rows, size, n, HP_RED_F32_SUM);
}
