// params.h - the parameter table: every parameter's name, global shape, FSDP unit and its
// placement per mesh axis, as DATA. Local shapes, init, gathering to a full tensor, FSDP
// offsets and checkpoints are all derived from this one description.
// defines: hp_placement, hp_param, hp_param_table, hp_params_build/free, hp_params_print
#ifndef HYPERPAR_PARAMS_H
#define HYPERPAR_PARAMS_H
#include <stdint.h>
#include <stdio.h>
#include "config.h"
#include "dims.h"
#include "mesh.h"

#define HP_REPLICATE (-1)   // placement: replicated on this axis (else: the shard dim)

typedef enum { HP_STACK_DENSE = 0, HP_STACK_EXPERT = 1 } hp_stack;

typedef struct hp_param {
    char    name[64];       // TorchTitan name, e.g. "layers.0.attention.wq.weight"
    int     ndim;
    int64_t shape[3];       // full (global) shape
    int     unit;           // FSDP unit: 0 tok_embeddings, 1+l block l, L+1 [norm, output]
    hp_stack stack;         // dense params shard over fsdp, experts over efsdp
    float   init_std;       // 0: ones (norm weights)
    // placement per mesh axis (shard dim or HP_REPLICATE)
    int     tp_dim;         // over tp (dense TP styles) or the expert-tp group
    int     ep_dim;         // over ep (experts: 0)
    int     fsdp_dim;       // over fsdp/efsdp, applied to the tp/ep-local tensor
    int     tp_grad_partial;// 1: replicated over tp but its grad is a partial sum (SP norms,
                            //    router gate): all-reduced over tp before FSDP reduce
    // derived for one rank by hp_params_build:
    int64_t local_shape[3]; // after the tp/ep split
    int64_t local_start[3]; // where the local piece starts in the full tensor
    int64_t local_numel;
    int64_t work_offset;    // offset inside its unit's working (unsharded, local) buffer
    int64_t fsdp_chunk;     // rows of fsdp_dim per shard, ceil(local_shape[fsdp_dim]/fsdp size)
    int64_t shard_rows;     // rows this rank owns (may be < chunk, or 0)
    int64_t shard_numel;    // padded: chunk * (numel / local_shape[fsdp_dim])
    int64_t shard_offset;   // offset inside the rank's flat shard buffer
    int     fsdp_size, fsdp_rank;
    int     fsdp_group;     // hp_group_kind the shard group is (fsdp, or efsdp for EP experts)
    int     tp_size, tp_rank, ep_size, ep_rank;   // the splits applied to this parameter
    int     pp_stage;       // the pipeline stage holding it (0 without pp)
    int     on_rank;        // 1: this rank's pp rank holds it (else no local piece or shard)
    int64_t full_numel;
    int64_t full_offset;    // offset in the full model layout (params in table order)
} hp_param;

typedef struct hp_param_table {
    int       n;
    hp_param *p;
    int       n_units;       // L + 2
    int64_t  *unit_work_numel;   // [n_units] working floats of each unit (local, unsharded)
    int64_t  *unit_shard_start;  // [n_units+1] each unit's range in the shard buffer
    int64_t   shard_numel;       // total floats of this rank's shard buffer (padding included)
    int64_t   full_numel;        // total floats of the full model
    int64_t   max_unit_work;
    // A unit is its shards when every parameter of it on this rank is whole here (shard
    // groups of one: DDP, tp or cp alone, one process) and the shards hold them in the unit's
    // order: its tensors are then views of the shard buffers, nothing is gathered or staged
    // for it, and it needs no work or accumulation buffer (parallel/fsdp.c, the planner).
    int64_t  *unit_in_shards;    // [n_units] where such a unit starts in the shards, else -1
    int64_t   max_gathered_work; // the largest unit_work_numel of the other units (0: none)
    int64_t   gathered_work;     // their sum
} hp_param_table;

// Builds the table for `rank` of a validated mesh. Returns 0, or -1 on allocation failure.
int  hp_params_build(hp_param_table *t, const hp_model_config *m, const hp_dims *d, int rank);
// Under a bf16 parameter policy no unit is its shards: the model reads bf16 copies of the fp32
// master, so every unit is gathered (cast) into a work buffer and its grads staged.
void hp_params_gather_every_unit(hp_param_table *t);
void hp_params_free(hp_param_table *t);
int  hp_params_find(const hp_param_table *t, const char *name);   // index or -1
// Flat index in the full tensor of the element at local flat index `li` of p's local tensor.
int64_t hp_param_global_index(const hp_param *p, int64_t li);
// Local flat index of the element at position `k` (0 <= k < shard_numel) of p's padded shard,
// or -1 for a padding slot.
int64_t hp_param_shard_to_local(const hp_param *p, int64_t k);
// The initial value of element gi (flat index in the full tensor) of parameter p: model.md's
// rule, a function of (seed, name, index) alone, so every layout and a full copy agree;
// stream = hp_name_id(p->name) (rng.h), taken once per parameter by the caller.
float hp_param_init_value(const hp_param *p, uint64_t seed, uint64_t stream, int64_t gi);
// The whole initial model, full tensors in table order (full_numel floats): what `hp run`
// starts from with this seed, for a program that needs it whole (generation, a reference).
void hp_params_init_full(const hp_param_table *t, uint64_t seed, float *full);
// Prints name, full shape, placements and rank's local/shard shapes as a table. each_layer 0:
// the blocks' parameters one row per kind ("layers.*.attention.wq.weight x126  layers 0..125"),
// a layer whose row differs on a row of its own; 1: every parameter on its own row.
void hp_params_print(FILE *out, const hp_param_table *t, const hp_dims *d, int rank, int each_layer);

#endif
