// test_launch.c - the launcher (tools/hp/launch.c): run outside MPI, it re-executes itself
// under mpirun with 2 ranks and gets the ranks' exit status back; inside, each rank checks it
// sees a 2-rank world, the same arguments, OPENBLAS_NUM_THREADS and OMP_WAIT_POLICY (the
// launcher's, PASSIVE unless the user set one: oneDNN's OpenMP threads sleep between products).
//   test_launch ok     ranks exit 0 -> tool_launch_self returns 0
//   test_launch exit7  ranks exit 7 -> tool_launch_self returns 7
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <mpi.h>
#include "cli.h"

int main(int argc, char **argv) {
    if (argc != 2 || (strcmp(argv[1], "ok") && strcmp(argv[1], "exit7"))) {
        fprintf(stderr, "usage: test_launch ok|exit7\n");
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
