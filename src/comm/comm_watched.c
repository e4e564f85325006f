// comm_watched.c - collectives on a plain communicator for code outside the training step
// (start-up checks, checkpoints, reports), each the nonblocking MPI call completed by the
// watchdog: a frozen or missing peer ends the job with the watchdog's line naming the op,
// never a hang. Not counted in the traffic counters (no hp_comm is involved): the
// verifier's traffic checks see only the step's collectives.
// defines: hp_mpi_barrier, hp_mpi_broadcast, hp_mpi_allreduce, hp_mpi_reduce, hp_mpi_gather,
//          hp_mpi_gatherv
#include "comm_internal.h"   // defines: HP_MPI_CHECK, HP_COMM_FAIL, hp_comm_wait

// The name these waits give as their group: the communicator handed in is the job's
// (MPI_COMM_WORLD or the trainer's world), not a mesh group.
#define WATCHED_GROUP "world"

static void check_count(int n, const char *op) {
    if (n < 0) HP_COMM_FAIL("%s: count %d is negative", op, n);
}

void hp_mpi_barrier(MPI_Comm mpi, const char *op) {
    MPI_Request req;
    HP_MPI_CHECK(MPI_Ibarrier(mpi, &req));
    hp_comm_wait(NULL, 1, &req, op, WATCHED_GROUP);
}

void hp_mpi_broadcast(MPI_Comm mpi, void *buf, int n, MPI_Datatype dt, int root, const char *op) {
    check_count(n, op);
    MPI_Request req;
    HP_MPI_CHECK(MPI_Ibcast(buf, n, dt, root, mpi, &req));
    hp_comm_wait(NULL, 1, &req, op, WATCHED_GROUP);
}

void hp_mpi_allreduce(MPI_Comm mpi, void *buf, int n, MPI_Datatype dt, MPI_Op red, const char *op) {
    check_count(n, op);
    MPI_Request req;
    HP_MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, buf, n, dt, red, mpi, &req));
    hp_comm_wait(NULL, 1, &req, op, WATCHED_GROUP);
}

void hp_mpi_reduce(MPI_Comm mpi, void *recv, const void *send, int n, MPI_Datatype dt, MPI_Op red,
                   int root, const char *op) {
    check_count(n, op);
    MPI_Request req;
    HP_MPI_CHECK(MPI_Ireduce(send, recv, n, dt, red, root, mpi, &req));
    hp_comm_wait(NULL, 1, &req, op, WATCHED_GROUP);
}

void hp_mpi_gather(MPI_Comm mpi, void *recv, const void *send, int n, MPI_Datatype dt, int root,
                   const char *op) {
    check_count(n, op);
    MPI_Request req;
    HP_MPI_CHECK(MPI_Igather(send, n, dt, recv, n, dt, root, mpi, &req));
    hp_comm_wait(NULL, 1, &req, op, WATCHED_GROUP);
}

void hp_mpi_gatherv(MPI_Comm mpi, void *recv, const int *counts, const int *displs,
                    const void *send, int n, MPI_Datatype dt, int root, const char *op) {
    check_count(n, op);
    MPI_Request req;
    HP_MPI_CHECK(MPI_Igatherv(send, n, dt, recv, counts, displs, dt, root, mpi, &req));
    hp_comm_wait(NULL, 1, &req, op, WATCHED_GROUP);
}
