// launch.c - the torchrun role: notice an MPI launcher, or re-run this very command under one.
// defines: tool_launch_under_mpi, tool_launch_self
//
// `hp run --nproc 4 ...` outside any launcher forks and execs the launcher of the MPI that hp
// was built with (CMake's MPIEXEC_EXECUTABLE, compiled in as HP_MPIEXEC_BUILT; HP_MPIRUN
// names another), with that MPI's flags:
//   Open MPI: orterun [--allow-run-as-root] BINDING -np 4
//             -x OPENBLAS_NUM_THREADS=1 -x HP_LAUNCHED=1 [-x OPENBLAS_CORETYPE=SkylakeX
//             -x HP_BLAS_CORE_CHOSEN=...] /proc/self/exe run --nproc 4 ...
//   MPICH:    mpiexec.hydra -n 4 BINDING -genv OPENBLAS_NUM_THREADS 1 -genv ... ...
// BINDING: ranks that fit on the cores this process may use (ranks x BLAS threads <= cores,
// launch_cores.c) are bound, each to cores of its own, so no two ranks share a core and none
// wanders: Open MPI `--bind-to core` (`--map-by slot:PE=T` for T threads a rank), Hydra
// `-bind-to core[:T]`. More than fit: Open MPI `--oversubscribe --bind-to none`, Hydra
// `-bind-to none`, and one line says so ("hp: 4 ranks on 2 cores: oversubscribed, ranks not
// bound"): the step times of such a run measure the sharing, not the layout.
// waits, and returns its exit status. Its stderr passes through tool_launcher_stderr_filter:
// a rank's ordinary non-zero exit ends with hp's own line, not the launcher's banner. Not the `mpiexec` first on PATH: with Open MPI and
// MPICH both installed that is whichever Debian's alternatives point to, and one MPI's
// launcher cannot start the other's ranks.
// The re-executed ranks see the launcher's environment and do not launch again.
// OPENBLAS_NUM_THREADS=1 keeps N ranks x N BLAS threads from oversubscribing the cores;
// a value the user already set is passed through unchanged. OPENBLAS_CORETYPE: the kernels
// this CPU deserves when OpenBLAS would fall back to generic ones (hyperpar/blas.h), or the
// user's own value. HP_GEMM, when set, reaches every rank too (the GEMM backend, gemm_choice.h).
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>
#include <mpi.h>
#include "launch.h"
#include "hyperpar/blas.h"
#include "hyperpar/dims.h"   // HP_EXIT_FAIL
#include "kernels/gemm.h"

#ifndef HP_MPIEXEC_BUILT   // set by CMakeLists.txt; a build without it takes the usual names
#define HP_MPIEXEC_BUILT ""
#endif

int tool_launch_under_mpi(void) {
    static const char *const vars[] = {
        "HP_LAUNCHED",                                  // set by tool_launch_self: never recurse
        "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK", // Open MPI
        "PMI_SIZE", "PMI_RANK",                         // MPICH / Hydra, Intel MPI
        "PMIX_RANK",                                    // PMIx (Open MPI 5, srun --mpi=pmix)
        "SLURM_PROCID",                                 // srun
        NULL,
    };
    for (int i = 0; vars[i]; i++) {
        const char *v = getenv(vars[i]);
        if (v && *v) return 1;
    }
    return 0;
}

// 1 when the MPI library we link is Open MPI (it decides the launcher's flags).
static int is_open_mpi(void) {
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    // MPI_Get_library_version may be called before MPI_Init (MPI-3 §8.1.1).
    if (MPI_Get_library_version(version, &len) != MPI_SUCCESS) return 1;
    return strstr(version, "Open MPI") != NULL;
}

// The flavour of a launcher named by HP_MPIRUN: 1 Open MPI, 0 MPICH / Hydra, -1 unknown
// (then the linked library's flavour decides).
static int launcher_is_open_mpi(const char *path) {
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    if (strstr(base, "mpich") || strstr(base, "hydra")) return 0;
    if (strstr(base, "openmpi") || strstr(base, "orterun") || strstr(base, "prterun")) return 1;
    return -1;
}

// One line, once, from the process that launches: the ranks will share cores.
static void say_oversubscribed(int nproc, const tool_binding *b) {
    if (b->threads > 1)
        fprintf(stderr, "hp: %d ranks x %d BLAS threads on %d cores: oversubscribed, ranks not bound\n",
                nproc, b->threads, b->cores);
    else
        fprintf(stderr, "hp: %d ranks on %d cores: oversubscribed, ranks not bound\n", nproc, b->cores);
}

int tool_launch_self(int nproc, int argc, char **argv) {
    static char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) exe[n] = '\0';
    else snprintf(exe, sizeof exe, "%s", argv[0]);

    const char *override = getenv("HP_MPIRUN");
    const int lib_ompi = is_open_mpi();
    int ompi = lib_ompi;
    const char *launcher;
    if (override && *override) {
        launcher = override;
        const int named = launcher_is_open_mpi(override);
        if (named >= 0) ompi = named;
    } else {
        launcher = *HP_MPIEXEC_BUILT ? HP_MPIEXEC_BUILT : (ompi ? "mpirun" : "mpiexec");
    }
    const char *blas = getenv("OPENBLAS_NUM_THREADS");
    if (!blas || !*blas) blas = "1";
    // every rank runs the kernels this CPU deserves (or the user's OPENBLAS_CORETYPE)
    hp_blas_core_env();
    hp_gemm_omp_env();   // (and oneDNN's OpenMP threads sleep between products, gemm.h)
    const char *omp = getenv("OMP_WAIT_POLICY");
    const char *core = getenv("OPENBLAS_CORETYPE");
    const char *chosen = getenv("HP_BLAS_CORE_CHOSEN");
    if (core && !*core) core = NULL;
    if (chosen && !*chosen) chosen = NULL;

    char np[32];
    snprintf(np, sizeof np, "%d", nproc);
    const char *gemm = getenv("HP_GEMM");
    if (gemm && !*gemm) gemm = NULL;
    static char blas_kv[64], core_kv[96], chosen_kv[192], gemm_kv[64], omp_kv[64];
    snprintf(omp_kv, sizeof omp_kv, "OMP_WAIT_POLICY=%s", omp ? omp : "PASSIVE");
    snprintf(blas_kv, sizeof blas_kv, "OPENBLAS_NUM_THREADS=%s", blas);
    if (core) snprintf(core_kv, sizeof core_kv, "OPENBLAS_CORETYPE=%s", core);
    if (chosen) snprintf(chosen_kv, sizeof chosen_kv, "HP_BLAS_CORE_CHOSEN=%s", chosen);
    if (gemm) snprintf(gemm_kv, sizeof gemm_kv, "HP_GEMM=%s", gemm);

    const tool_binding bind = tool_launch_binding(nproc, atoi(blas), tool_cores_available());
    if (!bind.bind) say_oversubscribed(nproc, &bind);
    static char map_pe[48], hydra_bind[48];
    snprintf(map_pe, sizeof map_pe, "slot:PE=%d", bind.threads);
    snprintf(hydra_bind, sizeof hydra_bind, bind.threads > 1 ? "core:%d" : "core", bind.threads);

    // launcher flags + exe + argv[1..argc) + NULL
    int cap = argc + 28, k = 0;
    char **args = calloc((size_t)cap, sizeof *args);
    if (!args) { fprintf(stderr, "hp: out of memory\n"); return HP_EXIT_FAIL; }
    args[k++] = (char *)launcher;
    if (ompi) {
        if (geteuid() == 0) args[k++] = "--allow-run-as-root";
        if (!bind.bind) {
            args[k++] = "--oversubscribe";
            args[k++] = "--bind-to"; args[k++] = "none";
        } else {
            if (bind.threads > 1) { args[k++] = "--map-by"; args[k++] = map_pe; }
            args[k++] = "--bind-to"; args[k++] = "core";
        }
        args[k++] = "-np"; args[k++] = np;
        args[k++] = "-x"; args[k++] = blas_kv;
        args[k++] = "-x"; args[k++] = "HP_LAUNCHED=1";
        args[k++] = "-x"; args[k++] = omp_kv;
        if (core) { args[k++] = "-x"; args[k++] = core_kv; }
        if (chosen) { args[k++] = "-x"; args[k++] = chosen_kv; }
        if (gemm) { args[k++] = "-x"; args[k++] = gemm_kv; }
    } else {
        args[k++] = "-n"; args[k++] = np;
        args[k++] = "-bind-to"; args[k++] = bind.bind ? hydra_bind : "none";
        args[k++] = "-genv"; args[k++] = "OPENBLAS_NUM_THREADS"; args[k++] = (char *)blas;
        args[k++] = "-genv"; args[k++] = "HP_LAUNCHED"; args[k++] = "1";
        args[k++] = "-genv"; args[k++] = "OMP_WAIT_POLICY"; args[k++] = omp ? (char *)omp : "PASSIVE";
        if (core) { args[k++] = "-genv"; args[k++] = "OPENBLAS_CORETYPE"; args[k++] = (char *)core; }
        if (chosen) { args[k++] = "-genv"; args[k++] = "HP_BLAS_CORE_CHOSEN"; args[k++] = (char *)chosen; }
        if (gemm) { args[k++] = "-genv"; args[k++] = "HP_GEMM"; args[k++] = (char *)gemm; }
    }
    args[k++] = exe;
    for (int i = 1; i < argc; i++) args[k++] = argv[i];
    args[k] = NULL;

    fflush(stdout);
    fflush(stderr);
    // the launcher's stderr comes back through a pipe, less its exit-code banner (launch_banner.c)
    int err_pipe[2];
    if (pipe(err_pipe) != 0) err_pipe[0] = err_pipe[1] = -1;
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "hp: cannot fork to start %s: %s\n", launcher, strerror(errno));
        free(args);
        return HP_EXIT_FAIL;
    }
    if (pid == 0) {
        if (err_pipe[1] >= 0) {
            dup2(err_pipe[1], STDERR_FILENO);
            close(err_pipe[0]);
            close(err_pipe[1]);
        }
        setenv("HP_LAUNCHED", "1", 1);           // also reaches ranks of launchers without -x
        setenv("OPENBLAS_NUM_THREADS", blas, 0);
        execvp(launcher, args);
        fprintf(stderr, "hp: cannot run '%s' to launch %d ranks: %s (%s)\n", launcher, nproc,
                strerror(errno), override && *override ? "HP_MPIRUN names it"
                : lib_ompi ? "the launcher of the Open MPI hp was built with: openmpi-bin"
                           : "the launcher of the MPICH hp was built with: mpich");
        _exit(127);
    }
    free(args);
    if (err_pipe[1] >= 0) {
        close(err_pipe[1]);
        // Ctrl-C reaches the launcher, which ends the ranks; this process waits to say how
        signal(SIGINT, SIG_IGN);
        signal(SIGQUIT, SIG_IGN);
        FILE *err_in = fdopen(err_pipe[0], "r");
        if (err_in) {
            tool_launcher_stderr_filter(err_in, stderr);
            fclose(err_in);
        } else {
            close(err_pipe[0]);
        }
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) {
            fprintf(stderr, "hp: waiting for %s failed: %s\n", launcher, strerror(errno));
            return HP_EXIT_FAIL;
        }
    }
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    if (WIFSIGNALED(status)) {
        fprintf(stderr, "hp: %s was killed by signal %d\n", launcher, WTERMSIG(status));
        return HP_EXIT_FAIL;
    }
    return HP_EXIT_FAIL;
}
