// failpoint.h - named fault injection: each failpoint is a realistic one-line bug (a dropped
// or doubled reduction, an off-by-one offset, a wrong scale) compiled in at the very place a
// regression would put it, so that a test can prove the verifier catches it.
// defines: hp_failpoint_id, hp_failpoint(), hp_failpoint_info, hp_failpoint_init/parse/suspend,
//          hp_failpoints, hp_failpoint_print_list
//
//   HP_FAILPOINT=fsdp_grad_average hp run --dp-shard 2 --verify   # exit 1: every grad 0.5 off
//   HP_FAILPOINT=ce_max_local,ring_last_hop_dropped hp run ...    # several at once
//   hp run --list-failpoints                                      # name, recipe, flags, ...
//
// At a call site the bug sits next to the right code, behind one test of a bit:
//   if (!hp_failpoint(HP_FP_HSDP_ALLREDUCE_DROPPED))
//       hp_allreduce_sum(tr->comm, HP_G_DP_REPLICATE, g, n);
// Off (the default) that is one load and one always-taken, well-predicted branch: no string
// compare on the hot path. hp_failpoint_init() parses HP_FAILPOINT once (hp_trainer_init and
// `hp run` call it; later calls do nothing); an unknown name is an error naming it.
//
// The verifier runs the parallel job and the single-process reference in one process
// (verify.c): it suspends every failpoint around the reference, so a fault only ever hits
// the parallel run. A fault never desynchronises a collective (every rank takes the same
// branch, and a dropped collective is dropped on all of them): it produces wrong numbers,
// never a hang or a crash.
//
// The registry below (hp_failpoints[]) is the single list: name, what the bug is, the
// smallest recipe it affects (its id and `hp run` flags) and a POSIX ERE the verifier's
// report must match (the failed check, or the worst gradient / parameter it names).
// Its CTests failpoint_<name> are generated from it (`hp matrix --ctest`, tests/recipes.cmake).
//
// Adding one (later issues add theirs to the same list): an enum value below (before
// HP_FP_COUNT), its row in src/util/failpoint.c and the call site; its CTest follows, and
// `hp matrix --faults-only --report DIR` then shows it in DIR/faults.md.
#ifndef HYPERPAR_FAILPOINT_H
#define HYPERPAR_FAILPOINT_H
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef enum hp_failpoint_id {
    HP_FP_TP_PARTIAL_GRAD_DROPPED = 0, // fsdp.c: SP norms' partial grads not all-reduced over tp
    HP_FP_SP_ALLGATHER_LAYOUT,         // tp.c: SP all-gather result used without the block transpose
    HP_FP_SP_REDUCE_SCATTER_MEAN,      // tp.c: SP reduce-scatter averages instead of summing
    HP_FP_CE_MAX_LOCAL,                // tp.c: loss parallel uses each vocab slice's own max
    HP_FP_CE_TARGET_DROPPED,           // tp.c: target-logit all-reduce over tp dropped
    HP_FP_FSDP_GRAD_AVERAGE,           // fsdp.c: reduce-scatter divides by the shard group size
    HP_FP_FSDP_SHARD_OFFSET,           // fsdp.c: grad chunk k staged in slot k+1
    HP_FP_HSDP_ALLREDUCE_DROPPED,      // fsdp.c: all-reduce over dp_replicate dropped (HSDP)
    HP_FP_DDP_GRAD_AVERAGE,            // fsdp.c: dp_replicate all-reduce divides by its size (DDP)
    HP_FP_RING_LAST_HOP_DROPPED,       // cp_attention.c: the ring's last dK/dV hop dropped
    HP_FP_CP_KV_POSITIONS,             // cp_attention.c: source K/V positions of the own cp rank
    HP_FP_CP_SKIP_DIAGONAL,            // cp_attention.c: partly visible (diagonal) blocks skipped
    HP_FP_EP_COUNTS_LAYOUT,            // ep_dispatch.c: exchanged counts read expert-major
    HP_FP_EP_COMBINE_ORDER,            // ep_dispatch.c: combine sends rows back unpermuted
    HP_FP_ETP_SPLIT_DIM,               // params.c: expert w2 split on dim (D) instead of hidden
    HP_FP_GATE_GRAD_TP,                // params.c: router gate grad not partial over tp (#4054)
    HP_FP_TOKEN_SPLIT_OFFSET,          // transformer.c: token split of one sequence only (#3604)
    HP_FP_EXPERT_DIVIDE_FACTOR,        // fsdp.c: expert grads keep the old 1/(R*S*C) factor (#167178)
    HP_FP_GRAD_NORM_DOUBLE_COUNT,      // trainer.c: tp-replicated grads counted on every tp rank
    HP_FP_N_GLOBAL_LOCAL,              // trainer.c: N_global not summed over the batch mesh
    HP_FP_PP_MICROBATCH_LOSS_SCALE,    // transformer.c: each microbatch's loss divided by M again (#1733)
    HP_FP_PP_STAGE_EXCHANGE,           // pipeline_run.c: a stage sends its input, not its output
    HP_FP_ULYSSES_A2A_LAYOUT,          // ulysses.c: rank v is sent the heads of rank U-1-v
    HP_FP_ULYSSES_KV_GRAD_SUM,         // ulysses.c: a repeated kv head keeps its first copy's grad
    HP_FP_PP_SEND_DROPPED,             // pipeline_run.c: the last microbatch's activation never sent:
                                       //   the next stage waits, and the watchdog must end the job
    HP_FP_AC_RECOMPUTE_STALE,          // transformer.c: a checkpointed block recomputes from the
                                       //   next block's kept input (off by one), not its own
    HP_FP_UNIT_IN_SHARDS_RESTAGED,     // fsdp.c: a unit that is its shards is staged like a gathered
                                       //   one: the staging's zero-fill wipes its gradients
    HP_FP_KEPT_UNIT_FREED,             // fsdp.c: a unit kept to its backward is freed after its
                                       //   forward, and its backward reads the freed copy
    HP_FP_KEPT_UNIT_STALE,             // fsdp.c: units kept for the step survive its end: the
                                       //   next step trains the parameters before the update
    // the bf16 policy (precision.md §4.2, §2): each runs its recipe under --mixed-precision-param bfloat16
    HP_FP_BF16_GATHER_UNCAST,          // fsdp.c: a rank's own chunk of its unit copy keeps the fp32
                                       //   master (the cast skipped where it copies its own shard)
    HP_FP_BF16_MASTER_UPDATE,          // trainer.c: rank 1 updates its bf16 copy, not the fp32 master
    HP_FP_BF16_RECOMPUTE_FP32,         // transformer.c: a checkpointed block recomputes in fp32
    HP_FP_BF16_TRUNCATE,               // transformer.c: ops round by truncation instead of RNE
    HP_FP_BF16_TP_PARTIAL_ROUNDED,     // transformer.c: a tp partial rounded to bf16 before its sum
    HP_FP_BF16_GRAD_REDUCE,            // fsdp.c: the gradient reduction's result in bf16 (fp32 policy)
    HP_FP_BF16_MICROBATCH_SUM,         // fsdp.c: microbatch gradients summed in bf16
    HP_FP_BF16_REDUCE_RING_ORDER,      // comm_fixed_order.c: the bf16 reduce-scatter sums chunk j
                                       //   from member j+1 on (a ring's order), not 0..G-1
    HP_FP_ULYSSES_BF16_KV_COPIES,      // ulysses.c: the grads of repeated kv heads' copies travel
                                       //   in 2 bytes, rounded before their fp32 sum
    HP_FP_CP_BF16_DKV_RING,            // cp_attention.c: bf16 ring: the dK/dV accumulators travel
                                       //   in 2 bytes with the K/V, rounded at every hop
    HP_FP_FLOAT8_GRAD_E4M3,            // float8_linear.c: tensorwise grad_output cast to e4m3, not e5m2
    HP_FP_FLOAT8_AMAX_LOCAL_TP,        // trainer_hooks.c: float8 amax not MAX-reduced over tp
    HP_FP_FLOAT8_RECOMPUTE_SCALE,      // float8_linears.c: an AC recompute takes its amax again, unreduced
    HP_FP_FLOAT8_FSDP_AMAX_LOCAL,      // fsdp.c: fp8 all-gather: weight amax not MAX-reduced over fsdp
    HP_FP_FLOAT8_FSDP_GATHER_BF16,     // fsdp.c: fp8 all-gather gathers bf16, the linear casts after
                                       //   (pytorch/ao#590)
    HP_FP_ASYNC_TP_CHUNK_OFFSET,       // tp.c: async TP places and consumes the first peer's
                                       //   all-gathered chunk at the next member's row offset
    HP_FP_ASYNC_TP_NOT_APPLIED,        // tp.c: --async-tp accepted, every region runs plain
    HP_FP_ASYNC_TP_SCATTER_DIM,        // tp.c: async reduce-scatter splits the partial along its
                                       //   last dim, not the sequence (pytorch/pytorch#153595)
    HP_FP_FLOAT8_SP_GATHER_E4M3,       // tp.c: the float8 SP all-gather casts grad_output to e4m3
    HP_FP_FLOAT8_EXPERT_AMAX_LOCAL,    // trainer_hooks.c: a routed expert's float8 amax (its weight's
                                       //   first) not MAX-reduced over etp
    HP_FP_BF16_STORE_SLOT,             // transformer.c: bf16 storage: a stored block's backward
                                       //   unpacks the next pipeline slot's activations
    HP_FP_BF16_INPUT_PARITY,           // transformer.c: bf16 storage: a block keeps the stream
                                       //   buffer it wrote (its output) as its input
    HP_FP_BF16_HEAD_SLOT,              // transformer.c: bf16 storage: the head's backward unpacks
                                       //   the input kept by the next pipeline slot
    HP_FP_BF16_STAGE_INPUT_STALE,      // transformer.c: bf16 storage: a stage runs on its stream
                                       //   buffer without unpacking the 2-byte input it received
    HP_FP_BF16_MOE_ROUTED_STALE,       // moe.c: bf16 storage: a MoE block's backward leaves its
                                       //   routed rows unpacked (the last forward's, in the scratch)
    HP_FP_BF16_KEPT_WINDOW_STALE,      // fsdp.c: bf16 units kept apart in 2 bytes: a kept unit's
                                       //   gather leaves the work buffer holding the unit widened last
    HP_FP_ULYSSES_BF16_STATE_STALE,    // ulysses.c: bf16 policy: an attention's backward runs on the
                                       //   gathered q, k, v the shared scratch holds, its own 2-byte
                                       //   copies never unpacked
    HP_FP_COUNT
} hp_failpoint_id;

// Bit i set: failpoint i fires. Written only by hp_failpoint_init / hp_failpoint_suspend.
extern uint64_t hp_failpoints_active;

// 1 when failpoint id is armed (and not suspended). One load and a branch.
static inline int hp_failpoint(hp_failpoint_id id) {
    return (int)((hp_failpoints_active >> (unsigned)id) & 1u);
}

typedef struct hp_failpoint_info {
    hp_failpoint_id id;
    const char *name;        // what HP_FAILPOINT names, e.g. "fsdp_grad_average"
    const char *recipe;      // the smallest recipe it affects, e.g. "M4-s2" (recipes.c id)
    const char *flags;       // that recipe's `hp run` flags
    const char *touches;     // POSIX ERE: the check or tensor the verifier must name
    const char *what;        // one line: the bug
} hp_failpoint_info;

extern const hp_failpoint_info hp_failpoints[HP_FP_COUNT];

// Parses a comma list of names into a bit mask. Returns 0, or -1 with one line in err naming
// the unknown name.
int  hp_failpoint_parse(const char *spec, uint64_t *mask, char *err, size_t errlen);
// Arms the failpoints HP_FAILPOINT names (once per process; later calls return the first
// result). Returns 0, or -1 with one line in err.
int  hp_failpoint_init(char *err, size_t errlen);
// 1: every failpoint off until hp_failpoint_suspend(0) re-arms what HP_FAILPOINT named.
void hp_failpoint_suspend(int suspend);
// The registry, one failpoint per line, tab-separated: name, recipe, flags, touches, what.
void hp_failpoint_print_list(FILE *out);

#endif
