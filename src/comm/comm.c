// comm.c - builds one MPI sub-communicator per mesh group; accessors, counters, errors.
// The collectives themselves live in comm_reduce.c (sums, max) and comm_move.c (gather,
// all-to-all, broadcast, send/recv), comm_fixed_order.c (the deterministic exchanges) and
// comm_wait.c (the watchdog). spec: docs/torchtitan.md §2.
// defines: hp_comm_init/free, accessors, hp_comm_bytes/wire_bytes/calls/reset_stats,
//          hp_op_name, hp_comm_set_step, hp_comm_fail, hp_mpi_check, hp_comm_scratch,
//          hp_comm_fixed_scratch_bytes, hp_comm_count, hp_comm_count_wire
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "hyperpar/memtrack.h"
#include "comm_internal.h"   // defines: struct hp_comm, HP_MPI_CHECK

// ----------------------------------------------------------------------------
// errors

_Noreturn void hp_comm_fail(const char *file, int line, const char *fmt, ...) {
    int rank = -1, inited = 0, finalized = 0;
    MPI_Initialized(&inited);
    MPI_Finalized(&finalized);
    if (inited && !finalized) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    msg[strcspn(msg, "\n")] = '\0';   // one line (MPICH's error strings carry a stack)
    // printed whole, with a moment for the launcher to forward it, then the job is aborted
    hp_fail_line_and_abort(1, "%s:%d: rank %d: %s", file, line, rank, msg);
}

void hp_mpi_check(int rc, const char *call, const char *file, int line) {
    if (rc == MPI_SUCCESS) return;
    char err[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(rc, err, &len) != MPI_SUCCESS) snprintf(err, sizeof err, "code %d", rc);
    // name only the function: "MPI_Sendrecv(send + off, ...)" -> "MPI_Sendrecv"
    int name_len = (int)strcspn(call, "(");
    hp_comm_fail(file, line, "MPI error in %.*s: %s", name_len, call, err);
}

// ----------------------------------------------------------------------------
// construction

hp_comm *hp_comm_init(MPI_Comm world, const hp_dims *dims, int deterministic) {
    if (dims == NULL) HP_COMM_FAIL("hp_comm_init: dims is NULL");
    int wsize = 0, wrank = 0;
    HP_MPI_CHECK(MPI_Comm_size(world, &wsize));
    HP_MPI_CHECK(MPI_Comm_rank(world, &wrank));
    if (wsize != dims->world)
        HP_COMM_FAIL("hp_comm_init: dims.world = %d but the communicator has %d ranks",
                     dims->world, wsize);
    if (hp_dims_product(dims) != dims->world)
        HP_COMM_FAIL("hp_comm_init: dims not validated: R*S*C*T*P = %d != world %d",
                     hp_dims_product(dims), dims->world);

    hp_comm_check_timeout_env(world);
    hp_comm_install_world_errhandler();
    int wrank_world = 0;
    HP_MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &wrank_world));
    hp_comm_install_term_note(wrank_world);
    hp_comm *comm = calloc(1, sizeof *comm);
    int *members = malloc((size_t)wsize * sizeof *members);
    if (comm == NULL || members == NULL) HP_COMM_FAIL("hp_comm_init: out of memory");
    // bookkeeping sized by the world (memtrack's "other"; the exchange buffers are comm_scratch)
    comm->reqs = hp_mem_alloc(HP_MEM_OTHER, 8 * (size_t)wsize * sizeof *comm->reqs);
    comm->rows = hp_mem_alloc(HP_MEM_OTHER, (size_t)wsize * sizeof *comm->rows);
    if (comm->reqs == NULL || comm->rows == NULL) HP_COMM_FAIL("hp_comm_init: out of memory");
    comm->world = world;
    comm->world_rank = wrank;
    comm->deterministic = deterministic != 0;
    comm->dims = *dims;
    hp_mesh_coords(dims, wrank, &comm->coords);

    for (int g = 0; g < HP_G_COUNT; g++) {
        int me = -1;
        int n = hp_mesh_group(dims, (hp_group_kind)g, wrank, members, &me);
        if (n < 1 || n > wsize || me < 0 || me >= n || members[me] != wrank ||
            n != hp_mesh_group_size(dims, (hp_group_kind)g))
            HP_COMM_FAIL("hp_comm_init: mesh group %s of rank %d is inconsistent "
                         "(size %d, index %d, expected size %d)", hp_group_name((hp_group_kind)g),
                         wrank, n, me, hp_mesh_group_size(dims, (hp_group_kind)g));
        // color = the group's smallest world rank: the same for every member, distinct
        // between groups because groups of one kind partition the world.
        int color = members[0];
        for (int i = 1; i < n; i++) if (members[i] < color) color = members[i];
        // key = index in the group, so the sub-communicator's rank is that index.
        HP_MPI_CHECK(MPI_Comm_split(world, color, me, &comm->group[g]));
        HP_MPI_CHECK(MPI_Comm_set_errhandler(comm->group[g], MPI_ERRORS_RETURN));
        HP_MPI_CHECK(MPI_Comm_size(comm->group[g], &comm->size[g]));
        HP_MPI_CHECK(MPI_Comm_rank(comm->group[g], &comm->rank[g]));
        if (comm->size[g] != n || comm->rank[g] != me)
            HP_COMM_FAIL("hp_comm_init: group %s split to size %d rank %d, mesh says %d, %d",
                         hp_group_name((hp_group_kind)g), comm->size[g], comm->rank[g], n, me);
    }
    free(members);
    return comm;
}

void hp_comm_free(hp_comm *comm) {
    if (comm == NULL) return;
    for (int g = 0; g < HP_G_COUNT; g++)
        if (comm->group[g] != MPI_COMM_NULL) HP_MPI_CHECK(MPI_Comm_free(&comm->group[g]));
    hp_comm_async_free(comm);
    hp_mem_free(comm->scratch);
    hp_mem_free(comm->reqs);
    hp_mem_free((void *)comm->rows);
    free(comm);
}

// ----------------------------------------------------------------------------
// accessors

static void check_kind(hp_group_kind g, const char *who) {
    if ((int)g < 0 || g >= HP_G_COUNT) HP_COMM_FAIL("%s: group kind %d out of range [0,%d)",
                                                    who, (int)g, (int)HP_G_COUNT);
}

int hp_comm_size(const hp_comm *comm, hp_group_kind g) { check_kind(g, "hp_comm_size"); return comm->size[g]; }
int hp_comm_rank(const hp_comm *comm, hp_group_kind g) { check_kind(g, "hp_comm_rank"); return comm->rank[g]; }
MPI_Comm hp_comm_mpi(const hp_comm *comm, hp_group_kind g) { check_kind(g, "hp_comm_mpi"); return comm->group[g]; }
const hp_dims *hp_comm_dims(const hp_comm *comm) { return &comm->dims; }
const hp_coords *hp_comm_coords(const hp_comm *comm) { return &comm->coords; }

void *hp_comm_scratch(hp_comm *comm, size_t nbytes) {
    if (nbytes > comm->scratch_bytes) {
        void *p = hp_mem_realloc(comm->scratch, HP_MEM_COMM_SCRATCH, nbytes);
        if (p == NULL) HP_COMM_FAIL("hp_comm: out of memory for a %zu-byte exchange buffer", nbytes);
        comm->scratch = p;
        comm->scratch_bytes = nbytes;
    }
    return comm->scratch;
}

size_t hp_comm_fixed_scratch_bytes(int size, size_t esz) {
    return size > 1 ? 2 * (size_t)size * hp_comm_chunk(size) * esz : 0;
}

// ----------------------------------------------------------------------------
// traffic counters (rules in comm.h)

int hp_comm_group_size(const hp_comm *comm, hp_group_kind g, const char *who) {
    if (comm == NULL) HP_COMM_FAIL("%s: comm is NULL", who);
    check_kind(g, who);
    return comm->size[g];
}

int hp_comm_count(hp_comm *comm, hp_group_kind g, hp_op_kind op, uint64_t bytes, const char *who) {
    hp_comm_group_size(comm, g, who);
    comm->calls[g][op] += 1;
    if (comm->size[g] > 1) comm->bytes[g][op] += bytes;
    return comm->size[g];
}

uint64_t hp_comm_bytes(const hp_comm *comm, hp_group_kind g, hp_op_kind op) {
    check_kind(g, "hp_comm_bytes");
    if ((int)op < 0 || op >= HP_OP_COUNT) return 0;
    return comm->bytes[g][op];
}

void hp_comm_count_wire(hp_comm *comm, hp_group_kind g, hp_op_kind op, uint64_t bytes) {
    if (comm->size[g] > 1) comm->wire[g][op] += bytes;
}

uint64_t hp_comm_wire_bytes(const hp_comm *comm, hp_group_kind g, hp_op_kind op) {
    check_kind(g, "hp_comm_wire_bytes");
    if ((int)op < 0 || op >= HP_OP_COUNT) return 0;
    return comm->wire[g][op];
}

uint64_t hp_comm_calls(const hp_comm *comm, hp_group_kind g, hp_op_kind op) {
    check_kind(g, "hp_comm_calls");
    if ((int)op < 0 || op >= HP_OP_COUNT) return 0;
    return comm->calls[g][op];
}

void hp_comm_reset_stats(hp_comm *comm) {
    memset(comm->bytes, 0, sizeof comm->bytes);
    memset(comm->calls, 0, sizeof comm->calls);
    memset(comm->wire, 0, sizeof comm->wire);
}

const char *hp_op_name(hp_op_kind op) {
    static const char *names[HP_OP_COUNT] = {
        "all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast", "send_recv",
    };
    if ((int)op < 0 || op >= HP_OP_COUNT) return "unknown";
    return names[op];
}
