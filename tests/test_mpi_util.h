// test_mpi_util.h - what the MPI tests of the attention cores share (test_cp_attention.c,
// test_ulysses.c): a CHECK that names the rank, a checked allocation, deterministic random
// fills, taking a rank's rows of a full tensor, and an error summed over every rank.
// Each test is one translation unit: these are static, and the test defines TEST_B, TEST_S.
#ifndef HP_TEST_MPI_UTIL_H
#define HP_TEST_MPI_UTIL_H
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <mpi.h>
#include "hyperpar/rng.h"

#include "test_mpi_check.h"   // CHECK, g_wrank, g_pass, g_fail

static float *alloc(size_t n) {
    float *p = calloc(n ? n : 1, sizeof *p);
    if (!p) { fprintf(stderr, "%s: out of memory\n", __FILE__); MPI_Abort(MPI_COMM_WORLD, 1); }
    return p;
}

static void fill_seeded(float *x, size_t n, uint64_t seed, uint64_t stream) {
    for (size_t i = 0; i < n; i++) x[i] = hp_rng_normal(seed, stream, i);
}

// dst (TEST_B, n, w) = the rows pos of src (TEST_B, TEST_S, w).
static void take_rows(float *dst, const float *src, const int *pos, int n, int w) {
    for (int b = 0; b < TEST_B; b++)
        for (int j = 0; j < n; j++)
            memcpy(dst + ((size_t)b * n + j) * w, src + ((size_t)b * TEST_S + pos[j]) * w,
                   (size_t)w * sizeof *dst);
}

// Relative Frobenius error ||got - (want + add)|| / ||want + add||, summed over all ranks.
static double rel_err(const float *got, const float *want, float add, size_t n) {
    double e[2] = { 0, 0 };
    for (size_t i = 0; i < n; i++) {
        const double w = (double)want[i] + add, d = (double)got[i] - w;
        e[0] += d * d; e[1] += w * w;
    }
    MPI_Allreduce(MPI_IN_PLACE, e, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return e[1] > 0 ? sqrt(e[0] / e[1]) : sqrt(e[0]);
}

#endif
