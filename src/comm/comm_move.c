// comm_move.c - collectives that move data without arithmetic: all-gather, all-to-all
// (variable and equal split), broadcast, send/recv, barrier, and the diagnostic gathers.
// Deterministic by nature, so both modes use the same calls: nonblocking MPI collectives
// or point-to-point messages, completed by the watchdog (hp_comm_wait). Groups of size 1
// copy locally (0 bytes).
// defines: hp_allgather(_int, _bf16, _bytes), hp_alltoallv(_bf16), hp_alltoall_int, hp_broadcast, hp_sendrecv(_bf16),
//          hp_barrier, hp_gather_to_root(_int), hp_mpi_broadcast_int
#include <string.h>
#include "comm_internal.h"   // defines: struct hp_comm, HP_MPI_CHECK

static size_t min_sz(size_t a, size_t b) { return a < b ? a : b; }

// recv (size*n) = every member's send (n), in group-rank order. send may be the
// rank's own slot recv + me*n (gather of a shard that lives in the full buffer).
static void allgather(hp_comm *comm, hp_group_kind g, void *recv, const void *send, size_t n,
                      MPI_Datatype dt, size_t esz, const char *who) {
    int size = hp_comm_count(comm, g, HP_OP_ALLGATHER, (uint64_t)n * esz, who);
    // Every all-gather algorithm in use (ring, recursive doubling, Bruck, linear) sends
    // each of the N-1 other members this rank's chunk once, directly or forwarded.
    hp_comm_count_wire(comm, g, HP_OP_ALLGATHER, (uint64_t)(size - 1) * n * esz);
    if (n == 0) return;
    char *own = (char *)recv + (size_t)comm->rank[g] * n * esz;
    if (size == 1) { memmove(recv, send, n * esz); return; }
    int cnt = hp_comm_int_count(n, who);
    const void *src = (const char *)send == own ? MPI_IN_PLACE : send;
    MPI_Request req;
    HP_MPI_CHECK(MPI_Iallgather(src, cnt, dt, recv, cnt, dt, comm->group[g], &req));
    hp_comm_wait(comm, 1, &req, "all-gather", hp_group_name(g));
}

void hp_allgather(hp_comm *comm, hp_group_kind g, float *recv, const float *send, size_t n) {
    allgather(comm, g, recv, send, n, MPI_FLOAT, sizeof(float), "hp_allgather");
}

// 2 bytes an element: the bf16 parameter all-gather of the mixed-precision policy
void hp_allgather_bf16(hp_comm *comm, hp_group_kind g, uint16_t *recv, const uint16_t *send, size_t n) {
    allgather(comm, g, recv, send, n, MPI_UINT16_T, sizeof(uint16_t), "hp_allgather_bf16");
}

// n bytes a member: the float8 parameter all-gather (fp8 codes, and the 2- or 4-byte
// values of the unit's other tensors, in one flat buffer as FSDP2 gathers mixed dtypes)
void hp_allgather_bytes(hp_comm *comm, hp_group_kind g, void *recv, const void *send, size_t n) {
    allgather(comm, g, recv, send, n, MPI_BYTE, 1, "hp_allgather_bytes");
}

void hp_allgather_int(hp_comm *comm, hp_group_kind g, int *recv, const int *send, size_t n) {
    allgather(comm, g, recv, send, n, MPI_INT, sizeof(int), "hp_allgather_int");
}

// Counts are packed in group-rank order: member j's elements start at the sum of the
// counts before j, on both the send and the receive side.
static void alltoallv(hp_comm *comm, hp_group_kind g, void *recv, const int *recv_counts,
                      const void *send, const int *send_counts, MPI_Datatype dt, size_t esz,
                      const char *who) {
    int size = hp_comm_group_size(comm, g, who);
    int me = comm->rank[g];
    int local[2];   // a group of one copies: no exchange buffer (the planner counts none)
    int *displ = size > 1 ? hp_comm_scratch(comm, 2 * (size_t)size * sizeof(int)) : local;
    int *sdispl = displ, *rdispl = displ + size;
    int64_t stot = 0, rtot = 0;
    uint64_t bytes = 0;
    for (int j = 0; j < size; j++) {
        if (send_counts[j] < 0 || recv_counts[j] < 0)
            HP_COMM_FAIL("%s: negative count for member %d (send %d, recv %d)", who, j,
                         send_counts[j], recv_counts[j]);
        if (stot > INT_MAX || rtot > INT_MAX)
            HP_COMM_FAIL("%s: displacement exceeds INT_MAX at member %d", who, j);
        sdispl[j] = (int)stot;
        rdispl[j] = (int)rtot;
        stot += send_counts[j];
        rtot += recv_counts[j];
        if (j != me) bytes += (uint64_t)send_counts[j] * esz;
    }
    hp_comm_count(comm, g, HP_OP_ALLTOALL, bytes, who);
    hp_comm_count_wire(comm, g, HP_OP_ALLTOALL, bytes);   // v-algorithms send directly
    if (size == 1) {
        if (send_counts[0] != recv_counts[0])
            HP_COMM_FAIL("%s: group of size 1 sends %d but receives %d", who, send_counts[0],
                         recv_counts[0]);
        if (send_counts[0] > 0) memmove(recv, send, (size_t)send_counts[0] * esz);
        return;
    }
    MPI_Request req;
    HP_MPI_CHECK(MPI_Ialltoallv(send, send_counts, sdispl, dt,
                                recv, recv_counts, rdispl, dt, comm->group[g], &req));
    hp_comm_wait(comm, 1, &req, "all-to-all", hp_group_name(g));
}

void hp_alltoallv(hp_comm *comm, hp_group_kind g, float *recv, const int *recv_counts,
                  const float *send, const int *send_counts) {
    alltoallv(comm, g, recv, recv_counts, send, send_counts, MPI_FLOAT, sizeof(float), "hp_alltoallv");
}

void hp_alltoallv_bf16(hp_comm *comm, hp_group_kind g, uint16_t *recv, const int *recv_counts,
                       const uint16_t *send, const int *send_counts) {
    alltoallv(comm, g, recv, recv_counts, send, send_counts, MPI_UINT16_T, sizeof(uint16_t),
              "hp_alltoallv_bf16");
}

void hp_alltoall_int(hp_comm *comm, hp_group_kind g, int *recv, const int *send, int n_per_rank) {
    const char *who = "hp_alltoall_int";
    int size = hp_comm_group_size(comm, g, who);
    if (n_per_rank < 0) HP_COMM_FAIL("%s: n_per_rank %d is negative", who, n_per_rank);
    const uint64_t bytes = (uint64_t)(size - 1) * (uint64_t)n_per_rank * sizeof(int);
    hp_comm_count(comm, g, HP_OP_ALLTOALL, bytes, who);
    hp_comm_count_wire(comm, g, HP_OP_ALLTOALL, bytes);
    if (n_per_rank == 0) return;
    if (size == 1) { memmove(recv, send, (size_t)n_per_rank * sizeof(int)); return; }
    // As a v-exchange with equal counts: MPI's equal-split all-to-all may pick Bruck's
    // algorithm, which forwards blocks and would put more than the count on the wire.
    int *cnt = hp_comm_scratch(comm, 2 * (size_t)size * sizeof(int)), *displ = cnt + size;
    if ((int64_t)n_per_rank * size > INT_MAX)
        HP_COMM_FAIL("%s: %d x %d ints exceed INT_MAX", who, size, n_per_rank);
    for (int j = 0; j < size; j++) { cnt[j] = n_per_rank; displ[j] = j * n_per_rank; }
    MPI_Request req;
    HP_MPI_CHECK(MPI_Ialltoallv(send, cnt, displ, MPI_INT, recv, cnt, displ, MPI_INT,
                                comm->group[g], &req));
    hp_comm_wait(comm, 1, &req, "all-to-all", hp_group_name(g));
}

// root is a group-local rank.
void hp_broadcast(hp_comm *comm, hp_group_kind g, float *buf, size_t n, int root) {
    const char *who = "hp_broadcast";
    int size = hp_comm_group_size(comm, g, who);
    if (root < 0 || root >= size)
        HP_COMM_FAIL("%s: root %d out of range for group %s of size %d", who, root,
                     hp_group_name(g), size);
    const int me = comm->rank[g];
    hp_comm_count(comm, g, HP_OP_BROADCAST, me == root ? (uint64_t)n * sizeof(float) : 0, who);
    // The root sends to each member itself (no tree), so the wire bytes are exact; no
    // step of training broadcasts, so the root's (N-1)-fold send costs nothing there.
    hp_comm_count_wire(comm, g, HP_OP_BROADCAST,
                       me == root ? (uint64_t)(size - 1) * n * sizeof(float) : 0);
    if (size == 1) return;
    for (size_t off = 0; off < n; off += (size_t)INT_MAX) {
        int len = (int)min_sz(n - off, (size_t)INT_MAX), nreq = 0;
        MPI_Request *req = comm->reqs;   // size - 1 sends on the root, one receive elsewhere
        if (me == root) {
            for (int j = 0; j < size; j++)
                if (j != root)
                    HP_MPI_CHECK(MPI_Isend(buf + off, len, MPI_FLOAT, j, HP_COMM_TAG_BCAST,
                                           comm->group[g], &req[nreq++]));
        } else {
            HP_MPI_CHECK(MPI_Irecv(buf + off, len, MPI_FLOAT, root, HP_COMM_TAG_BCAST,
                                   comm->group[g], &req[nreq++]));
        }
        hp_comm_wait(comm, nreq, req, "broadcast", hp_group_name(g));
    }
}

// src and dst are group-local ranks; both sides of a pair must pass the same n.
// Sending to oneself is a local copy and counts 0 bytes (as in the all-to-all rule).
static void sendrecv(hp_comm *comm, hp_group_kind g, void *recv, int src, const void *send, int dst,
                     size_t n, MPI_Datatype dt, size_t esz, const char *who) {
    int size = hp_comm_group_size(comm, g, who);
    if (src < 0 || src >= size || dst < 0 || dst >= size)
        HP_COMM_FAIL("%s: src %d / dst %d out of range for group %s of size %d", who, src, dst,
                     hp_group_name(g), size);
    int me = comm->rank[g];
    const uint64_t bytes = dst != me ? (uint64_t)n * esz : 0;
    hp_comm_count(comm, g, HP_OP_SENDRECV, bytes, who);
    hp_comm_count_wire(comm, g, HP_OP_SENDRECV, bytes);
    if (n == 0) return;
    if (src == me && dst == me) { memmove(recv, send, n * esz); return; }
    for (size_t off = 0; off < n; off += (size_t)INT_MAX) {
        int len = (int)min_sz(n - off, (size_t)INT_MAX);
        MPI_Request req[2];
        HP_MPI_CHECK(MPI_Irecv((char *)recv + off * esz, len, dt, src, HP_COMM_TAG_SENDRECV,
                               comm->group[g], &req[0]));
        HP_MPI_CHECK(MPI_Isend((const char *)send + off * esz, len, dt, dst, HP_COMM_TAG_SENDRECV,
                               comm->group[g], &req[1]));
        hp_comm_wait(comm, 2, req, "send-recv", hp_group_name(g));
    }
}

void hp_sendrecv(hp_comm *comm, hp_group_kind g, float *recv, int src, const float *send,
                 int dst, size_t n) {
    sendrecv(comm, g, recv, src, send, dst, n, MPI_FLOAT, sizeof(float), "hp_sendrecv");
}

void hp_sendrecv_bf16(hp_comm *comm, hp_group_kind g, uint16_t *recv, int src, const uint16_t *send,
                      int dst, size_t n) {
    sendrecv(comm, g, recv, src, send, dst, n, MPI_UINT16_T, sizeof(uint16_t), "hp_sendrecv_bf16");
}

void hp_barrier(hp_comm *comm, hp_group_kind g) {
    int size = hp_comm_group_size(comm, g, "hp_barrier");
    if (size <= 1) return;
    MPI_Request req;
    HP_MPI_CHECK(MPI_Ibarrier(comm->group[g], &req));
    hp_comm_wait(comm, 1, &req, "barrier", hp_group_name(g));
}

// ----------------------------------------------------------------------------
// diagnostics outside the step: not counted

static void gather_to_root(hp_comm *comm, void *recv, const void *send, size_t n,
                           MPI_Datatype dt, const char *who) {
    if (comm == NULL) HP_COMM_FAIL("%s: comm is NULL", who);
    int cnt = hp_comm_int_count(n, who);
    MPI_Request req;
    HP_MPI_CHECK(MPI_Igather(send, cnt, dt, recv, cnt, dt, 0, comm->world, &req));
    hp_comm_wait(comm, 1, &req, "gather", "world");
}

void hp_gather_to_root(hp_comm *comm, float *recv, const float *send, size_t n) {
    gather_to_root(comm, recv, send, n, MPI_FLOAT, "hp_gather_to_root");
}

void hp_gather_to_root_int(hp_comm *comm, int *recv, const int *send, size_t n) {
    gather_to_root(comm, recv, send, n, MPI_INT, "hp_gather_to_root_int");
}

void hp_mpi_broadcast_int(MPI_Comm mpi, int *buf, int n, int root) {
    if (n < 0) HP_COMM_FAIL("hp_mpi_broadcast_int: n %d is negative", n);
    MPI_Request req;
    HP_MPI_CHECK(MPI_Ibcast(buf, n, MPI_INT, root, mpi, &req));
    hp_comm_wait(NULL, 1, &req, "broadcast", "world");
}
