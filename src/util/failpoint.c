// failpoint.c - the failpoint registry and the parsing of HP_FAILPOINT (see failpoint.h).
// defines: hp_failpoints_active, hp_failpoints, hp_failpoint_parse, hp_failpoint_init,
//          hp_failpoint_suspend, hp_failpoint_print_list
#include <stdlib.h>
#include <string.h>
#include "hyperpar/failpoint.h"

uint64_t hp_failpoints_active = 0;

static uint64_t armed = 0;     // what HP_FAILPOINT named
static int      parsed = 0;    // 1 after the first hp_failpoint_init
static int      parse_rc = 0;  // its result
static char     parse_err[256];
static int      suspended = 0;

// The flags of the matrix recipes the faults run on (hp_recipe_flags format: every degree
// explicit), so a failpoint's run is exactly its recipe's CTest plus HP_FAILPOINT.
#define TINY(R, S, C, T) "--model tiny --dp-replicate " #R " --dp-shard " #S " --cp " #C " --tp " #T
#define M1B   TINY(2, 1, 1, 1)
#define M2TP2 TINY(1, 1, 1, 2) " --no-sp"
#define M3TP2 TINY(1, 1, 1, 2) " --sp"
#define M4S2  TINY(1, 2, 1, 1)
#define M5AG  TINY(1, 1, 2, 1) " --cp-rotate allgather"
#define M5RG  TINY(1, 1, 2, 1) " --cp-rotate ring"
#define M7TP1 TINY(2, 2, 1, 1)
#define AEP   "--model tiny-moe --dp-replicate 1 --dp-shard 2 --cp 1 --tp 1 --ep 2 --etp 1"
#define S1B   "--model tiny-moe --dp-replicate 1 --dp-shard 2 --cp 1 --tp 2 --sp --ep 4 --etp 1"
// not a matrix row: MoE under plain tp (ep 1: the experts' hidden dim splits over tp)
#define MOETP2 "--model tiny-moe --dp-replicate 1 --dp-shard 1 --cp 1 --tp 2 --no-sp"
#define U1    TINY(1, 1, 1, 1) " --ulysses 2"
#define U3    TINY(1, 1, 1, 1) " --ulysses 8"
#define P1F1B TINY(1, 1, 1, 1) " --pp 2 --layers 4 --pp-schedule 1f1b --pp-microbatches 4"
#define M6ACF TINY(1, 2, 2, 2) " --sp --cp-rotate ring --ac full"
#define P5    TINY(1, 2, 1, 1) " --pp 2 --layers 4 --pp-schedule 1f1b --pp-microbatches 4"
#define P4ZBV TINY(1, 1, 1, 1) " --pp 2 --layers 4 --pp-schedule zbv --pp-microbatches 4"
#define BF16  " --mixed-precision-param bfloat16"
#define F8T   " --float8 tensorwise"
#define M6ACF2 TINY(1, 1, 1, 2) " --sp --ac full"
#define GA    TINY(1, 2, 2, 2) " --sp --cp-rotate allgather --microbatches 4"
#define M4S4  TINY(1, 4, 1, 1)
#define B2    TINY(1, 2, 1, 2) " --sp"
#define F8AG  " --float8-fsdp-all-gather"

const hp_failpoint_info hp_failpoints[HP_FP_COUNT] = {
    [HP_FP_TP_PARTIAL_GRAD_DROPPED] = { HP_FP_TP_PARTIAL_GRAD_DROPPED, "tp_partial_grad_dropped", "M3-tp2", M3TP2,
      "norm[.]weight",
      "SP norm weights: their partial grads are not all-reduced over tp before the FSDP reduce" },
    [HP_FP_SP_ALLGATHER_LAYOUT] = { HP_FP_SP_ALLGATHER_LAYOUT, "sp_allgather_layout", "M3-tp2", M3TP2,
      "loss of step 1",
      "SP all-gather: the [tp][batch][seq] blocks are used as (batch, seq) rows, no transpose" },
    [HP_FP_SP_REDUCE_SCATTER_MEAN] = { HP_FP_SP_REDUCE_SCATTER_MEAN, "sp_reduce_scatter_mean", "M3-tp2", M3TP2,
      "gradient",
      "SP reduce-scatter leaving a tp region averages the partial sums instead of adding them" },
    [HP_FP_CE_MAX_LOCAL] = { HP_FP_CE_MAX_LOCAL, "ce_max_local", "M2-tp2", M2TP2,
      "loss of step 1",
      "loss parallel: each vocab slice uses its own max (the max all-reduce over tp is skipped)" },
    [HP_FP_CE_TARGET_DROPPED] = { HP_FP_CE_TARGET_DROPPED, "ce_target_dropped", "M2-tp2", M2TP2,
      "loss of step 1",
      "loss parallel: the target-logit all-reduce over tp is dropped" },
    [HP_FP_FSDP_GRAD_AVERAGE] = { HP_FP_FSDP_GRAD_AVERAGE, "fsdp_grad_average", "M4-s2", M4S2,
      "gradient",
      "FSDP reduce-scatter divides by the shard group size on top of sum/N_global" },
    [HP_FP_FSDP_SHARD_OFFSET] = { HP_FP_FSDP_SHARD_OFFSET, "fsdp_shard_offset", "M4-s2", M4S2,
      "gradient",
      "FSDP reduce-scatter stages grad chunk k at slot k+1: each shard gets its neighbour's rows" },
    [HP_FP_HSDP_ALLREDUCE_DROPPED] = { HP_FP_HSDP_ALLREDUCE_DROPPED, "hsdp_allreduce_dropped", "M7-tp1", M7TP1,
      "replicas of a tensor disagree",
      "HSDP: the all-reduce of shard grads over dp_replicate is dropped" },
    [HP_FP_DDP_GRAD_AVERAGE] = { HP_FP_DDP_GRAD_AVERAGE, "ddp_grad_average", "M1b", M1B,
      "gradient",
      "DDP: the dp_replicate all-reduce divides by its size on top of sum/N_global" },
    [HP_FP_RING_LAST_HOP_DROPPED] = { HP_FP_RING_LAST_HOP_DROPPED, "ring_last_hop_dropped", "M5-s1-ring", M5RG,
      "attention[.]w[kv][.]weight",
      "ring attention backward: the last hop that brings dK/dV home is dropped" },
    [HP_FP_CP_KV_POSITIONS] = { HP_FP_CP_KV_POSITIONS, "cp_kv_positions", "M5-s1-ag", M5AG,
      "loss of step 1",
      "CP: the positions of a source's K/V block are computed for this rank, not the source" },
    [HP_FP_CP_SKIP_DIAGONAL] = { HP_FP_CP_SKIP_DIAGONAL, "cp_skip_diagonal", "M5-s1-ag", M5AG,
      "loss of step 1",
      "CP block-skip rule: a partly visible (diagonal) block is skipped like an invisible one" },
    [HP_FP_EP_COUNTS_LAYOUT] = { HP_FP_EP_COUNTS_LAYOUT, "ep_counts_layout", "A-EP", AEP,
      "moe[.]experts",
      "EP: received rows, (source, local expert)-major per the exchanged counts, taken as expert-major" },
    [HP_FP_EP_COMBINE_ORDER] = { HP_FP_EP_COMBINE_ORDER, "ep_combine_order", "A-EP", AEP,
      "moe[.]",
      "EP combine: expert outputs are sent back in expert-major order, without the unpermute" },
    [HP_FP_ETP_SPLIT_DIM] = { HP_FP_ETP_SPLIT_DIM, "etp_split_dim", "moe-tp2", MOETP2,
      "moe[.]",
      "expert TP: w2 is split over its output dim D instead of the hidden dim it contracts" },
    [HP_FP_GATE_GRAD_TP] = { HP_FP_GATE_GRAD_TP, "gate_grad_tp", "moe-tp2", MOETP2,
      "router[.]gate",
      "router gate grad declared replicated, not partial over tp: never all-reduced (TorchTitan #4054)" },
    [HP_FP_TOKEN_SPLIT_OFFSET] = { HP_FP_TOKEN_SPLIT_OFFSET, "token_split_offset", "S1b", S1B,
      "moe[.]",
      "EP over tp ranks: tp rank t routes the S_local rows at t*S_local, as if the local batch were 1 (TorchTitan #3604)" },
    [HP_FP_EXPERT_DIVIDE_FACTOR] = { HP_FP_EXPERT_DIVIDE_FACTOR, "expert_divide_factor", "A-EP", AEP,
      "moe[.]experts",
      "expert grads keep FSDP's 1/(R*S*C) divide factor under sum/N_global (pytorch #167178)" },
    [HP_FP_GRAD_NORM_DOUBLE_COUNT] = { HP_FP_GRAD_NORM_DOUBLE_COUNT, "grad_norm_double_count", "M2-tp2", M2TP2,
      "global gradient norm",
      "grad norm: tp-replicated params (norms) are counted on every tp rank, not once" },
    [HP_FP_N_GLOBAL_LOCAL] = { HP_FP_N_GLOBAL_LOCAL, "n_global_local", "M4-s2", M4S2,
      "loss of step 1",
      "loss normalisation: N_global is this rank's valid-label count (no sum over the batch mesh)" },
    [HP_FP_PP_MICROBATCH_LOSS_SCALE] = { HP_FP_PP_MICROBATCH_LOSS_SCALE, "pp_microbatch_loss_scale", "P1-1f1b", P1F1B,
      "gradient",
      "microbatches: each backward starts from d(CE)/(N_global*M), the loss averaged twice (TorchTitan #1733)" },
    [HP_FP_PP_STAGE_EXCHANGE] = { HP_FP_PP_STAGE_EXCHANGE, "pp_stage_exchange", "P1-1f1b", P1F1B,
      "gradient",
      "stage exchange: a stage sends the stream entering its last block instead of the one leaving it" },
    [HP_FP_ULYSSES_A2A_LAYOUT] = { HP_FP_ULYSSES_A2A_LAYOUT, "ulysses_a2a_layout", "U1", U1,
      "loss of step 1",
      "Ulysses all-to-all: the heads for rank v are taken from rank U-1-v's slot (a layout bug)" },
    [HP_FP_ULYSSES_KV_GRAD_SUM] = { HP_FP_ULYSSES_KV_GRAD_SUM, "ulysses_kv_grad_sum", "U3", U3,
      "attention[.]w[kv]",
      "Ulysses kv repetition: a repeated kv head's gradient is its first copy's, not the sum" },
    [HP_FP_PP_SEND_DROPPED] = { HP_FP_PP_SEND_DROPPED, "pp_send_dropped", "P1-hang", P1F1B " --timeout 5",
      "watchdog",
      "stage exchange: the last microbatch's activation is never sent; the next stage must not hang" },
    [HP_FP_AC_RECOMPUTE_STALE] = { HP_FP_AC_RECOMPUTE_STALE, "ac_recompute_stale", "M6-ac-full", M6ACF,
      "gradient",
      "activation checkpointing: a block's recompute reruns it from the next block's kept input" },
    [HP_FP_UNIT_IN_SHARDS_RESTAGED] = { HP_FP_UNIT_IN_SHARDS_RESTAGED, "unit_in_shards_restaged", "M1b", M1B,
      "gradient",
      "DDP: a unit whose tensors are its shards is staged like a gathered one, zeroing its grads" },
    [HP_FP_KEPT_UNIT_FREED] = { HP_FP_KEPT_UNIT_FREED, "kept_unit_freed", "M4-s2", M4S2,
      "non-finite loss or grad norm at step 1",
      "FSDP: [norm, output], kept from its forward to its backward, is freed after the forward anyway" },
    [HP_FP_KEPT_UNIT_STALE] = { HP_FP_KEPT_UNIT_STALE, "kept_unit_stale", "P5", P5,
      "loss trajectory",
      "PP + FSDP: units kept gathered for the step survive the optimizer update into the next step" },
    [HP_FP_BF16_GATHER_UNCAST] = { HP_FP_BF16_GATHER_UNCAST, "bf16_gather_uncast", "M4-s2-bf16", M4S2 BF16,
      "structure: parameter all-gather",
      "bf16: a rank's own chunk of its gathered unit keeps the fp32 master (the cast skipped)" },
    [HP_FP_BF16_MASTER_UPDATE] = { HP_FP_BF16_MASTER_UPDATE, "bf16_master_update", "M4-s2-bf16", M4S2 BF16,
      "a parameter after the step",
      "bf16: rank 1 applies the update to its bf16 copy, so its fp32 master shard stays as it was" },
    [HP_FP_BF16_RECOMPUTE_FP32] = { HP_FP_BF16_RECOMPUTE_FP32, "bf16_recompute_fp32", "M6-ac-full-bf16", M6ACF BF16,
      "structure: activation-checkpointing recompute",
      "bf16: a checkpointed block's recompute runs in fp32, not the precision of its forward" },
    [HP_FP_BF16_TRUNCATE] = { HP_FP_BF16_TRUNCATE, "bf16_truncate", "M4-s2-bf16", M4S2 BF16,
      "closeness",
      "bf16: op outputs rounded by truncation instead of round-to-nearest-even" },
    [HP_FP_BF16_TP_PARTIAL_ROUNDED] = { HP_FP_BF16_TP_PARTIAL_ROUNDED, "bf16_tp_partial_rounded", "M3-tp2-bf16", M3TP2 BF16,
      "structure: tp partial sums",
      "bf16: a row-parallel output rounded to bf16 on each tp rank before the fp32 sum (TorchTitan #1750)" },
    [HP_FP_BF16_GRAD_REDUCE] = { HP_FP_BF16_GRAD_REDUCE, "bf16_grad_reduce", "M4-s2-bf16", M4S2 BF16,
      "structure: gradient reduction",
      "bf16: the gradient reduce-scatter's result is bf16 where the policy reduces in fp32" },
    [HP_FP_BF16_MICROBATCH_SUM] = { HP_FP_BF16_MICROBATCH_SUM, "bf16_microbatch_sum", "GA-bf16", GA BF16,
      "structure: gradient accumulation",
      "bf16: the gradients of the microbatches are summed in bf16, not fp32" },
    [HP_FP_BF16_REDUCE_RING_ORDER] = { HP_FP_BF16_REDUCE_RING_ORDER, "bf16_reduce_ring_order", "M4-s4-bf16r",
      TINY(1, 4, 1, 1) BF16 " --mixed-precision-reduce bfloat16",
      "structure: gradient reduction",
      "bf16 reduce: each rank sums its chunk in a ring's order (from the next member on), not 0..G-1" },
    [HP_FP_ULYSSES_BF16_KV_COPIES] = { HP_FP_ULYSSES_BF16_KV_COPIES, "ulysses_bf16_kv_copies", "U3-bf16",
      U3 BF16,
      "bytes moved differ from the traffic formula|structure: 2-byte activation exchange",
      "bf16 Ulysses: the grads of repeated kv heads' copies travel in 2 bytes, rounded before their fp32 sum" },
    [HP_FP_CP_BF16_DKV_RING] = { HP_FP_CP_BF16_DKV_RING, "cp_bf16_dkv_ring", "M5-s2-ring-bf16",
      TINY(1, 2, 2, 1) " --cp-rotate ring" BF16,
      "bytes moved differ from the traffic formula|structure: 2-byte activation exchange",
      "bf16 CP ring: the dK/dV accumulators travel in 2 bytes with the K/V, rounded at every hop" },
    [HP_FP_BF16_STORE_SLOT] = { HP_FP_BF16_STORE_SLOT, "bf16_store_slot", "P1-1f1b-bf16", P1F1B BF16,
      "gradient",
      "bf16 storage: a stored block's backward unpacks the 2-byte activations of the next pipeline slot (another microbatch's)" },
    [HP_FP_BF16_INPUT_PARITY] = { HP_FP_BF16_INPUT_PARITY, "bf16_input_parity", "M1b-bf16", M1B BF16,
      "structure: 2-byte input store|attention_norm[.]weight",
      "bf16 storage: a block packs the stream buffer of the other parity (its own output) as its 2-byte input" },
    [HP_FP_BF16_HEAD_SLOT] = { HP_FP_BF16_HEAD_SLOT, "bf16_head_slot", "P4-bf16", P4ZBV BF16,
      "norm[.]weight|structure: 2-byte input store",
      "bf16 storage: the head's backward unpacks the input kept by the next pipeline slot (another microbatch's)" },
    [HP_FP_BF16_STAGE_INPUT_STALE] = { HP_FP_BF16_STAGE_INPUT_STALE, "bf16_stage_input_stale", "P1-1f1b-bf16",
      P1F1B BF16, "structure: 2-byte input store|non-finite loss",
      "bf16 storage: a pipeline stage runs on whatever its stream buffer holds, the 2-byte input it received never unpacked" },
    [HP_FP_BF16_MOE_ROUTED_STALE] = { HP_FP_BF16_MOE_ROUTED_STALE, "bf16_moe_routed_stale", "S1b-bf16", S1B BF16,
      "layers[.]0[.]moe",
      "bf16 storage: a MoE block's backward runs on the routed rows the shared scratch holds (the last forward's, another block's), its own 2-byte rows never unpacked" },
    [HP_FP_BF16_KEPT_WINDOW_STALE] = { HP_FP_BF16_KEPT_WINDOW_STALE, "bf16_kept_window_stale", "P1-1f1b-bf16",
      P1F1B BF16, "structure: parameter all-gather|loss of step 1",
      "bf16 units kept in 2 bytes: a kept unit's gather does not widen it, and the block runs on the unit the work buffer held (another block's weights)" },
    [HP_FP_ULYSSES_BF16_STATE_STALE] = { HP_FP_ULYSSES_BF16_STATE_STALE, "ulysses_bf16_state_stale", "U3-bf16",
      U3 BF16, "layers[.]0[.]attention|loss of step",
      "bf16 Ulysses: an attention's backward runs on the gathered q, k, v the shared scratch holds (the last forward's, another block's), its own 2-byte copies never unpacked" },
    [HP_FP_FLOAT8_GRAD_E4M3] = { HP_FP_FLOAT8_GRAD_E4M3, "float8_grad_e4m3", "M3-tp2-f8t", M3TP2 BF16 F8T,
      "structure: float8 casts",
      "float8: tensorwise grad_output cast to e4m3 (max 448) instead of e5m2" },
    [HP_FP_FLOAT8_AMAX_LOCAL_TP] = { HP_FP_FLOAT8_AMAX_LOCAL_TP, "float8_amax_local_tp", "M3-tp2-f8t", M3TP2 BF16 F8T,
      "structure: float8 scales",
      "float8: amax not MAX-reduced over tp, so the tp ranks cast with different scales" },
    [HP_FP_FLOAT8_RECOMPUTE_SCALE] = { HP_FP_FLOAT8_RECOMPUTE_SCALE, "float8_recompute_scale", "M3-tp2-ac-f8t", M6ACF2 BF16 F8T,
      "global gradient norm|structure: activation-checkpointing recompute",
      "float8: an activation-checkpointing recompute takes its amax again on the local shard, not the forward's scales" },
    [HP_FP_FLOAT8_FSDP_AMAX_LOCAL] = { HP_FP_FLOAT8_FSDP_AMAX_LOCAL, "float8_fsdp_amax_local", "M4-s4-f8ag",
      M4S4 BF16 F8T F8AG,
      "a gradient of step 1|structure: float8 scales",
      "float8 fp8 all-gather: each rank casts its weight shard with its own amax, not the MAX over the fsdp group" },
    [HP_FP_FLOAT8_FSDP_GATHER_BF16] = { HP_FP_FLOAT8_FSDP_GATHER_BF16, "float8_fsdp_gather_bf16", "B2-f8ag",
      B2 BF16 F8T F8AG,
      "bytes moved differ from the traffic formula|structure: float8 scales|structure: parameter all-gather",
      "float8 fp8 all-gather: the bf16 weights gathered and cast after, with the amax of the bf16 values (pytorch/ao#590)" },
    [HP_FP_ASYNC_TP_CHUNK_OFFSET] = { HP_FP_ASYNC_TP_CHUNK_OFFSET, "async_tp_chunk_offset", "M3-tp2-async",
      M3TP2 " --async-tp", "loss of step 1",
      "async TP: the first peer's all-gathered chunk placed and consumed at the next member's row offset" },
    [HP_FP_ASYNC_TP_NOT_APPLIED] = { HP_FP_ASYNC_TP_NOT_APPLIED, "async_tp_not_applied", "M3-tp2-async",
      M3TP2 " --async-tp", "async TP not applied",
      "async TP: --async-tp accepted, but every region runs the plain path (torchtitan#3869)" },
    [HP_FP_ASYNC_TP_SCATTER_DIM] = { HP_FP_ASYNC_TP_SCATTER_DIM, "async_tp_scatter_dim", "M3-tp2-async",
      M3TP2 " --async-tp", "loss of step 1",
      "async TP: the fused reduce-scatter splits the partial along its last dim, not the sequence (pytorch/pytorch#153595)" },
    [HP_FP_FLOAT8_SP_GATHER_E4M3] = { HP_FP_FLOAT8_SP_GATHER_E4M3, "float8_sp_gather_e4m3", "M3-tp2-f8t", M3TP2 BF16 F8T,
      "non-finite loss or grad norm|structure: float8 SP all-gather",
      "float8 TP: the 1-byte SP all-gather of grad_output casts to e4m3 (max 448), decoded as e5m2" },
    [HP_FP_FLOAT8_EXPERT_AMAX_LOCAL] = { HP_FP_FLOAT8_EXPERT_AMAX_LOCAL, "float8_expert_amax_local", "S2-f8t",
      "--model tiny-moe --dp-replicate 1 --dp-shard 2 --cp 1 --tp 2 --sp --ep 2 --etp 2" BF16 F8T,
      "structure: float8 scales",
      "float8: a routed expert's weight amax not MAX-reduced over etp, so the etp ranks cast one expert with different scales" },
};

int hp_failpoint_parse(const char *spec, uint64_t *mask, char *err, size_t errlen) {
    *mask = 0;
    if (!spec) return 0;
    for (const char *s = spec; *s;) {
        const char *e = strchr(s, ',');
        const size_t len = e ? (size_t)(e - s) : strlen(s);
        int found = len == 0;   // "a,,b" and a trailing comma name nothing
        for (int i = 0; i < HP_FP_COUNT && !found; i++)
            if (strlen(hp_failpoints[i].name) == len && !strncmp(hp_failpoints[i].name, s, len)) {
                *mask |= (uint64_t)1 << hp_failpoints[i].id;
                found = 1;
            }
        if (!found) {
            snprintf(err, errlen, "HP_FAILPOINT: unknown failpoint '%.*s' (%d known: hp run "
                     "--list-failpoints)", (int)(len > 64 ? 64 : len), s, HP_FP_COUNT);
            *mask = 0;
            return -1;
        }
        if (!e) break;
        s = e + 1;
    }
    return 0;
}

int hp_failpoint_init(char *err, size_t errlen) {
    if (!parsed) {
        parsed = 1;
        parse_rc = hp_failpoint_parse(getenv("HP_FAILPOINT"), &armed, parse_err, sizeof parse_err);
        hp_failpoints_active = suspended ? 0 : armed;
    }
    if (parse_rc && err && errlen) snprintf(err, errlen, "%s", parse_err);
    return parse_rc;
}

void hp_failpoint_suspend(int suspend) {
    suspended = suspend != 0;
    hp_failpoints_active = suspended ? 0 : armed;
}

void hp_failpoint_print_list(FILE *out) {
    for (int i = 0; i < HP_FP_COUNT; i++) {
        const hp_failpoint_info *f = &hp_failpoints[i];
        fprintf(out, "%s\t%s\t%s\t%s\t%s\n", f->name, f->recipe, f->flags, f->touches, f->what);
    }
}
