// example_common.h - what every example shares: the degrees and model from argv (the "mesh
// factory": flags -> validated hp_dims for the world the job was started with), a one-line
// check of a tensor against its single-process reference, and the short summary of a
// hp_verify_run result. Only the public headers include/hyperpar/*.h are used.
// defines: ex_args, ex_parse, ex_validate, ex_mesh, ex_print_mesh, ex_print_groups, ex_rel_err,
//          ex_compare, ex_train, ex_verify
#ifndef EXAMPLE_COMMON_H
#define EXAMPLE_COMMON_H
#include <stddef.h>
#include "hyperpar/comm.h"
#include "hyperpar/config.h"
#include "hyperpar/dims.h"
#include "hyperpar/params.h"
#include "hyperpar/train.h"
#include "hyperpar/verify.h"

typedef struct ex_args {
    hp_dims         dims;     // --dp-replicate --dp-shard --cp --tp --ep --etp --sp/--no-sp
    hp_model_config model;    // --model tiny | tiny-moe | ...
    hp_run_config   run;      // --cp-rotate allgather|ring --dispatcher alltoall|allgather
                              // --optimizer sgd|adamw --seq-len N --batch N
    int verbose;              // --verbose: print every tensor of the verification
} ex_args;

// Parses the flags above (defaults: every degree 1, dp_shard -1, model `default_model`).
// Bad flags -> one line on stderr (rank 0 only) and HP_EXIT_CONFIG; 0 on success.
int ex_parse(ex_args *a, int argc, char **argv, const char *default_model, int rank);
// hp_dims_validate for `world` ranks (mesh_only: the mesh rules alone, for programs that do not
// run a->model): on a bad configuration rank 0 prints the rule and every rank gets
// HP_EXIT_CONFIG (so every rank exits the same way, none is left waiting).
int ex_validate(ex_args *a, int world, int rank, int mesh_only);
// The mesh: every group of mesh.h as an MPI communicator, deterministic reductions.
hp_comm *ex_mesh(const ex_args *a);
// "world 4 = R 1 x S 2 x C 1 x T 2 x P 1; fsdp = S*C = 2; ..." on rank 0.
void ex_print_mesh(const ex_args *a, int rank);
// Every group of each kind, e.g. "  ep      {0,1} {2,3}", on rank 0 (mesh.h is a pure function).
void ex_print_groups(const ex_args *a, const hp_group_kind *kinds, int n_kinds, int rank);

// Relative Frobenius error ||a - ref|| / ||ref|| of n floats (ref all zero: ||a - ref||).
double ex_rel_err(const float *a, const float *ref, size_t n);
// Checks a against ref; prints "  name  rel err 1.2e-08  ok" when print; returns 1 when
// the error is <= tol.
int ex_compare(const char *name, const float *a, const float *ref, size_t n, double tol, int print);

// ---- the toy MLP of examples 01 and 02 (PyTorch's tensor_parallel_example shape) ----
// The same numbers on every rank: keyed by (seed 7, tensor name, index), so a shard is
// filled without making the whole tensor.
void ex_fill(float *x, size_t n, const char *name, float scale);
void ex_relu_forward(float *h, const float *a, size_t n);
void ex_relu_backward(float *da, const float *dh, const float *a, size_t n);
// The part of loss = 0.5 * sum((y - target)^2) / rows_total from these n values;
// dy = (y - target) / rows_total.
float ex_mse(float *dy, const float *y, const float *target, size_t n, int rows_total);

// Trains `steps` steps on the public API (hp_trainer_init, hp_trainer_step: one loss line per
// step on rank 0), then gathers the parameters to full tensors (hp_trainer_gather_params) and
// prints where `param` lives: its full shape, its placement on each mesh axis, and rank 0's
// local and FSDP-shard shapes. Collective; returns 0, 1 (a non-finite step) or 2 (set-up).
int ex_train(const ex_args *a, int rank, int steps, const char *param);

// Runs hp_verify_run (collective) and prints its result on rank 0 (a summary, or every
// tensor with --verbose). Returns 0 on pass, HP_EXIT_FAIL otherwise, on every rank.
int ex_verify(const ex_args *a, int rank);

#endif
