// blas.h - which BLAS kernels this process runs, and the right ones for this CPU.
// defines: hp_blas_info, hp_blas_info_get, hp_blas_info_line, hp_blas_core_env,
//          hp_blas_core_reexec, hp_blas_core_isa, hp_blas_conditions_text
//
// OpenBLAS picks its kernels once, when the library loads, from the CPU model it knows.
// A newer CPU than the OpenBLAS release falls back to a generic core: OpenBLAS 0.3.21 on a
// Xeon of family 6 model 207 (AVX-512, AMX) runs its SSE3 "Prescott" kernels at a third of
// the speed of its "SkylakeX" ones. The only switch is OPENBLAS_CORETYPE, read at load time,
// so a program that wants the right kernels sets it and starts itself again:
//
//   int main(int argc, char **argv) {
//       hp_blas_core_reexec(argv);     // first, before MPI_Init: may exec this program anew
//       MPI_Init(&argc, &argv);
//       char line[160];
//       hp_blas_info_line(line, sizeof line);
//       printf("blas %s\n", line);
//       // "blas OpenBLAS 0.3.21, core Cooperlake (chosen by hp: cpu has avx512f, avx512bf16), 1 thread"
//
// A launcher that starts ranks calls hp_blas_core_env() and passes OPENBLAS_CORETYPE and
// HP_BLAS_CORE_CHOSEN on to every rank (mpirun -x, mpiexec -genv).
// A value of OPENBLAS_CORETYPE set by the user or the environment is never changed.
#ifndef HYPERPAR_BLAS_H
#define HYPERPAR_BLAS_H
#include <stddef.h>

typedef struct {
    char blas[48];     // the library and its version: "OpenBLAS 0.3.21"
    char core[32];     // the kernels this process runs: "SkylakeX", "Prescott"
    char origin[128];  // why these kernels: "chosen by hp: cpu has avx512f",
                       // "OPENBLAS_CORETYPE=Haswell set by the user", "OpenBLAS's own choice"
    char cpu_best[32]; // the best core this BLAS has for this CPU ("" when unknown)
    int  threads;      // BLAS threads (openblas_get_num_threads)
} hp_blas_info;

// Fills *info for this process.
void hp_blas_info_get(hp_blas_info *info);

// One line: "OpenBLAS 0.3.21, core SkylakeX (chosen by hp: cpu has avx512f), 1 thread".
// Returns buf.
char *hp_blas_info_line(char *buf, size_t n);

// The vector instruction set an OpenBLAS core's kernels use: "avx512" (SkylakeX, Cooperlake,
// SapphireRapids), "avx2" (Haswell, Zen: AVX2 + FMA), "avx" (Sandybridge, Bulldozer ...) or
// "sse" (Prescott and the other generic cores); NULL for a name this table does not know. The
// peak a step is measured against is the peak of these kernels, not of the CPU's widest vectors.
const char *hp_blas_core_isa(const char *core);

// 1 when the OpenBLAS core this process runs uses narrower vectors than this CPU's widest
// (cpu_best above: a preset OPENBLAS_CORETYPE, or a BLAS with one older core built in).
int hp_blas_core_below_cpu(void);

// The conditions a bitwise promise holds under, as one phrase: "OpenBLAS 0.3.21, core Haswell,
// 1 BLAS thread per rank" (threads_min == threads_max), else "..., 1-2 BLAS threads per rank".
// Returns buf.
char *hp_blas_conditions_text(char *buf, size_t n, const char *blas, const char *core,
                              int threads_min, int threads_max);

// When OPENBLAS_CORETYPE is unset (or empty), the loaded OpenBLAS runs a generic or older core
// than this CPU supports (cpuid: AVX, AVX2 + FMA, AVX-512), and this OpenBLAS has a better
// one: sets OPENBLAS_CORETYPE to it and HP_BLAS_CORE_CHOSEN to "<core>:<cpu features>" (how a
// later process knows hp chose it), and returns 1. The kernels of THIS process stay the old
// ones: only processes started after the call see the variable. Returns 0 otherwise.
int hp_blas_core_env(void);

// hp_blas_core_env(), and when it returned 1, execv("/proc/self/exe", argv): the program
// starts again with the right kernels and the call never returns. It cannot loop: the new
// process finds OPENBLAS_CORETYPE set. On exec failure one line goes to stderr and the
// program continues with the kernels it has. Call it before MPI_Init (or any thread start).
void hp_blas_core_reexec(char **argv);

#endif
