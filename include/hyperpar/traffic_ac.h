// traffic_ac.h - the bytes activation checkpointing adds to a step: every checkpointed block
// reruns its forward in the backward, collectives included (config.h: hp_run_ac_block), so
// its forward rows of docs/traffic.md, traffic_cp.md and traffic_moe.md count once more per
// microbatch. The FSDP unit is already gathered for the backward: FSDP adds nothing.
// defines: hp_traffic_ac_predict, hp_traffic_ac_blocks
//
//   uint64_t extra[HP_G_COUNT][HP_OP_COUNT];
//   hp_traffic_ac_predict(m, d, rc, rank, extra);       // zero when rc->ac_every == 0
// hp_traffic_predict (traffic.h) already adds these rows (the verifier checks them), and
// hp_traffic_predict_ep the EP all-to-all's share from the counted routing.
#ifndef HYPERPAR_TRAFFIC_AC_H
#define HYPERPAR_TRAFFIC_AC_H
#include <stdint.h>
#include "comm.h"
#include "config.h"
#include "dims.h"

// The checkpointed blocks `rank` runs (its pp rank's stages; all of them at pp 1), and of
// those the MoE blocks (*n_moe, may be NULL).
int hp_traffic_ac_blocks(const hp_model_config *m, const hp_dims *d, const hp_run_config *rc,
                         int rank, int *n_moe);

// The extra bytes per (group, op) on `rank` (zeroed first), with n_ac checkpointed blocks
// (n_moe of them MoE), Nreg / Nres the step's rows of the rank (all microbatches):
//   tp, SP:     all_gather     += n_ac * 2 * Nres*D*4       (the two regions' enter)
//               reduce_scatter += n_ac * 2 * T*Nres*D*4     (the two regions' exit)
//   tp, no SP:  all_reduce     += n_ac * 2 * Nreg*D*4       (the exits' forward)
//   ulysses:    all_to_all     += n_ac * (2*q_n + 2*kv_n) * (U-1)/U * 4   (q, k, v in; out back)
//   cp allgather: all_gather   += n_ac * 2*n*4;  ring: send_recv += n_ac * (C-1)*2*n*4
//   ep allgather: all_gather   += n_moe * n_e*(D + 2K)*4;  reduce_scatter += n_moe * ep*n_e*D*4
//   ep all-to-all: data-dependent, set to UINT64_MAX when n_moe > 0 (as hp_traffic_predict
//               does): the counts exchange M*(ep-1)*El*4 plus (S+R)*D*4 of each checkpointed
//               MoE layer repeat (S, R: the entries sent and received, the routing is recomputed
//               identically), i.e. that layer's forward half of hp_traffic_predict_ep.
// q_n, kv_n, n (the ring's K rows x heads) and n_e (routed tokens) as in traffic.c.
void hp_traffic_ac_predict(const hp_model_config *m, const hp_dims *d, const hp_run_config *rc,
                           int rank, uint64_t bytes[HP_G_COUNT][HP_OP_COUNT]);

#endif
