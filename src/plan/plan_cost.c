// plan_cost.c - a step's traffic (with the EP all-to-all's expectation), FLOPs, and a time
// model on documented hardware, for hp plan. No MPI: pure arithmetic on shapes and the mesh.
// defines: hp_plan_traffic_predict, hp_plan_wire_bytes, hp_plan_flops_predict, hp_plan_hw_names,
//          hp_plan_hw_by_name, hp_plan_group_in_node, hp_plan_time_predict(_with)
#include <stdlib.h>
#include <string.h>
#include "hyperpar/mesh.h"
#include "hyperpar/pipeline.h"
#include "hyperpar/plan.h"
#include "hyperpar/traffic.h"
#include "hyperpar/traffic_ac.h"

// ---------------------------------------------------------------------------------------
// traffic

void hp_plan_traffic_predict(const hp_model_config *m, const hp_dims *d, const hp_run_config *rc,
                             int rank, uint64_t bytes[HP_G_COUNT][HP_OP_COUNT], uint64_t *ep_worst) {
    hp_traffic_predict(m, d, rc, rank, bytes);   // with the checkpointed blocks' forwards again
    if (ep_worst) *ep_worst = 0;
    if (bytes[HP_G_TP][HP_OP_ALLREDUCE] == UINT64_MAX) {
        // the rowwise float8 amax per row over a routed expert's etp-split hidden: uniform
        // routing brings each rank's experts the n*K entries of one member's rows on average
        uint64_t fixed = 0, *per_entry = calloc((size_t)m->n_layers, sizeof *per_entry);
        if (per_entry && hp_traffic_tp_routed(m, d, rc, rank, &fixed, per_entry)) {
            const uint64_t n = (uint64_t)(rc->batch / hp_dims_batch(d)) *
                               (uint64_t)(rc->seq_len / (d->cp * d->ulysses)) / (uint64_t)hp_dims_token_split(d);
            uint64_t tp = fixed;
            for (int l = 0; l < m->n_layers; l++) tp += n * (uint64_t)m->top_k * per_entry[l];
            bytes[HP_G_TP][HP_OP_ALLREDUCE] = tp;
        }
        free(per_entry);
    }
    if (bytes[HP_G_EP][HP_OP_ALLTOALL] != UINT64_MAX) return;
    // uniform routing: each of the n*K entries leaves this rank with probability (ep-1)/ep,
    // and as many arrive; the counts exchange is (ep-1) * experts-per-rank ints. The MoE
    // layers this rank runs: all of them at pp 1 (hp_traffic_predict's own count is internal);
    // a checkpointed one repeats its forward half (counts, dispatch, combine).
    int n_moe = 0, n_moe_ac = 0;
    hp_pp_layout lay;
    hp_coords co;
    hp_mesh_coords(d, rank, &co);
    if (hp_pp_layout_init(&lay, d, m->n_layers) != 0) return;
    for (int l = 0; l < m->n_layers; l++)
        n_moe += hp_model_is_moe_layer(m, l) && lay.stage_rank[hp_pp_layer_stage(&lay, l)] == co.p;
    hp_traffic_ac_blocks(m, d, rc, rank, &n_moe_ac);
    const uint64_t ep = (uint64_t)d->ep, K = (uint64_t)m->top_k, D = (uint64_t)m->dim;
    const uint64_t El = (uint64_t)m->num_experts / ep;
    const uint64_t n = (uint64_t)(rc->batch / hp_dims_batch(d)) * (uint64_t)(rc->seq_len / (d->cp * d->ulysses)) /
                       (uint64_t)hp_dims_token_split(d);
    // one counts exchange per microbatch; the entries add up over the step's microbatches
    const uint64_t counts = (uint64_t)hp_run_microbatches(rc) * (ep - 1) * El * 4;
    const uint64_t moved = n * K * (ep - 1) / ep;   // entries sent (= received) per layer
    bytes[HP_G_EP][HP_OP_ALLTOALL] = (uint64_t)n_moe * (counts + 2 * (2 * moved) * D * 4) +
                                     (uint64_t)n_moe_ac * (counts + (2 * moved) * D * 4);
    // worst: all n*K of its own entries go out and all (ep-1)*n*K of the others' come in
    if (ep_worst) *ep_worst = (uint64_t)n_moe * (counts + 2 * (ep * n * K) * D * 4) +
                              (uint64_t)n_moe_ac * (counts + (ep * n * K) * D * 4);
}

double hp_plan_wire_bytes(hp_op_kind op, uint64_t logical, int N) {
    const double b = (double)logical;
    if (N <= 1) return 0;
    switch (op) {
    case HP_OP_ALLGATHER:      return (N - 1) * b;              // logical = this rank's chunk
    case HP_OP_REDUCE_SCATTER: return b * (N - 1) / N;          // logical = the full input
    case HP_OP_ALLREDUCE:      return 2.0 * b * (N - 1) / N;
    case HP_OP_BROADCAST:      return (N - 1) * b;
    default:                   return b;                        // all-to-all, send/recv
    }
}

// ---------------------------------------------------------------------------------------
// FLOPs

void hp_plan_flops_predict(const hp_model_config *m, const hp_dims *d, const hp_run_config *rc,
                           hp_plan_flops *out) {
    const int64_t D = m->dim, hd = hp_model_head_dim(m), qd = (int64_t)m->n_heads * hd;
    const int64_t kvd = (int64_t)m->n_kv_heads * hd, S = rc->seq_len;
    int64_t active = (int64_t)m->vocab_size * D;   // the output head (the embedding is a lookup)
    for (int l = 0; l < m->n_layers; l++) {
        active += 2 * D * qd + 2 * D * kvd;   // wq, wo; wk, wv
        if (!hp_model_is_moe_layer(m, l)) { active += 3 * D * m->ffn_hidden; continue; }
        active += (int64_t)m->num_experts * D;   // router
        active += (int64_t)m->top_k * 3 * D * m->moe_hidden;
        active += 3 * D * (int64_t)m->moe_hidden * m->n_shared_experts;
    }
    memset(out, 0, sizeof *out);
    out->params_active = active;
    // under AC each checkpointed block's forward runs twice: hardware FLOPs, not model FLOPs
    double ac_fwd = 0;
    for (int l = 0; l < m->n_layers; l++) {
        if (!hp_run_ac_block(rc, l)) continue;
        const double ffn = hp_model_is_moe_layer(m, l)
            ? (double)m->num_experts * D + (double)m->top_k * 3 * D * m->moe_hidden +
              3.0 * D * (double)m->moe_hidden * m->n_shared_experts
            : 3.0 * D * m->ffn_hidden;
        ac_fwd += 2.0 * (2.0 * D * qd + 2.0 * D * kvd + ffn) + 2.0 * (double)(S + 1) * (double)qd;
    }
    // causal attention: a token meets (S+1)/2 keys on average: QK^T and PV, 2 FLOPs a MAC
    // (bench/README.md's count, the one `hp bench` reports GFLOP/s with)
    out->per_token_fwd = 2.0 * (double)active + (double)m->n_layers * 2.0 * (double)(S + 1) * (double)qd;
    out->step_total = 3.0 * out->per_token_fwd * (double)rc->batch * (double)S;
    out->per_rank = out->step_total / (d->world > 0 ? d->world : hp_dims_product(d));
    out->recompute_per_rank = ac_fwd * (double)rc->batch * (double)S / (d->world > 0 ? d->world : hp_dims_product(d));
}

// ---------------------------------------------------------------------------------------
// hardware and the time model

// vendors' "80 GB" are GiB as nvidia-smi reports them (81559 MiB usable on an H100)
#define GIB (1024.0 * 1024.0 * 1024.0)

const char *const hp_plan_hw_names[] = { "h100", "h200", "mi300x", "cpu", NULL };

int hp_plan_hw_by_name(const char *name, hp_plan_hw *out) {
    static const hp_plan_hw table[] = {
        { "h100", 989.4e12, 0.7, 80 * GIB, 450e9, 50e9, 8,
          "NVIDIA H100 SXM5 datasheet: 989.4 TFLOP/s dense BF16, 80 GB HBM3, NVLink 4 900 GB/s "
          "(450 GB/s each way), one 400 Gb/s ConnectX-7 NIC per GPU" },
        { "h200", 989.4e12, 0.7, 141 * GIB, 450e9, 50e9, 8,
          "NVIDIA H200 SXM datasheet: 989.4 TFLOP/s dense BF16, 141 GB HBM3e, NVLink 4 900 GB/s "
          "(450 GB/s each way), one 400 Gb/s NIC per GPU" },
        { "mi300x", 1307.4e12, 0.7, 192 * GIB, 448e9, 50e9, 8,
          "AMD Instinct MI300X datasheet: 1307.4 TFLOP/s dense BF16, 192 GB HBM3, Infinity "
          "Fabric 896 GB/s aggregate (448 GB/s each way), one 400 Gb/s NIC per GPU" },
        { "cpu", 106.9e9, 0.8, 0, 10e9, 1.25e9, 2,
          "this project's machine (docs/performance.md): 106.9 GFLOP/s fp32 sgemm per core, hyperpar at 0.8 "
          "of it; 10 GB/s shared-memory MPI, 10 GbE between nodes, 2 ranks per node" },
    };
    for (size_t i = 0; name && i < sizeof table / sizeof table[0]; i++)
        if (!strcmp(name, table[i].name)) { *out = table[i]; return 0; }
    return -1;
}

int hp_plan_group_in_node(const hp_dims *d, hp_group_kind g, int rank, int ranks_per_node) {
    const int size = hp_mesh_group_size(d, g);
    if (size <= 1) return 1;
    if (size > ranks_per_node) return 0;
    int *members = malloc((size_t)d->world * sizeof *members);
    if (!members) return 0;
    const int n = hp_mesh_group(d, g, rank, members, NULL);
    int in = 1;
    for (int i = 0; i < n; i++) in &= members[i] / ranks_per_node == rank / ranks_per_node;
    free(members);
    return in;
}

void hp_plan_time_predict(const hp_model_config *m, const hp_dims *d, const hp_run_config *rc,
                          int rank, const hp_plan_hw *hw, hp_plan_time *out) {
    hp_plan_time_predict_with(m, d, rc, rank, hw, -1, out);
}

void hp_plan_time_predict_with(const hp_model_config *m, const hp_dims *d, const hp_run_config *rc,
                               int rank, const hp_plan_hw *hw, double pp_bubble, hp_plan_time *out) {
    memset(out, 0, sizeof *out);
    hp_plan_flops f;
    hp_plan_flops_predict(m, d, rc, &f);
    out->compute_s = (f.per_rank + f.recompute_per_rank) / (hw->peak_flops * hw->matmul_eff);
    hp_pp_layout lay;
    if (d->pp > 1 && hp_pp_layout_init(&lay, d, m->n_layers) == 0) {
        const double b = pp_bubble >= 0 ? pp_bubble : hp_pp_ideal_bubble(&lay, hp_run_microbatches(rc));
        if (b >= 0 && b < 1) { out->pp_bubble = b; out->compute_s /= 1 - b; }
    }
    uint64_t bytes[HP_G_COUNT][HP_OP_COUNT];
    hp_plan_traffic_predict(m, d, rc, rank, bytes, NULL);
    for (int g = 0; g < HP_G_COUNT; g++) {
        int any = 0;
        for (int op = 0; op < HP_OP_COUNT; op++) any |= bytes[g][op] != 0;
        if (!any) continue;
        const int N = hp_mesh_group_size(d, (hp_group_kind)g);
        const int local = hp_plan_group_in_node(d, (hp_group_kind)g, rank, hw->ranks_per_node);
        for (int op = 0; op < HP_OP_COUNT; op++) {
            const double wire = hp_plan_wire_bytes((hp_op_kind)op, bytes[g][op], N);
            const double s = wire / (local ? hw->intra_bw : hw->inter_bw);
            out->comm_s += s;
            if (!local) { out->comm_inter_s += s; out->inter_bytes += wire; }
        }
    }
    out->step_serial_s = out->compute_s + out->comm_s;
    out->step_overlap_s = out->compute_s > out->comm_s ? out->compute_s : out->comm_s;
    out->mfu_serial = f.per_rank / (out->step_serial_s * hw->peak_flops);
    out->mfu_overlap = f.per_rank / (out->step_overlap_s * hw->peak_flops);
}
