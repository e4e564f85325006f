// dims.h - parallel degrees and their validation (TorchTitan ParallelDims, ETP era).
// spec: docs/torchtitan.md §1, §3; docs/recipes.md (negative cases).
// defines: hp_dims, hp_dims_default, hp_dims_validate, derived sizes
//
//   hp_dims d = hp_dims_default();     // every degree 1, dp_shard -1 (infer)
//   d.tp = 2; d.cp = 2; d.world = 8;
//   char err[256];
//   if (hp_dims_validate(&d, &model, &run, err, sizeof err) != 0) { puts(err); exit(2); }
//   // d.dp_shard is now 2, d.sp is 1.
#ifndef HYPERPAR_DIMS_H
#define HYPERPAR_DIMS_H
#include <stddef.h>
#include "config.h"

#define HP_EXIT_OK     0
#define HP_EXIT_FAIL   1   // a run or its verification failed
#define HP_EXIT_CONFIG 2   // bad usage or configuration

#define HP_DIMS_MAX_DEGREE (1 << 24)   // any one degree; the world is bounded the same way

typedef struct hp_dims {
    int dp_replicate;  // R  (HSDP outer replication / DDP)
    int dp_shard;      // S  (-1 = infer from world)
    int ulysses;       // U  (Ulysses sequence parallel: heads <-> tokens around attention;
                       //     mesh axis between dp_shard and cp, ulysses.md)
    int cp;            // C  (context parallel)
    int tp;            // T  (tensor parallel)
    int pp;            // P  (pipeline parallel, outermost; pipeline.h)
    int pp_schedule;   // hp_pp_schedule (pipeline.h): gpipe, 1f1b, interleaved-1f1b, zbv
    int pp_virtual;    // V  stages per pp rank (0 = the schedule's default: 1, or 2 for zbv)
    int ep;            // EP (expert parallel; re-uses the ranks of S*C*T)
    int etp;           // ET (expert tensor parallel; 1 or tp)
    int sp;            // sequence parallel: -1 = default (on iff tp > 1), 0 off, 1 on
    int world;         // ranks the job runs with; 0 = the product of the degrees
} hp_dims;

hp_dims hp_dims_default(void);

// Resolves dp_shard = -1 and sp = -1, then checks every rule in a fixed order.
// model and run may be NULL (then only the mesh rules are checked).
// On failure writes ONE line naming the rule and the numbers into err and returns
// HP_EXIT_CONFIG; returns 0 when the configuration is legal.
int hp_dims_validate(hp_dims *d, const hp_model_config *model, const hp_run_config *run,
                     char *err, size_t errlen);

// Derived sizes (valid after hp_dims_validate).
// The sequence ranks of one data shard: ulysses x cp (every one holds other tokens).
static inline int hp_dims_seq(const hp_dims *d)   { return d->ulysses * d->cp; }               // U*C
static inline int hp_dims_fsdp(const hp_dims *d)  { return d->dp_shard * hp_dims_seq(d); }     // S*U*C
static inline int hp_dims_batch(const hp_dims *d) { return d->dp_replicate * d->dp_shard; }    // R*S
static inline int hp_dims_loss(const hp_dims *d)  { return hp_dims_batch(d) * hp_dims_seq(d); } // R*S*U*C
static inline int hp_dims_efsdp(const hp_dims *d) { return hp_dims_fsdp(d) * d->tp / (d->ep * d->etp); }
static inline int hp_dims_seq_len_divisor(const hp_dims *d) {
    return d->tp * d->ulysses * (d->cp > 1 ? 2 * d->cp : 1);
}
static inline int hp_dims_fsdp_enabled(const hp_dims *d) { return hp_dims_fsdp(d) > 1; }
static inline int hp_dims_dp_enabled(const hp_dims *d)   { return d->dp_replicate > 1 || d->dp_shard > 1; }
static inline int hp_dims_product(const hp_dims *d) {
    return d->dp_replicate * d->dp_shard * d->ulysses * d->cp * d->tp * d->pp;
}
// How many ways each expert's hidden dim is split (etp when ep > 1, tp when ep == 1).
static inline int hp_dims_expert_tp(const hp_dims *d) { return d->ep > 1 ? d->etp : d->tp; }
// How many disjoint token slices the tp ranks dispatch (EP borrows TP ranks when etp == 1).
static inline int hp_dims_token_split(const hp_dims *d) { return (d->ep > 1 && d->etp == 1) ? d->tp : 1; }

#endif
