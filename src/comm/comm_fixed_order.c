// comm_fixed_order.c - the deterministic reductions, by direct exchange between members.
// Reduce-scatter: member j owns chunk j; every member sends its piece of chunk j straight
// to j, which reduces the pieces in member order 0..size-1. All-reduce: that, then every
// owner sends its reduced chunk straight to every other member. Each element is therefore
// ((x0 + x1) + x2) + ... on every rank, exactly the arithmetic of "gather all operands and
// sum in rank order", while a rank sends (N-1)/N of the buffer per phase instead of
// (N-1) times all of it: 2(N-1)/N * n in all, the bandwidth optimum.
//
// Why not a ring: a ring reduce-scatter accumulates chunk j starting at member j+1, so its
// order (and its bits) would depend on j. Direct exchange keeps member order everywhere.
//
// The buffer goes through in pieces of at most hp_comm_chunk(size) elements per member (bounded
// scratch, two slots). Piece k+1's scatter is posted before piece k is reduced, and piece
// k's gather runs while piece k+1 is received, so the phases overlap.
// defines: hp_fixed_allreduce, hp_fixed_reduce_scatter, hp_fixed_allreduce_wire,
//          hp_fixed_reduce_rows, hp_red_elem_size
#include <string.h>
#include "comm_internal.h"   // defines: struct hp_comm, HP_MPI_CHECK, HP_COMM_CHUNK
#include "hyperpar/bf16.h"
#include "hyperpar/failpoint.h"

static size_t min_sz(size_t a, size_t b) { return a < b ? a : b; }

size_t hp_red_elem_size(hp_red_kind k) {
    switch (k) {
    case HP_RED_F32_SUM: case HP_RED_F32_MAX: return sizeof(float);
    case HP_RED_BF16_SUM: return sizeof(hp_bf16);
    default:             return sizeof(double);   // f64, i64
    }
}
#define elem_size hp_red_elem_size

static MPI_Datatype elem_type(hp_red_kind k) {
    switch (k) {
    case HP_RED_F32_SUM: case HP_RED_F32_MAX: return MPI_FLOAT;
    case HP_RED_F64_SUM: return MPI_DOUBLE;
    case HP_RED_BF16_SUM: return MPI_UINT16_T;
    default:             return MPI_INT64_T;
    }
}


// out (len) = rows[0] op rows[1] op ... op rows[size-1], in that order. out overlaps no row.
void hp_fixed_reduce_rows(void *out, const void *const *rows, int size, size_t len, hp_red_kind k) {
    memcpy(out, rows[0], len * elem_size(k));
    for (int r = 1; r < size; r++) {
        switch (k) {
        case HP_RED_F32_SUM: {
            float *o = out;
            const float *x = rows[r];
            for (size_t i = 0; i < len; i++) o[i] += x[i];
            break;
        }
        case HP_RED_F32_MAX: {
            // NaN wins (once o[i] is NaN, v > NaN is false): a bad value never hides.
            float *o = out;
            const float *x = rows[r];
            for (size_t i = 0; i < len; i++) if (x[i] > o[i] || x[i] != x[i]) o[i] = x[i];
            break;
        }
        case HP_RED_F64_SUM: {
            double *o = out;
            const double *x = rows[r];
            for (size_t i = 0; i < len; i++) o[i] += x[i];
            break;
        }
        case HP_RED_I64_SUM: {
            int64_t *o = out;
            const int64_t *x = rows[r];
            for (size_t i = 0; i < len; i++) o[i] += x[i];
            break;
        }
        case HP_RED_BF16_SUM: {   // the running sum is bf16: every add rounds (RNE)
            hp_bf16 *o = out;
            const hp_bf16 *x = rows[r];
            for (size_t i = 0; i < len; i++)
                o[i] = hp_bf16_from_float(hp_bf16_to_float(o[i]) + hp_bf16_to_float(x[i]));
            break;
        }
        }
    }
}

// One member's view of one exchange.
typedef struct {
    hp_comm     *comm;
    MPI_Comm     mc;
    int          size, me;
    size_t       esz;
    MPI_Datatype dt;
    const char  *op, *group;   // for the watchdog's message
} exch;

static exch exch_of(hp_comm *comm, hp_group_kind g, hp_red_kind k, const char *op) {
    exch x = { comm, comm->group[g], comm->size[g], comm->rank[g], elem_size(k), elem_type(k),
               op, hp_group_name(g) };
    return x;
}

// Posts a receive of cnt elements from member j (nothing when cnt is 0: both sides know
// every count, so they skip the same messages). Returns the requests added.
static int post_recv(const exch *x, void *buf, size_t cnt, int j, int tag, MPI_Request *r) {
    if (cnt == 0) return 0;
    HP_MPI_CHECK(MPI_Irecv(buf, (int)cnt, x->dt, j, tag, x->mc, r));
    return 1;
}
static int post_send(const exch *x, const void *buf, size_t cnt, int j, int tag, MPI_Request *r) {
    if (cnt == 0) return 0;
    HP_MPI_CHECK(MPI_Isend(buf, (int)cnt, x->dt, j, tag, x->mc, r));
    return 1;
}

// ----------------------------------------------------------------------------
// all-reduce

// Scatter of one piece (len elements at base): chunk j to member j; my chunk from every
// member r into row r of the slot (row stride hp_comm_chunk(size) elements).
static int post_scatter(const exch *x, const char *base, size_t len, char *slot, MPI_Request *r) {
    int n = 0;
    const size_t mine = hp_chunk_len(len, x->size, x->me);
    for (int j = 0; j < x->size; j++) {
        if (j == x->me) continue;
        n += post_recv(x, slot + (size_t)j * hp_comm_chunk(x->size) * x->esz, mine, j,
                       HP_COMM_TAG_SCATTER, r + n);
        n += post_send(x, base + hp_chunk_off(len, x->size, j) * x->esz, hp_chunk_len(len, x->size, j),
                       j, HP_COMM_TAG_SCATTER, r + n);
    }
    return n;
}

// Gather of one piece: my reduced chunk to every member, chunk j from member j in place.
static int post_gather(const exch *x, char *base, size_t len, MPI_Request *r) {
    int n = 0;
    const char *mine = base + hp_chunk_off(len, x->size, x->me) * x->esz;
    for (int j = 0; j < x->size; j++) {
        if (j == x->me) continue;
        n += post_recv(x, base + hp_chunk_off(len, x->size, j) * x->esz, hp_chunk_len(len, x->size, j),
                       j, HP_COMM_TAG_GATHER, r + n);
        n += post_send(x, mine, hp_chunk_len(len, x->size, x->me), j, HP_COMM_TAG_GATHER, r + n);
    }
    return n;
}

uint64_t hp_fixed_allreduce_wire(size_t n, int size, int me, size_t esz) {
    if (size <= 1) return 0;
    const size_t piece = (size_t)size * hp_comm_chunk(size);
    uint64_t elems = 0;
    for (size_t off = 0; off < n; off += piece) {
        const size_t len = min_sz(n - off, piece), mine = hp_chunk_len(len, size, me);
        elems += (uint64_t)(len - mine) + (uint64_t)(size - 1) * mine;   // scatter + gather
    }
    return elems * esz;
}

void hp_fixed_allreduce(hp_comm *comm, hp_group_kind g, void *buf, size_t n, hp_red_kind k) {
    const exch x = exch_of(comm, g, k, "all-reduce");
    const size_t chunk = hp_comm_chunk(x.size), piece = (size_t)x.size * chunk;
    const size_t slot_bytes = piece * x.esz;
    char *scratch = hp_comm_scratch(comm, hp_comm_fixed_scratch_bytes(x.size, x.esz));
    char *b = buf;
    const size_t pieces = (n + piece - 1) / piece;
    // Requests: scatter and gather of two pieces in flight, 2(size-1) each at most.
    MPI_Request *scat[2] = { comm->reqs, comm->reqs + 2 * (x.size - 1) };
    MPI_Request *gath[2] = { comm->reqs + 4 * (x.size - 1), comm->reqs + 6 * (x.size - 1) };
    int n_scat[2] = { 0, 0 }, n_gath[2] = { 0, 0 };

    n_scat[0] = post_scatter(&x, b, min_sz(n, piece), scratch, scat[0]);
    for (size_t p = 0; p < pieces; p++) {
        const int s = (int)(p % 2);
        char *base = b + p * piece * x.esz, *slot = scratch + (size_t)s * slot_bytes;
        const size_t len = min_sz(n - p * piece, piece);
        if (p + 1 < pieces)   // the other slot was reduced in the previous round
            n_scat[1 - s] = post_scatter(&x, base + piece * x.esz,
                                         min_sz(n - (p + 1) * piece, piece),
                                         scratch + (size_t)(1 - s) * slot_bytes, scat[1 - s]);
        hp_comm_wait(comm, n_scat[s], scat[s], x.op, x.group);
        // My own piece joins as row me (a copy: the result overwrites it in place).
        const size_t mine = hp_chunk_len(len, x.size, x.me);
        char *own = base + hp_chunk_off(len, x.size, x.me) * x.esz;
        for (int r = 0; r < x.size; r++) comm->rows[r] = slot + (size_t)r * chunk * x.esz;
        memcpy(slot + (size_t)x.me * chunk * x.esz, own, mine * x.esz);
        if (mine > 0) hp_fixed_reduce_rows(own, comm->rows, x.size, mine, k);
        n_gath[s] = post_gather(&x, base, len, gath[s]);
        if (p > 0) hp_comm_wait(comm, n_gath[1 - s], gath[1 - s], x.op, x.group);
    }
    if (pieces > 0) hp_comm_wait(comm, n_gath[(pieces - 1) % 2], gath[(pieces - 1) % 2], x.op,
                                 x.group);
}

// ----------------------------------------------------------------------------
// reduce-scatter: send is (size, n), member j's block at send + j*n; pieces of
// hp_comm_chunk(size) elements of every block.

static int post_block_scatter(const exch *x, const char *send, size_t n, size_t off, size_t len,
                              char *slot, MPI_Request *r) {
    int cnt = 0;
    for (int j = 0; j < x->size; j++) {
        if (j == x->me) continue;
        cnt += post_recv(x, slot + (size_t)j * hp_comm_chunk(x->size) * x->esz, len, j,
                         HP_COMM_TAG_SCATTER, r + cnt);
        cnt += post_send(x, send + ((size_t)j * n + off) * x->esz, len, j, HP_COMM_TAG_SCATTER,
                         r + cnt);
    }
    return cnt;
}

static void reverse_rows(const void **rows, int a, int b) {   // rows[a..b) reversed
    for (b--; a < b; a++, b--) { const void *t = rows[a]; rows[a] = rows[b]; rows[b] = t; }
}
// rows[first], rows[first+1], ... rows[first-1]: the order starts at member `first`
static void rotate_rows(const void **rows, int size, int first) {
    reverse_rows(rows, 0, first);
    reverse_rows(rows, first, size);
    reverse_rows(rows, 0, size);
}

void hp_fixed_reduce_scatter(hp_comm *comm, hp_group_kind g, void *recv_v, const void *send_v,
                             size_t n, hp_red_kind k) {
    const exch x = exch_of(comm, g, k, "reduce-scatter");
    char *recv = recv_v;
    const char *send = send_v;
    const size_t chunk = hp_comm_chunk(x.size), slot_bytes = (size_t)x.size * chunk * x.esz;
    char *scratch = hp_comm_scratch(comm, hp_comm_fixed_scratch_bytes(x.size, x.esz));
    const size_t pieces = (n + chunk - 1) / chunk;
    MPI_Request *scat[2] = { comm->reqs, comm->reqs + 2 * (x.size - 1) };
    int n_scat[2] = { 0, 0 };

    n_scat[0] = post_block_scatter(&x, send, n, 0, min_sz(n, chunk), scratch, scat[0]);
    for (size_t p = 0; p < pieces; p++) {
        const int s = (int)(p % 2);
        const size_t off = p * chunk, len = min_sz(n - off, chunk);
        char *slot = scratch + (size_t)s * slot_bytes;
        if (p + 1 < pieces)
            n_scat[1 - s] = post_block_scatter(&x, send, n, off + chunk,
                                               min_sz(n - off - chunk, chunk),
                                               scratch + (size_t)(1 - s) * slot_bytes,
                                               scat[1 - s]);
        hp_comm_wait(comm, n_scat[s], scat[s], x.op, x.group);
        for (int r = 0; r < x.size; r++) comm->rows[r] = slot + (size_t)r * chunk * x.esz;
        comm->rows[x.me] = send + ((size_t)x.me * n + off) * x.esz;   // mine, read in place
        // (the bug of bf16_reduce_ring_order: a ring's order, chunk j summed from member j+1
        //  on, so each rank's chunk has its own order, which bf16's rounded adds make visible)
        if (k == HP_RED_BF16_SUM && hp_failpoint(HP_FP_BF16_REDUCE_RING_ORDER))
            rotate_rows(comm->rows, x.size, (x.me + 1) % x.size);
        hp_fixed_reduce_rows(recv + off * x.esz, comm->rows, x.size, len, k);
    }
}
