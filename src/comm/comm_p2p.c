// comm_p2p.c - nonblocking point to point between members of one group: the pipeline's
// stage exchange (activations forward, their gradients back).
// defines: hp_p2p_isend(_bf16), hp_p2p_irecv(_bf16), hp_p2p_wait
//
// Sends return at once and complete later (hp_p2p_wait), so two stages that both send
// before they receive never deadlock. The caller picks tags that cannot collide: one per
// (direction, stage boundary, microbatch) of the step, below MPI's guaranteed 32767. Bytes
// count as HP_OP_SENDRECV on the sender (comm.h: "n*4 sent", n*2 for the bf16 forms).
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

static void isend(hp_comm *comm, hp_group_kind g, const void *buf, size_t n, int dst, int tag,
                  MPI_Request *req, MPI_Datatype dt, size_t esz, const char *who) {
    check_peer(comm, g, dst, tag, n, who);
    hp_comm_count(comm, g, HP_OP_SENDRECV, (uint64_t)n * esz, who);
    hp_comm_count_wire(comm, g, HP_OP_SENDRECV, (uint64_t)n * esz);
    HP_MPI_CHECK(MPI_Isend(buf, (int)n, dt, dst, tag, comm->group[g], req));
}

static void irecv(hp_comm *comm, hp_group_kind g, void *buf, size_t n, int src, int tag,
                  MPI_Request *req, MPI_Datatype dt, const char *who) {
    check_peer(comm, g, src, tag, n, who);
    HP_MPI_CHECK(MPI_Irecv(buf, (int)n, dt, src, tag, comm->group[g], req));
}

void hp_p2p_isend(hp_comm *comm, hp_group_kind g, const float *buf, size_t n, int dst, int tag,
                  MPI_Request *req) {
    isend(comm, g, buf, n, dst, tag, req, MPI_FLOAT, sizeof(float), "hp_p2p_isend");
}

void hp_p2p_irecv(hp_comm *comm, hp_group_kind g, float *buf, size_t n, int src, int tag,
                  MPI_Request *req) {
    irecv(comm, g, buf, n, src, tag, req, MPI_FLOAT, "hp_p2p_irecv");
}

void hp_p2p_isend_bf16(hp_comm *comm, hp_group_kind g, const uint16_t *buf, size_t n, int dst, int tag,
                       MPI_Request *req) {
    isend(comm, g, buf, n, dst, tag, req, MPI_UINT16_T, sizeof(uint16_t), "hp_p2p_isend_bf16");
}

void hp_p2p_irecv_bf16(hp_comm *comm, hp_group_kind g, uint16_t *buf, size_t n, int src, int tag,
                       MPI_Request *req) {
    irecv(comm, g, buf, n, src, tag, req, MPI_UINT16_T, "hp_p2p_irecv_bf16");
}

void hp_p2p_wait(hp_comm *comm, hp_group_kind g, int n, MPI_Request *reqs, const char *what) {
    if (n > 0) hp_comm_wait(comm, n, reqs, what, hp_group_name(g));
}
