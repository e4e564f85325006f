// inspect.c - degrees from flags, the mesh's groups and one parameter's placement, printed
// for people (see include/hyperpar/inspect.h). Public API only.
// defines: hp_dims_flag, hp_run_flag, hp_layout_flag, hp_print_dims, hp_print_groups, hp_print_param_placement, hp_rel_error
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "hyperpar/comm.h"
#include "hyperpar/inspect.h"
#include "hyperpar/params.h"
#include "hyperpar/pipeline.h"

int hp_dims_flag(hp_dims *d, const char *flag, const char *value) {
    if (!strcmp(flag, "--sp") || !strcmp(flag, "--no-sp")) {
        d->sp = flag[2] == 's';
        return 1;
    }
    if (!strcmp(flag, "--pp-schedule")) {
        const int schedule = value ? hp_pp_schedule_parse(value) : -1;
        if (schedule < 0) return -1;
        d->pp_schedule = schedule;
        return 2;
    }
    int *slot = !strcmp(flag, "--dp-replicate") ? &d->dp_replicate
              : !strcmp(flag, "--dp-shard")     ? &d->dp_shard
              : !strcmp(flag, "--ulysses")      ? &d->ulysses
              : !strcmp(flag, "--cp")           ? &d->cp
              : !strcmp(flag, "--tp")           ? &d->tp
              : !strcmp(flag, "--pp")           ? &d->pp
              : !strcmp(flag, "--ep")           ? &d->ep
              : !strcmp(flag, "--etp")          ? &d->etp
              : !strcmp(flag, "--pp-virtual")   ? &d->pp_virtual : NULL;
    if (!slot) return 0;
    char *end;
    long v = value ? strtol(value, &end, 10) : 0;
    // the range is hp_dims_validate's business; only a word that is not an int is refused here
    if (!value || *value == '\0' || *end != '\0' || v < -HP_DIMS_MAX_DEGREE || v > HP_DIMS_MAX_DEGREE) return -1;
    *slot = (int)v;
    return 2;
}

// A whole number or a finite number from a flag's word; 0 on success.
static int flag_long(const char *value, long lo, long hi, long *out) {
    char *end;
    if (!value || !*value) return -1;
    *out = strtol(value, &end, 10);
    return *end == '\0' && *out >= lo && *out <= hi ? 0 : -1;
}
static int flag_float(const char *value, float *out) {
    char *end;
    if (!value || !*value) return -1;
    const double v = strtod(value, &end);
    if (*end != '\0' || !isfinite(v)) return -1;
    *out = (float)v;
    return 0;
}

int hp_run_flag(hp_run_config *rc, const char *flag, const char *value) {
    long v;
    if (!strcmp(flag, "--cp-no-balance")) { rc->cp_load_balance = 0; return 1; }
    if (!strcmp(flag, "--cp-rotate") || !strcmp(flag, "--dispatcher") || !strcmp(flag, "--optimizer")) {
        if (!value) return -1;
        if (flag[2] == 'c' && (!strcmp(value, "ring") || !strcmp(value, "allgather")))
            rc->cp_rotate = value[0] == 'r' ? HP_ROTATE_RING : HP_ROTATE_ALLGATHER;
        else if (flag[2] == 'd' && (!strcmp(value, "alltoall") || !strcmp(value, "allgather")))
            rc->dispatcher = value[3] == 't' ? HP_DISPATCH_ALLTOALL : HP_DISPATCH_ALLGATHER;
        else if (flag[2] == 'o' && (!strcmp(value, "sgd") || !strcmp(value, "adamw")))
            rc->optimizer = value[0] == 'a' ? HP_OPT_ADAMW : HP_OPT_SGD;
        else return -1;
        return 2;
    }
    int *slot = !strcmp(flag, "--seq-len")      ? &rc->seq_len
              : !strcmp(flag, "--batch")        ? &rc->batch
              : !strcmp(flag, "--microbatches") || !strcmp(flag, "--pp-microbatches") ? &rc->microbatches
              : !strcmp(flag, "--steps")        ? &rc->steps : NULL;
    if (slot) {
        if (flag_long(value, 1, HP_DIMS_MAX_DEGREE, &v) != 0) return -1;
        *slot = (int)v;
        return 2;
    }
    if (!strcmp(flag, "--lr")) return flag_float(value, &rc->lr) == 0 && rc->lr > 0 ? 2 : -1;
    if (!strcmp(flag, "--max-norm")) return flag_float(value, &rc->max_norm) == 0 ? 2 : -1;
    if (!strcmp(flag, "--ac")) {
        char err[128];
        return value && hp_run_config_parse_ac(value, &rc->ac_every, err, sizeof err) == 0 ? 2 : -1;
    }
    if (!strcmp(flag, "--reshard-after-forward")) {
        char err[128];
        return hp_run_config_parse_reshard(value, &rc->reshard_after_forward, err, sizeof err) == 0 ? 2 : -1;
    }
    return 0;
}

int hp_layout_flag(hp_dims *d, hp_run_config *rc, const char *flag, const char *value) {
    const int n = hp_dims_flag(d, flag, value);
    return n != 0 ? n : hp_run_flag(rc, flag, value);
}

void hp_print_dims(FILE *out, const hp_dims *d) {
    fprintf(out, "world %d = pp %d x dp_replicate %d x dp_shard %d x ulysses %d x cp %d x tp %d, sp %s; fsdp %d",
            d->world, d->pp, d->dp_replicate, d->dp_shard, d->ulysses, d->cp, d->tp, d->sp ? "on" : "off",
            hp_dims_fsdp(d));
    if (d->ep > 1) fprintf(out, "; ep %d x etp %d, efsdp %d", d->ep, d->etp, hp_dims_efsdp(d));
    fprintf(out, "\n");
}

void hp_print_groups(FILE *out, const hp_dims *d, hp_group_kind g) {
    enum { SHOWN = 8 };
    const int world = d->world > 0 ? d->world : hp_dims_product(d);
    int *members = malloc(sizeof(int) * (size_t)world);
    if (!members) return;
    int groups = 0;
    fprintf(out, "%s groups", hp_group_name(g));
    for (int r = 0; r < world; r++) {
        int me, n = hp_mesh_group(d, g, r, members, &me);
        if (me != 0) continue;   // each group once, from its first member
        if (groups++ >= SHOWN) continue;
        fprintf(out, " {");
        for (int i = 0; i < n; i++) fprintf(out, "%s%d", i ? "," : "", members[i]);
        fprintf(out, "}");
    }
    if (groups > SHOWN) fprintf(out, " ... (%d groups)", groups);
    fprintf(out, "\n");
    free(members);
}

// "S(0)" or "R": a placement on one mesh axis
static const char *placement(char buf[8], int dim) {
    if (dim == HP_REPLICATE) return "R";
    snprintf(buf, 8, "S(%d)", dim);
    return buf;
}

static void print_shape(FILE *out, const int *v, int ndim) {
    fprintf(out, "[");
    for (int k = 0; k < ndim; k++) fprintf(out, "%s%d", k ? ", " : "", v[k]);
    fprintf(out, "]");
}

// What each rank reports about its piece of one parameter (ints: tiny and verbose enough).
enum { ON_RANK, LOCAL = 1, START = 4, SHARD_ROWS = 7, ROW = 8 };

int hp_print_param_placement(hp_trainer *tr, const char *name, FILE *out) {
    enum { SHOWN = 8 };
    const hp_param_table *t = hp_trainer_params(tr);
    const int i = hp_params_find(t, name);
    if (i < 0) {
        if (hp_trainer_rank(tr) == 0) fprintf(out, "%s: no such parameter\n", name);
        return -1;
    }
    const hp_param *p = &t->p[i];
    hp_comm *comm = hp_trainer_comm(tr);
    const hp_dims *d = hp_comm_dims(comm);
    const int root = hp_trainer_rank(tr) == 0;

    int mine[ROW] = { p->on_rank };
    for (int k = 0; k < p->ndim; k++) {
        mine[LOCAL + k] = (int)p->local_shape[k];
        mine[START + k] = (int)p->local_start[k];
    }
    mine[SHARD_ROWS] = (int)p->shard_rows;
    int *all = root ? malloc(sizeof(int) * ROW * (size_t)d->world) : NULL;
    float *full = root ? malloc(sizeof(float) * (size_t)t->full_numel) : NULL;
    hp_gather_to_root_int(comm, all, mine, ROW);
    const double replica_diff = hp_trainer_gather_params(tr, full);   // every shard -> full tensors
    if (root && all && full) {
        int full_shape[3];
        for (int k = 0; k < p->ndim; k++) full_shape[k] = (int)p->shape[k];
        char a[8], b[8], c[8];
        fprintf(out, "%s: full ", p->name);
        print_shape(out, full_shape, p->ndim);
        fprintf(out, "; tp %s, ep %s, fsdp %s over the %d ranks of its %s group", placement(a, p->tp_dim),
                placement(b, p->ep_dim), placement(c, p->fsdp_dim), p->fsdp_size,
                hp_group_name((hp_group_kind)p->fsdp_group));
        if (d->pp > 1) fprintf(out, "; pp stage %d", p->pp_stage);
        fprintf(out, "\n");
        for (int r = 0; r < d->world && r < SHOWN; r++) {
            const int *row = all + (size_t)r * ROW;
            fprintf(out, "  rank %d: ", r);
            if (!row[ON_RANK]) { fprintf(out, "not on its pipeline stage\n"); continue; }
            fprintf(out, "local ");
            print_shape(out, row + LOCAL, p->ndim);
            fprintf(out, " from ");
            print_shape(out, row + START, p->ndim);
            if (p->fsdp_dim == HP_REPLICATE) fprintf(out, "; the whole of it (not fsdp-sharded)\n");
            else fprintf(out, "; fsdp shard: %d of its %d rows of dim %d\n", row[SHARD_ROWS],
                         row[LOCAL + p->fsdp_dim], p->fsdp_dim);
        }
        if (d->world > SHOWN) fprintf(out, "  ... (%d ranks)\n", d->world);
        fprintf(out, "  gathered on rank 0: [0] = %.6f, replicas %s (max diff %g)\n", full[p->full_offset],
                replica_diff == 0 ? "agree" : "DISAGREE", replica_diff);
    }
    free(all);
    free(full);
    return 0;
}

double hp_rel_error(const float *a, const float *ref, size_t n) {
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        const double d = (double)a[i] - (double)ref[i];
        num += d * d;
        den += (double)ref[i] * (double)ref[i];
    }
    return den > 0 ? sqrt(num / den) : sqrt(num);
}
