// traffic_ac.c - what activation checkpointing adds to a step's traffic: the forward
// collectives of every checkpointed block once more (include/hyperpar/traffic_ac.h).
// defines: hp_traffic_ac_blocks, hp_traffic_ac_predict
//
// Each term is the forward row of the formula hp_traffic_predict (traffic.c) counts for a
// block, times the checkpointed blocks instead of all of them; the step's rows (Bl_step)
// already add up the microbatches, each of which recomputes.
#include <string.h>
#include "hyperpar/mesh.h"
#include "hyperpar/pipeline.h"
#include "hyperpar/traffic_ac.h"
#include "hyperpar/ulysses.h"

#define F4 ((uint64_t)sizeof(float))

int hp_traffic_ac_blocks(const hp_model_config *m, const hp_dims *d, const hp_run_config *rc,
                         int rank, int *n_moe) {
    int n = 0, nm = 0;
    hp_pp_layout lay;
    hp_coords co;
    hp_mesh_coords(d, rank, &co);
    if (rc->ac_every > 0 && hp_pp_layout_init(&lay, d, m->n_layers) == 0)
        for (int l = 0; l < m->n_layers; l++)
            if (hp_run_ac_block(rc, l) && lay.stage_rank[hp_pp_layer_stage(&lay, l)] == co.p) {
                n++;
                nm += hp_model_is_moe_layer(m, l);
            }
    if (n_moe) *n_moe = nm;
    return n;
}

void hp_traffic_ac_predict(const hp_model_config *m, const hp_dims *d, const hp_run_config *rc,
                           int rank, uint64_t bytes[HP_G_COUNT][HP_OP_COUNT]) {
    memset(bytes, 0, sizeof(uint64_t) * HP_G_COUNT * HP_OP_COUNT);
    int n_moe_i = 0;
    const uint64_t n_ac = (uint64_t)hp_traffic_ac_blocks(m, d, rc, rank, &n_moe_i), n_moe = (uint64_t)n_moe_i;
    if (n_ac == 0) return;
    const int T = d->tp, C = d->cp, U = d->ulysses, sp = d->sp > 0 && T > 1;
    const uint64_t Bl = (uint64_t)(rc->batch / hp_dims_batch(d)), Sc = (uint64_t)(rc->seq_len / (C * U));
    const uint64_t D = (uint64_t)m->dim, Nreg = Bl * Sc, Nres = sp ? Nreg / (uint64_t)T : Nreg;
    const uint64_t hd = (uint64_t)hp_model_head_dim(m), kv_t = (uint64_t)(m->n_kv_heads / T);
    // the forward's activation exchanges move bf16 values in 2 bytes under the bf16 policy
    const uint64_t act = rc->mp_param == HP_DTYPE_BFLOAT16 ? 2 : F4;

    if (T > 1 && sp) {
        bytes[HP_G_TP][HP_OP_ALLGATHER] += n_ac * 2 * Nres * D * act;
        bytes[HP_G_TP][HP_OP_REDUCE_SCATTER] += n_ac * 2 * (uint64_t)T * Nres * D * F4;
    } else if (T > 1) {
        bytes[HP_G_TP][HP_OP_ALLREDUCE] += n_ac * 2 * Nreg * D * F4;
    }
    if (U > 1) {
        const uint64_t q_n = Bl * Sc * (uint64_t)(m->n_heads / T) * hd;
        const uint64_t kv_n = Bl * Sc * (kv_t > (uint64_t)U ? kv_t : (uint64_t)U) * hd;
        bytes[HP_G_ULYSSES][HP_OP_ALLTOALL] += n_ac * (2 * q_n + 2 * kv_n) / (uint64_t)U * (uint64_t)(U - 1) * act;
    }
    if (C > 1) {
        const uint64_t kv_core = U > 1 ? (uint64_t)hp_ulysses_kv_heads((int)kv_t, U) : kv_t;
        const uint64_t n = Bl * Sc * (uint64_t)U * kv_core * hd;
        if (rc->cp_rotate == HP_ROTATE_ALLGATHER) bytes[HP_G_CP][HP_OP_ALLGATHER] += n_ac * 2 * n * act;
        else bytes[HP_G_CP][HP_OP_SENDRECV] += n_ac * (uint64_t)(C - 1) * 2 * n * act;
    }
    if (m->num_experts > 0 && d->ep > 1 && n_moe > 0) {
        const uint64_t n = Nreg / (uint64_t)hp_dims_token_split(d), K = (uint64_t)m->top_k;
        if (rc->dispatcher == HP_DISPATCH_ALLGATHER) {
            bytes[HP_G_EP][HP_OP_ALLGATHER] += n_moe * n * (D * act + 2 * K * F4);
            bytes[HP_G_EP][HP_OP_REDUCE_SCATTER] += n_moe * (uint64_t)d->ep * n * D * F4;
        } else {
            bytes[HP_G_EP][HP_OP_ALLTOALL] = UINT64_MAX;
        }
    }
}
