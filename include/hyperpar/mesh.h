// mesh.h - the device mesh: a pure function from (dims, rank) to coordinates and groups.
// spec: docs/torchtitan.md §2. No MPI here: tests run it for every config.
//
// Dense layout: [pp, dp_replicate, dp_shard, ulysses, cp, tp], row-major, tp innermost:
//   t = rank % T, c = (rank / T) % C, u = (rank / (T*C)) % U, s = ..., r = ..., p = ...
// Sparse layout (ETP era): the inner S*U*C*T block re-split as [efsdp, ep, etp], etp innermost.
//
// The ETP rule (dims.c: etp > 1 needs ep > 1, and then etp is 1 or tp): an expert's hidden dim
// splits over the tp ranks in every layout that splits it - etp == tp, where the etp
// coordinate is t and HP_G_ETP is the HP_G_TP group, or ep == 1, where it splits over tp
// itself (hp_dims_expert_tp). The experts' partial outputs therefore ride the tp region's one
// reduction over HP_G_TP (with the shared experts and the dense parts), and HP_G_ETP and
// HP_G_EP_ETP carry no traffic: they name the sparse mesh's axes (placements, reports, tests).
//
//   hp_coords c;  hp_mesh_coords(&dims, 5, &c);                   // rank 5's coordinates
//   int members[64], me;
//   int n = hp_mesh_group(&dims, HP_G_FSDP, 5, members, &me);      // its fsdp group
#ifndef HYPERPAR_MESH_H
#define HYPERPAR_MESH_H
#include "dims.h"

typedef enum hp_group_kind {
    HP_G_WORLD = 0,
    HP_G_PP,
    HP_G_DP_REPLICATE,
    HP_G_DP_SHARD,
    HP_G_CP,
    HP_G_TP,
    HP_G_FSDP,       // dp_shard x ulysses x cp (FSDP shard group, dense parameters)
    HP_G_BATCH,      // dp_replicate x dp_shard (data loading; valid-token count)
    HP_G_LOSS,       // dp_replicate x dp_shard x ulysses x cp (legacy name dp_cp)
    HP_G_EP,         // expert parallel
    HP_G_ETP,        // expert tensor parallel (= tp group when etp == tp; see the ETP rule)
    HP_G_EFSDP,      // expert FSDP
    HP_G_EP_ETP,     // ep x etp
    HP_G_ULYSSES,    // Ulysses: the heads <-> tokens all-to-alls around attention
    HP_G_COUNT
} hp_group_kind;

typedef struct hp_coords {
    int p, r, s, u, c, t;     // dense coordinates
    int efsdp, ep, etp;       // sparse coordinates
    int seq;                  // u*C+c: which part of the data shard's sequences this rank holds
    int fsdp, batch, loss;    // flattened indices: s*U*C+seq, r*S+s, batch*U*C+seq
} hp_coords;

const char *hp_group_name(hp_group_kind g);
void hp_mesh_coords(const hp_dims *d, int rank, hp_coords *out);
// Writes the world ranks of rank's group of kind g, in group-local order, into members
// (room for d->world ints); *my_index (may be NULL) gets rank's index. Returns the group size.
int hp_mesh_group(const hp_dims *d, hp_group_kind g, int rank, int *members, int *my_index);
// Size of every group of kind g (all groups of one kind have the same size).
int hp_mesh_group_size(const hp_dims *d, hp_group_kind g);

#endif
