// comm_reduce.c - all-reduce (sum, max; f32, f64, i64) and reduce-scatter.
// Deterministic mode: the fixed-order exchanges of comm_fixed_order.c, so each element is
// ((x0 + x1) + x2) + ... in group-rank order on every rank, bit for bit, whatever MPI's
// algorithm, at 2(N-1)/N of the buffer on the wire per rank.
// Otherwise the plain nonblocking MPI collectives (order chosen by the library).
// Every wait goes through the watchdog (hp_comm_wait).
// defines: hp_allreduce_sum/max/sum_f64/sum_i64/sum_bf16, hp_reduce_scatter(_bf16)
#include <string.h>
#include "comm_internal.h"   // defines: struct hp_comm, HP_MPI_CHECK, hp_fixed_*

static size_t min_sz(size_t a, size_t b) { return a < b ? a : b; }

// In-place all-reduce of n elements over one group of size > 1 (logical bytes already
// counted by the caller; wire bytes counted here).
static void allreduce(hp_comm *comm, hp_group_kind g, void *buf, size_t n, hp_red_kind k) {
    const size_t esz = hp_red_elem_size(k);
    // Non-deterministic mode: MPI's algorithm is unknown; count the bandwidth-optimal
    // algorithm's bytes (comm.h), the same figure as the fixed-order exchange.
    hp_comm_count_wire(comm, g, HP_OP_ALLREDUCE,
                       hp_fixed_allreduce_wire(n, comm->size[g], comm->rank[g], esz));
    if (comm->deterministic || k == HP_RED_BF16_SUM) { hp_fixed_allreduce(comm, g, buf, n, k); return; }
    MPI_Datatype dt = k == HP_RED_F64_SUM ? MPI_DOUBLE : k == HP_RED_I64_SUM ? MPI_INT64_T : MPI_FLOAT;
    MPI_Op mop = k == HP_RED_F32_MAX ? MPI_MAX : MPI_SUM;
    char *b = buf;
    for (size_t off = 0; off < n; off += (size_t)INT_MAX) {
        int len = (int)min_sz(n - off, (size_t)INT_MAX);
        MPI_Request req;
        HP_MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, b + off * esz, len, dt, mop, comm->group[g], &req));
        hp_comm_wait(comm, 1, &req, "all-reduce", hp_group_name(g));
    }
}

void hp_allreduce_sum(hp_comm *comm, hp_group_kind g, float *buf, size_t n) {
    int size = hp_comm_count(comm, g, HP_OP_ALLREDUCE, (uint64_t)n * sizeof(float), "hp_allreduce_sum");
    if (size > 1 && n > 0) allreduce(comm, g, buf, n, HP_RED_F32_SUM);
}

void hp_allreduce_max(hp_comm *comm, hp_group_kind g, float *buf, size_t n) {
    int size = hp_comm_count(comm, g, HP_OP_ALLREDUCE, (uint64_t)n * sizeof(float), "hp_allreduce_max");
    if (size > 1 && n > 0) allreduce(comm, g, buf, n, HP_RED_F32_MAX);
}

// f64 and i64 count 8 bytes an element: "the buffer handed in".
void hp_allreduce_sum_f64(hp_comm *comm, hp_group_kind g, double *buf, size_t n) {
    int size = hp_comm_count(comm, g, HP_OP_ALLREDUCE, (uint64_t)n * sizeof(double), "hp_allreduce_sum_f64");
    if (size > 1 && n > 0) allreduce(comm, g, buf, n, HP_RED_F64_SUM);
}

// Integer sums are exact and associative (two's-complement wrap aside), so any order gives
// the same bits; deterministic mode still takes the fixed-order exchange, so its wire
// bytes are known exactly.
void hp_allreduce_sum_i64(hp_comm *comm, hp_group_kind g, int64_t *buf, size_t n) {
    int size = hp_comm_count(comm, g, HP_OP_ALLREDUCE, (uint64_t)n * sizeof(int64_t), "hp_allreduce_sum_i64");
    if (size > 1 && n > 0) allreduce(comm, g, buf, n, HP_RED_I64_SUM);
}

// recv (n) = sum over members j (in order) of member j's send[me*n .. +n); send is (size, n).
// recv must not overlap send.
void hp_reduce_scatter(hp_comm *comm, hp_group_kind g, float *recv, const float *send, size_t n) {
    int size = hp_comm_group_size(comm, g, "hp_reduce_scatter");
    hp_comm_count(comm, g, HP_OP_REDUCE_SCATTER, (uint64_t)size * n * sizeof(float), "hp_reduce_scatter");
    // Every member sends its piece of each other member's block: (N-1)*n. The usual MPI
    // algorithms (pairwise, ring, recursive halving) send the same in non-det mode.
    hp_comm_count_wire(comm, g, HP_OP_REDUCE_SCATTER, (uint64_t)(size - 1) * n * sizeof(float));
    if (n == 0) return;
    if (size == 1) { memmove(recv, send, n * sizeof *recv); return; }
    if (comm->deterministic) { hp_fixed_reduce_scatter(comm, g, recv, send, n, HP_RED_F32_SUM); return; }
    int cnt = hp_comm_int_count(n, "hp_reduce_scatter");
    MPI_Request req;
    HP_MPI_CHECK(MPI_Ireduce_scatter_block(send, recv, cnt, MPI_FLOAT, MPI_SUM, comm->group[g], &req));
    hp_comm_wait(comm, 1, &req, "reduce-scatter", hp_group_name(g));
}

// bf16 sums (--mixed-precision-reduce bfloat16, precision.md §1): 2 bytes an element on the
// wire, and each add of the member-ordered sum rounded to bf16, as Megatron-LM's
// --grad-reduce-in-bf16 accumulates. MPI has no bf16 sum, so both always take the fixed-order
// exchanges (bitwise reproducible in either mode).
void hp_allreduce_sum_bf16(hp_comm *comm, hp_group_kind g, uint16_t *buf, size_t n) {
    int size = hp_comm_count(comm, g, HP_OP_ALLREDUCE, (uint64_t)n * sizeof(uint16_t), "hp_allreduce_sum_bf16");
    if (size > 1 && n > 0) allreduce(comm, g, buf, n, HP_RED_BF16_SUM);
}

void hp_reduce_scatter_bf16(hp_comm *comm, hp_group_kind g, uint16_t *recv, const uint16_t *send,
                            size_t n) {
    int size = hp_comm_group_size(comm, g, "hp_reduce_scatter_bf16");
    hp_comm_count(comm, g, HP_OP_REDUCE_SCATTER, (uint64_t)size * n * sizeof(uint16_t),
                  "hp_reduce_scatter_bf16");
    hp_comm_count_wire(comm, g, HP_OP_REDUCE_SCATTER, (uint64_t)(size - 1) * n * sizeof(uint16_t));
    if (n == 0) return;
    if (size == 1) { memmove(recv, send, n * sizeof *recv); return; }
    hp_fixed_reduce_scatter(comm, g, recv, send, n, HP_RED_BF16_SUM);
}
