// comm_reduce.c - all-reduce (sum, max; f32, f64, i64) and reduce-scatter.
// Deterministic mode: exchange the operands (all-gather / all-to-all), then every rank
// reduces them itself in group-rank order 0..size-1, so each element is
// ((x0 + x1) + x2) + ... on every rank, bit for bit, whatever MPI's algorithm.
// Otherwise the plain MPI collectives (faster, order chosen by the library).
// defines: hp_allreduce_sum/max/sum_f64/sum_i64, hp_reduce_scatter
#include <string.h>
#include "comm_internal.h"   // defines: struct hp_comm, HP_MPI_CHECK, HP_COMM_CHUNK

typedef enum { RED_SUM, RED_MAX } red_op;

static size_t min_sz(size_t a, size_t b) { return a < b ? a : b; }

// out (len) = reduction over r of x[r*len .. +len), r ascending.
static void reduce_f32(float *out, const float *x, int size, size_t len, red_op op) {
    memcpy(out, x, len * sizeof *out);
    for (int r = 1; r < size; r++) {
        const float *xr = x + (size_t)r * len;
        if (op == RED_SUM) {
            for (size_t i = 0; i < len; i++) out[i] += xr[i];
        } else {
            // NaN wins (once out[i] is NaN, v > NaN is false): a bad value never hides.
            for (size_t i = 0; i < len; i++) if (xr[i] > out[i] || xr[i] != xr[i]) out[i] = xr[i];
        }
    }
}

static void reduce_f64(double *out, const double *x, int size, size_t len) {
    memcpy(out, x, len * sizeof *out);
    for (int r = 1; r < size; r++) {
        const double *xr = x + (size_t)r * len;
        for (size_t i = 0; i < len; i++) out[i] += xr[i];
    }
}

// In-place all-reduce of n elements of dt (f32 or f64) over one group of size > 1.
static void allreduce(hp_comm *comm, hp_group_kind g, void *buf, size_t n, MPI_Datatype dt,
                      size_t esz, red_op op) {
    MPI_Comm mc = comm->group[g];
    int size = comm->size[g];
    char *b = buf;
    if (!comm->deterministic) {
        MPI_Op mop = op == RED_SUM ? MPI_SUM : MPI_MAX;
        for (size_t off = 0; off < n; off += (size_t)INT_MAX) {
            int len = (int)min_sz(n - off, (size_t)INT_MAX);
            HP_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, b + off * esz, len, dt, mop, mc));
        }
        return;
    }
    for (size_t off = 0; off < n; off += HP_COMM_CHUNK) {
        size_t len = min_sz(n - off, HP_COMM_CHUNK);
        void *x = hp_comm_scratch(comm, (size_t)size * len * esz);   // (size, len)
        HP_MPI_CHECK(MPI_Allgather(b + off * esz, (int)len, dt, x, (int)len, dt, mc));
        if (esz == sizeof(float)) reduce_f32((float *)(b + off * esz), x, size, len, op);
        else                      reduce_f64((double *)(b + off * esz), x, size, len);
    }
}

void hp_allreduce_sum(hp_comm *comm, hp_group_kind g, float *buf, size_t n) {
    int size = hp_comm_count(comm, g, HP_OP_ALLREDUCE, (uint64_t)n * sizeof(float), "hp_allreduce_sum");
    if (size > 1 && n > 0) allreduce(comm, g, buf, n, MPI_FLOAT, sizeof(float), RED_SUM);
}

void hp_allreduce_max(hp_comm *comm, hp_group_kind g, float *buf, size_t n) {
    int size = hp_comm_count(comm, g, HP_OP_ALLREDUCE, (uint64_t)n * sizeof(float), "hp_allreduce_max");
    if (size > 1 && n > 0) allreduce(comm, g, buf, n, MPI_FLOAT, sizeof(float), RED_MAX);
}

// f64 and i64 count 8 bytes an element: "the buffer handed in".
void hp_allreduce_sum_f64(hp_comm *comm, hp_group_kind g, double *buf, size_t n) {
    int size = hp_comm_count(comm, g, HP_OP_ALLREDUCE, (uint64_t)n * sizeof(double), "hp_allreduce_sum_f64");
    if (size > 1 && n > 0) allreduce(comm, g, buf, n, MPI_DOUBLE, sizeof(double), RED_SUM);
}

// Integer sums are exact and associative (two's-complement wrap aside), so MPI's own
// order already gives identical results on every rank; no exchange needed.
void hp_allreduce_sum_i64(hp_comm *comm, hp_group_kind g, int64_t *buf, size_t n) {
    int size = hp_comm_count(comm, g, HP_OP_ALLREDUCE, (uint64_t)n * sizeof(int64_t), "hp_allreduce_sum_i64");
    if (size <= 1 || n == 0) return;
    for (size_t off = 0; off < n; off += (size_t)INT_MAX) {
        int len = (int)min_sz(n - off, (size_t)INT_MAX);
        HP_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, buf + off, len, MPI_INT64_T, MPI_SUM, comm->group[g]));
    }
}

// recv (n) = sum over members j (in order) of member j's send[me*n .. +n); send is (size, n).
// recv must not overlap send.
void hp_reduce_scatter(hp_comm *comm, hp_group_kind g, float *recv, const float *send, size_t n) {
    int size = hp_comm_group_size(comm, g, "hp_reduce_scatter");
    hp_comm_count(comm, g, HP_OP_REDUCE_SCATTER, (uint64_t)size * n * sizeof(float), "hp_reduce_scatter");
    if (n == 0) return;
    if (size == 1) { memmove(recv, send, n * sizeof *recv); return; }
    MPI_Comm mc = comm->group[g];
    if (!comm->deterministic) {
        int cnt = hp_comm_int_count(n, "hp_reduce_scatter");
        HP_MPI_CHECK(MPI_Reduce_scatter_block(send, recv, cnt, MPI_FLOAT, MPI_SUM, mc));
        return;
    }
    for (size_t off = 0; off < n; off += HP_COMM_CHUNK) {
        size_t len = min_sz(n - off, HP_COMM_CHUNK);
        float *x = hp_comm_scratch(comm, 2 * (size_t)size * len * sizeof(float));
        float *packed = x + (size_t)size * len;     // (size, len): piece of each member's block
        const float *out = send;
        if (len != n) {
            for (int j = 0; j < size; j++)
                memcpy(packed + (size_t)j * len, send + (size_t)j * n + off, len * sizeof(float));
            out = packed;
        }
        // x (size, len): row j = member j's contribution to my piece
        HP_MPI_CHECK(MPI_Alltoall(out, (int)len, MPI_FLOAT, x, (int)len, MPI_FLOAT, mc));
        reduce_f32(recv + off, x, size, len, RED_SUM);
    }
}
