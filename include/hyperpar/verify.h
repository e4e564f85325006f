// verify.h - proves a parallel configuration computes the single-process step: gathers the
// loss, every gradient of step 1 and every parameter after the step to full tensors,
// runs the reference (every degree 1, same seed, same global batch) and compares per tensor.
// defines: hp_verify_opts, hp_tensor_diff, hp_verify_result, hp_verify_run, hp_verify_print,
//          hp_verify_diff_tensor(_bf16), hp_verify_closeness_ratio, hp_verify_print_tensors,
//          hp_verify_record_from_result (the record, its JSON and the checks: verify_record.h)
//
//   hp_verify_opts o = hp_verify_opts_default();
//   hp_verify_result r;
//   hp_verify_run(MPI_COMM_WORLD, &model, &dims, &run, &o, &r);   // collective
//   if (rank == 0) hp_verify_print(stdout, &r);
//   hp_verify_record rec;                       // the result as a file holds it
//   hp_verify_record_from_result(&rec, &r);
//   hp_verify_record_write(&rec, "result.json");
//   hp_verify_result_free(&r);
#ifndef HYPERPAR_VERIFY_H
#define HYPERPAR_VERIFY_H
#include <mpi.h>
#include <stdio.h>
#include "comm.h"
#include "config.h"
#include "dims.h"
#include "plan.h"
#include "structure.h"
#include "traffic.h"   // hp_traffic_predict(_ep), declared here before
#include "verify_record.h"

typedef struct hp_verify_opts {
    int    steps;        // length of the loss trajectory compared (>= 1)
    double tol_loss;     // |a-b| <= tol_loss * |ref| for the loss of step 1
    double tol_grad;     // relative Frobenius error per gradient tensor
    double tol_param;    // relative Frobenius error per parameter after the step
    double tol_traj;     // relative error of each loss of the trajectory
    const char *dump_dir;   // write full tensors of the parallel run (NULL: none)
    const float *load_full; // start from these full parameters (NULL: seeded init)
} hp_verify_opts;

// steps 5 and the tolerances of hp_verify_tol (param_adamw for parameters after AdamW)
hp_verify_opts hp_verify_opts_default(const hp_run_config *rc);

typedef struct hp_tensor_diff {
    char    name[64];
    double  max_abs;     // max |a - ref|
    double  rel_fro;     // ||a - ref|| / ||ref||
    int64_t worst;       // flat index of the max |a - ref|
    double  tol;
    int     pass;
    // under bf16 (closeness, precision.md §4.2): noise = ||O - F|| (one bf16 process against one
    // fp32 process), ratio = ||P - O|| / noise (0/0 = 0, x/0 = inf); pass is ratio <= tol
    double  noise, ratio;
} hp_tensor_diff;

typedef struct hp_traffic_row {
    int      group, op;   // hp_group_kind, hp_op_kind
    uint64_t counted;     // bytes this rank (rank 0) moved in step 1
    uint64_t predicted;   // what docs/traffic.md's formula says; UINT64_MAX: data-dependent
} hp_traffic_row;

typedef struct hp_verify_result {
    int     pass;
    int     world;
    // the structure check (structure.h) over the parallel run, summed over the ranks; the first
    // failure's text from the lowest failing rank
    uint64_t structure_checks[HP_CHECK_COUNT], structure_failures[HP_CHECK_COUNT];
    char    structure_first[HP_CHECK_COUNT][200];
    char    structure_text[260];                // the failure line that names the first one
    int     bf16;                               // closeness check (tensor ratio <= closeness)
    int     float8;                             // the float8 recipe (hyperpar/float8.h; 0 off)
    double  closeness;                          // its c
    double  loss_fp32, grad_norm_fp32;          // F's (bf16 only)
    double  loss_ratio, grad_norm_ratio;        // their closeness ratios
    double  loss, loss_ref, loss_err;          // step 1
    double  grad_norm, grad_norm_ref;
    double  max_norm;                           // the run's clipping threshold (<= 0: off)
    int     n;                                  // tensors
    hp_tensor_diff *grads, *params;
    int     worst_grad, worst_param;            // indices of the worst relative errors
    int     init_equal;                         // initial parameters bit-identical to reference
    double  replica_diff;                       // largest disagreement between replicas
    int     steps;
    double *losses, *losses_ref;                // [steps]
    double  traj_worst;                         // worst relative loss error over the steps
    int     n_moe_layers, tokens;               // route-flip report
    int    *route_flips;                        // [n_moe_layers] tokens whose expert set differs
    int     n_traffic;
    hp_traffic_row traffic[HP_G_COUNT * HP_OP_COUNT];
    int     traffic_ok;
    double  seconds, seconds_ref;
    const char *failure;                        // first failed check, or NULL
    char    failure_text[128];                  // room for a failure that names numbers
    int     pp_ranks, pp_cap;                   // pipeline: the last step's timeline of each pp
    float  *pp_timeline;                        //   rank: [pp_ranks][1 + pp_cap*5] (count, rows
                                                //   of hp_trainer_pp_timeline); NULL without pp
    hp_plan_measured measured;                  // this rank's parallel run (hp_trainer_measured;
                                                //   traffic: the last step, step 1 if only one)
} hp_verify_result;

// Collective over world. Fills *res on world rank 0 (others get pass only). Returns 0 when
// every check passes, HP_EXIT_FAIL otherwise.
int  hp_verify_run(MPI_Comm world, const hp_model_config *m, const hp_dims *d,
                   const hp_run_config *rc, const hp_verify_opts *o, hp_verify_result *res);
void hp_verify_print(FILE *out, const hp_verify_result *res);
// The short form for programs: verifies with the default options and prints on world rank 0
// one line "verify: PASS|FAIL (worst gradient NAME, E relative)". Collective; returns 0 or
// HP_EXIT_FAIL like hp_verify_run.
int  hp_verify_summary(MPI_Comm world, const hp_model_config *m, const hp_dims *d,
                       const hp_run_config *rc, FILE *out);
// The verifier's per-tensor measures, for any two full tensors (hp compare uses them too):
// max |a - ref|, its index and ||a - ref|| / ||ref|| (NaN: inf), pass = rel_fro <= tol.
void hp_verify_diff_tensor(hp_tensor_diff *d, const char *name, const float *a, const float *ref,
                           int64_t n, double tol);
// Closeness (precision.md §4.2): a = P, ref = O, fp32 = F; pass = ||P - O|| / noise <= c, noise
// = ||O - F|| but at least one fp32 ulp an element.
void hp_verify_diff_tensor_bf16(hp_tensor_diff *d, const char *name, const float *a, const float *ref,
                                const float *fp32, int64_t n, double c);
// dist / noise, 0/0 = 0, x/0 = inf, NaN = inf.
double hp_verify_closeness_ratio(double dist, double noise);
// The verifier's table of t[0..n): one row per tensor and its verdict (bf16: the closeness columns).
void hp_verify_print_tensors(FILE *out, const char *title, const hp_tensor_diff *t, int n, int bf16);
void hp_verify_result_free(hp_verify_result *res);
// The summary of res that the JSON file holds (rank 0's result; world from res): verified = 1,
// the step-1 numbers, the worst tensors, the byte totals, the route flips, the pp timeline.
void hp_verify_record_from_result(hp_verify_record *rec, const hp_verify_result *res);
// Adds what a run measured (its "params_total", "memory", "traffic") and, when chk is not
// NULL, the plan check's verdict to rec (plan_check.c).
void hp_verify_record_add_measured(hp_verify_record *rec, const hp_plan_measured *x,
                                   const hp_plan_check *chk);

#endif
