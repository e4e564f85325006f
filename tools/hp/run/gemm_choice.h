// gemm_choice.h - which GEMM backend (src/kernels/gemm.h) `hp run` and `hp bench` run, and the
// first line that names it.
// defines: tool_gemm_name, tool_gemm_apply, tool_first_line, tool_reexec
//
//   const char *gemm;
//   if ((e = tool_gemm_name(&cli, &gemm))) return e;    // before any rank starts: exit 2
//   MPI_Init(...);
//   char why[160], line[512];
//   tool_gemm_apply(gemm, &cli, MPI_COMM_WORLD, why, sizeof why);
//   if (rank == 0) puts(tool_first_line(line, sizeof line));
//   // "hp: blas OpenBLAS 0.3.21, core Haswell (...), 1 thread | gemm: onednn 2.6.3, isa avx512_core_bf16, 1 thread"
#ifndef HP_TOOL_GEMM_CHOICE_H
#define HP_TOOL_GEMM_CHOICE_H
#include <stddef.h>
#include <mpi.h>
#include "cli/cli.h"

// --gemm, else the environment's HP_GEMM (so hp matrix and scripts can switch), else
// "default". A bad HP_GEMM: one line naming the rule, HP_EXIT_CONFIG; else 0 and *name
// "openblas", "onednn", "auto" or "default".
int tool_gemm_name(const tool_cli *cli, const char **name);

// Sets the backend of this process. default: hp_gemm_default_backend for cli's step (its
// model, batch, sequence and precision); auto: rank 0 of comm times both
// (hp_gemm_auto_measure). Either way rank 0 decides and broadcasts, so every rank of a job runs
// the same one. why gets auto's reason, or default's when it picked oneDNN ("" otherwise: the
// classic OpenBLAS goes unsaid). Collective over comm.
void tool_gemm_apply(const char *name, const tool_cli *cli, MPI_Comm comm, char *why, size_t n);

// "hp: blas <hp_blas_info_line> | <hp_gemm_info_line>": the first line of hp run and hp bench.
char *tool_first_line(char *buf, size_t n);

// Before MPI_Init: what the libraries read when they load - the BLAS core this CPU deserves
// (hp_blas_core_env) and oneDNN's OpenMP wait policy (hp_gemm_omp_env) - and, when either was
// set now, this program started again with them (as hp_blas_core_reexec does for the core).
void tool_reexec(char **argv);

#endif
