// comm_internal.h - the hp_comm struct and the checks shared by src/comm/*.c (private).
// defines: struct hp_comm, HP_MPI_CHECK, hp_comm_fail, hp_comm_scratch, hp_comm_count,
//          hp_comm_count_wire, hp_comm_wait, hp_comm_test, HP_COMM_CHUNK, HP_COMM_TAG_*,
//          hp_chunk_len/off
#ifndef HYPERPAR_COMM_INTERNAL_H
#define HYPERPAR_COMM_INTERNAL_H
#include <limits.h>
#include "hyperpar/comm.h"

// Deterministic reductions receive every member's operand for this rank's chunk, so the
// temporary grows with size*chunk. They work through the buffer in pieces of at most
// this many elements per member (256 KiB of floats; two pieces in flight) to keep that
// bounded; the pieces do not change the result.
#define HP_COMM_CHUNK ((size_t)1 << 16)
// A piece (size*chunk elements: the scratch's slot) stays within this many elements, so a
// large group takes smaller pieces: a world of 16384 all-reducing one double reserves
// 2 * 4 Mi * 8 bytes of scratch, not 2 * 16384 * 64 Ki * 8 (16 GiB). Groups of up to 64
// members keep HP_COMM_CHUNK.
#ifndef HP_COMM_PIECE_MAX   // tests/comm.cmake builds the comm layer once with a tiny one
#define HP_COMM_PIECE_MAX ((size_t)1 << 22)
#endif

// Elements per member of one piece for a group of size members (>= 1).
static inline size_t hp_comm_chunk(int size) {
    const size_t c = HP_COMM_PIECE_MAX / (size_t)(size > 1 ? size : 1);
    return c < 1 ? 1 : c > HP_COMM_CHUNK ? HP_COMM_CHUNK : c;
}

// Tags of the point-to-point messages the comm layer sends itself (fixed-order reductions,
// broadcast, send/recv). Distinct per phase so one phase never matches another's message;
// every blocking call completes all its requests before it returns, so calls never
// interleave. The nonblocking reductions (comm_async.c) have tags of their own.
enum { HP_COMM_TAG_SENDRECV = 0, HP_COMM_TAG_SCATTER = 0x4801, HP_COMM_TAG_GATHER = 0x4802,
       HP_COMM_TAG_BCAST = 0x4803 };

// HP_COMM_ASYNC_MAX (comm.h): nonblocking reductions in flight at once on one hp_comm; one
// more waits for the oldest (each holds a copy of its operands: this bounds the memory).
typedef struct hp_comm_async_op hp_comm_async_op;   // comm_async.c

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
    uint64_t  wire[HP_G_COUNT][HP_OP_COUNT];  // bytes this rank handed to other ranks
    int       step;                     // training step, for the watchdog's message
    void     *scratch;                  // reused temporary for exchanges
    size_t    scratch_bytes;
    MPI_Request *reqs;                  // (8*world) requests of the fixed-order exchanges
    const void **rows;                  // (world) operand rows of one fixed-order reduction
    hp_comm_async_op *async[HP_COMM_ASYNC_MAX];   // slots of the nonblocking reductions,
    int       async_head, async_tail;   // tickets [head, tail) in flight, in posting order
    int       async_slots;              // slots in use (0: HP_COMM_ASYNC_MAX, not reserved)
    int       async_busy;               // inside the queue's code: no nested progress
    unsigned  async_seq[HP_G_COUNT];    // nonblocking phases posted per group (their tags)
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

// Grows and returns the scratch buffer (at least nbytes; memtrack's comm_scratch).
void *hp_comm_scratch(hp_comm *comm, size_t nbytes);

// Validates comm and g and returns the group's size.
int hp_comm_group_size(const hp_comm *comm, hp_group_kind g, const char *who);

// Validates g, counts one call and `bytes` of traffic (0 on groups of size 1), returns
// the group's size. Every public collective starts with it.
int hp_comm_count(hp_comm *comm, hp_group_kind g, hp_op_kind op, uint64_t bytes,
                  const char *who);

// Adds `bytes` to what this rank put on the wire for (g, op) (0 on groups of size 1).
void hp_comm_count_wire(hp_comm *comm, hp_group_kind g, hp_op_kind op, uint64_t bytes);

// The watchdog (comm_wait.c). Completes the n requests, polling MPI_Testall with a short
// yield/sleep backoff; if they are not all done within hp_comm_timeout() seconds, prints
//   hp: watchdog: rank 3 waited 5.0 s in all-gather on group tp (step 2); aborting the job
// and calls MPI_Abort. comm may be NULL (a wait on a plain communicator): the step is
// then the last one any hp_comm was given. Every blocking wait of the comm layer ends here.
// An MPI error in a request is reported at the caller's line, naming the op and group.
void hp_comm_wait_at(const char *file, int line, const hp_comm *comm, int n,
                     MPI_Request *reqs, const char *op, const char *group);
#define hp_comm_wait(comm, n, reqs, op, group) \
    hp_comm_wait_at(__FILE__, __LINE__, (comm), (n), (reqs), (op), (group))
// One nonblocking test of the n requests (finished ones become MPI_REQUEST_NULL): 1 when all
// are done. An MPI error is reported like hp_comm_wait's.
int hp_comm_test_at(const char *file, int line, int n, MPI_Request *reqs, const char *op,
                    const char *group);
#define hp_comm_test(n, reqs, op, group) hp_comm_test_at(__FILE__, __LINE__, (n), (reqs), (op), (group))
// hp_comm_free's: the nonblocking reductions' slots (none may be in flight).
void hp_comm_async_free(hp_comm *comm);

// hp_comm_init's check of HP_TIMEOUT (when no setter ran): a bad value ends the job with
// exit 2 and one line from rank 0 of world.
void hp_comm_check_timeout_env(MPI_Comm world);
// hp_comm_init's: MPI_COMM_WORLD's default fatal error handler becomes one that reports
// like hp_comm_fail (MPICH raises failed requests there), still fatal. Once per process.
void hp_comm_install_world_errhandler(void);
// Seconds of CLOCK_MONOTONIC (async-signal-safe).
double hp_comm_now(void);
// The watchdog's wait in progress, for a signal handler: its op (NULL when none), and through
// the pointers its group and when it began (hp_comm_now).
const char *hp_comm_wait_in_progress(const char **group, double *t0);
// hp_comm_init's (comm_abort.c): on world rank 0 under an outside launcher (HP_LAUNCHED
// unset), a SIGTERM whose disposition is the default first prints one line naming the wait in
// progress (op, group, how long) and the step, then takes its default course. Once per process.
void hp_comm_install_term_note(int world_rank);
// The step most recently given to any hp_comm (for waits that have none).
int hp_comm_last_step(void);

// The fixed-order (deterministic) reductions by direct exchange (comm_fixed_order.c).
// Element kinds and reductions they support.
// HP_RED_BF16_SUM: 2-byte bf16 elements, each add rounded to bf16 (precision.md §1's
// --mixed-precision-reduce bfloat16); MPI has no such op, so it always takes these exchanges.
typedef enum { HP_RED_F32_SUM, HP_RED_F32_MAX, HP_RED_F64_SUM, HP_RED_I64_SUM,
               HP_RED_BF16_SUM } hp_red_kind;
size_t hp_red_elem_size(hp_red_kind k);   // bytes of one element
// In place over a group of size > 1: a reduce-scatter (member j reduces chunk j in member
// order 0..size-1) then an all-gather of the reduced chunks, in pipelined pieces.
void hp_fixed_allreduce(hp_comm *comm, hp_group_kind g, void *buf, size_t n, hp_red_kind k);
// out (len) = rows[0] + rows[1] + ... in that order (op k); out overlaps no row.
void hp_fixed_reduce_rows(void *out, const void *const *rows, int size, size_t len, hp_red_kind k);
// recv (n) = member-ordered sum (op k) of every member's send[me*n .. +n); group of size > 1.
void hp_fixed_reduce_scatter(hp_comm *comm, hp_group_kind g, void *recv, const void *send,
                             size_t n, hp_red_kind k);
// Bytes member `me` of a group of `size` puts on the wire in hp_fixed_allreduce of n
// elements of esz bytes (see docs/traffic.md).
uint64_t hp_fixed_allreduce_wire(size_t n, int size, int me, size_t esz);

// Chunk j of a piece of len elements split over size members: len/size each, the first
// len%size one more (the fixed-order all-reduce's ownership; comm_fixed_order.c, comm_async.c).
static inline size_t hp_chunk_len(size_t len, int size, int j) {
    return len / (size_t)size + ((size_t)j < len % (size_t)size);
}
static inline size_t hp_chunk_off(size_t len, int size, int j) {
    const size_t extra = len % (size_t)size;
    return (size_t)j * (len / (size_t)size) + ((size_t)j < extra ? (size_t)j : extra);
}

// Checks that n fits an MPI count (int) for the operations that cannot split it.
static inline int hp_comm_int_count(size_t n, const char *who) {
    if (n > (size_t)INT_MAX) HP_COMM_FAIL("%s: count %zu exceeds INT_MAX", who, n);
    return (int)n;
}

#endif
