// test_launch.c - the launcher (tools/hp/launch/launch.c): run outside MPI, it re-executes itself
// under mpirun with 2 ranks and gets the ranks' exit status back; inside, each rank checks it
// sees a 2-rank world, the same arguments, OPENBLAS_NUM_THREADS and OMP_WAIT_POLICY (the
// launcher's, PASSIVE unless the user set one: oneDNN's OpenMP threads sleep between products).
//   test_launch ok     ranks exit 0 -> tool_launch_self returns 0
//   test_launch exit7  ranks exit 7 -> tool_launch_self returns 7
//   test_launch filter the launcher's stderr filter (launch_banner.c) from stdin to stdout: the
//                      CTests launch_filter_* feed it recorded launcher output
//                      (tests/launch_filter/NAME.err) and compare with NAME.want
//   test_launch bind   the binding rule (launch_cores.c) on fixed counts, and this machine's
//                      core count printed
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <mpi.h>
#include "launch/launch.h"

// The rule: bound when ranks x threads fit on the cores, else oversubscribed and unbound.
static int binding_checks(void) {
    static const struct { int nproc, threads, cores, bind; } cases[] = {
        { 2, 1, 2, 1 }, { 1, 1, 1, 1 }, { 4, 1, 2, 0 }, { 3, 1, 2, 0 }, { 2, 2, 4, 1 },
        { 2, 2, 3, 0 }, { 1, 2, 2, 1 }, { 8, 1, 64, 1 }, { 2, 0, 2, 1 },   // threads 0: 1
    };
    int fail = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const tool_binding b = tool_launch_binding(cases[i].nproc, cases[i].threads, cases[i].cores);
        if (b.bind != cases[i].bind) {
            printf("FAIL: %d ranks x %d threads on %d cores: bind %d, want %d\n", cases[i].nproc,
                   cases[i].threads, cases[i].cores, b.bind, cases[i].bind);
            fail++;
        }
    }
    const int cores = tool_cores_available();
    printf("test_launch bind: this process may run on %d cores; %s\n", cores, fail ? "FAIL" : "ok");
    return fail || cores < 1;
}

int main(int argc, char **argv) {
    if (argc == 2 && !strcmp(argv[1], "filter")) { tool_launcher_stderr_filter(stdin, stdout); return 0; }
    if (argc == 2 && !strcmp(argv[1], "bind")) return binding_checks();
    if (argc != 2 || (strcmp(argv[1], "ok") && strcmp(argv[1], "exit7"))) {
        fprintf(stderr, "usage: test_launch ok|exit7|filter|bind\n");
        return 2;
    }
    if (tool_launch_under_mpi()) {
        MPI_Init(&argc, &argv);
        int size = 0, rank = 0;
        MPI_Comm_size(MPI_COMM_WORLD, &size);
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        const char *blas = getenv("OPENBLAS_NUM_THREADS"), *omp = getenv("OMP_WAIT_POLICY");
        int ok = size == 2 && blas && *blas && getenv("HP_LAUNCHED") && omp && *omp;
        printf("rank %d of %d: OPENBLAS_NUM_THREADS=%s OMP_WAIT_POLICY=%s mode %s %s\n", rank, size,
               blas ? blas : "(unset)", omp ? omp : "(unset)", argv[1], ok ? "ok" : "WRONG");
        MPI_Finalize();
        if (!ok) return 1;
        return strcmp(argv[1], "exit7") ? 0 : 7;
    }
    int want = strcmp(argv[1], "exit7") ? 0 : 7;
    int rc = tool_launch_self(2, argc, argv);
    printf("test_launch: tool_launch_self returned %d, want %d\n", rc, want);
    printf("test_launch: %d passed, %d failed\n", rc == want, rc != want);
    return rc == want ? 0 : 1;
}
