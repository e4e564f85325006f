// test_comm_async.c - the nonblocking gradient reductions (comm_async.c) against the
// blocking calls on the same inputs: hp_reduce_scatter_start (alone and chained with an
// all-reduce over a second group: HSDP) and hp_allreduce_sum_start must give the same bits,
// the same traffic counters (calls, bytes, wire bytes), and keep their promises: send may be
// overwritten as soon as the start returns, more than HP_COMM_ASYNC_MAX operations may be
// posted (the oldest is waited for), a blocking collective may run while they are in flight,
// a ticket's wait completes it and everything before it; an input staged in the start's own
// copy (hp_reduce_scatter_staging) gives the same.
//   mpirun -np {2,4} test_comm_async        -> "test_comm_async: N passed, M failed"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "hyperpar/comm.h"

#include "test_mpi_check.h"

// Values whose sums round differently in another order: a spread of magnitudes.
static float value(int rank, int op, size_t i) {
    const unsigned h = (unsigned)(rank * 7919 + op * 104729) ^ (unsigned)(i * 2654435761u);
    const float mant = (float)(h % 100003) / 100003.0f - 0.5f;
    return mant * (float)(1u << (h % 23));
}

// Sizes: one element, a prime, several pieces (HP_COMM_CHUNK = 2^16 per member) plus a tail.
static const size_t sizes[] = { 1, 1009, 3 * 65536 + 17, 140001, 5, 65536, 77 };
#define N_OPS ((int)(sizeof sizes / sizeof sizes[0]))   // > HP_COMM_ASYNC_MAX: the queue fills

typedef struct { uint64_t bytes[HP_G_COUNT][HP_OP_COUNT], calls[HP_G_COUNT][HP_OP_COUNT],
                 wire[HP_G_COUNT][HP_OP_COUNT]; } counters;

static void read_counters(const hp_comm *comm, counters *c) {
    for (int g = 0; g < HP_G_COUNT; g++)
        for (int op = 0; op < HP_OP_COUNT; op++) {
            c->bytes[g][op] = hp_comm_bytes(comm, (hp_group_kind)g, (hp_op_kind)op);
            c->calls[g][op] = hp_comm_calls(comm, (hp_group_kind)g, (hp_op_kind)op);
            c->wire[g][op] = hp_comm_wire_bytes(comm, (hp_group_kind)g, (hp_op_kind)op);
        }
}

// Op k: k % 3 == 0 a reduce-scatter over rs (FSDP), 1 the same chained with an all-reduce
// over ar (HSDP), 2 an all-reduce over ar alone (DDP). async: the start calls (2: with the
// reduce-scatters' inputs staged in their own copies), else blocking.
static void run(hp_comm *comm, hp_group_kind rs, hp_group_kind ar, int async, float **out,
                counters *c) {
    const int G = hp_comm_size(comm, rs);
    hp_comm_reset_stats(comm);
    int middle = -1;
    float *send = NULL;
    for (int k = 0; k < N_OPS; k++) {
        const size_t n = sizes[k];
        free(send);
        send = malloc((size_t)G * n * sizeof *send);
        for (size_t i = 0; i < (size_t)G * n; i++) send[i] = value(g_wrank, k, i);
        if (k % 3 == 2) {   // an all-reduce alone (DDP), in place on out[k]
            for (size_t i = 0; i < n; i++) out[k][i] = send[i];
            if (async) hp_allreduce_sum_start(comm, ar, out[k], n);
            else       hp_allreduce_sum(comm, ar, out[k], n);
        } else {            // FSDP (k % 3 == 0) or HSDP (k % 3 == 1)
            const hp_group_kind then = k % 3 == 1 ? ar : HP_G_COUNT;
            if (async) {
                // async 2: the input staged in the start's own copy (hp_reduce_scatter_staging)
                float *staged = async == 2 ? hp_reduce_scatter_staging(comm, rs, n, then) : NULL;
                if (staged) memcpy(staged, send, (size_t)G * n * sizeof *send);
                if (async == 2 && G > 1) CHECK(staged != NULL, "a staging copy for op %d", k);
                const int t = hp_reduce_scatter_start(comm, rs, out[k], staged ? staged : send, n, then);
                if (k == 1) middle = t;
            } else {
                hp_reduce_scatter(comm, rs, out[k], send, n);
                if (then != HP_G_COUNT) hp_allreduce_sum(comm, then, out[k], n);
            }
        }
        if (async) for (size_t i = 0; i < (size_t)G * n; i++) send[i] = -1e30f;   // copied
        if (k == 3) {   // a blocking collective while reductions are in flight
            float x = (float)g_wrank;
            hp_allreduce_sum(comm, HP_G_WORLD, &x, 1);
        }
        if (async) hp_comm_progress(comm);
        if (async && k == 4 && middle >= 0) hp_comm_async_wait(comm, middle);
    }
    free(send);
    if (async) hp_comm_async_wait_all(comm);
    read_counters(comm, c);
}

static void check_config(int R, int S, int world) {
    hp_dims d = hp_dims_default();
    d.dp_replicate = R; d.dp_shard = S; d.world = world;
    char err[256];
    if (hp_dims_validate(&d, NULL, NULL, err, sizeof err) != 0) {
        CHECK(0, "dims R %d S %d rejected: %s", R, S, err);
        return;
    }
    hp_comm *comm = hp_comm_init(MPI_COMM_WORLD, &d, 1);
    float *blocking[N_OPS], *async[N_OPS];
    for (int k = 0; k < N_OPS; k++) {
        blocking[k] = calloc(sizes[k], sizeof(float));
        async[k] = calloc(sizes[k], sizeof(float));
    }
    static counters cb, ca;
    run(comm, HP_G_FSDP, HP_G_DP_REPLICATE, 0, blocking, &cb);
    for (int mode = 1; mode <= 2; mode++) {
        run(comm, HP_G_FSDP, HP_G_DP_REPLICATE, mode, async, &ca);
        for (int k = 0; k < N_OPS; k++) {
            size_t bad = 0;
            for (size_t i = 0; i < sizes[k]; i++) bad += memcmp(&blocking[k][i], &async[k][i], sizeof(float)) != 0;
            CHECK(bad == 0, "R %d S %d op %d (n %zu, %s): %zu elements differ from the blocking call", R, S,
                  k, sizes[k], mode == 2 ? "staged" : "copied", bad);
        }
        CHECK(memcmp(&cb, &ca, sizeof cb) == 0, "R %d S %d (%s): traffic counters differ from the blocking calls",
              R, S, mode == 2 ? "staged" : "copied");
    }
    for (int k = 0; k < N_OPS; k++) {
        free(blocking[k]);
        free(async[k]);
    }
    CHECK(ca.calls[HP_G_FSDP][HP_OP_REDUCE_SCATTER] > 0 && ca.calls[HP_G_DP_REPLICATE][HP_OP_ALLREDUCE] > 0,
          "R %d S %d: nothing counted", R, S);
    hp_comm_free(comm);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int world = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &g_wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    check_config(1, world, world);                  // FSDP
    check_config(world, 1, world);                  // DDP
    if (world % 2 == 0 && world > 2) check_config(2, world / 2, world);   // HSDP
    int local[2] = { g_pass, g_fail }, total[2] = { 0, 0 };
    MPI_Allreduce(local, total, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (g_wrank == 0) printf("test_comm_async: %d passed, %d failed\n", total[0], total[1]);
    MPI_Finalize();
    return total[1] == 0 && total[0] > 0 ? 0 : 1;
}
