// launch.c - the torchrun role: notice an MPI launcher, or re-run this very command under one.
// defines: hp_launch_under_mpi, hp_launch_self
//
// `hp run --nproc 4 ...` outside any launcher forks and execs
//   mpirun [--allow-run-as-root] --oversubscribe --bind-to none -np 4
//          -x OPENBLAS_NUM_THREADS=1 -x HP_LAUNCHED=1 /proc/self/exe run --nproc 4 ...
// (MPICH: mpiexec -n 4 -bind-to none -genv NAME VALUE ...), waits, and returns its exit status.
// The re-executed ranks see the launcher's environment and do not launch again.
// OPENBLAS_NUM_THREADS=1 keeps N ranks x N BLAS threads from oversubscribing the cores;
// a value the user already set is passed through unchanged.
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>
#include <mpi.h>
#include "cli.h"

int hp_launch_under_mpi(void) {
    static const char *const vars[] = {
        "HP_LAUNCHED",                                  // set by hp_launch_self: never recurse
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

int hp_launch_self(int nproc, int argc, char **argv) {
    static char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) exe[n] = '\0';
    else snprintf(exe, sizeof exe, "%s", argv[0]);

    const int ompi = is_open_mpi();
    const char *override = getenv("HP_MPIRUN");
    const char *launcher = (override && *override) ? override : (ompi ? "mpirun" : "mpiexec");
    const char *blas = getenv("OPENBLAS_NUM_THREADS");
    if (!blas || !*blas) blas = "1";

    char np[32];
    snprintf(np, sizeof np, "%d", nproc);
    static char blas_kv[64];
    snprintf(blas_kv, sizeof blas_kv, "OPENBLAS_NUM_THREADS=%s", blas);

    // launcher flags + exe + argv[1..argc) + NULL
    int cap = argc + 24, k = 0;
    char **args = calloc((size_t)cap, sizeof *args);
    if (!args) { fprintf(stderr, "hp: out of memory\n"); return HP_EXIT_FAIL; }
    args[k++] = (char *)launcher;
    if (ompi) {
        if (geteuid() == 0) args[k++] = "--allow-run-as-root";
        args[k++] = "--oversubscribe";
        args[k++] = "--bind-to"; args[k++] = "none";
        args[k++] = "-np"; args[k++] = np;
        args[k++] = "-x"; args[k++] = blas_kv;
        args[k++] = "-x"; args[k++] = "HP_LAUNCHED=1";
    } else {
        args[k++] = "-n"; args[k++] = np;
        args[k++] = "-bind-to"; args[k++] = "none";
        args[k++] = "-genv"; args[k++] = "OPENBLAS_NUM_THREADS"; args[k++] = (char *)blas;
        args[k++] = "-genv"; args[k++] = "HP_LAUNCHED"; args[k++] = "1";
    }
    args[k++] = exe;
    for (int i = 1; i < argc; i++) args[k++] = argv[i];
    args[k] = NULL;

    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "hp: cannot fork to start %s: %s\n", launcher, strerror(errno));
        free(args);
        return HP_EXIT_FAIL;
    }
    if (pid == 0) {
        setenv("HP_LAUNCHED", "1", 1);           // also reaches ranks of launchers without -x
        setenv("OPENBLAS_NUM_THREADS", blas, 0);
        execvp(launcher, args);
        fprintf(stderr, "hp: cannot run '%s' to launch %d ranks: %s (install Open MPI: openmpi-bin)\n",
                launcher, nproc, strerror(errno));
        _exit(127);
    }
    free(args);
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
