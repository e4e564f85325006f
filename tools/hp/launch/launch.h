// launch.h - the launcher (the torchrun role): `hp run --nproc N` outside MPI re-executes itself
// under the launcher of the MPI hp was built with (launch.c), the cores it may bind ranks to
// (launch_cores.c), and the filter of that launcher's stderr (launch_banner.c).
// defines: tool_launch_*, tool_cores_available, tool_binding, tool_launcher_*
#ifndef HP_TOOL_LAUNCH_H
#define HP_TOOL_LAUNCH_H
#include <stdio.h>

// Launch: 1 if this process runs under an MPI launcher (mpirun/srun/mpiexec env vars).
int  tool_launch_under_mpi(void);
// Re-executes the current command on nproc ranks under the launcher of the MPI hp was built
// with (HP_MPIRUN names another): Open MPI's with -x, MPICH's Hydra with -genv; every rank gets
// OPENBLAS_NUM_THREADS (1 unless set) and the BLAS core hp chose. Ranks that fit on this
// machine's cores are bound to them (Open MPI --bind-to core, Hydra -bind-to core); more ranks
// than cores run oversubscribed and unbound, said once in one line on stderr. The launcher's
// stderr passes through tool_launcher_stderr_filter. Returns the launcher's exit status, or one
// line and HP_EXIT_FAIL when it cannot start.
int  tool_launch_self(int nproc, int argc, char **argv);
// The physical cores this process may run on: its affinity mask folded into cores through sysfs
// (every CPU of the mask where sysfs has no topology); >= 1 (launch_cores.c).
int  tool_cores_available(void);
// Whether nproc ranks of threads_per_rank BLAS threads each fit on cores: bind = 1 when
// nproc * threads <= cores (each rank then gets `threads` cores of its own).
typedef struct tool_binding { int bind, threads, cores; } tool_binding;
tool_binding tool_launch_binding(int nproc, int threads_per_rank, int cores);
// The launcher's stderr copied from in to out (launch_banner.c), less:
//  - the framed banner Open MPI and MPICH add when a rank exits non-zero (hp has said why): 1
//    from tool_launcher_banner_is_exit_code when a framed block is that banner;
//  - Open MPI's MPI_ABORT banner when a rank's own "hp: " line came first (hp has said why);
//  - Open MPI's teardown error logs (ORTE_ERROR_LOG, PMIx errors) once the job is ending;
// and a killed rank's framed block becomes its one line, without Open MPI's "with PID 0".
int  tool_launcher_banner_is_exit_code(const char *block);
void tool_launcher_stderr_filter(FILE *in, FILE *out);

#endif
