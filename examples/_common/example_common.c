// example_common.c - the helpers every example shares (see example_common.h).
// defines: ex_parse, ex_validate, ex_mesh, ex_print_mesh, ex_print_groups, ex_rel_err, ex_compare,
//          ex_verify
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <mpi.h>
#include "example_common.h"
#include "hyperpar/rng.h"

static int bad(int rank, const char *flag, const char *value) {
    if (rank == 0) fprintf(stderr, "example: %s: bad value '%s'\n", flag, value ? value : "(missing)");
    return HP_EXIT_CONFIG;
}

static int int_flag(const char *flag, const char *v, int *out, int rank) {
    char *end;
    if (!v) return bad(rank, flag, v);
    long x = strtol(v, &end, 10);
    if (*v == '\0' || *end != '\0') return bad(rank, flag, v);
    *out = (int)x;
    return 0;
}

int ex_parse(ex_args *a, int argc, char **argv, const char *default_model, int rank) {
    memset(a, 0, sizeof *a);
    a->dims = hp_dims_default();
    hp_run_config_default(&a->run);
    if (hp_model_config_by_name(default_model, &a->model) != 0) return bad(rank, "--model", default_model);
    for (int i = 1; i < argc; i++) {
        const char *f = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int e = -1;
        if (!strcmp(f, "--dp-replicate")) e = int_flag(f, v, &a->dims.dp_replicate, rank);
        else if (!strcmp(f, "--dp-shard")) e = int_flag(f, v, &a->dims.dp_shard, rank);
        else if (!strcmp(f, "--cp")) e = int_flag(f, v, &a->dims.cp, rank);
        else if (!strcmp(f, "--tp")) e = int_flag(f, v, &a->dims.tp, rank);
        else if (!strcmp(f, "--pp")) e = int_flag(f, v, &a->dims.pp, rank);
        else if (!strcmp(f, "--ep")) e = int_flag(f, v, &a->dims.ep, rank);
        else if (!strcmp(f, "--etp")) e = int_flag(f, v, &a->dims.etp, rank);
        else if (!strcmp(f, "--seq-len")) e = int_flag(f, v, &a->run.seq_len, rank);
        else if (!strcmp(f, "--batch")) e = int_flag(f, v, &a->run.batch, rank);
        else if (!strcmp(f, "--sp")) { a->dims.sp = 1; continue; }
        else if (!strcmp(f, "--no-sp")) { a->dims.sp = 0; continue; }
        else if (!strcmp(f, "--verbose")) { a->verbose = 1; continue; }
        else if (!strcmp(f, "--model")) {
            if (!v || hp_model_config_by_name(v, &a->model) != 0) return bad(rank, f, v);
            e = 0;
        } else if (!strcmp(f, "--cp-rotate")) {
            if (v && !strcmp(v, "allgather")) a->run.cp_rotate = HP_ROTATE_ALLGATHER;
            else if (v && !strcmp(v, "ring")) a->run.cp_rotate = HP_ROTATE_RING;
            else return bad(rank, f, v);
            e = 0;
        } else if (!strcmp(f, "--dispatcher")) {
            if (v && !strcmp(v, "alltoall")) a->run.dispatcher = HP_DISPATCH_ALLTOALL;
            else if (v && !strcmp(v, "allgather")) a->run.dispatcher = HP_DISPATCH_ALLGATHER;
            else return bad(rank, f, v);
            e = 0;
        } else if (!strcmp(f, "--optimizer")) {
            if (v && !strcmp(v, "sgd")) a->run.optimizer = HP_OPT_SGD;
            else if (v && !strcmp(v, "adamw")) a->run.optimizer = HP_OPT_ADAMW;
            else return bad(rank, f, v);
            e = 0;
        } else {
            if (rank == 0) fprintf(stderr, "example: unknown flag '%s'\n", f);
            return HP_EXIT_CONFIG;
        }
        if (e) return e;
        i++;   // the value
    }
    return 0;
}

int ex_validate(ex_args *a, int world, int rank, int mesh_only) {
    a->dims.world = world;
    char err[256];
    if (hp_dims_validate(&a->dims, mesh_only ? NULL : &a->model, mesh_only ? NULL : &a->run, err, sizeof err) != 0) {
        if (rank == 0) fprintf(stderr, "example: %s\n", err);
        return HP_EXIT_CONFIG;
    }
    return 0;
}

hp_comm *ex_mesh(const ex_args *a) { return hp_comm_init(MPI_COMM_WORLD, &a->dims, 1); }

void ex_print_mesh(const ex_args *a, int rank) {
    if (rank != 0) return;
    const hp_dims *d = &a->dims;
    printf("mesh: world %d = dp_replicate %d x dp_shard %d x cp %d x tp %d x pp %d; "
           "fsdp = S*C = %d; sequence parallel %s; model %s\n",
           d->world, d->dp_replicate, d->dp_shard, d->cp, d->tp, d->pp, hp_dims_fsdp(d), d->sp ? "on" : "off",
           a->model.name);
    if (a->model.num_experts > 0)
        printf("mesh: experts %d over ep %d x etp %d; efsdp = S*C*T/(EP*ET) = %d*%d*%d/(%d*%d) = %d\n",
               a->model.num_experts, d->ep, d->etp, d->dp_shard, d->cp, d->tp, d->ep, d->etp, hp_dims_efsdp(d));
}

void ex_print_groups(const ex_args *a, const hp_group_kind *kinds, int n_kinds, int rank) {
    if (rank != 0) return;
    const hp_dims *d = &a->dims;
    int *members = malloc(sizeof(int) * (size_t)d->world);
    for (int k = 0; k < n_kinds; k++) {
        printf("  %-12s", hp_group_name(kinds[k]));
        for (int r = 0; r < d->world; r++) {
            int me, n = hp_mesh_group(d, kinds[k], r, members, &me);
            if (me != 0) continue;   // print each group once, from its first member
            printf(" {");
            for (int i = 0; i < n; i++) printf("%s%d", i ? "," : "", members[i]);
            printf("}");
        }
        printf("\n");
    }
    free(members);
}

double ex_rel_err(const float *a, const float *ref, size_t n) {
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        double d = (double)a[i] - (double)ref[i];
        num += d * d;
        den += (double)ref[i] * (double)ref[i];
    }
    return den > 0 ? sqrt(num / den) : sqrt(num);
}

int ex_compare(const char *name, const float *a, const float *ref, size_t n, double tol, int print) {
    double e = ex_rel_err(a, ref, n);
    int ok = e <= tol;
    if (print) printf("  %-28s rel err %.3e  %s\n", name, e, ok ? "ok" : "FAIL");
    return ok;
}

// "tp:S(0)" / "fsdp:R": the placement of one mesh axis (shard dim or replicated).
static const char *placement(char *buf, size_t n, const char *axis, int dim) {
    if (dim == HP_REPLICATE) snprintf(buf, n, "%s:R", axis);
    else snprintf(buf, n, "%s:S(%d)", axis, dim);
    return buf;
}

int ex_train(const ex_args *a, int rank, int steps, const char *param) {
    char err[256];
    hp_run_config run = a->run;
    run.steps = steps;
    hp_trainer *tr = hp_trainer_init(MPI_COMM_WORLD, &a->model, &a->dims, &run, err, sizeof err);
    if (!tr) {
        if (rank == 0) fprintf(stderr, "example: %s\n", err);
        return HP_EXIT_CONFIG;
    }
    int rc = 0;
    for (int i = 0; i < steps && rc == 0; i++) {
        hp_step_stats st;
        rc = hp_trainer_step(tr, &st);   // forward, backward, reductions, clipping, optimiser
        if (rank == 0) printf("step %d | loss %.6f | grad norm %.4f\n", st.step, st.loss, st.grad_norm);
    }
    const hp_param_table *t = hp_trainer_params(tr);
    float *full = rank == 0 ? malloc((size_t)t->full_numel * sizeof(float)) : NULL;
    const double replicas = hp_trainer_gather_params(tr, full);   // every shard -> full tensors
    const int i = hp_params_find(t, param);
    if (rank == 0 && i >= 0) {
        const hp_param *p = &t->p[i];
        char tp[16], ep[16], fs[16];
        printf("%s: full [%lld", p->name, (long long)p->shape[0]);
        for (int k = 1; k < p->ndim; k++) printf(", %lld", (long long)p->shape[k]);
        printf("], %s %s %s; rank 0 holds [%lld", placement(tp, sizeof tp, "tp", p->tp_dim),
               placement(ep, sizeof ep, "ep", p->ep_dim), placement(fs, sizeof fs, "fsdp", p->fsdp_dim),
               (long long)p->local_shape[0]);
        for (int k = 1; k < p->ndim; k++) printf(", %lld", (long long)p->local_shape[k]);
        printf("] of it, %lld rows of that as its FSDP shard (of %d); gathered [0] = %.6f, "
               "replicas agree %s\n", (long long)p->shard_rows, p->fsdp_size, full[p->full_offset],
               replicas == 0.0 ? "bitwise" : "NOT");
    }
    free(full);
    hp_trainer_free(tr);
    return rc;
}

int ex_verify(const ex_args *a, int rank) {
    hp_verify_opts o = hp_verify_opts_default(&a->run);
    hp_verify_result r;
    hp_verify_run(MPI_COMM_WORLD, &a->model, &a->dims, &a->run, &o, &r);
    int pass = r.pass;
    MPI_Bcast(&pass, 1, MPI_INT, 0, MPI_COMM_WORLD);   // rank 0 holds the verdict
    if (rank == 0) {
        if (a->verbose) {
            hp_verify_print(stdout, &r);
        } else {
            printf("loss of step 1: %.9f, single process %.9f (rel err %.2e, tolerance %.0e)\n", r.loss,
                   r.loss_ref, r.loss_err / fabs(r.loss_ref), o.tol_loss);
            if (r.n)
                printf("worst gradient %s rel err %.2e; worst parameter after the step %s rel err %.2e "
                       "(tolerance %.0e)\n",
                       r.grads[r.worst_grad].name, r.grads[r.worst_grad].rel_fro, r.params[r.worst_param].name,
                       r.params[r.worst_param].rel_fro, o.tol_grad);
            printf("loss over %d steps: worst rel err %.2e (tolerance %.0e); bytes moved %s the formula\n",
                   r.steps, r.traj_worst, o.tol_traj, r.traffic_ok ? "match" : "DO NOT match");
            for (int l = 0; l < r.n_moe_layers; l++)
                printf("MoE layer %d: %d of %d tokens routed differently from the reference\n", l, r.route_flips[l],
                       r.tokens);
        }
        printf("%s: %s%s%s\n", pass ? "PASS" : "FAIL", pass ? "the parallel step equals the single-process step"
                                                          : "the parallel step differs",
               r.failure ? ": " : "", r.failure ? r.failure : "");
    }
    hp_verify_result_free(&r);
    return pass ? 0 : HP_EXIT_FAIL;
}

// ---------------------------------------------------------------------------------------
// the toy MLP

void ex_fill(float *x, size_t n, const char *name, float scale) {
    for (size_t i = 0; i < n; i++) x[i] = scale * hp_rng_normal(7, hp_name_id(name), i);
}

void ex_relu_forward(float *h, const float *a, size_t n) {
    for (size_t i = 0; i < n; i++) h[i] = a[i] > 0 ? a[i] : 0;
}

void ex_relu_backward(float *da, const float *dh, const float *a, size_t n) {
    for (size_t i = 0; i < n; i++) da[i] = a[i] > 0 ? dh[i] : 0;
}

float ex_mse(float *dy, const float *y, const float *target, size_t n, int rows_total) {
    double l = 0;
    for (size_t i = 0; i < n; i++) {
        float d = y[i] - target[i];
        l += 0.5 * (double)d * d;
        dy[i] = d / (float)rows_total;
    }
    return (float)(l / rows_total);
}
