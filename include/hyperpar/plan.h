// plan.h - what one rank of a layout will hold, move and compute, predicted from the shapes
// alone (no MPI, nothing allocated but the parameter table's descriptors): `hp plan --memory`.
// Formulas and where each comes from: docs/planner.md.
// defines: hp_plan_memory, hp_plan_memory_predict, hp_plan_memory_table, hp_plan_memory_run,
//          hp_plan_memory_busiest, hp_plan_activations,
//          hp_plan_activations_predict, hp_plan_traffic_predict, hp_plan_flops,
//          hp_plan_hw, hp_plan_hw_by_name, hp_plan_time, hp_plan_time_predict(_with),
//          hp_plan_activations_with_slots, hp_plan_pp_slots
//
//   hp_model_config m;  hp_model_config_by_name("llama3-70b", &m);
//   hp_run_config rc;   hp_run_config_default(&rc);  rc.seq_len = 8192; rc.batch = 512;
//   rc.ac_every = 1;    // full activation checkpointing (config.h: hp_run_ac_block)
//   hp_dims d = hp_dims_default();  d.tp = 8; d.world = 1024;  // dp_shard inferred: 128
//   hp_dims_validate(&d, &m, &rc, err, sizeof err);
//   hp_plan_memory mem;  hp_plan_memory_predict(&m, &d, &rc, 0, &mem);
//   printf("%.1f GiB persistent, %.1f GiB peak\n", mem.persistent / 0x1p30, mem.peak / 0x1p30);
//   hp_plan_hw hw;  hp_plan_hw_by_name("h100", &hw);
//   hp_plan_time t; hp_plan_time_predict(&m, &d, &rc, 0, &hw, &t);   // a model, not a measurement
#ifndef HYPERPAR_PLAN_H
#define HYPERPAR_PLAN_H
#include <stdint.h>
#include "comm.h"
#include "config.h"
#include "dims.h"
#include "memtrack.h"

// Bytes on one rank, by category (4 bytes an element, but for the bf16 activation stores of
// config.h's hp_run_bf16_stored: 2).
// The persistent and FSDP buffers are exactly what fsdp.c allocates; the activations are
// exactly the buffers transformer.c, moe.c, ep_dispatch.c and ulysses.c allocate
// (hp_plan_activations), the expert rows sized for the worst rank under EP imbalance (every
// routed entry of the ep group could land on it); the scratch is transformer.c's per-rank
// buffers plus the largest transient of one attention backward (the ring's K/V under cp).
typedef struct hp_plan_memory {
    double params;          // this rank's padded shard of every parameter
    double grads;           // ... of their gradients
    double optimizer;       // AdamW m and v shards (allocated for every optimiser)
    double fsdp_working;    // one gathered unit and its gradients (work_p, work_g)
    double comm_scratch;    // the gather / reduce-scatter staging buffer (comm_buf), and
    double comm_layer;      // of it: the comm layer's own buffers (comm.h: the fixed-order
                            // scratch, the nonblocking reductions' send copies and rows)
    double accumulation;    // microbatches > 1 or pp > 1: every unit's unsharded grads kept
                            // over the step (acc_g); units kept apart (pp, or
                            // --reshard-after-forward never) their parameters too (kept_p;
                            // kept_bf16 in 2 bytes under bf16 params); under bf16 with zbv
                            // each unit's local grads (loc_g)
    double accumulation_if_microbatched;   // what accumulation is with microbatches > 1
    double unit_places;     // one place for every unit's unsharded tensors (acc_g's size)
    double activations;     // what the forward keeps for the backward under rc->ac_every:
                            // the slots in flight (1 at pp 1) times one slot, plus the shared
                            // recompute set (hp_plan_activations.total)
    int    pp_in_flight;    // pp > 1: the most microbatches holding activations here at once
    double activations_uniform;  // the same if the expert rows were sized for uniform routing
                            // (n*K per rank instead of ep*n*K; = activations for dense models)
    double activations_recompute;  // of activations: the rank's shared buffers: the set the
                                   // checkpointed (and under bf16 storage the stored) blocks run
                                   // in, the norms' outputs, the bf16 stream buffers, the MoE and
                                   // Ulysses scratch (hp_plan_activations.recompute)
    double scratch;         // backward scratch, the ring's K/V, token ids, dlogits
    double persistent;      // params + grads + optimizer
    double peak;            // all of the above
    double activations_full_ac;  // activations under --ac full (hp_plan_memory_full_ac; 0
                            // under zbv, where AC is not defined)
    int64_t params_total;   // parameters of the full model (from the parameter table)
    int64_t shard_numel;    // floats of this rank's shard buffer
    double  largest_elems;  // the largest single buffer of this rank, in elements (`hp run`
                            // refuses 2^31-1 and more: the kernels index with int)
    const char *largest_name;   // ... and what it holds ("the logits"; a string literal)
} hp_plan_memory;

// dims validated for m and rc; rank in [0, world). Returns 0, or -1 on allocation failure or
// for AC under zbv (not defined: its W half would need the recomputed activations after I).
int hp_plan_memory_predict(const hp_model_config *m, const hp_dims *d, const hp_run_config *rc,
                           int rank, hp_plan_memory *out);
// The same in two parts: _table fills the terms of the parameter table (params, grads,
// optimizer, fsdp_working, comm_scratch, unit_places, persistent,
// params_total, shard_numel, and the gathered unit as the largest buffer so far), which no run
// setting changes; _run fills the rest for rc on
// top of them (the search calls it for every microbatch count and AC mode of one layout).
int hp_plan_memory_table(const hp_model_config *m, const hp_dims *d, int rank, hp_plan_memory *out);
int hp_plan_memory_run(const hp_model_config *m, const hp_dims *d, const hp_run_config *rc, int rank,
                       int n_slots, hp_plan_memory *out);   // n_slots: 0, or hp_plan_pp_slots's
// The busiest of rank's pp ranks (rank's inner coordinates at every pp coordinate: the ranks
// differ only there, stage 0 keeping the most microbatches in flight and the last pp rank the
// head): *out gets that rank's prediction, but largest_elems / largest_name the largest over
// all of them; *busiest_rank (may be NULL) the rank. = hp_plan_memory_predict at pp 1.
int hp_plan_memory_busiest(const hp_model_config *m, const hp_dims *d, const hp_run_config *rc,
                           int rank, hp_plan_memory *out, int *busiest_rank);
// Fills out->activations_full_ac: the activations with rc->ac_every = 1.
int hp_plan_memory_full_ac(const hp_model_config *m, const hp_dims *d, const hp_run_config *rc,
                           int rank, hp_plan_memory *out);

// One rank's activation buffers (bytes), as the model allocates them (plan_activations.c):
//   total = n_slots * slot + recompute + boundary
//   slot  = head + L_in * block_input + L_in2 * block_input_stored + sum over this rank's
//           blocks l not checkpointed of (dense_block or moe_block)
//   recompute = the attention half + the dense FFN (if a checkpointed block here is dense)
//           + the MoE state (if one is MoE); one set, whatever the number of blocks and slots;
//           under bf16 storage also two fp32 stream buffers (Nres x D) when L_in2 > 0
// block_input is h_in (Nres x D); L_in counts this rank's blocks and each block that follows
// one of its stages on another pp rank (the stage's output lands there: alloc_block); under
// bf16 storage the rank's blocks inside a stage (not a stage's first) are the L_in2 that keep
// it in 2 bytes (block_input_stored);
// dense_block / moe_block are a block's other buffers; head is the slot's h_final plus, on
// the head's pp rank, the final norm, logits and CE buffers.
typedef struct hp_plan_activations {
    double block_input, dense_block, moe_block, head;   // (under bf16 storage a block's
                            //   statistics, states and 2-byte store: config.h hp_run_bf16_stored)
    double block_input_stored;   // h_in in 2 bytes (bf16 storage), else = block_input
    double slot;            // one microbatch slot under rc->ac_every
    double recompute;       // the shared set (0 when no block here is checkpointed or stored),
                            //   the bf16 stream buffers and the MoE blocks' backward scratch
    double boundary;        // pp: pipeline_run.c's dh_buf, n_slots * pp_virtual * Nres*D floats
                            //   (and under bf16 its fwd_wire, as many 2-byte elements)
    int    n_slots;         // 1 at pp 1; the schedule's microbatches in flight under pp
    int    n_checkpointed;  // this rank's checkpointed blocks
    double total;
} hp_plan_activations;
// uniform: size the expert rows for uniform routing (n*K) instead of the worst rank (ep*n*K).
// Returns 0, or -1 (allocation failure, a schedule that cannot run, AC under zbv).
int hp_plan_activations_predict(const hp_model_config *m, const hp_dims *d, const hp_run_config *rc,
                                int rank, int uniform, hp_plan_activations *out);
// The same with the slots in flight given (n_slots > 0; 0 derives them): they depend only on
// pp, the schedule, its stages and M, so a search over the inner degrees can keep them.
int hp_plan_activations_with_slots(const hp_model_config *m, const hp_dims *d, const hp_run_config *rc,
                                   int rank, int uniform, int n_slots, hp_plan_activations *out);
// The most microbatches holding activations at once on rank's pp rank (1 at pp 1; the
// schedule's action list: pipeline_run.c's slots), or -1 when M does not fit the schedule.
int hp_plan_pp_slots(const hp_dims *d, int n_layers, int M, int rank);

// hp_traffic_predict (the verifier's formulas) plus, under AC, the recomputed forwards'
// collectives (hp_traffic_ac_predict, include/hyperpar/traffic_ac.h), with the data-dependent
// EP all-to-all replaced
// by its expectation under uniform routing: per MoE layer M*(ep-1)*(E/ep)*4 bytes of counts
// (one exchange per microbatch) plus 2*(sent+received)*D*4 with sent = received =
// n*K*(ep-1)/ep, n the rank's routed tokens of the step. *ep_worst (may be NULL) gets the
// all-to-all of the worst rank, which receives every entry of the other ep-1 members.
void hp_plan_traffic_predict(const hp_model_config *m, const hp_dims *d, const hp_run_config *rc,
                             int rank, uint64_t bytes[HP_G_COUNT][HP_OP_COUNT], uint64_t *ep_worst);
// What those bytes cost on the wire per rank (comm.h's wire rules): all-gather (N-1)*chunk,
// reduce-scatter (N-1)/N of the input, all-reduce 2(N-1)/N of the buffer, the rest as counted.
double hp_plan_wire_bytes(hp_op_kind op, uint64_t logical, int group_size);

// FLOPs of one training step (forward + backward = 3x forward), the whole job and per rank:
// 2 per multiply-add of every matmul (the top-k experts only) and causal attention: QK^T and
// PV over (S+1)/2 keys on average, 2*(S+1)*(H*hd) per token per layer (bench/README.md).
typedef struct hp_plan_flops {
    double per_token_fwd;   // forward FLOPs of one token
    double step_total;      // 3 * per_token_fwd * batch * seq_len
    double per_rank;        // step_total / world (every rank computes an equal part)
    double recompute_per_rank;  // AC: the checkpointed blocks' forwards again, per rank (not
                            // in the model FLOPs MFU counts; the time model adds it)
    int64_t params_active;  // parameters a token multiplies (top-k experts, no embedding)
} hp_plan_flops;
void hp_plan_flops_predict(const hp_model_config *m, const hp_dims *d, const hp_run_config *rc,
                           hp_plan_flops *out);

// A machine, as documented by its vendor; every number is an assumption the plan prints.
typedef struct hp_plan_hw {
    char   name[16];
    double peak_flops;       // dense matmul peak per rank (bf16 tensor cores on GPUs), FLOP/s
    double matmul_eff;       // fraction of the peak large matmuls reach (assumption)
    double mem_bytes;        // memory per rank
    double intra_bw;         // bytes/s one rank sends within a node (NVLink / xGMI / shm)
    double inter_bw;         // bytes/s one rank sends to other nodes (its NIC share)
    int    ranks_per_node;
    const char *source;      // where the numbers come from
} hp_plan_hw;
// "h100", "h200", "mi300x", "cpu". Returns 0, or -1 for an unknown name.
int hp_plan_hw_by_name(const char *name, hp_plan_hw *out);
extern const char *const hp_plan_hw_names[];

// A step-time model: compute (model FLOPs + AC's recompute) at peak*matmul_eff (idle for the
// pipeline bubble under pp),
// every (group, op) at the bandwidth of the slowest link its group crosses (nodes are
// ranks_per_node consecutive ranks).
typedef struct hp_plan_time {
    double pp_bubble;        // pp > 1: the schedule's ideal idle fraction (hp_pp_ideal_bubble)
    double compute_s;        // FLOPs / (peak * eff), stretched by 1 / (1 - pp_bubble)
    double comm_s;           // all communication, serialised
    double comm_inter_s;     // the part over links between nodes
    double inter_bytes;      // wire bytes this rank sends between nodes per step
    double step_serial_s;    // compute + comm (no overlap)
    double step_overlap_s;   // max(compute, comm) (perfect overlap)
    double mfu_serial, mfu_overlap;   // model FLOPs / (step time * peak)
} hp_plan_time;
void hp_plan_time_predict(const hp_model_config *m, const hp_dims *d, const hp_run_config *rc,
                          int rank, const hp_plan_hw *hw, hp_plan_time *out);
// The same with the schedule's ideal bubble given (pp_bubble >= 0; < 0 simulates it).
void hp_plan_time_predict_with(const hp_model_config *m, const hp_dims *d, const hp_run_config *rc,
                               int rank, const hp_plan_hw *hw, double pp_bubble, hp_plan_time *out);
// 1 when every member of rank's group of kind g sits in rank's node.
int hp_plan_group_in_node(const hp_dims *d, hp_group_kind g, int rank, int ranks_per_node);

// ---- predicted against measured (plan_check.c) --------------------------------------------
// What a run measured on one rank (hp_trainer_measured, train.h, fills it): the tracking
// allocator's bytes (memtrack.h: current = held when measured, peak = the high-water marks
// since hp_trainer_init began) and the logical bytes per (group, op) of one training step.
typedef struct hp_plan_measured {
    int64_t      params_total;
    hp_mem_stats mem;
    uint64_t     bytes[HP_G_COUNT][HP_OP_COUNT];
} hp_plan_measured;

typedef struct hp_plan_check {
    int    pass;
    double persistent_predicted, persistent_measured;   // params + grads + optimizer
    double peak_predicted, peak_measured;               // hp_plan_memory.peak; mem.total_peak
    double peak_ratio;                                  // predicted / measured
    int    n_ops;          // (group, op) pairs compared (predicted or counted non-zero)
    int    n_data_dependent;   // pairs left out: the EP all-to-all, which follows the routing
    char   why[256];       // "" when pass, else the first difference, one line
} hp_plan_check;

// The planner's prediction for rank (hp_plan_memory_predict, hp_plan_traffic_predict) against
// what that rank measured: params_total and the persistent bytes equal, every (group, op)
// equal except the data-dependent EP all-to-all, and the predicted peak within peak_tol (0.10:
// 10%) of the measured high-water mark. Returns 0 when it holds, 1 (why says the first difference)
// otherwise, -1 when the prediction cannot be made.
#define HP_PLAN_PEAK_TOL 0.10
int hp_plan_check_run(const hp_model_config *m, const hp_dims *d, const hp_run_config *rc, int rank,
                      const hp_plan_measured *x, double peak_tol, hp_plan_check *out);

// What one rank of a job will allocate, in bytes, computed before allocating: the planner's
// prediction (hp_plan_memory_predict, exact against the tracking allocator) in four
// sums. `hp run` refuses a run whose busiest rank does not fit (tools/hp/cli/cli_check.c).
typedef struct hp_memory_estimate_t {
    double persistent_bytes;   // parameter, gradient and AdamW shards
    double working_bytes;      // one gathered FSDP unit, its grads, gather/reduce staging, and
                               // the accumulation buffers (microbatches > 1 or pp > 1)
    double activation_bytes;   // what the forward keeps for the backward
    double scratch_bytes;      // backward scratch, cp's K/V, token ids
    double total_bytes;        // hp_plan_memory.peak
    double largest_elems;      // the largest single buffer, in elements
    char   largest_name[48];   // ... and what it holds
} hp_memory_estimate_t;
// dims validated for model and run; rank in [0, world). Returns 0, or -1 on allocation failure.
int hp_memory_estimate(const hp_model_config *m, const hp_dims *d, const hp_run_config *rc,
                       int rank, hp_memory_estimate_t *out);

#endif
