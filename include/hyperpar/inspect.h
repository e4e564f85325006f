// inspect.h - looking at a layout and a running job: the degrees from command-line flags,
// the mesh's groups, and where one parameter lives (its placement per mesh axis, every rank's
// local piece and FSDP shard, and the gathered full tensor). Built only on the public API
// (mesh.h, params.h, train.h); printing happens on world rank 0.
// defines: hp_dims_flag, hp_run_flag, hp_layout_flag, hp_print_dims, hp_print_groups, hp_print_param_placement, hp_rel_error
//
//   hp_dims dims = hp_dims_default();
//   for (int i = 1, n; i < argc; i += n)                  // --tp 2 --dp-shard 2 --no-sp ...
//       if ((n = hp_dims_flag(&dims, argv[i], i + 1 < argc ? argv[i + 1] : NULL)) <= 0) exit(2);
//   ... hp_dims_validate(&dims, &model, &run, err, sizeof err) ...
//   if (rank == 0) { hp_print_dims(stdout, &dims); hp_print_groups(stdout, &dims, HP_G_TP); }
//       // world 4 = pp 1 x dp_replicate 1 x dp_shard 2 x ulysses 1 x cp 1 x tp 2, sp on; fsdp 2
//       // tp groups {0,1} {2,3}
//   hp_trainer *tr = hp_trainer_init(...);  ... hp_trainer_step(tr, &st) ...
//   hp_print_param_placement(tr, "layers.0.attention.wq.weight", stdout);   // collective
//       // layers.0.attention.wq.weight: full [64, 64]; tp S(0), ep R, fsdp S(0) over the 2
//       //         ranks of its fsdp group
//       //   rank 0: local [32, 64] from [0, 0]; fsdp shard: 16 of its 32 rows of dim 0
//       //   rank 1: local [32, 64] from [32, 0]; fsdp shard: 16 of its 32 rows of dim 0  ...
//       //   gathered on rank 0: [0] = -0.006979, replicas agree (max diff 0)
#ifndef HYPERPAR_INSPECT_H
#define HYPERPAR_INSPECT_H
#include <stddef.h>
#include <stdio.h>
#include "dims.h"
#include "mesh.h"
#include "train.h"

// One command-line flag naming a degree, with hp run's names: --dp-replicate, --dp-shard,
// --ulysses, --cp, --tp, --pp, --ep, --etp, --pp-virtual take a whole number (the next word,
// value), --pp-schedule gpipe|1f1b|interleaved-1f1b|zbv a name; --sp / --no-sp take none. Returns how many words it used (2 or 1), 0 when flag is not one
// of these (the caller's own flags), -1 when the value is missing or not a whole number.
int hp_dims_flag(hp_dims *d, const char *flag, const char *value);
// The same for the run's settings, with hp run's names: --cp-rotate allgather|ring,
// --dispatcher alltoall|allgather, --optimizer sgd|adamw, --seq-len N, --batch N,
// --microbatches M, --steps N, --lr X, --max-norm X, --ac none|full|every:N, --cp-no-balance.
// Ranges beyond "a positive whole number" are hp_dims_validate's business.
int hp_run_flag(hp_run_config *rc, const char *flag, const char *value);
// hp_dims_flag, else hp_run_flag: every layout and run flag of one `hp run` word (pair).
//   for (int i = 1, n = 1; i < argc; i += n)
//       if ((n = hp_layout_flag(&dims, &run, argv[i], i + 1 < argc ? argv[i + 1] : NULL)) <= 0) ...
int hp_layout_flag(hp_dims *d, hp_run_config *rc, const char *flag, const char *value);

// One line: the degrees in mesh order, sequence parallel, fsdp, and ep x etp with efsdp
// when ep > 1. d validated.
void hp_print_dims(FILE *out, const hp_dims *d);

// One line: every group of kind g, each once, in group-local order: "tp groups {0,1} {2,3}"
// (beyond 8 groups the first 8 and the count). d validated; no MPI.
void hp_print_groups(FILE *out, const hp_dims *d, hp_group_kind g);

// Where parameter `name` lives, printed on world rank 0: its full shape, its placement on
// tp, ep and its FSDP group (Shard(dim) or Replicate), its pipeline stage under pp, then for
// the first 8 ranks the local piece after the tp/ep split (shape and where it starts in the
// full tensor) and the rows of it this rank keeps as its FSDP shard; last, the first element
// of the full tensor gathered from the shards and whether every replica agrees.
// Collective over the trainer's world (it gathers every parameter). Returns 0, or -1 on
// every rank when there is no such parameter (then nothing is gathered).
int hp_print_param_placement(hp_trainer *tr, const char *name, FILE *out);

// ||a - ref|| / ||ref|| over n floats, in double (||a - ref|| when ref is all zero): how far a
// hand-written shard is from the slice of a single-process reference it stands for.
double hp_rel_error(const float *a, const float *ref, size_t n);

#endif
