// mesh.c - the device mesh as a pure function: rank -> coordinates, rank -> its groups.
// spec: docs/torchtitan.md §2 (row-major views of one 1-D world).
// defines: hp_group_name, hp_mesh_coords, hp_mesh_group, hp_mesh_group_size
//
// Both views are row-major reshapes of the same world [0..W):
//   dense  [pp, dp_replicate, dp_shard, ulysses, cp, tp]   sizes [P, R, S, U, C, T]
//   sparse [pp, dp_replicate, efsdp, ep, etp]              sizes [P, R, S*U*C*T/(EP*ET), EP, ET]
// (the sparse view carries a size-1 axis where the dense one has ulysses, so both have six).
// A group for an axis set A holds every rank that agrees with `rank` on the axes outside A;
// its members are listed in row-major order of their A-coordinates, which is also their
// local index (and, since the view is row-major, ascending world rank).
#include "hyperpar/mesh.h"

#define NAXES 6

static const char *const group_names[HP_G_COUNT] = {
    "world", "pp", "dp_replicate", "dp_shard", "cp", "tp", "fsdp", "batch", "loss",
    "ep", "etp", "efsdp", "ep_etp", "ulysses",
};

const char *hp_group_name(hp_group_kind g) {
    return (g >= 0 && g < HP_G_COUNT) ? group_names[g] : "?";
}

// Axis bits: dense view axes 0..5 = p r s u c t; sparse view axes 0..5 = p r - efsdp ep etp.
enum { AX_P = 1, AX_R = 2, AX_2 = 4, AX_U = 8, AX_3 = 16, AX_4 = 32 };

typedef struct { int sparse; unsigned axes; } group_def;

static group_def group_def_of(hp_group_kind g) {
    switch (g) {
    case HP_G_WORLD:        return (group_def){ 0, AX_P | AX_R | AX_2 | AX_U | AX_3 | AX_4 };
    case HP_G_PP:           return (group_def){ 0, AX_P };
    case HP_G_DP_REPLICATE: return (group_def){ 0, AX_R };
    case HP_G_DP_SHARD:     return (group_def){ 0, AX_2 };
    case HP_G_ULYSSES:      return (group_def){ 0, AX_U };
    case HP_G_CP:           return (group_def){ 0, AX_3 };
    case HP_G_TP:           return (group_def){ 0, AX_4 };
    case HP_G_FSDP:         return (group_def){ 0, AX_2 | AX_U | AX_3 };          // dp_shard x ulysses x cp
    case HP_G_BATCH:        return (group_def){ 0, AX_R | AX_2 };                 // dp_replicate x dp_shard
    case HP_G_LOSS:         return (group_def){ 0, AX_R | AX_2 | AX_U | AX_3 };   // ... x ulysses x cp
    case HP_G_EP:           return (group_def){ 1, AX_3 };
    case HP_G_ETP:          return (group_def){ 1, AX_4 };
    case HP_G_EFSDP:        return (group_def){ 1, AX_U };
    case HP_G_EP_ETP:       return (group_def){ 1, AX_3 | AX_4 };
    default:                return (group_def){ 0, 0 };
    }
}

static void view_sizes(const hp_dims *d, int sparse, int size[NAXES]) {
    size[0] = d->pp;
    size[1] = d->dp_replicate;
    if (!sparse) {
        size[2] = d->dp_shard; size[3] = d->ulysses; size[4] = d->cp; size[5] = d->tp;
    } else {
        size[2] = 1; size[3] = hp_dims_efsdp(d); size[4] = d->ep; size[5] = d->etp;
    }
}

// Row-major decomposition of rank over the view's sizes (last axis innermost).
static void view_coords(const int size[NAXES], int rank, int co[NAXES]) {
    for (int a = NAXES - 1; a >= 0; a--) { co[a] = rank % size[a]; rank /= size[a]; }
}

static int view_rank(const int size[NAXES], const int co[NAXES]) {
    int r = 0;
    for (int a = 0; a < NAXES; a++) r = r * size[a] + co[a];
    return r;
}

void hp_mesh_coords(const hp_dims *d, int rank, hp_coords *out) {
    int size[NAXES], co[NAXES];
    view_sizes(d, 0, size);
    view_coords(size, rank, co);
    out->p = co[0]; out->r = co[1]; out->s = co[2]; out->u = co[3]; out->c = co[4]; out->t = co[5];
    view_sizes(d, 1, size);
    view_coords(size, rank, co);
    // The sparse view re-splits inner = rank % (S*U*C*T): etp innermost (= t when etp == tp,
    // 0 when etp == 1), then ep, then efsdp.
    out->efsdp = co[3]; out->ep = co[4]; out->etp = co[5];
    out->seq   = out->u * d->cp + out->c;
    out->fsdp  = out->s * hp_dims_seq(d) + out->seq;
    out->batch = out->r * d->dp_shard + out->s;
    out->loss  = out->batch * hp_dims_seq(d) + out->seq;
}

int hp_mesh_group_size(const hp_dims *d, hp_group_kind g) {
    group_def def = group_def_of(g);
    int size[NAXES];
    view_sizes(d, def.sparse, size);
    int n = 1;
    for (int a = 0; a < NAXES; a++)
        if (def.axes & (1u << a)) n *= size[a];
    return n;
}

int hp_mesh_group(const hp_dims *d, hp_group_kind g, int rank, int *members, int *my_index) {
    group_def def = group_def_of(g);
    int size[NAXES], co[NAXES], mine[NAXES];
    view_sizes(d, def.sparse, size);
    view_coords(size, rank, mine);
    int n = hp_mesh_group_size(d, g);
    for (int i = 0; i < n; i++) {
        // i is the row-major index over the axes in A: peel it from the innermost A axis out,
        // keeping rank's own coordinates on every axis outside A.
        int rest = i;
        for (int a = NAXES - 1; a >= 0; a--) {
            if (def.axes & (1u << a)) { co[a] = rest % size[a]; rest /= size[a]; }
            else co[a] = mine[a];
        }
        members[i] = view_rank(size, co);
        if (members[i] == rank && my_index) *my_index = i;
    }
    return n;
}
