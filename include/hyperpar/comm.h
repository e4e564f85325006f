// comm.h - collectives over one MPI sub-communicator per mesh group.
// defines: hp_comm (opaque), hp_comm_init/free, collectives (blocking; nonblocking gradient
//          reductions; the all-gather and reduce-scatter of async TP cut open), traffic counters (logical
//          and wire), the watchdog's timeout and step, diagnostic gathers, the bytes of
//          the layer's own buffers (hp_comm_fixed_scratch_bytes, hp_comm_async_floats)
//
//   hp_comm *comm = hp_comm_init(MPI_COMM_WORLD, &dims, /*deterministic=*/1);
//   hp_allreduce_sum(comm, HP_G_TP, buf, n);        // sums buf over rank's tp group
//   hp_reduce_scatter(comm, HP_G_FSDP, shard, full, shard_n);
//   printf("%llu\n", (unsigned long long)hp_comm_bytes(comm, HP_G_FSDP, HP_OP_REDUCE_SCATTER));
//   hp_comm_free(comm);
//
// Deterministic mode fixes the reduction order: member j of a group owns chunk j of the
// buffer, receives every member's piece of it and sums them in group-rank order 0..size-1
// (a fixed-order reduce-scatter); an all-reduce then all-gathers the reduced chunks. Each
// element is ((x0 + x1) + x2) + ... on every rank, so the same job twice is bit-identical,
// a sum is independent of the MPI library's algorithm, and an all-reduce moves the
// bandwidth-optimal 2(N-1)/N of the buffer per rank (exchanges in pipelined pieces).
//
// Watchdog: every blocking wait (collectives and send/recv) has a deadline. A rank that
// waits longer prints one line and takes the whole job down (MPI_Abort, exit non-zero):
//   hp: watchdog: rank 3 waited 600.0 s in all-gather on group tp (step 2); aborting the job
//   hp_comm_set_timeout(30.0);       // process-wide; e.g. from `hp run --timeout 30`
//   hp_comm_set_step(comm, step);    // the trainer, at the start of each step
// Without the setter the timeout comes from the environment, HP_TIMEOUT=seconds, else
// HP_COMM_DEFAULT_TIMEOUT. World rank r's deadline is the timeout + 0.25 s * (r mod 8),
// so the first rank to fire takes the job down before the others print too. A killed rank
// is normally noticed sooner by the MPI launcher; a frozen one only by the watchdog.
//
// Traffic counting (bytes, per group kind and op, on this rank; groups of size 1 count 0;
// element size 4 for float/int, 8 for f64/i64; calls are counted even when bytes are 0):
//   all-reduce      n*4            (the buffer handed in)
//   all-gather      n*4            (this rank's chunk)
//   reduce-scatter  size*n*4       (the full input)
//   all-to-all      sum of send counts to OTHER ranks * elem size
//   broadcast       n*4 on the root, 0 elsewhere
//   send/recv       n*4 sent (0 when dst is this rank: a local copy)
// docs/traffic.md derives each recipe's per-step totals from these rules.
// hp_comm_wire_bytes counts what this rank really hands to other ranks (N = group size):
//   all-reduce      2(N-1)/N * n*4 when N divides n (rule for other n in docs/traffic.md)
//   all-gather      (N-1) * n*4
//   reduce-scatter  (N-1) * n*4     (n = the chunk each member receives)
//   all-to-all      as the logical count (what goes to other ranks)
//   broadcast       (N-1) * n*4 on the root (it sends to each member), 0 elsewhere
//   send/recv       as the logical count
// In non-deterministic mode MPI picks the all-reduce and reduce-scatter algorithms; their
// wire counts are then those of the bandwidth-optimal algorithm, not a measurement.
#ifndef HYPERPAR_COMM_H
#define HYPERPAR_COMM_H
#include <mpi.h>
#include <stddef.h>
#include <stdint.h>
#include "mesh.h"

typedef enum hp_op_kind {
    HP_OP_ALLREDUCE = 0, HP_OP_ALLGATHER, HP_OP_REDUCE_SCATTER, HP_OP_ALLTOALL,
    HP_OP_BROADCAST, HP_OP_SENDRECV, HP_OP_COUNT
} hp_op_kind;

typedef struct hp_comm hp_comm;

// Builds every group of mesh.h with MPI_Comm_split (collective over world).
// dims must be validated and dims->world == size of world.
hp_comm *hp_comm_init(MPI_Comm world, const hp_dims *dims, int deterministic);
void     hp_comm_free(hp_comm *comm);

int      hp_comm_size(const hp_comm *comm, hp_group_kind g);
int      hp_comm_rank(const hp_comm *comm, hp_group_kind g);   // index inside the group
MPI_Comm hp_comm_mpi(const hp_comm *comm, hp_group_kind g);
const hp_dims   *hp_comm_dims(const hp_comm *comm);
const hp_coords *hp_comm_coords(const hp_comm *comm);          // this rank's coordinates

void hp_allreduce_sum(hp_comm *comm, hp_group_kind g, float *buf, size_t n);
void hp_allreduce_max(hp_comm *comm, hp_group_kind g, float *buf, size_t n);
void hp_allreduce_sum_f64(hp_comm *comm, hp_group_kind g, double *buf, size_t n);
void hp_allreduce_sum_i64(hp_comm *comm, hp_group_kind g, int64_t *buf, size_t n);
// recv (size*n) = concatenation of every member's send (n), in group-rank order.
void hp_allgather(hp_comm *comm, hp_group_kind g, float *recv, const float *send, size_t n);
void hp_allgather_bf16(hp_comm *comm, hp_group_kind g, uint16_t *recv, const uint16_t *send, size_t n);
void hp_allgather_int(hp_comm *comm, hp_group_kind g, int *recv, const int *send, size_t n);
// n bytes a member (the float8 parameter all-gather's mixed buffer), counted as n bytes
void hp_allgather_bytes(hp_comm *comm, hp_group_kind g, void *recv, const void *send, size_t n);
// recv (n) = sum over members of their send[my_index*n .. +n) (send is size*n).
void hp_reduce_scatter(hp_comm *comm, hp_group_kind g, float *recv, const float *send, size_t n);
// The same sums in bf16 (hyperpar/bf16.h patterns): 2 bytes an element on the wire, each add
// of the member-ordered sum rounded to bf16 (--mixed-precision-reduce bfloat16); always the
// fixed-order exchange, so the bits never depend on MPI's algorithm.
void hp_allreduce_sum_bf16(hp_comm *comm, hp_group_kind g, uint16_t *buf, size_t n);
void hp_reduce_scatter_bf16(hp_comm *comm, hp_group_kind g, uint16_t *recv, const uint16_t *send,
                            size_t n);
// Variable all-to-all of floats; counts and displacements are derived from the counts
// (packed in group-rank order). Counts in elements.
void hp_alltoallv(hp_comm *comm, hp_group_kind g, float *recv, const int *recv_counts,
                  const float *send, const int *send_counts);
// The same with 2-byte bf16 elements (hyperpar/bf16.h), counts in elements.
void hp_alltoallv_bf16(hp_comm *comm, hp_group_kind g, uint16_t *recv, const int *recv_counts,
                       const uint16_t *send, const int *send_counts);
// Equal-split all-to-all of ints: n_per_rank ints to each member.
void hp_alltoall_int(hp_comm *comm, hp_group_kind g, int *recv, const int *send, int n_per_rank);
void hp_broadcast(hp_comm *comm, hp_group_kind g, float *buf, size_t n, int root);
// Sends n floats to group member dst and receives n floats from member src.
void hp_sendrecv(hp_comm *comm, hp_group_kind g, float *recv, int src, const float *send,
                 int dst, size_t n);
void hp_sendrecv_bf16(hp_comm *comm, hp_group_kind g, uint16_t *recv, int src, const uint16_t *send,
                      int dst, size_t n);   // n bf16 elements (2 bytes each)
void hp_barrier(hp_comm *comm, hp_group_kind g);

// Nonblocking gradient reductions (comm_async.c): posted now, completed later, so that an
// exchange travels while the caller computes. The arithmetic, bits, wire bytes and counters
// are those of the blocking calls (counted when posted). Each returns a ticket; operations
// complete in posting order, and every member of a group must post the same ones in the
// same order (as for collectives). The caller must not touch the result (recv, buf) before
// its wait; send may be reused at once (it is copied). At most hp_comm_async_slots of them
// (4, or 2 for large ones) are in flight: one more first waits for the oldest.
//   int t = hp_reduce_scatter_start(comm, HP_G_FSDP, shard, full, shard_n, HP_G_DP_REPLICATE);
//   hp_comm_progress(comm);          // between computations: sums what has arrived
//   hp_comm_async_wait(comm, t);     // t and everything posted before it are done
//   hp_comm_async_wait_all(comm);    // before the results are read
// hp_reduce_scatter_start's then_allreduce: a group whose all-reduce of recv follows the
// reduce-scatter (HSDP's dp_replicate), or HP_G_COUNT for none.
int  hp_reduce_scatter_start(hp_comm *comm, hp_group_kind g, float *recv, const float *send,
                             size_t n, hp_group_kind then_allreduce);
int  hp_allreduce_sum_start(hp_comm *comm, hp_group_kind g, float *buf, size_t n);
// The copy the next hp_reduce_scatter_start(comm, g, ..., n, then_allreduce) makes of its
// input, free and sized for it: stage the (size, n) input there and pass it as send, and the
// start copies nothing. NULL when that start makes no copy (not deterministic, a group of one,
// n = 0): stage elsewhere. No other operation may be posted in between.
float *hp_reduce_scatter_staging(hp_comm *comm, hp_group_kind g, size_t n,
                                 hp_group_kind then_allreduce);
void hp_comm_progress(hp_comm *comm);
void hp_comm_async_wait(hp_comm *comm, int ticket);
void hp_comm_async_wait_all(hp_comm *comm);
// Slots for reductions in flight. Each holds a copy of its unit's gradients and the rows it
// receives, so their count is memory; and each slot fewer is a rank waiting sooner for its
// partners (2-rank FSDP on 2 cores: about 10 % slower a step with 2 than with 4). So 4 while
// they take at most HP_COMM_ASYNC_BUDGET bytes together, else 2: one reduction travelling
// while the next unit's backward computes, one completing (llama3-8b under FSDP 8: 9.8 GiB
// of communication scratch with 2, 17.6 GiB with 4; docs/planner.md).
#define HP_COMM_ASYNC_MAX 4
#define HP_COMM_ASYNC_BUDGET ((size_t)1 << 30)
// The slots for operations whose largest send copy and rows are send and rows floats.
int hp_comm_async_slots(size_t send, size_t rows);
// Sizes the slots once for the largest operation the caller will post (send and rows as
// hp_comm_async_floats gives them, maximised over its operations) and fixes their number,
// hp_comm_async_slots(send, rows), unless an operation or reservation came first (then it
// only grows them). Without it the slots are HP_COMM_ASYNC_MAX, grown as operations come
// (the first step's). Not deterministic: nothing (the starts are the blocking calls).
void hp_comm_async_reserve(hp_comm *comm, size_t send, size_t rows);

// The comm layer's own buffers (memtrack category comm_scratch), for the planner
// (plan_memory.c). A fixed-order all-reduce or reduce-scatter (deterministic mode) over a
// group of size > 1 with esz-byte elements holds two pieces of size x HP_COMM_CHUNK
// elements, whatever n: hp_comm_fixed_scratch_bytes; the one scratch buffer keeps the
// largest it was asked for (0 for size 1: nothing to exchange).
size_t hp_comm_fixed_scratch_bytes(int size, size_t esz);
// A nonblocking gradient reduction of n floats per member: a reduce-scatter over rs_size
// members (1: a local copy, nothing held), then an all-reduce of n over ar_size (1: none).
// *send and *rows get the floats of its send copy and received rows. The slots are sized
// together, for the largest of each over every operation posted (or reserved), and all are
// made with the first one (or the reservation): they hold hp_comm_async_slots x (largest
// send + largest rows) floats, whichever operation landed in which slot.
void hp_comm_async_floats(int rs_size, size_t n, int ar_size, size_t *send, size_t *rows);

// Nonblocking point to point with group member dst / src (never this rank), tag in
// [0, 32767]; hp_p2p_wait completes requests under the watchdog (comm_p2p.c). The pipeline
// posts a stage's sends and waits for them at the end of the step.
void hp_p2p_isend(hp_comm *comm, hp_group_kind g, const float *buf, size_t n, int dst, int tag,
                  MPI_Request *req);
void hp_p2p_irecv(hp_comm *comm, hp_group_kind g, float *buf, size_t n, int src, int tag,
                  MPI_Request *req);
// The same with n 2-byte bf16 elements (the bf16 policy's activations).
void hp_p2p_isend_bf16(hp_comm *comm, hp_group_kind g, const uint16_t *buf, size_t n, int dst, int tag,
                       MPI_Request *req);
void hp_p2p_irecv_bf16(hp_comm *comm, hp_group_kind g, uint16_t *buf, size_t n, int src, int tag,
                       MPI_Request *req);
void hp_p2p_wait(hp_comm *comm, hp_group_kind g, int n, MPI_Request *reqs, const char *what);

// The all-gather and reduce-scatter of async TP, cut open (comm_overlap.c): bytes, wire bytes,
// calls and bits of hp_allgather / hp_reduce_scatter (a member-ordered fp32 sum); reqs holds
// 2*size requests of the caller. The caller computes between the calls:
//   hp_allgather_post(comm, HP_G_TP, full, shard, n, reqs);     // own shard copied in at once
//   hp_allgather_wait_member(comm, HP_G_TP, reqs, j);           // member j's shard has landed
//   hp_allgather_finish(comm, HP_G_TP, reqs);                   // sends done too
//   hp_reduce_scatter_post(comm, HP_G_TP, rows, n, reqs);       // rows (size*n): receives
//   hp_reduce_scatter_send(comm, HP_G_TP, block_j, n, j, reqs); // member j's block, once each
//   hp_reduce_scatter_finish(comm, HP_G_TP, recv, rows, own, n, reqs);  // sum 0..size-1
void hp_allgather_post(hp_comm *comm, hp_group_kind g, float *recv, const float *send, size_t n,
                       MPI_Request *reqs);
// The same with 2-byte bf16 elements (the bf16 policy's SP all-gathers).
void hp_allgather_post_bf16(hp_comm *comm, hp_group_kind g, uint16_t *recv, const uint16_t *send,
                            size_t n, MPI_Request *reqs);
void hp_allgather_post_bytes(hp_comm *comm, hp_group_kind g, void *recv, const void *send, size_t n,
                             MPI_Request *reqs);   // n bytes a member (float8 codes)
void hp_allgather_wait_member(hp_comm *comm, hp_group_kind g, MPI_Request *reqs, int j);
void hp_allgather_finish(hp_comm *comm, hp_group_kind g, MPI_Request *reqs);
void hp_reduce_scatter_post(hp_comm *comm, hp_group_kind g, float *rows, size_t n, MPI_Request *reqs);
void hp_reduce_scatter_send(hp_comm *comm, hp_group_kind g, const float *block, size_t n, int dst,
                            MPI_Request *reqs);
void hp_reduce_scatter_finish(hp_comm *comm, hp_group_kind g, float *recv, const float *rows,
                              const float *own, size_t n, MPI_Request *reqs);

// Diagnostics outside the training step (not counted in the traffic counters): rank 0 of
// the communicator handed to hp_comm_init receives every rank's n elements, in rank order
// (recv holds world*n there and may be NULL elsewhere).
//   hp_gather_to_root(comm, all, shard, shard_n);      // the verifier's full tensors
void hp_gather_to_root(hp_comm *comm, float *recv, const float *send, size_t n);
void hp_gather_to_root_int(hp_comm *comm, int *recv, const int *send, size_t n);
// Broadcast of n ints on a plain communicator, for code that holds no hp_comm (the
// verifier's verdict after the trainers are freed); watched like every other wait.
void hp_mpi_broadcast_int(MPI_Comm mpi, int *buf, int n, int root);

// Collectives on a plain communicator outside the training step (start-up checks,
// checkpoints, reports; comm_watched.c): the nonblocking MPI call completed under the
// watchdog, so a frozen peer ends the job with its line instead of a hang; `op` is the
// name that line gives, group "world":
//   hp: watchdog: rank 0 waited 2.1 s in checkpoint-agree on group world (step 4); aborting the job
// Not counted in the traffic counters. Counts are in elements of dt, buffers as for the
// MPI call (recv may be NULL off the root); hp_mpi_allreduce works in place.
//   hp_mpi_barrier(world, "checkpoint-save-barrier");
//   hp_mpi_allreduce(world, &x, 1, MPI_INT, MPI_MIN, "checkpoint-agree");
void hp_mpi_barrier(MPI_Comm mpi, const char *op);
void hp_mpi_broadcast(MPI_Comm mpi, void *buf, int n, MPI_Datatype dt, int root, const char *op);
void hp_mpi_allreduce(MPI_Comm mpi, void *buf, int n, MPI_Datatype dt, MPI_Op red, const char *op);
void hp_mpi_reduce(MPI_Comm mpi, void *recv, const void *send, int n, MPI_Datatype dt, MPI_Op red,
                   int root, const char *op);
void hp_mpi_gather(MPI_Comm mpi, void *recv, const void *send, int n, MPI_Datatype dt, int root,
                   const char *op);
void hp_mpi_gatherv(MPI_Comm mpi, void *recv, const int *counts, const int *displs,
                    const void *send, int n, MPI_Datatype dt, int root, const char *op);

// A failure the caller cannot return from: one line (fmt, without its newline) to stderr,
// then the whole job goes down with exit code `code` - MPI_Abort(MPI_COMM_WORLD) under MPI
// (a lone failing rank would leave its peers waiting inside a collective), exit() without.
// stdout and stderr are flushed, the line goes out in one write(2), and the launcher gets
// 0.2 s to forward it before the abort: MPICH's Hydra kills the other processes, and drops
// the output it has not forwarded yet, as soon as one aborts. The abort's grace
// (HP_ABORT_GRACE_S) ends the rank, and its launcher daemon, where the abort cannot. Every
// "print a line, then MPI_Abort" of the library goes through here (comm_abort.c).
//   hp_fail_line_and_abort(1, "moe dispatch: routed expert id %d outside [0, %d)", e, E);
_Noreturn void hp_fail_line_and_abort(int code, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

// Watchdog settings. The timeout is process-wide: seconds must be finite and > 0, else it
// returns -1 and changes nothing. hp_comm_timeout() is the one in force.
#define HP_COMM_DEFAULT_TIMEOUT 600.0
// After its line, a rank whose MPI_Abort has not ended it within HP_ABORT_GRACE_S seconds (a
// host the abort cannot reach: a cut link) prints one more line and exits with the code on its
// own; the launcher daemon that started it (mpirun, orted, Hydra's proxy), if it still runs
// a second after that, is sent SIGKILL (docs/multi_host.md).
#define HP_ABORT_GRACE_S 10
int    hp_comm_set_timeout(double seconds);
double hp_comm_timeout(void);
// Parses a timeout as given on a command line or in HP_TIMEOUT ("2", "0.5", "1e3"):
// 0 and *seconds set, or -1 when it is not a finite number > 0.
int    hp_comm_parse_timeout(const char *text, double *seconds);
// The training step the watchdog names (0 = before the first step: setup).
void   hp_comm_set_step(hp_comm *comm, int step);

uint64_t hp_comm_bytes(const hp_comm *comm, hp_group_kind g, hp_op_kind op);
uint64_t hp_comm_calls(const hp_comm *comm, hp_group_kind g, hp_op_kind op);
uint64_t hp_comm_wire_bytes(const hp_comm *comm, hp_group_kind g, hp_op_kind op);
void     hp_comm_reset_stats(hp_comm *comm);   // bytes, wire bytes and calls
const char *hp_op_name(hp_op_kind op);

#endif
