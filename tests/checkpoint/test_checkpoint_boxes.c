// test_checkpoint_boxes.c - the box arithmetic of checkpoints, without MPI or files
// (src/checkpoint/checkpoint_internal.h):
//   1. for many layouts (FSDP, uneven FSDP, TP, SP, CP, HSDP, DDP, EP with Shard(0) and
//      Shard(1) experts, ETP, PP), the pieces the ranks own (hp_ck_owned) tile every tensor
//      exactly once: no overlap, volumes sum to the full numel;
//   2. save then load through boxes is the identity: every rank extracts its owned pieces from
//      its padded shard of a known full tensor, and every rank of ANOTHER layout rebuilds its
//      own padded shard from those pieces alone, equal to its shard of the full tensor, with 0
//      in the padding.
// Exits 1 on the first failure (naming the layout, rank and tensor), 0 after all pass.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "hyperpar/config.h"
#include "hyperpar/dims.h"
#include "hyperpar/params.h"
#include "checkpoint/checkpoint_internal.h"

typedef struct layout { const char *model; int R, S, C, T, P, EP, ET, batch; } layout;

static const layout layouts[] = {
    { "tiny", 1, 1, 1, 1, 1, 1, 1, 8 },     { "tiny", 1, 4, 1, 1, 1, 1, 1, 8 },
    { "tiny", 1, 3, 1, 1, 1, 1, 1, 12 },    { "tiny", 1, 2, 1, 2, 1, 1, 1, 8 },
    { "tiny", 2, 2, 1, 2, 1, 1, 1, 8 },     { "tiny", 1, 2, 2, 2, 1, 1, 1, 8 },
    { "tiny", 2, 1, 1, 1, 1, 1, 1, 8 },     { "tiny", 1, 2, 1, 1, 2, 1, 1, 8 },
    { "tiny", 1, 1, 1, 2, 2, 1, 1, 8 },     { "tiny-moe", 1, 4, 1, 1, 1, 4, 1, 8 },
    { "tiny-moe", 1, 2, 1, 2, 1, 2, 2, 8 }, { "tiny-moe", 1, 2, 1, 2, 1, 4, 1, 8 },
    { "tiny-moe", 1, 1, 1, 2, 1, 1, 1, 8 }, { "tiny-moe-alt", 1, 8, 1, 1, 1, 2, 1, 8 },
    { "tiny-moe-alt", 2, 2, 1, 2, 1, 2, 2, 8 },
};
#define N_LAYOUTS ((int)(sizeof layouts / sizeof layouts[0]))

static int failures = 0;
#define CHECK(cond, ...) do { if (!(cond)) { printf("FAIL: " __VA_ARGS__); printf("\n"); failures++; return -1; } } while (0)

static int make_dims(const layout *l, hp_model_config *m, hp_dims *d, int *world) {
    hp_model_config_by_name(l->model, m);
    hp_run_config rc;
    hp_run_config_default(&rc);
    rc.batch = l->batch;
    *d = hp_dims_default();
    d->dp_replicate = l->R; d->dp_shard = l->S; d->cp = l->C; d->tp = l->T; d->pp = l->P;
    d->ep = l->EP; d->etp = l->ET;
    d->world = *world = l->R * l->S * l->C * l->T * l->P;
    char err[256];
    if (hp_dims_validate(d, m, &rc, err, sizeof err) != 0) {
        printf("FAIL: layout %s R%d S%d C%d T%d P%d EP%d ET%d is not legal: %s\n", l->model, l->R, l->S,
               l->C, l->T, l->P, l->EP, l->ET, err);
        failures++;
        return -1;
    }
    return 0;
}

// The full tensor's value at flat index g of parameter i: distinct everywhere.
static float value(int i, int64_t g) { return (float)(i * 1000003 + g + 1); }

typedef struct piece { int tensor; hp_box box; float *data; } piece;

// Every owned piece of every rank of layout l (data filled from the known full tensors).
static int save_pieces(const layout *l, piece **out, int *n_out) {
    hp_model_config m;
    hp_dims d;
    int world;
    if (make_dims(l, &m, &d, &world)) return -1;
    int n = 0, cap = 64;
    piece *ps = malloc((size_t)cap * sizeof *ps);
    for (int r = 0; r < world; r++) {
        hp_param_table t;
        hp_params_build(&t, &m, &d, r);
        int *owned = calloc((size_t)t.n, sizeof(int));
        hp_ck_owned(&m, &d, r, &t, owned);
        for (int i = 0; i < t.n; i++) {
            if (!owned[i]) continue;
            const hp_param *p = &t.p[i];
            // the rank's padded shard, from the full tensor (hp_param_shard_to_local)
            float *shard = calloc((size_t)p->shard_numel + 1, sizeof(float));
            for (int64_t k = 0; k < p->shard_numel; k++) {
                const int64_t li = hp_param_shard_to_local(p, k);
                if (li >= 0) shard[k] = value(i, hp_param_global_index(p, li));
            }
            hp_box b;
            int64_t origin[3], dims[3], ext[3];
            hp_ck_shard_box(p, &b, origin, dims);
            for (int k = 0; k < p->ndim; k++) ext[k] = b.hi[k] - b.lo[k];
            if (n == cap) ps = realloc(ps, (size_t)(cap *= 2) * sizeof *ps);
            ps[n].tensor = i;
            ps[n].box = b;
            ps[n].data = malloc((size_t)hp_box_numel(&b) * sizeof(float));
            hp_box_copy(&b, shard, origin, dims, ps[n].data, b.lo, ext);
            n++;
            free(shard);
        }
        free(owned);
        hp_params_free(&t);
    }
    *out = ps;
    *n_out = n;
    return 0;
}

static int check_tiling(const layout *l, const piece *ps, int n) {
    hp_model_config m;
    hp_dims d;
    int world;
    if (make_dims(l, &m, &d, &world)) return -1;
    hp_param_table t;
    hp_params_build(&t, &m, &d, 0);
    for (int i = 0; i < t.n; i++) {
        int64_t sum = 0;
        for (int a = 0; a < n; a++) {
            if (ps[a].tensor != i) continue;
            sum += hp_box_numel(&ps[a].box);
            for (int b = a + 1; b < n; b++) {
                hp_box o;
                CHECK(ps[b].tensor != i || !hp_box_intersect(&ps[a].box, &ps[b].box, &o),
                      "%s R%d S%d C%d T%d P%d EP%d: %s: two owned pieces overlap", l->model, l->R, l->S,
                      l->C, l->T, l->P, l->EP, t.p[i].name);
            }
        }
        CHECK(sum == t.p[i].full_numel, "%s R%d S%d C%d T%d P%d EP%d: %s: owned pieces hold %lld of %lld elements",
              l->model, l->R, l->S, l->C, l->T, l->P, l->EP, t.p[i].name, (long long)sum,
              (long long)t.p[i].full_numel);
    }
    hp_params_free(&t);
    return 0;
}

// Every rank of layout l rebuilds its padded shard from the pieces alone.
static int check_load(const layout *from, const layout *l, const piece *ps, int n) {
    hp_model_config m;
    hp_dims d;
    int world;
    if (make_dims(l, &m, &d, &world)) return -1;
    for (int r = 0; r < world; r++) {
        hp_param_table t;
        hp_params_build(&t, &m, &d, r);
        for (int i = 0; i < t.n; i++) {
            const hp_param *p = &t.p[i];
            hp_box mine;
            int64_t origin[3], dims[3];
            hp_ck_shard_box(p, &mine, origin, dims);
            float *shard = calloc((size_t)p->shard_numel + 1, sizeof(float));
            int64_t have = 0;
            for (int a = 0; a < n; a++) {
                hp_box ov;
                if (ps[a].tensor != i || !hp_box_intersect(&mine, &ps[a].box, &ov)) continue;
                int64_t ext[3];
                for (int k = 0; k < p->ndim; k++) ext[k] = ps[a].box.hi[k] - ps[a].box.lo[k];
                hp_box_copy(&ov, ps[a].data, ps[a].box.lo, ext, shard, origin, dims);
                have += hp_box_numel(&ov);
            }
            int ok = have == hp_box_numel(&mine);
            for (int64_t k = 0; ok && k < p->shard_numel; k++) {
                const int64_t li = hp_param_shard_to_local(p, k);
                ok = shard[k] == (li >= 0 ? value(i, hp_param_global_index(p, li)) : 0.0f);
            }
            free(shard);
            if (!ok) hp_params_free(&t);
            CHECK(ok, "%s R%d S%d C%d T%d P%d EP%d ET%d -> R%d S%d C%d T%d P%d EP%d ET%d: rank %d: %s: shard not rebuilt",
                  l->model, from->R, from->S, from->C, from->T, from->P, from->EP, from->ET, l->R, l->S, l->C,
                  l->T, l->P, l->EP, l->ET, r, p->name);
        }
        hp_params_free(&t);
    }
    return 0;
}

int main(void) {
    int pairs = 0, tiled = 0;
    for (int a = 0; a < N_LAYOUTS; a++) {
        piece *ps = NULL;
        int n = 0;
        if (save_pieces(&layouts[a], &ps, &n) != 0) continue;
        tiled += check_tiling(&layouts[a], ps, n) == 0;
        for (int b = 0; b < N_LAYOUTS; b++)
            if (!strcmp(layouts[a].model, layouts[b].model) && check_load(&layouts[a], &layouts[b], ps, n) == 0) pairs++;
        for (int k = 0; k < n; k++) free(ps[k].data);
        free(ps);
    }
    printf("checkpoint boxes: %d of %d layouts tile their tensors; %d (save layout, load layout) pairs "
           "rebuild every shard; %d failures\n", tiled, N_LAYOUTS, pairs, failures);
    return failures ? 1 : 0;
}
