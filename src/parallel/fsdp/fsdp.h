// fsdp.h - FSDP2 / HSDP / DDP (fsdp.c): one rank's parameter, gradient and optimiser shards,
// the unsharded unit being worked on, gradient accumulation over microbatches and, under
// pp, the units kept gathered for the step. Everything it needs is passed at init; the
// unit calls take the unit and the running microbatch.
// defines: hp_fsdp_state, hp_fsdp_init/free, init/set params, the unit lifecycle, gather_full
#ifndef HP_PARALLEL_FSDP_H
#define HP_PARALLEL_FSDP_H
#include "hyperpar/bf16.h"
#include "hyperpar/comm.h"
#include "hyperpar/config.h"
#include "hyperpar/params.h"

// One gradient reduction in flight, kept for the structure check: the span of g_shard it
// reduces into, its shard group, and a copy of its staged inputs (G slots of n).
typedef struct fsdp_reduce_record { int64_t s0, n; int G; hp_group_kind group; float *staged; } fsdp_reduce_record;

typedef struct hp_fsdp_state {
    const hp_param_table *pt;   // this rank's table (placements, offsets)
    hp_comm *comm;
    hp_dims d;
    int M;                      // microbatches per step: grads reduced after the last
    // persistent: this rank's shards (padded), flat, in table order
    float *p_shard, *g_shard, *m_shard, *v_shard;   // (pt->shard_numel)
    // one unit gathered at a time: its unsharded local params and their grads (a unit that
    // is its shards, params.h, uses the shards instead)
    float *work_p, *work_g;                         // (pt->max_gathered_work + 1)
    float *comm_buf;                                // gather / reduce-scatter staging
    // gradient accumulation (M > 1 or pp): every unit's grads live in acc_g over the step
    float *acc_g;               // (pt->gathered_work + 1), else NULL
    int64_t *acc_offset;        // [n_units] each unit's place in acc_g (and kept_p)
    float *kept_p;              // every unit's gathered params, each in its own place: under
                                //    pp (kept for the step) and --reshard-after-forward never
    hp_bf16 *kept_bf16;         // the same places in 2 bytes under the bf16 policy (the copies
                                //    are bf16 values): the unit the model runs is widened into
                                //    work_p at its gather (work_unit), one unit at a time
    int *unit_kept;             // [n_units] 1: unit gathered into its kept place and still there
    hp_reshard_policy policy;   // how long each unit stays gathered (hp_run_unit_keep)
    // --mixed-precision-param bfloat16 (precision.md §2.1): each rank casts its shard to bf16
    // before the all-gather (2 bytes on the wire) and the unit's bf16 copy is what the model
    // reads; the backward writes one microbatch's local grads into loc_g, which are rounded to
    // bf16 (one rounding of the fp32 sum) and added in fp32 into the unit's sum (acc_g, or in
    // place without accumulation) before the fp32 reduction. No unit is its shards then.
    int bf16;
    // --mixed-precision-reduce bfloat16 (Megatron-LM's --grad-reduce-in-bf16): the microbatch
    // sum is kept in bf16 (each add rounded), and the reduce-scatter / all-reduce carry 2 bytes
    // an element, each add of their member-ordered sums rounded; blocking, through comm_buf
    int reduce_bf16;
    float *loc_g;               // bf16 with accumulation: one microbatch's local grads of a
                                //    unit: work_g (each unit's backward ends in its rounding,
                                //    which clears it), or under a split backward (zbv, whose W
                                //    writes them later) a place for each unit (as acc_g)
    // the structure check (structure.h; the verifier's run only, plain malloc): a shadow of
    // the microbatch sums, and each pending reduction's staged inputs until it completes
    float *acc_shadow;
    fsdp_reduce_record *pending;
    int n_pending, cap_pending;
    int work_unit;              // the unit work_p holds gathered, -1 none (freed or poisoned);
                                //    with kept_bf16 the one widened there
    // --float8-fsdp-all-gather (torchao's enable_fsdp_float8_all_gather, precision.md §5.4):
    // the weights the float8 filter converts (f8_on) travel as e4m3 codes of the fp32 master
    // shard, cast with the scale of the amax MAX-reduced over the fsdp group (and tp when tp
    // splits the weight); the unit's copy holds their dequantised values, f8_amax[i] the amax
    // the linear casts with (valid while f8_valid[i]). Plain malloc: a float and two flags a param.
    int f8ag;
    unsigned char *f8_on, *f8_valid;   // [pt->n]
    float *f8_amax;                    // [pt->n]
} hp_fsdp_state;

// M microbatches per step; from rc: --reshard-after-forward (hp_run_unit_keep, config.h) and
// the mixed-precision policy (the table's units then all gathered: hp_params_gather_every_unit).
int  hp_fsdp_init(hp_fsdp_state *st, const hp_param_table *pt, hp_comm *comm, const hp_dims *d, int M,
                  const hp_run_config *rc);
void hp_fsdp_free(hp_fsdp_state *st);
void hp_fsdp_init_params(hp_fsdp_state *st, uint64_t seed);   // counter-based init of the shards
void hp_fsdp_set_params(hp_fsdp_state *st, const float *full); // shards of full tensors; m, v = 0
// All-gathers unit u's parameters, unless they are still gathered (kept since its forward).
void hp_fsdp_gather_unit(hp_fsdp_state *st, int u);
// FSDP2's post-forward and post-backward hooks: unit u's forward (backward) of the running
// microbatch is done; it is resharded, or kept as its hp_unit_keep says.
void hp_fsdp_after_forward(hp_fsdp_state *st, int u);
void hp_fsdp_after_backward(hp_fsdp_state *st, int u);
// The step's end: completes every unit's gradient exchange (hp_fsdp_reduce_unit posts them
// nonblocking; g_shard holds the reduced shards only after this), and reshards every unit
// still kept (under pp all of them): the optimizer step changes their shards.
void hp_fsdp_release_all(hp_fsdp_state *st);
void hp_fsdp_zero_unit_grads(hp_fsdp_state *st, int u, int mb);
// Posts unit u's gradient reduction (after the last microbatch): reduced g_shard at
// hp_fsdp_release_all. Every unit call also advances the exchanges in flight.
void hp_fsdp_reduce_unit(hp_fsdp_state *st, int u, int mb);
// Pointer to parameter i (and its grad) inside the gathered unit.
float *hp_fsdp_param(hp_fsdp_state *st, int i);
float *hp_fsdp_grad(hp_fsdp_state *st, int i);
// --float8-fsdp-all-gather: 1 and *amax (the gathered scale's, over fsdp and tp) when
// parameter i's gathered copy is the fp8 all-gather's, else 0.
int hp_fsdp_float8_amax(const hp_fsdp_state *st, int i, float *amax);
// Every rank's shards of one kind (p or g) into full tensors on rank 0 of world; returns
// the largest difference between copies of one element (0: replicas agree).
double hp_fsdp_gather_full(hp_fsdp_state *st, MPI_Comm world, const hp_model_config *m,
                           const float *shard, float *full);

#endif
