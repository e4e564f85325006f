// test_mpi_check.h - the pass/fail counting of the MPI tests: CHECK(cond, fmt, ...) counts the
// check on this rank and, when it fails, prints one line naming the rank, the file and the line
// (the first 30 failures of a rank; the count goes on). The test sets g_wrank after MPI_Init
// and reduces g_fail over the ranks for its exit code.
// defines: CHECK, g_wrank, g_pass, g_fail
#ifndef HP_TEST_MPI_CHECK_H
#define HP_TEST_MPI_CHECK_H
#include <stdio.h>

static int g_wrank, g_pass, g_fail;

#define CHECK(cond, ...) do {                                                          \
    if (cond) g_pass++;                                                                \
    else {                                                                             \
        if (g_fail++ < 30) {                                                           \
            fprintf(stderr, "rank %d: FAIL %s:%d: ", g_wrank, __FILE__, __LINE__);     \
            fprintf(stderr, __VA_ARGS__);                                              \
            fputc('\n', stderr);                                                       \
        }                                                                              \
    }                                                                                  \
} while (0)

#endif
