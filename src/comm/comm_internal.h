// comm_internal.h - the hp_comm struct and the checks shared by src/comm/*.c (private).
// defines: struct hp_comm, HP_MPI_CHECK, hp_comm_fail, hp_comm_scratch, hp_comm_count,
//          HP_COMM_CHUNK
#ifndef HYPERPAR_COMM_INTERNAL_H
#define HYPERPAR_COMM_INTERNAL_H
#include <limits.h>
#include "hyperpar/comm.h"

// Deterministic reductions exchange every member's operand, so the temporary grows with
// size*n. They work through the buffer in pieces of at most this many elements per
// member (256 KiB of floats) to keep that bounded; the pieces do not change the result.
#define HP_COMM_CHUNK ((size_t)1 << 16)

struct hp_comm {
    MPI_Comm  world;                    // the communicator handed to hp_comm_init
    int       world_rank;
    int       deterministic;
    hp_dims   dims;
    hp_coords coords;
    MPI_Comm  group[HP_G_COUNT];        // one sub-communicator per group kind
    int       size[HP_G_COUNT];
    int       rank[HP_G_COUNT];         // == my_index of hp_mesh_group
    uint64_t  bytes[HP_G_COUNT][HP_OP_COUNT];
    uint64_t  calls[HP_G_COUNT][HP_OP_COUNT];
    void     *scratch;                  // reused temporary for exchanges
    size_t    scratch_bytes;
};

// Prints "file:line: what" and takes the whole job down (MPI_Abort, never exit): a
// failing rank must not leave the others waiting in a collective.
_Noreturn void hp_comm_fail(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
#define HP_COMM_FAIL(...) hp_comm_fail(__FILE__, __LINE__, __VA_ARGS__)

// Every MPI call goes through this. The sub-communicators use MPI_ERRORS_RETURN so a
// failure comes back here as a code and is reported with its location.
void hp_mpi_check(int rc, const char *call, const char *file, int line);
#define HP_MPI_CHECK(call) hp_mpi_check((call), #call, __FILE__, __LINE__)

// Grows and returns the scratch buffer (at least nbytes).
void *hp_comm_scratch(hp_comm *comm, size_t nbytes);

// Validates comm and g and returns the group's size.
int hp_comm_group_size(const hp_comm *comm, hp_group_kind g, const char *who);

// Validates g, counts one call and `bytes` of traffic (0 on groups of size 1), returns
// the group's size. Every public collective starts with it.
int hp_comm_count(hp_comm *comm, hp_group_kind g, hp_op_kind op, uint64_t bytes,
                  const char *who);

// Checks that n fits an MPI count (int) for the operations that cannot split it.
static inline int hp_comm_int_count(size_t n, const char *who) {
    if (n > (size_t)INT_MAX) HP_COMM_FAIL("%s: count %zu exceeds INT_MAX", who, n);
    return (int)n;
}

#endif
