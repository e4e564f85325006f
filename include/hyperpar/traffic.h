// traffic.h - the bytes each (group, op) of the mesh moves in one training step, by the
// formulas of docs/traffic.md (traffic_cp.md, traffic_moe.md): what the verifier checks the
// byte counters against on every recipe, and what the planner prices (src/plan/traffic.c).
// defines: hp_traffic_predict, hp_traffic_tp_routed, hp_traffic_predict_ep (verify.h includes this header)
//
//   uint64_t bytes[HP_G_COUNT][HP_OP_COUNT];
//   hp_traffic_predict(&m, &d, &rc, rank, bytes);   // UINT64_MAX: data-dependent
#ifndef HYPERPAR_TRAFFIC_H
#define HYPERPAR_TRAFFIC_H
#include <stdint.h>
#include "comm.h"
#include "config.h"
#include "dims.h"

// The bytes each (group, op) moves in one training step on `rank` by docs/traffic.md.
// UINT64_MAX where the amount depends on the data (the all-to-all of the MoE dispatch; the tp
// all-reduce under the rowwise float8 recipes with routed experts split over ep and etp).
void hp_traffic_predict(const hp_model_config *m, const hp_dims *d, const hp_run_config *rc,
                        int rank, uint64_t bytes[HP_G_COUNT][HP_OP_COUNT]);
// The tp all-reduce when hp_traffic_predict reports it data-dependent (returns 1; else 0):
// *fixed its bytes that do not depend on the routing, per_entry (n_layers) the bytes for each
// routed entry (row, expert) that block l's local experts compute on `rank` over the step (an
// amax per row over the etp-split hidden, MAX-reduced; 0 for blocks elsewhere).
int hp_traffic_tp_routed(const hp_model_config *m, const hp_dims *d, const hp_run_config *rc, int rank,
                         uint64_t *fixed, uint64_t *per_entry);
// Replaces those UINT64_MAX with the bytes the routing of the step implies
// (docs/traffic_moe.md): routing (n_moe_layers, batch, seq_len, top_k) global expert ids, as
// hp_trainer_gather_routing returns them.
void hp_traffic_predict_ep(const hp_model_config *m, const hp_dims *d, const hp_run_config *rc,
                           int rank, const int *routing, uint64_t bytes[HP_G_COUNT][HP_OP_COUNT]);

#endif
