// test_comm.c - every collective of comm.h over every mesh group kind, for several
// parallel configurations of the job's world size, against a serial result that each rank
// computes itself from known per-rank inputs (value = f(world_rank, i)).
// Checks: group membership and order vs mesh.h; deterministic sums bit-identical to the
// rank-ordered serial sum and across the group; non-deterministic sums within 1e-6;
// gathers/all-to-alls/broadcast/send-recv exact; traffic counters == comm.h's rules, both
// the logical bytes and the wire bytes; the deterministic all-reduce puts exactly
// 2(N-1)/N * n * 4 bytes on the wire per rank when N divides n, and 2(N-1) * n * 4 over
// the group for any n.
//   mpirun -np {1,2,4,8} test_comm          -> "test_comm: N passed, M failed"
//   mpirun -np 2 test_comm --abort-arg      -> a bad root on rank 1 must end the job
//   mpirun -np 2 test_comm --abort-mpi      -> an MPI error on rank 1 must end the job
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "hyperpar/bf16.h"
#include "hyperpar/comm.h"

#include "test_mpi_check.h"

// ----------------------------------------------------------------------------
// known inputs

static uint32_t hash3(uint32_t a, uint32_t b, uint32_t c) {
    uint32_t h = a * 0x9E3779B1u ^ (b + 0x7F4A7C15u) * 0x85EBCA77u ^ (c + 0x165667B1u) * 0xC2B2AE3Du;
    h ^= h >> 15; h *= 0x2C1B3C6Du; h ^= h >> 12; h *= 0x297A2D39u; h ^= h >> 15;
    return h;
}

// Mixed signs and magnitudes (2^-8 .. 2^8), so a sum's bits depend on its order.
static float fval(int salt, int wr, size_t i) {
    uint32_t h = hash3((uint32_t)salt, (uint32_t)wr, (uint32_t)i);
    float m = (float)(h & 0xFFFFFF) / (float)0x1000000 * 2.0f - 1.0f;
    return ldexpf(m, (int)((h >> 24) % 17) - 8);
}

static double dval(int salt, int wr, size_t i) {
    return (double)fval(salt, wr, i) * (1.0 + 1e-9 * (double)i) + 1e-12 * wr;
}

static int64_t ival(int wr, size_t i) {   // > 2^53: must not pass through a double
    return ((int64_t)(wr + 1) << 40) + (int64_t)i * 7 - wr;
}

// alltoallv: elements member a sends to b (0..3, zeros included) and their values.
static int a2a_count(int a, int b, int salt) { return (a * 3 + b * 5 + salt) % 4; }
static float a2a_val(int a, int b, int k) { return (float)(a * 10000 + b * 100 + k); }

// ----------------------------------------------------------------------------
// helpers

typedef struct {
    hp_comm *comm;
    const hp_dims *d;
    int det;
    hp_group_kind g;
    int size, me;
    int *members;                                  // (size) world ranks, group order
    uint64_t exp_bytes[HP_G_COUNT][HP_OP_COUNT];
    uint64_t exp_calls[HP_G_COUNT][HP_OP_COUNT];
    uint64_t exp_wire[HP_G_COUNT][HP_OP_COUNT];
} ctx;

static void expect(ctx *c, hp_op_kind op, uint64_t bytes) {
    c->exp_calls[c->g][op] += 1;
    if (c->size > 1) c->exp_bytes[c->g][op] += bytes;
}

static void expect_wire(ctx *c, hp_op_kind op, uint64_t bytes) {
    if (c->size > 1) c->exp_wire[c->g][op] += bytes;
}

// Wire bytes of member me in a fixed-order all-reduce of n elements of esz bytes over
// size members (docs/traffic.md): pieces of size*2^16 elements, chunk j of a piece of len
// is len/size (+1 for j < len%size); a member sends the other chunks once (scatter) and
// its own to the size-1 others (gather).
static uint64_t allreduce_wire(size_t n, int size, int me, size_t esz) {
    if (size <= 1) return 0;
    const size_t piece = (size_t)size << 16;
    uint64_t e = 0;
    for (size_t off = 0; off < n; off += piece) {
        size_t len = n - off < piece ? n - off : piece;
        size_t mine = len / (size_t)size + ((size_t)me < len % (size_t)size);
        e += (len - mine) + (uint64_t)(size - 1) * mine;
    }
    return e * esz;
}

static uint64_t fnv(const void *p, size_t n) {
    const unsigned char *b = p;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

// 1 when every member of the group holds the same bytes.
static int same_across_group(ctx *c, const void *buf, size_t nbytes) {
    uint64_t h = fnv(buf, nbytes);
    uint64_t *all = malloc((size_t)c->size * sizeof *all);
    MPI_Allgather(&h, 1, MPI_UINT64_T, all, 1, MPI_UINT64_T, hp_comm_mpi(c->comm, c->g));
    int ok = 1;
    for (int j = 0; j < c->size; j++) ok &= all[j] == h;
    free(all);
    return ok;
}

// Compares got with want: bitwise when tol < 0, else |a-b| <= tol*scale[i] (+1e-30).
static int compare(const char *what, ctx *c, const float *got, const float *want,
                   const float *scale, size_t n, float tol) {
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < n; i++) {
        int ok = tol < 0 ? memcmp(&got[i], &want[i], sizeof(float)) == 0
                         : fabsf(got[i] - want[i]) <= tol * scale[i] + 1e-30f;
        if (!ok && bad++ == 0) first = i;
    }
    CHECK(bad == 0, "%s group %s (size %d, det %d) n=%zu: %zu mismatches, first [%zu] got %.9g want %.9g",
          what, hp_group_name(c->g), c->size, c->det, n, bad, first,
          bad ? got[first] : 0.0, bad ? want[first] : 0.0);
    return bad == 0;
}

// ----------------------------------------------------------------------------
// one collective each

static void t_allreduce_sum(ctx *c, size_t n, int salt) {
    float *buf = malloc((n + 1) * sizeof *buf), *want = malloc((n + 1) * sizeof *want);
    float *scale = malloc((n + 1) * sizeof *scale);
    for (size_t i = 0; i < n; i++) {
        buf[i] = fval(salt, g_wrank, i);
        want[i] = fval(salt, c->members[0], i);
        scale[i] = fabsf(want[i]);
        for (int j = 1; j < c->size; j++) {   // the rank-ordered serial sum
            float x = fval(salt, c->members[j], i);
            want[i] += x;
            scale[i] += fabsf(x);
        }
    }
    hp_allreduce_sum(c->comm, c->g, buf, n);
    expect(c, HP_OP_ALLREDUCE, n * 4);
    expect_wire(c, HP_OP_ALLREDUCE, allreduce_wire(n, c->size, c->me, 4));
    compare("allreduce_sum", c, buf, want, scale, n, c->det ? -1.0f : 1e-6f);
    if (c->det) CHECK(same_across_group(c, buf, n * sizeof *buf),
                      "allreduce_sum group %s n=%zu: not bit-identical across the group",
                      hp_group_name(c->g), n);
    free(buf); free(want); free(scale);
}

static void t_allreduce_max(ctx *c, size_t n, int salt) {
    float *buf = malloc((n + 1) * sizeof *buf), *want = malloc((n + 1) * sizeof *want);
    for (size_t i = 0; i < n; i++) {
        buf[i] = fval(salt, g_wrank, i);
        want[i] = fval(salt, c->members[0], i);
        for (int j = 1; j < c->size; j++) want[i] = fmaxf(want[i], fval(salt, c->members[j], i));
    }
    hp_allreduce_max(c->comm, c->g, buf, n);
    expect(c, HP_OP_ALLREDUCE, n * 4);
    expect_wire(c, HP_OP_ALLREDUCE, allreduce_wire(n, c->size, c->me, 4));
    compare("allreduce_max", c, buf, want, NULL, n, -1.0f);
    free(buf); free(want);
    // Deterministic max propagates a NaN from any member (member 1, or 0 alone).
    if (c->det && n > 0) {
        float v[2] = { 1.0f, 2.0f };
        if (c->me == (c->size > 1 ? 1 : 0)) v[1] = NAN;
        hp_allreduce_max(c->comm, c->g, v, 2);
        expect(c, HP_OP_ALLREDUCE, 8);
        expect_wire(c, HP_OP_ALLREDUCE, allreduce_wire(2, c->size, c->me, 4));
        CHECK(isnan(v[1]) && v[0] == 1.0f, "allreduce_max NaN group %s: got %g %g",
              hp_group_name(c->g), v[0], v[1]);
    }
}

static void t_allreduce_f64(ctx *c, size_t n, int salt) {
    double *buf = malloc((n + 1) * sizeof *buf), *want = malloc((n + 1) * sizeof *want);
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        buf[i] = dval(salt, g_wrank, i);
        want[i] = dval(salt, c->members[0], i);
        for (int j = 1; j < c->size; j++) want[i] += dval(salt, c->members[j], i);
    }
    hp_allreduce_sum_f64(c->comm, c->g, buf, n);
    expect(c, HP_OP_ALLREDUCE, n * 8);
    expect_wire(c, HP_OP_ALLREDUCE, allreduce_wire(n, c->size, c->me, 8));
    for (size_t i = 0; i < n; i++)
        bad += c->det ? memcmp(&buf[i], &want[i], sizeof(double)) != 0
                      : fabs(buf[i] - want[i]) > 1e-12 * (fabs(want[i]) + 1e3);
    CHECK(bad == 0, "allreduce_sum_f64 group %s det %d n=%zu: %zu mismatches",
          hp_group_name(c->g), c->det, n, bad);
    if (c->det) CHECK(same_across_group(c, buf, n * sizeof *buf),
                      "allreduce_sum_f64 group %s: not bit-identical across the group", hp_group_name(c->g));
    free(buf); free(want);
}

static void t_allreduce_i64(ctx *c, size_t n) {
    int64_t *buf = malloc((n + 1) * sizeof *buf);
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) buf[i] = ival(g_wrank, i);
    hp_allreduce_sum_i64(c->comm, c->g, buf, n);
    expect(c, HP_OP_ALLREDUCE, n * 8);
    expect_wire(c, HP_OP_ALLREDUCE, allreduce_wire(n, c->size, c->me, 8));
    for (size_t i = 0; i < n; i++) {
        int64_t want = 0;
        for (int j = 0; j < c->size; j++) want += ival(c->members[j], i);
        bad += buf[i] != want;
    }
    CHECK(bad == 0, "allreduce_sum_i64 group %s n=%zu: %zu mismatches", hp_group_name(c->g), n, bad);
    free(buf);
}

static void t_allgather(ctx *c, size_t n, int salt, int in_place) {
    size_t tot = (size_t)c->size * n;
    float *send = malloc((n + 1) * sizeof *send);
    float *recv = malloc((tot + 1) * sizeof *recv), *want = malloc((tot + 1) * sizeof *want);
    for (size_t i = 0; i < tot; i++) recv[i] = -7.0f;
    for (size_t i = 0; i < n; i++) send[i] = fval(salt, g_wrank, i);
    for (int j = 0; j < c->size; j++)
        for (size_t i = 0; i < n; i++) want[(size_t)j * n + i] = fval(salt, c->members[j], i);
    if (in_place) {   // the shard already sits in its slot of the full buffer
        memcpy(recv + (size_t)c->me * n, send, n * sizeof *send);
        hp_allgather(c->comm, c->g, recv, recv + (size_t)c->me * n, n);
    } else {
        hp_allgather(c->comm, c->g, recv, send, n);
    }
    expect(c, HP_OP_ALLGATHER, n * 4);
    expect_wire(c, HP_OP_ALLGATHER, (uint64_t)(c->size - 1) * n * 4);
    compare(in_place ? "allgather(in place)" : "allgather", c, recv, want, NULL, tot, -1.0f);

    int *isend = malloc((n + 1) * sizeof *isend), *irecv = malloc((tot + 1) * sizeof *irecv);
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) isend[i] = g_wrank * 1000 + (int)i;
    hp_allgather_int(c->comm, c->g, irecv, isend, n);
    expect(c, HP_OP_ALLGATHER, n * 4);
    expect_wire(c, HP_OP_ALLGATHER, (uint64_t)(c->size - 1) * n * 4);
    for (int j = 0; j < c->size; j++)
        for (size_t i = 0; i < n; i++) bad += irecv[(size_t)j * n + i] != c->members[j] * 1000 + (int)i;
    CHECK(bad == 0, "allgather_int group %s n=%zu: %zu mismatches", hp_group_name(c->g), n, bad);
    free(send); free(recv); free(want); free(isend); free(irecv);
}

static void t_reduce_scatter(ctx *c, size_t n, int salt) {
    size_t tot = (size_t)c->size * n;
    float *send = malloc((tot + 1) * sizeof *send), *recv = malloc((n + 1) * sizeof *recv);
    float *want = malloc((n + 1) * sizeof *want), *scale = malloc((n + 1) * sizeof *scale);
    for (size_t k = 0; k < tot; k++) send[k] = fval(salt, g_wrank, k);
    for (size_t i = 0; i < n; i++) {
        size_t k = (size_t)c->me * n + i;   // my slice of every member's input
        want[i] = fval(salt, c->members[0], k);
        scale[i] = fabsf(want[i]);
        for (int j = 1; j < c->size; j++) {
            float x = fval(salt, c->members[j], k);
            want[i] += x;
            scale[i] += fabsf(x);
        }
    }
    hp_reduce_scatter(c->comm, c->g, recv, send, n);
    expect(c, HP_OP_REDUCE_SCATTER, tot * 4);
    expect_wire(c, HP_OP_REDUCE_SCATTER, (uint64_t)(c->size - 1) * n * 4);
    compare("reduce_scatter", c, recv, want, scale, n, c->det ? -1.0f : 1e-6f);
    free(send); free(recv); free(want); free(scale);
}

// The bf16 sums (--mixed-precision-reduce bfloat16): the member-ordered sum with every add
// rounded to bf16, bit for bit in either mode (they always take the fixed-order exchange),
// 2 bytes an element counted. The serial reference rounds the same way.
static hp_bf16 bval(int salt, int wr, size_t i) { return hp_bf16_from_float(fval(salt, wr, i)); }
static hp_bf16 bf16_add(hp_bf16 a, hp_bf16 b) {
    return hp_bf16_from_float(hp_bf16_to_float(a) + hp_bf16_to_float(b));
}

static void t_bf16_sums(ctx *c, size_t n, int salt) {
    const size_t tot = (size_t)c->size * n;
    uint16_t *send = malloc((tot + 1) * sizeof *send), *recv = malloc((n + 1) * sizeof *recv);
    uint16_t *buf = malloc((n + 1) * sizeof *buf);
    size_t bad_rs = 0, bad_ar = 0;
    for (size_t k = 0; k < tot; k++) send[k] = bval(salt, g_wrank, k);
    for (size_t i = 0; i < n; i++) buf[i] = bval(salt + 1, g_wrank, i);
    hp_reduce_scatter_bf16(c->comm, c->g, recv, send, n);
    expect(c, HP_OP_REDUCE_SCATTER, tot * 2);
    expect_wire(c, HP_OP_REDUCE_SCATTER, (uint64_t)(c->size - 1) * n * 2);
    hp_allreduce_sum_bf16(c->comm, c->g, buf, n);
    expect(c, HP_OP_ALLREDUCE, n * 2);
    expect_wire(c, HP_OP_ALLREDUCE, allreduce_wire(n, c->size, c->me, 2));
    for (size_t i = 0; i < n; i++) {
        const size_t k = (size_t)c->me * n + i;
        hp_bf16 rs = bval(salt, c->members[0], k), ar = bval(salt + 1, c->members[0], i);
        for (int j = 1; j < c->size; j++) {
            rs = bf16_add(rs, bval(salt, c->members[j], k));
            ar = bf16_add(ar, bval(salt + 1, c->members[j], i));
        }
        bad_rs += recv[i] != rs;
        bad_ar += buf[i] != ar;
    }
    CHECK(bad_rs == 0, "reduce_scatter_bf16 group %s n=%zu: %zu elements differ from the rounded "
          "member-ordered sum", hp_group_name(c->g), n, bad_rs);
    CHECK(bad_ar == 0, "allreduce_sum_bf16 group %s n=%zu: %zu elements differ from the rounded "
          "member-ordered sum", hp_group_name(c->g), n, bad_ar);
    CHECK(same_across_group(c, buf, n * sizeof *buf), "allreduce_sum_bf16 group %s n=%zu: ranks differ",
          hp_group_name(c->g), n);
    free(send); free(recv); free(buf);
}

static void t_alltoallv(ctx *c, int salt) {
    int *scnt = malloc((size_t)c->size * sizeof *scnt), *rcnt = malloc((size_t)c->size * sizeof *rcnt);
    size_t stot = 0, rtot = 0;
    uint64_t bytes = 0;
    for (int j = 0; j < c->size; j++) {
        scnt[j] = a2a_count(g_wrank, c->members[j], salt);
        rcnt[j] = a2a_count(c->members[j], g_wrank, salt);
        stot += (size_t)scnt[j];
        rtot += (size_t)rcnt[j];
        if (j != c->me) bytes += (uint64_t)scnt[j] * 4;
    }
    float *send = malloc((stot + 1) * sizeof *send), *recv = malloc((rtot + 1) * sizeof *recv);
    float *want = malloc((rtot + 1) * sizeof *want);
    size_t o = 0, w = 0;
    for (int j = 0; j < c->size; j++) {
        for (int k = 0; k < scnt[j]; k++) send[o++] = a2a_val(g_wrank, c->members[j], k);
        for (int k = 0; k < rcnt[j]; k++) want[w++] = a2a_val(c->members[j], g_wrank, k);
    }
    hp_alltoallv(c->comm, c->g, recv, rcnt, send, scnt);
    expect(c, HP_OP_ALLTOALL, bytes);
    expect_wire(c, HP_OP_ALLTOALL, bytes);
    compare("alltoallv", c, recv, want, NULL, rtot, -1.0f);
    // the 2-byte form: the same exchange of the values' bf16 patterns, half the bytes
    uint16_t *send16 = malloc((stot + 1) * sizeof *send16), *recv16 = malloc((rtot + 1) * sizeof *recv16);
    size_t bad16 = 0;
    for (size_t i = 0; i < stot; i++) send16[i] = hp_bf16_from_float(send[i]);
    hp_alltoallv_bf16(c->comm, c->g, recv16, rcnt, send16, scnt);
    expect(c, HP_OP_ALLTOALL, bytes / 2);
    expect_wire(c, HP_OP_ALLTOALL, bytes / 2);
    for (size_t i = 0; i < rtot; i++) bad16 += recv16[i] != hp_bf16_from_float(want[i]);
    CHECK(bad16 == 0, "alltoallv_bf16 group %s: %zu mismatches", hp_group_name(c->g), bad16);
    free(send16); free(recv16);
    free(scnt); free(rcnt); free(send); free(recv); free(want);
}

static void t_alltoall_int(ctx *c, int n) {
    size_t tot = (size_t)c->size * (size_t)n;
    int *send = malloc((tot + 1) * sizeof *send), *recv = malloc((tot + 1) * sizeof *recv);
    size_t bad = 0;
    for (int j = 0; j < c->size; j++)
        for (int k = 0; k < n; k++) send[(size_t)j * n + k] = g_wrank * 1000 + c->members[j] * 10 + k;
    hp_alltoall_int(c->comm, c->g, recv, send, n);
    expect(c, HP_OP_ALLTOALL, (uint64_t)(c->size - 1) * (uint64_t)n * 4);
    expect_wire(c, HP_OP_ALLTOALL, (uint64_t)(c->size - 1) * (uint64_t)n * 4);
    for (int j = 0; j < c->size; j++)
        for (int k = 0; k < n; k++) bad += recv[(size_t)j * n + k] != c->members[j] * 1000 + g_wrank * 10 + k;
    CHECK(bad == 0, "alltoall_int group %s n=%d: %zu mismatches", hp_group_name(c->g), n, bad);
    free(send); free(recv);
}

static void t_broadcast(ctx *c, size_t n, int root, int salt) {
    float *buf = malloc((n + 1) * sizeof *buf), *want = malloc((n + 1) * sizeof *want);
    for (size_t i = 0; i < n; i++) {
        buf[i] = fval(salt, g_wrank, i);
        want[i] = fval(salt, c->members[root], i);
    }
    hp_broadcast(c->comm, c->g, buf, n, root);
    expect(c, HP_OP_BROADCAST, c->me == root ? n * 4 : 0);
    expect_wire(c, HP_OP_BROADCAST, c->me == root ? (uint64_t)(c->size - 1) * n * 4 : 0);
    compare("broadcast", c, buf, want, NULL, n, -1.0f);
    free(buf); free(want);
}

// Ring shift by `shift`: send to me+shift, receive from me-shift.
static void t_sendrecv(ctx *c, size_t n, int shift, int salt) {
    int dst = (c->me + shift) % c->size, src = (c->me - shift % c->size + c->size) % c->size;
    float *send = malloc((n + 1) * sizeof *send), *recv = malloc((n + 1) * sizeof *recv);
    float *want = malloc((n + 1) * sizeof *want);
    for (size_t i = 0; i < n; i++) {
        send[i] = fval(salt, g_wrank, i);
        want[i] = fval(salt, c->members[src], i);
    }
    hp_sendrecv(c->comm, c->g, recv, src, send, dst, n);
    expect(c, HP_OP_SENDRECV, dst != c->me ? n * 4 : 0);
    expect_wire(c, HP_OP_SENDRECV, dst != c->me ? n * 4 : 0);
    compare("sendrecv", c, recv, want, NULL, n, -1.0f);
    free(send); free(recv); free(want);
}

// The deterministic all-reduce on the world group: bit-identical to the member-ordered
// sum on every rank (t_allreduce_sum), and its wire bytes: 2(N-1)/N * n * 4 per rank when
// N divides n, 2(N-1) * n * 4 summed over the group for any n. Sizes cover one piece,
// several pipelined pieces (2^16 elements per member each) and chunks of unequal length.
static void t_wire_formula(ctx *c) {
    const size_t N = (size_t)c->size;
    // (the serial reference costs n*N per rank: fewer pieces at larger N)
    const size_t ns[] = { N * 1000, (N <= 2 ? 3 : 1) * (N << 16) + N * 8, 1001, 1,
                          (N <= 2 ? 3 * (N << 16) / 2 : N << 16) + 5 };
    for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++) {
        const size_t n = ns[k];
        hp_comm_reset_stats(c->comm);
        t_allreduce_sum(c, n, 50 + (int)k);
        uint64_t w = hp_comm_wire_bytes(c->comm, c->g, HP_OP_ALLREDUCE), total = 0;
        MPI_Allreduce(&w, &total, 1, MPI_UINT64_T, MPI_SUM, hp_comm_mpi(c->comm, c->g));
        if (n % N == 0)
            CHECK(w * N == 2 * (N - 1) * n * 4, "all-reduce wire bytes at N=%zu n=%zu: %llu, want 2(N-1)/N*n*4 = %llu",
                  N, n, (unsigned long long)w, (unsigned long long)(2 * (N - 1) * n * 4 / N));
        CHECK(total == 2 * (N - 1) * n * 4, "all-reduce wire bytes over the group at N=%zu n=%zu: %llu, want %llu",
              N, n, (unsigned long long)total, (unsigned long long)(2 * (N - 1) * n * 4));
        CHECK(hp_comm_bytes(c->comm, c->g, HP_OP_ALLREDUCE) == (N > 1 ? n * 4 : 0),
              "all-reduce logical bytes at N=%zu n=%zu: %llu, want n*4", N, n,
              (unsigned long long)hp_comm_bytes(c->comm, c->g, HP_OP_ALLREDUCE));
        if (g_wrank == 0 && k < 2)
            printf("  all-reduce wire bytes N=%zu n=%zu: %llu per rank = 2(N-1)/N*n*4\n", N, n,
                   (unsigned long long)w);
    }
}

// ----------------------------------------------------------------------------
// one configuration

static void check_counters(ctx *c) {
    int bad = 0, bg = 0, bo = 0;
    for (int g = 0; g < HP_G_COUNT; g++)
        for (int op = 0; op < HP_OP_COUNT; op++)
            if (hp_comm_bytes(c->comm, g, op) != c->exp_bytes[g][op] ||
                hp_comm_wire_bytes(c->comm, g, op) != c->exp_wire[g][op] ||
                hp_comm_calls(c->comm, g, op) != c->exp_calls[g][op]) {
                if (bad++ == 0) { bg = g; bo = op; }
            }
    CHECK(bad == 0, "counters after group %s (det %d): %d entries differ, first %s/%s bytes %llu want %llu, "
          "wire %llu want %llu, calls %llu want %llu", hp_group_name(c->g), c->det, bad, hp_group_name(bg),
          hp_op_name(bo),
          (unsigned long long)hp_comm_bytes(c->comm, bg, bo), (unsigned long long)c->exp_bytes[bg][bo],
          (unsigned long long)hp_comm_wire_bytes(c->comm, bg, bo), (unsigned long long)c->exp_wire[bg][bo],
          (unsigned long long)hp_comm_calls(c->comm, bg, bo), (unsigned long long)c->exp_calls[bg][bo]);
}

static void run_config(const hp_dims *d, int det, int big_too) {
    hp_comm *comm = hp_comm_init(MPI_COMM_WORLD, d, det);
    ctx c = { .comm = comm, .d = d, .det = det };
    c.members = malloc((size_t)d->world * sizeof *c.members);

    hp_coords want_co;
    hp_mesh_coords(d, g_wrank, &want_co);
    CHECK(memcmp(hp_comm_coords(comm), &want_co, sizeof want_co) == 0, "hp_comm_coords differs from mesh");
    CHECK(memcmp(hp_comm_dims(comm), d, sizeof *d) == 0, "hp_comm_dims differs from the dims handed in");

    for (int g = 0; g < HP_G_COUNT; g++) {
        c.g = (hp_group_kind)g;
        c.size = hp_mesh_group(d, c.g, g_wrank, c.members, &c.me);
        CHECK(hp_comm_size(comm, c.g) == c.size && hp_comm_rank(comm, c.g) == c.me,
              "group %s: comm size/rank %d/%d, mesh %d/%d", hp_group_name(c.g),
              hp_comm_size(comm, c.g), hp_comm_rank(comm, c.g), c.size, c.me);
        // The MPI communicator holds exactly the mesh's members, in the mesh's order.
        int *wr = malloc((size_t)c.size * sizeof *wr), msize = 0, bad = 0;
        MPI_Comm_size(hp_comm_mpi(comm, c.g), &msize);
        if (msize == c.size) {
            MPI_Allgather(&g_wrank, 1, MPI_INT, wr, 1, MPI_INT, hp_comm_mpi(comm, c.g));
            for (int j = 0; j < c.size; j++) bad += wr[j] != c.members[j];
        }
        CHECK(msize == c.size && bad == 0, "group %s: MPI communicator members differ from mesh",
              hp_group_name(c.g));
        free(wr);

        hp_comm_reset_stats(comm);
        memset(c.exp_bytes, 0, sizeof c.exp_bytes);
        memset(c.exp_calls, 0, sizeof c.exp_calls);
        memset(c.exp_wire, 0, sizeof c.exp_wire);
        // Non-deterministic mode is the plain MPI calls: one size keeps 8 ranks on 2 cores fast.
        const size_t ns[] = { 33, 0, 1 };
        for (int k = 0; k < (det ? 3 : 1); k++) {
            size_t n = ns[k];
            int salt = g * 100 + k;
            t_allreduce_sum(&c, n, salt);
            t_allreduce_max(&c, n, salt);
            t_allreduce_f64(&c, n, salt);
            t_allreduce_i64(&c, n);
            t_allgather(&c, n, salt, 0);
            t_allgather(&c, n, salt, 1);
            t_reduce_scatter(&c, n, salt);
            t_bf16_sums(&c, n, salt);
            t_alltoall_int(&c, (int)n);
            t_broadcast(&c, n, 0, salt);
            t_broadcast(&c, n, c.size - 1, salt);
            t_sendrecv(&c, n, 1, salt);
            if (c.size > 2) t_sendrecv(&c, n, 2, salt + 1);
        }
        t_alltoallv(&c, g);
        t_alltoallv(&c, g + 1);
        hp_barrier(comm, c.g);
        check_counters(&c);
    }

    // Buffers longer than the deterministic exchange's piece size (2^16 per member);
    // once per world size (the serial reference is the costly part).
    if (big_too) {
        double t0 = MPI_Wtime();
        c.g = HP_G_WORLD;
        c.size = hp_mesh_group(d, c.g, g_wrank, c.members, &c.me);
        t_allreduce_sum(&c, 2 * 65536 + 3, 7);
        t_reduce_scatter(&c, 65536 + 11, 8);
        t_reduce_scatter(&c, 2 * 65536 + 5, 9);   // three pipelined pieces
        if (det) t_wire_formula(&c);
        if (g_wrank == 0) printf("  big buffers (det %d): %.2f s\n", det, MPI_Wtime() - t0);
    }
    hp_comm_free(comm);
    free(c.members);
}

// ----------------------------------------------------------------------------
// configurations per world size

typedef struct { int world, R, S, C, T, ep, etp, pp, optional; } cfg;

static const cfg configs[] = {
    { 1, 1, 1, 1, 1, 1, 1, 1, 0 },
    { 2, 1, 2, 1, 1, 1, 1, 1, 0 }, { 2, 2, 1, 1, 1, 1, 1, 1, 0 }, { 2, 1, 1, 2, 1, 1, 1, 1, 0 },
    { 2, 1, 1, 1, 2, 1, 1, 1, 0 }, { 2, 1, 2, 1, 1, 2, 1, 1, 0 }, { 2, 1, 1, 1, 2, 2, 1, 1, 0 },
    { 2, 1, 1, 1, 1, 1, 1, 2, 1 },
    { 4, 1, 4, 1, 1, 1, 1, 1, 0 }, { 4, 2, 2, 1, 1, 1, 1, 1, 0 }, { 4, 1, 2, 1, 2, 1, 1, 1, 0 },
    { 4, 1, 1, 2, 2, 1, 1, 1, 0 }, { 4, 2, 1, 2, 1, 1, 1, 1, 0 }, { 4, 1, 2, 1, 2, 2, 2, 1, 0 },
    { 4, 1, 4, 1, 1, 4, 1, 1, 0 }, { 4, 1, 2, 2, 1, 4, 1, 1, 0 }, { 4, 2, 1, 1, 2, 2, 1, 1, 0 },
    { 4, 1, 2, 1, 1, 1, 1, 2, 1 },
    { 8, 1, 2, 2, 2, 1, 1, 1, 0 }, { 8, 2, 2, 1, 2, 1, 1, 1, 0 }, { 8, 1, 8, 1, 1, 1, 1, 1, 0 },
    { 8, 2, 1, 2, 2, 1, 1, 1, 0 }, { 8, 1, 2, 2, 2, 4, 1, 1, 0 }, { 8, 1, 2, 2, 2, 4, 2, 1, 0 },
    { 8, 1, 2, 2, 2, 2, 2, 1, 0 }, { 8, 1, 2, 2, 2, 2, 1, 1, 0 }, { 8, 1, 4, 1, 2, 8, 1, 1, 0 },
    { 8, 2, 2, 1, 2, 2, 2, 1, 0 }, { 8, 1, 2, 1, 2, 2, 1, 2, 1 },
};

// Deliberate failures for the abort tests: the job must end non-zero, not hang.
static int abort_test(const char *mode, int world) {
    hp_dims d = hp_dims_default();
    d.dp_shard = world;
    d.world = world;
    char err[256];
    if (hp_dims_validate(&d, NULL, NULL, err, sizeof err) != 0) { fprintf(stderr, "%s\n", err); return 2; }
    hp_comm *comm = hp_comm_init(MPI_COMM_WORLD, &d, 1);
    float buf[8] = { 0 };
    if (g_wrank == 1 && strcmp(mode, "--abort-arg") == 0) hp_broadcast(comm, HP_G_WORLD, buf, 8, 99);
    if (strcmp(mode, "--abort-mpi") == 0 && g_wrank < 2) {   // rank 1 receives 8 into room for 4
        float out[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
        hp_sendrecv(comm, HP_G_WORLD, buf, 1 - g_wrank, out, 1 - g_wrank, g_wrank == 0 ? 8 : 4);
    }
    hp_barrier(comm, HP_G_WORLD);   // the healthy ranks wait here until the job is killed
    hp_comm_free(comm);
    return 0;   // reaching this is the failure the test looks for
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int world = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &g_wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    if (argc > 1) {
        int rc = abort_test(argv[1], world);
        MPI_Finalize();
        return rc;
    }

    static const char *const op_names[HP_OP_COUNT] = {
        "all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast", "send_recv" };
    for (int op = 0; op < HP_OP_COUNT; op++)
        CHECK(strcmp(hp_op_name(op), op_names[op]) == 0, "hp_op_name(%d) = %s", op, hp_op_name(op));

    int ran = 0;
    for (size_t k = 0; k < sizeof configs / sizeof configs[0]; k++) {
        const cfg *f = &configs[k];
        if (f->world != world) continue;
        hp_dims d = hp_dims_default();
        d.dp_replicate = f->R; d.dp_shard = f->S; d.cp = f->C; d.tp = f->T;
        d.ep = f->ep; d.etp = f->etp; d.pp = f->pp; d.world = world;
        char err[256];
        if (hp_dims_validate(&d, NULL, NULL, err, sizeof err) != 0) {
            // pp > 1 is optional: the mesh supports it, the rest of hyperpar may not.
            if (!f->optional) CHECK(0, "config (R,S,C,T,ep,etp,pp)=(%d,%d,%d,%d,%d,%d,%d) rejected: %s",
                                    f->R, f->S, f->C, f->T, f->ep, f->etp, f->pp, err);
            else if (g_wrank == 0) printf("skip (R,S,C,T,ep,etp,pp)=(%d,%d,%d,%d,%d,%d,%d): %s\n",
                                          f->R, f->S, f->C, f->T, f->ep, f->etp, f->pp, err);
            continue;
        }
        double t0 = MPI_Wtime();
        run_config(&d, 1, ran == 0);
        run_config(&d, 0, 0);
        ran++;
        if (g_wrank == 0)
            printf("checked (R,S,C,T,ep,etp,pp)=(%d,%d,%d,%d,%d,%d,%d) in %.2f s\n",
                   f->R, f->S, f->C, f->T, f->ep, f->etp, f->pp, MPI_Wtime() - t0);
    }
    CHECK(ran > 0, "no configuration for world %d", world);

    int local[2] = { g_pass, g_fail }, total[2] = { 0, 0 };
    MPI_Allreduce(local, total, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (g_wrank == 0) printf("test_comm: %d passed, %d failed\n", total[0], total[1]);
    MPI_Finalize();
    return total[1] == 0 ? 0 : 1;
}
