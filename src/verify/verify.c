// verify.c - the verifier: one parallel run and the single-process reference of the same
// seed and global batch, compared tensor by tensor on world rank 0.
//
// Tolerances (recipes.md, fp32; the numbers: hp_verify_tol, src/verify/verify_compare.c): loss of step 1 within 1e-5 relative; each gradient of step
// 1 and each parameter after one SGD step within 1e-5 relative Frobenius error; the loss
// trajectory within 1e-4 relative per step. Parallel runs reorder sums (tp/fsdp/cp splits),
// which in fp32 moves results by a few ulps (~1e-7 relative); 1e-5 leaves two orders of
// magnitude of room while a real bug (a missing or doubled reduction) gives errors of
// order 1e-1..1. After AdamW the first update is lr*sign(g) wherever |g| >> eps, so a sign
// flip of a gradient element that is zero up to rounding moves that parameter by 2*lr: the
// parameter tolerance is 1e-4 after AdamW (measured: 1.2e-6 at lr 1e-3 on the tiny recipes).
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "hyperpar/dump.h"
#include "hyperpar/pipeline.h"
#include "hyperpar/failpoint.h"
#include "hyperpar/float8.h"
#include "hyperpar/train.h"
#include "hyperpar/verify.h"

hp_verify_opts hp_verify_opts_default(const hp_run_config *rc) {
    const hp_verify_tolerances *t = &hp_verify_tol;
    hp_verify_opts o = { .steps = 5, .tol_loss = t->loss, .tol_grad = t->grad, .tol_param = t->param,
                         .tol_traj = t->traj, .dump_dir = NULL, .load_full = NULL };
    if (rc && rc->optimizer == HP_OPT_ADAMW) o.tol_param = t->param_adamw;
    return o;
}

static double wall(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void hp_verify_diff_tensor(hp_tensor_diff *d, const char *name, const float *a, const float *ref,
                           int64_t n, double tol) {
    double num = 0.0, den = 0.0;
    snprintf(d->name, sizeof d->name, "%s", name);
    d->max_abs = 0.0;
    d->worst = 0;
    for (int64_t i = 0; i < n; i++) {
        const double e = (double)a[i] - (double)ref[i];
        num += e * e;
        den += (double)ref[i] * (double)ref[i];
        if (!(fabs(e) <= d->max_abs)) { d->max_abs = fabs(e); d->worst = i; }
    }
    d->rel_fro = den > 0.0 ? sqrt(num) / sqrt(den) : sqrt(num);
    if (isnan(d->max_abs)) d->rel_fro = INFINITY;
    d->tol = tol;
    d->pass = d->rel_fro <= tol;
}

// Closeness of a bf16 layout (precision.md §4.2): P the layout, O one bf16 process, F one fp32
// process; d->rel_fro stays P against O, and the verdict is ||P - O|| / noise <= c, noise =
// ||O - F|| but at least one fp32 ulp an element (ulp_norm).
static double distance(const float *a, const float *b, int64_t n) {
    double s = 0.0;
    for (int64_t i = 0; i < n; i++) {
        const double e = (double)a[i] - (double)b[i];
        s += e * e;
    }
    return sqrt(s);
}
double hp_verify_closeness_ratio(double dist, double noise) {
    if (isnan(dist) || isnan(noise)) return INFINITY;
    return dist == 0.0 ? 0.0 : (noise > 0.0 ? dist / noise : INFINITY);
}
// ||ulp(x)||: the finest difference fp32 storage can show. A parameter after one small update
// differs from another run's by whole ulps of its fp32 master (1.0 +- 6e-8), so a noise below
// one ulp an element would make the ratio count rounding of the storage, not of the policy.
static double ulp_norm(const float *x, int64_t n) {
    double s = 0.0;
    for (int64_t i = 0; i < n; i++) {
        const double u = (double)nextafterf(fabsf(x[i]), INFINITY) - (double)fabsf(x[i]);
        s += u * u;
    }
    return sqrt(s);
}
void hp_verify_diff_tensor_bf16(hp_tensor_diff *d, const char *name, const float *a, const float *ref,
                                const float *fp32, int64_t n, double c) {
    hp_verify_diff_tensor(d, name, a, ref, n, c);
    d->noise = distance(ref, fp32, n);
    const double floor = ulp_norm(ref, n);
    if (!(d->noise >= floor)) d->noise = floor;
    d->ratio = hp_verify_closeness_ratio(distance(a, ref, n), d->noise);
    d->pass = d->ratio <= c;
}

// What one run (parallel or reference) leaves for the comparison; full tensors on rank 0.
typedef struct run_record {
    float  *init, *grads, *params;
    double *losses;
    double  grad_norm, replica_diff, seconds;
    int    *routing;
    int     n_moe;
    int     nonfinite_step;   // the first step whose loss or grad norm was not finite, or 0
    int     async_tp_unfused_step;   // --async-tp: the first step that fused nothing, or 0
    int     pp_ranks, pp_cap;  // pipeline: the last step's actions of each pp rank (rank 0)
    float  *pp_timeline;       // [pp_ranks][1 + pp_cap*5]: count, then rows (train.h)
    uint64_t bytes[HP_G_COUNT][HP_OP_COUNT];
    hp_plan_measured measured;   // memory and the last step's traffic, before the trainer is freed
} run_record;

// The noise of the step-1 loss: |L_O - L_F| of step 1. Under float8 one sample of a scalar's
// noise can be arbitrarily small (the fp8 roundings of a layout whose activation amax is per
// local batch are another draw, docs/float8.md), so there it is the RMS of L_O - L_F over the
// verified steps (each step one more draw of the same noise).
static double loss_noise(const hp_run_config *rc, const run_record *o, const run_record *f, int steps) {
    if (!rc->float8 || steps < 2) return fabs(o->losses[0] - f->losses[0]);
    double ss = 0.0;
    for (int s = 0; s < steps; s++) ss += (o->losses[s] - f->losses[s]) * (o->losses[s] - f->losses[s]);
    return sqrt(ss / steps);
}

// Every pp rank's actions of the last step, on world rank 0 (each pp rank's first inner
// rank speaks for its block: the inner ranks run the same schedule).
static void gather_timeline(hp_trainer *tr, const hp_dims *d, const hp_run_config *rc, run_record *rec) {
    const int cap = 3 * hp_pp_virtual(d) * hp_run_microbatches(rc) + 4, row = 1 + cap * 5;
    float *mine = calloc((size_t)row, sizeof(float));
    float *all = hp_trainer_rank(tr) == 0 ? calloc((size_t)row * d->world, sizeof(float)) : NULL;
    if (!mine || (hp_trainer_rank(tr) == 0 && !all))
        hp_fail_line_and_abort(1, "hp: out of memory (pipeline timeline)");
    mine[0] = (float)hp_trainer_pp_timeline(tr, mine + 1, cap);
    hp_gather_to_root(hp_trainer_comm(tr), all, mine, (size_t)row);
    if (all) {
        rec->pp_ranks = d->pp;
        rec->pp_cap = cap;
        rec->pp_timeline = malloc((size_t)row * d->pp * sizeof(float));
        for (int p = 0; rec->pp_timeline && p < d->pp; p++)
            memcpy(rec->pp_timeline + (size_t)p * row, all + (size_t)p * (d->world / d->pp) * row,
                   (size_t)row * sizeof(float));
    }
    free(mine);
    free(all);
}

// bytes += sign * the counters so far: bracketing a span with -1 and +1 adds its traffic.
static void add_bytes(uint64_t bytes[HP_G_COUNT][HP_OP_COUNT], const hp_comm *comm, int sign) {
    for (int g = 0; g < HP_G_COUNT; g++)
        for (int op = 0; op < HP_OP_COUNT; op++)
            bytes[g][op] += (uint64_t)sign * hp_comm_bytes(comm, (hp_group_kind)g, (hp_op_kind)op);
}

// --async-tp: the first step whose fused ops all ran plain on this rank (torchtitan#3869: async
// TP silently not applied; docs/async_tp.md), kept in rec; the verdict fails on it.
static void check_async_tp(const hp_trainer *tr, const hp_run_config *rc, int step, run_record *rec) {
    if (rc->async_tp && hp_trainer_async_tp_ops(tr) == 0 && !rec->async_tp_unfused_step)
        rec->async_tp_unfused_step = step;
}

static int record_run(MPI_Comm comm, const hp_model_config *m, const hp_dims *d,
                      const hp_run_config *rc, const hp_verify_opts *o, run_record *rec,
                      const char *dump_dir) {
    char err[256];
    hp_trainer *tr = hp_trainer_init(comm, m, d, rc, err, sizeof err);
    if (!tr) hp_fail_line_and_abort(1, "hp: %s", err);
    const int rank = hp_trainer_rank(tr);
    const int64_t full = hp_trainer_params(tr)->full_numel;
    if (o->load_full) hp_trainer_set_params(tr, o->load_full);
    memset(rec, 0, sizeof *rec);
    rec->losses = calloc((size_t)o->steps, sizeof(double));
    if (rank == 0) {
        rec->init = malloc((size_t)full * sizeof(float));
        rec->grads = malloc((size_t)full * sizeof(float));
        rec->params = malloc((size_t)full * sizeof(float));
        rec->routing = malloc((size_t)m->n_layers * rc->batch * rc->seq_len * (m->top_k + 1) *
                              sizeof(int));
    }
    double diff = hp_trainer_gather_params(tr, rec->init);
    const double t0 = wall();
    hp_comm_reset_stats(hp_trainer_comm(tr));
    rec->losses[0] = hp_trainer_forward_backward(tr);
    check_async_tp(tr, rc, 1, rec);
    add_bytes(rec->bytes, hp_trainer_comm(tr), +1);
    // step 1's gradients are captured before clipping (dump.h), with or without --max-norm;
    // what the capture itself moves is the verifier's, not the step's: left out of the bytes
    double gd = hp_trainer_gather_grads(tr, rec->grads);
    if (gd > diff) diff = gd;
    add_bytes(rec->bytes, hp_trainer_comm(tr), -1);
    rec->grad_norm = hp_trainer_clip(tr);
    add_bytes(rec->bytes, hp_trainer_comm(tr), +1);
    if (!hp_step_finite(rec->losses[0], rec->grad_norm)) rec->nonfinite_step = 1;
    rec->n_moe = hp_trainer_gather_routing(tr, rec->routing);
    if (dump_dir) {
        if (hp_dump_step1(tr, dump_dir, rec->init, rec->grads, rec->losses[0], err, sizeof err))
            hp_fail_line_and_abort(1, "hp: --dump: %s", err);
    }
    if (!rec->nonfinite_step) hp_trainer_optimizer_step(tr);
    const double pd = hp_trainer_gather_params(tr, rec->params);
    if (pd > diff) diff = pd;
    for (int s = 1; s < o->steps && !rec->nonfinite_step; s++) {
        hp_step_stats st;
        if (hp_trainer_step(tr, &st) != 0) rec->nonfinite_step = s + 1;
        check_async_tp(tr, rc, s + 1, rec);
        rec->losses[s] = st.loss;
    }
    rec->seconds = wall() - t0;
    rec->replica_diff = diff;
    if (d->pp > 1) gather_timeline(tr, d, rc, rec);
    hp_trainer_measured(tr, &rec->measured);   // the last step's bytes (each phase brackets its own)
    hp_trainer_free(tr);
    return 0;
}

// Every rank's structure-check counts, summed on world rank 0, and the first failure's text of
// the lowest failing rank (raw MPI: the verifier's, not the step's traffic).
static void collect_structure(MPI_Comm world, int rank, hp_verify_result *res) {
    int world_size;
    MPI_Comm_size(world, &world_size);
    for (int k = 0; k < HP_CHECK_COUNT; k++) {
        int64_t counts[2] = { (int64_t)hp_structure_checks((hp_structure_check)k),
                              (int64_t)hp_structure_failures((hp_structure_check)k) };
        hp_mpi_allreduce(world, counts, 2, MPI_INT64_T, MPI_SUM, "structure check counts");
        res->structure_checks[k] = (uint64_t)counts[0];
        res->structure_failures[k] = (uint64_t)counts[1];
        const size_t len = sizeof res->structure_first[k];
        char *all = rank == 0 ? calloc((size_t)world_size, len) : NULL;
        char mine[sizeof res->structure_first[k]];
        snprintf(mine, sizeof mine, "%s", hp_structure_first((hp_structure_check)k));
        hp_mpi_gather(world, all, mine, (int)len, MPI_CHAR, 0, "structure check text");
        for (int r = 0; all && r < world_size; r++)
            if (all[(size_t)r * len]) {
                snprintf(res->structure_first[k], len, "rank %d: %s", r, all + (size_t)r * len);
                break;
            }
        free(all);
    }
}

static void free_record(run_record *r) {
    free(r->init); free(r->grads); free(r->params); free(r->losses); free(r->routing);
    free(r->pp_timeline);
}

static void fail(hp_verify_result *res, const char *why) {
    res->pass = 0;
    if (!res->failure) res->failure = why;
}

int hp_verify_run(MPI_Comm world, const hp_model_config *m, const hp_dims *d,
                  const hp_run_config *rc, const hp_verify_opts *o, hp_verify_result *res) {
    int rank;
    MPI_Comm_rank(world, &rank);
    memset(res, 0, sizeof *res);
    res->world = d->world;
    run_record par, ref;
    hp_structure_reset();
    hp_structure_enable(1);
    record_run(world, m, d, rc, o, &par, o->dump_dir);
    hp_structure_enable(0);
    res->measured = par.measured;
    collect_structure(world, rank, res);
    int unfused = par.async_tp_unfused_step ? par.async_tp_unfused_step : INT_MAX;
    hp_mpi_allreduce(world, &unfused, 1, MPI_INT, MPI_MIN, "async-tp-count");

    int pass = 1;
    if (rank == 0) {
        hp_dims one = hp_dims_default();
        one.dp_shard = 1;
        one.world = 1;
        char err[256];
        // the reference is the plain step: one process, one microbatch (a bug in the
        // accumulation, like TorchTitan #1733's double averaging, cannot hide in it), no tp
        // and so no async TP
        hp_run_config rc_ref = *rc;
        rc_ref.microbatches = 1;
        rc_ref.async_tp = 0;
        if (hp_dims_validate(&one, m, &rc_ref, err, sizeof err) != 0)
            hp_fail_line_and_abort(1, "hp: reference: %s", err);
        hp_failpoint_suspend(1);   // an injected fault (failpoint.h) hits the parallel run only
        record_run(MPI_COMM_SELF, m, &one, &rc_ref, o, &ref, NULL);
        // bf16 or float8: the fp32 process F (no float8 either) measures each tensor's noise
        run_record f32;
        const int bf16 = rc->mp_param == HP_DTYPE_BFLOAT16 || rc->float8 != 0;
        if (bf16) {
            hp_run_config rc_f = rc_ref;
            rc_f.mp_param = rc_f.mp_reduce = HP_DTYPE_FLOAT32;
            rc_f.float8 = 0;
            rc_f.float8_fsdp_all_gather = 0;
            record_run(MPI_COMM_SELF, m, &one, &rc_f, o, &f32, NULL);
        }
        hp_failpoint_suspend(0);
        res->bf16 = bf16;
        res->float8 = rc->float8;
        res->closeness = hp_verify_tol.closeness_bf16;

        hp_param_table t;
        hp_params_build(&t, m, &one, 0);
        res->pass = 1;
        res->n = t.n;
        res->grads = calloc((size_t)t.n, sizeof(hp_tensor_diff));
        res->params = calloc((size_t)t.n, sizeof(hp_tensor_diff));
        if (par.nonfinite_step) {
            snprintf(res->failure_text, sizeof res->failure_text,
                     "non-finite loss or grad norm at step %d (stopped before its optimiser step)",
                     par.nonfinite_step);
            fail(res, res->failure_text);
        }
        if (unfused != INT_MAX) {
            snprintf(res->failure_text, sizeof res->failure_text,
                     "async TP not applied: step %d ran 0 fused ops overlapped on some rank under "
                     "--async-tp (torchtitan#3869)", unfused);
            fail(res, res->failure_text);
        }
        res->init_equal = memcmp(par.init, ref.init, (size_t)t.full_numel * sizeof(float)) == 0;
        if (!res->init_equal) fail(res, "initial parameters differ from the reference init");
        res->replica_diff = par.replica_diff;
        if (par.replica_diff != 0.0) fail(res, "replicas of a tensor disagree across ranks");
        res->loss = par.losses[0];
        res->loss_ref = ref.losses[0];
        res->loss_err = fabs(res->loss - res->loss_ref);
        res->grad_norm = par.grad_norm;
        res->grad_norm_ref = ref.grad_norm;
        res->max_norm = rc->max_norm;
        const double c = res->closeness;
        if (bf16) {
            res->loss_fp32 = f32.losses[0];
            res->grad_norm_fp32 = f32.grad_norm;
            res->loss_ratio = hp_verify_closeness_ratio(res->loss_err, loss_noise(rc, &ref, &f32, o->steps));
            res->grad_norm_ratio = hp_verify_closeness_ratio(fabs(res->grad_norm - res->grad_norm_ref),
                                                   fabs(ref.grad_norm - f32.grad_norm));
            if (!(res->loss_ratio <= c)) fail(res, "loss of step 1 (closeness)");
            if (!(res->grad_norm_ratio <= c)) fail(res, "global gradient norm (closeness)");
        } else {
            if (!(res->loss_err <= o->tol_loss * fabs(res->loss_ref))) fail(res, "loss of step 1");
            if (!(fabs(res->grad_norm - res->grad_norm_ref) <= o->tol_grad * res->grad_norm_ref))
                fail(res, "global gradient norm (clipping)");
        }
        for (int i = 0; i < t.n; i++) {
            const hp_param *p = &t.p[i];
            const int64_t at = p->full_offset;
            if (bf16) {
                hp_verify_diff_tensor_bf16(&res->grads[i], p->name, par.grads + at, ref.grads + at, f32.grads + at,
                                 p->full_numel, c);
                hp_verify_diff_tensor_bf16(&res->params[i], p->name, par.params + at, ref.params + at,
                                 f32.params + at, p->full_numel, c);
                // AdamW's first update is lr * sign(g) where |g| >> eps: a gradient element
                // within the bf16 noise of zero flips it by 2 lr, so its parameters are no
                // closeness measure (ratios up to 17 on clean runs, docs/precision.md); their
                // gradients are checked, and the update is elementwise in them
                if (rc->optimizer == HP_OPT_ADAMW) res->params[i].pass = 1;
            } else {
                hp_verify_diff_tensor(&res->grads[i], p->name, par.grads + at, ref.grads + at, p->full_numel,
                            o->tol_grad);
                hp_verify_diff_tensor(&res->params[i], p->name, par.params + at, ref.params + at,
                            p->full_numel, o->tol_param);
            }
            if (!res->grads[i].pass) fail(res, "a gradient of step 1");
            if (!res->params[i].pass) fail(res, "a parameter after the step");
            // the worst: by closeness ratio under bf16, by relative error in fp32
            const hp_tensor_diff *g = res->grads, *q = res->params;
            if (bf16 ? !(g[i].ratio <= g[res->worst_grad].ratio) : !(g[i].rel_fro <= g[res->worst_grad].rel_fro))
                res->worst_grad = i;
            if (bf16 ? !(q[i].ratio <= q[res->worst_param].ratio) : !(q[i].rel_fro <= q[res->worst_param].rel_fro))
                res->worst_param = i;
        }
        res->steps = o->steps;
        res->losses = calloc((size_t)o->steps, sizeof(double));
        res->losses_ref = calloc((size_t)o->steps, sizeof(double));
        for (int s = 0; s < o->steps; s++) {
            res->losses[s] = par.losses[s];
            res->losses_ref[s] = ref.losses[s];
            const double e = fabs(par.losses[s] - ref.losses[s]) / fabs(ref.losses[s]);
            if (!(e <= res->traj_worst)) res->traj_worst = e;
        }
        if (!(res->traj_worst <= (bf16 ? hp_verify_tol.traj_bf16 : o->tol_traj))) fail(res, "loss trajectory");
        // routing: a token whose expert set differs from the reference is a flip (near ties
        // are reported here, not hidden in a tolerance)
        res->n_moe_layers = par.n_moe;
        res->tokens = rc->batch * rc->seq_len;
        if (par.n_moe) {
            res->route_flips = calloc((size_t)par.n_moe, sizeof(int));
            const int K = m->top_k;
            for (int l = 0; l < par.n_moe; l++)
                for (int tok = 0; tok < res->tokens; tok++) {
                    const int *a = par.routing + ((size_t)l * res->tokens + tok) * K;
                    const int *b = ref.routing + ((size_t)l * res->tokens + tok) * K;
                    res->route_flips[l] += memcmp(a, b, (size_t)K * sizeof(int)) != 0;
                }
        }
        // traffic of rank 0 against the formulas
        uint64_t pred[HP_G_COUNT][HP_OP_COUNT];
        hp_traffic_predict(m, d, rc, 0, pred);
        // the EP all-to-all from the step's own routing (gathered apart from the counters);
        // routing that differs from the reference is the flip report's business
        if (par.n_moe) hp_traffic_predict_ep(m, d, rc, 0, par.routing, pred);
        res->traffic_ok = 1;
        for (int g = 0; g < HP_G_COUNT; g++)
            for (int op = 0; op < HP_OP_COUNT; op++) {
                if (!par.bytes[g][op] && !pred[g][op]) continue;
                hp_traffic_row *row = &res->traffic[res->n_traffic++];
                row->group = g;
                row->op = op;
                row->counted = par.bytes[g][op];
                row->predicted = pred[g][op];
                if (row->predicted != UINT64_MAX && row->predicted != row->counted)
                    res->traffic_ok = 0;
            }
        if (!res->traffic_ok) fail(res, "bytes moved differ from the traffic formula");
        // the structure check last: a fault the checks above name keeps their name
        for (int k = 0; k < HP_CHECK_COUNT; k++)
            if (res->structure_failures[k]) {
                // (the first mismatch's numbers are printed apart: the failure names the check)
                snprintf(res->structure_text, sizeof res->structure_text, "structure: %s",
                         hp_structure_name((hp_structure_check)k));
                fail(res, res->structure_text);
                break;
            }
        res->seconds = par.seconds;
        res->pp_ranks = par.pp_ranks;   // handed over: freed with the result
        res->pp_cap = par.pp_cap;
        res->pp_timeline = par.pp_timeline;
        par.pp_timeline = NULL;
        res->seconds_ref = ref.seconds;
        hp_params_free(&t);
        free_record(&ref);
        if (bf16) free_record(&f32);
        pass = res->pass;
    }
    free_record(&par);
    hp_mpi_broadcast_int(world, &pass, 1, 0);
    res->pass = pass;
    return pass ? 0 : 1;
}

int hp_verify_summary(MPI_Comm world, const hp_model_config *m, const hp_dims *d,
                      const hp_run_config *rc, FILE *out) {
    int rank;
    MPI_Comm_rank(world, &rank);
    hp_verify_opts o = hp_verify_opts_default(rc);
    hp_verify_result r;
    const int e = hp_verify_run(world, m, d, rc, &o, &r);
    if (rank == 0)
        fprintf(out, "verify: %s (worst gradient %s, %.2e relative)%s%s\n", r.pass ? "PASS" : "FAIL",
                r.n ? r.grads[r.worst_grad].name : "-", r.n ? r.grads[r.worst_grad].rel_fro : 0.0,
                r.failure ? ": " : "", r.failure ? r.failure : "");
    hp_verify_result_free(&r);
    return e;
}

void hp_verify_result_free(hp_verify_result *res) {
    free(res->grads); free(res->params); free(res->losses); free(res->losses_ref);
    free(res->route_flips);
    free(res->pp_timeline);
    memset(res, 0, sizeof *res);
}

void hp_verify_record_from_result(hp_verify_record *rec, const hp_verify_result *r) {
    hp_verify_record_init(rec);
    rec->pass = r->pass;
    rec->world = r->world;
    rec->verified = 1;
    rec->steps = rec->steps_ref = r->steps < HP_VERIFY_MAX_STEPS ? r->steps : HP_VERIFY_MAX_STEPS;
    for (int s = 0; s < rec->steps; s++) {
        rec->losses[s] = r->losses[s];
        rec->losses_ref[s] = r->losses_ref[s];
    }
    rec->loss = r->loss;
    rec->loss_ref = r->loss_ref;
    rec->loss_rel_err = r->loss_err / fabs(r->loss_ref);
    rec->grad_norm = r->grad_norm;
    rec->grad_norm_ref = r->grad_norm_ref;
    rec->traj_worst = r->traj_worst;
    if (r->n) {
        rec->tol_grad = r->grads[0].tol;
        rec->tol_param = r->params[0].tol;
        snprintf(rec->worst_grad, sizeof rec->worst_grad, "%s", r->grads[r->worst_grad].name);
        snprintf(rec->worst_param, sizeof rec->worst_param, "%s", r->params[r->worst_param].name);
        rec->worst_grad_rel = r->grads[r->worst_grad].rel_fro;
        rec->worst_param_rel = r->params[r->worst_param].rel_fro;
    }
    for (int k = 0; k < HP_CHECK_COUNT; k++) {
        rec->structure_checks += (double)r->structure_checks[k];
        rec->structure_mismatches += (double)r->structure_failures[k];
    }
    if (r->bf16) {
        snprintf(rec->precision, sizeof rec->precision, "bfloat16");
        rec->closeness = r->closeness;
        rec->closeness_worst = r->loss_ratio;
        snprintf(rec->closeness_worst_of, sizeof rec->closeness_worst_of, "loss");
        if (!(r->grad_norm_ratio <= rec->closeness_worst)) {
            rec->closeness_worst = r->grad_norm_ratio;
            snprintf(rec->closeness_worst_of, sizeof rec->closeness_worst_of, "grad norm");
        }
        for (int i = 0; i < r->n; i++)
            for (int k = 0; k < 2; k++) {
                const hp_tensor_diff *t = k ? &r->params[i] : &r->grads[i];
                if (t->ratio <= rec->closeness_worst) continue;
                rec->closeness_worst = t->ratio;
                snprintf(rec->closeness_worst_of, sizeof rec->closeness_worst_of, "%s %s",
                         k ? "param" : "grad", t->name);
            }
    }
    rec->init_equal = r->init_equal;
    rec->replica_diff = r->replica_diff;
    rec->traffic_ok = r->traffic_ok;
    uint64_t counted = 0, predicted = 0;
    for (int i = 0; i < r->n_traffic; i++) {
        counted += r->traffic[i].counted;
        // every row is predicted (the EP all-to-all from the step's routing): a row left
        // data-dependent adds nothing, so the totals then differ and say so
        if (r->traffic[i].predicted != UINT64_MAX) predicted += r->traffic[i].predicted;
    }
    rec->bytes_counted = (double)counted;
    rec->bytes_predicted = (double)predicted;
    rec->n_moe_layers = r->n_moe_layers < HP_VERIFY_MAX_MOE ? r->n_moe_layers : HP_VERIFY_MAX_MOE;
    for (int i = 0; i < rec->n_moe_layers; i++) rec->route_flips[i] = r->route_flips[i];
    rec->seconds = r->seconds;
    if (r->failure) snprintf(rec->failure, sizeof rec->failure, "%s", r->failure);
    if (r->pp_timeline) {
        const int row = 1 + r->pp_cap * 5;
        rec->pp_ranks = r->pp_ranks < HP_VERIFY_PP_RANKS ? r->pp_ranks : HP_VERIFY_PP_RANKS;
        for (int p = 0; p < rec->pp_ranks; p++) {
            const float *x = r->pp_timeline + (size_t)p * row;
            rec->pp_n[p] = (int)x[0] < HP_VERIFY_PP_ACTIONS ? (int)x[0] : HP_VERIFY_PP_ACTIONS;
            for (int a = 0; a < rec->pp_n[p]; a++)
                for (int k = 0; k < 5; k++) rec->pp_timeline[p][a][k] = x[1 + a * 5 + k];
        }
    }
}

void hp_verify_print_tensors(FILE *out, const char *title, const hp_tensor_diff *t, int n, int bf16) {
    if (bf16) {   // noise = ||O - F||, dist = ||P - O||, ratio = dist / noise
        fprintf(out, "%s\n  %-40s %12s %12s %12s %9s  %s\n", title, "tensor", "bf16 noise",
                "par vs bf16", "rel frob", "ratio", "verdict");
        for (int i = 0; i < n; i++)
            fprintf(out, "  %-40s %12.3e %12.3e %12.3e %9.3f  %s\n", t[i].name, t[i].noise,
                    t[i].ratio * t[i].noise, t[i].rel_fro, t[i].ratio, t[i].pass ? "ok" : "FAIL");
        return;
    }
    fprintf(out, "%s\n  %-40s %12s %12s %10s  %s\n", title, "tensor", "max |diff|",
            "rel frob", "worst idx", "verdict");
    for (int i = 0; i < n; i++)
        fprintf(out, "  %-40s %12.3e %12.3e %10lld  %s\n", t[i].name, t[i].max_abs, t[i].rel_fro,
                (long long)t[i].worst, t[i].pass ? "ok" : "FAIL");
}

void hp_verify_print(FILE *out, const hp_verify_result *r) {
    fprintf(out, "verify: loss %.9f reference %.9f |diff| %.3e (rel %.3e); grad norm %.6f "
                 "reference %.6f\n", r->loss, r->loss_ref, r->loss_err,
            r->loss_err / fabs(r->loss_ref), r->grad_norm, r->grad_norm_ref);
    fprintf(out, "verify: initial parameters %s the reference init; replicas agree %s\n",
            r->init_equal ? "bit-identical to" : "DIFFER from",
            r->replica_diff == 0.0 ? "bitwise" : "NO");
    if (r->max_norm > 0)
        fprintf(out, "verify: clipping %s: grad norm %.6f %s max-norm %g%s\n",
                r->grad_norm > r->max_norm ? "active" : "inactive", r->grad_norm,
                r->grad_norm > r->max_norm ? ">" : "<=", r->max_norm,
                r->grad_norm > r->max_norm ? " (the parameters compared below were clipped)" : "");
    fprintf(out, "verify: structure (bit for bit, precision.md §4.1):");
    for (int k = 0; k < HP_CHECK_COUNT; k++)
        fprintf(out, "%s %s %llu/%llu", k ? ";" : "", hp_structure_name((hp_structure_check)k),
                (unsigned long long)(r->structure_checks[k] - r->structure_failures[k]),
                (unsigned long long)r->structure_checks[k]);
    uint64_t mismatches = 0;
    for (int k = 0; k < HP_CHECK_COUNT; k++) mismatches += r->structure_failures[k];
    fprintf(out, " %s\n", mismatches ? "MISMATCH" : "ok");
    for (int k = 0; k < HP_CHECK_COUNT; k++)
        if (r->structure_failures[k])
            fprintf(out, "verify: structure: %s: %llu mismatches; first: %s\n",
                    hp_structure_name((hp_structure_check)k),
                    (unsigned long long)r->structure_failures[k], r->structure_first[k]);
    if (r->bf16 && r->float8)   // (docs/float8.md: the loss's noise is its RMS over the steps)
        fprintf(out, "verify: float8 %s closeness (precision.md §4.2, docs/float8.md): ratio = ||parallel - "
                     "one process, same recipe|| / ||that process - one fp32 process||, pass <= %g; loss fp32 "
                     "%.9f, ratio %.3f (noise: RMS over the steps); grad norm fp32 %.6f, ratio %.3f\n",
                hp_float8_recipe_name((hp_float8_recipe)r->float8), r->closeness, r->loss_fp32,
                r->loss_ratio, r->grad_norm_fp32, r->grad_norm_ratio);
    else if (r->bf16)
        fprintf(out, "verify: bf16 closeness (precision.md §4.2): ratio = ||parallel - one bf16 process|| "
                     "/ ||one bf16 process - one fp32 process||, pass <= %g; loss fp32 %.9f, ratio %.3f; "
                     "grad norm fp32 %.6f, ratio %.3f\n", r->closeness, r->loss_fp32, r->loss_ratio,
                r->grad_norm_fp32, r->grad_norm_ratio);
    hp_verify_print_tensors(out, "gradients of step 1 (before clipping; full tensors gathered from every rank):",
                r->grads, r->n, r->bf16);
    hp_verify_print_tensors(out, "parameters after the optimiser step:", r->params, r->n, r->bf16);
    fprintf(out, "loss trajectory (step: parallel / reference):");
    for (int s = 0; s < r->steps; s++)
        fprintf(out, " %d: %.7f/%.7f", s + 1, r->losses[s], r->losses_ref[s]);
    fprintf(out, "\n  worst relative error %.3e\n", r->traj_worst);
    for (int l = 0; l < r->n_moe_layers; l++)
        fprintf(out, "routing, MoE layer %d: %d of %d tokens chose other experts than the "
                     "reference%s\n", l, r->route_flips[l], r->tokens,
                r->route_flips[l] ? " (near-tie flips)" : "");
    fprintf(out, "traffic of rank 0 in step 1 (bytes; counted / formula):\n");
    for (int i = 0; i < r->n_traffic; i++) {
        const hp_traffic_row *t = &r->traffic[i];
        char pred[32];
        if (t->predicted == UINT64_MAX) snprintf(pred, sizeof pred, "data-dependent");
        else snprintf(pred, sizeof pred, "%llu", (unsigned long long)t->predicted);
        fprintf(out, "  %-12s %-15s %12llu / %-14s %s\n", hp_group_name((hp_group_kind)t->group),
                hp_op_name((hp_op_kind)t->op), (unsigned long long)t->counted, pred,
                t->predicted == UINT64_MAX || t->predicted == t->counted ? "ok" : "MISMATCH");
    }
    fprintf(out, "verify: %s (world %d; worst grad %s %.3e; worst param %s %.3e)%s%s\n",
            r->pass ? "PASS" : "FAIL", r->world, r->n ? r->grads[r->worst_grad].name : "-",
            r->n ? r->grads[r->worst_grad].rel_fro : 0.0, r->n ? r->params[r->worst_param].name : "-",
            r->n ? r->params[r->worst_param].rel_fro : 0.0, r->failure ? ": " : "",
            r->failure ? r->failure : "");
}
