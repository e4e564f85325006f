// comm_p2p.c - nonblocking point to point between members of one group: the pipeline's
// stage exchange (activations forward, their gradients back).
// defines: hp_p2p_isend, hp_p2p_irecv, hp_p2p_wait
//
// Sends return at once and complete later (hp_p2p_wait), so two stages that both send
// before they receive never deadlock. The caller picks tags that cannot collide: one per
// (direction, stage boundary, microbatch) of the step, below MPI's guaranteed 32767. Bytes
// count as HP_OP_SENDRECV on the sender (comm.h: "n*4 sent").
#include "comm_internal.h"

static void check_peer(const hp_comm *comm, hp_group_kind g, int peer, int tag, size_t n,
                       const char *who) {
    const int size = hp_comm_group_size(comm, g, who);
    if (peer < 0 || peer >= size || peer == comm->rank[g])
        HP_COMM_FAIL("%s: peer %d is not another member of group %s (size %d)", who, peer,
                     hp_group_name(g), size);
    if (tag < 0 || tag > 32767) HP_COMM_FAIL("%s: tag %d outside [0, 32767]", who, tag);
    (void)hp_comm_int_count(n, who);
}

void hp_p2p_isend(hp_comm *comm, hp_group_kind g, const float *buf, size_t n, int dst, int tag,
                  MPI_Request *req) {
    const char *who = "hp_p2p_isend";
    check_peer(comm, g, dst, tag, n, who);
    hp_comm_count(comm, g, HP_OP_SENDRECV, (uint64_t)n * sizeof(float), who);
    hp_comm_count_wire(comm, g, HP_OP_SENDRECV, (uint64_t)n * sizeof(float));
    HP_MPI_CHECK(MPI_Isend(buf, (int)n, MPI_FLOAT, dst, tag, comm->group[g], req));
}

void hp_p2p_irecv(hp_comm *comm, hp_group_kind g, float *buf, size_t n, int src, int tag,
                  MPI_Request *req) {
    check_peer(comm, g, src, tag, n, "hp_p2p_irecv");
    HP_MPI_CHECK(MPI_Irecv(buf, (int)n, MPI_FLOAT, src, tag, comm->group[g], req));
}

void hp_p2p_wait(hp_comm *comm, hp_group_kind g, int n, MPI_Request *reqs, const char *what) {
    if (n > 0) hp_comm_wait(comm, n, reqs, what, hp_group_name(g));
}
