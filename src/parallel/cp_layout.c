// cp_layout.c - which global positions a cp rank holds (spec §6), and the cp error exit.
// Head-tail layout: S is cut into 2C chunks of k = S/(2C); rank i holds chunk i then
// chunk 2C-1-i, so every rank has one early (cheap) and one late (expensive) chunk and the
// causal work is balanced. Contiguous layout: rank i holds [i*S/C, (i+1)*S/C).
// defines: hp_cp_positions, hp_seq_positions, hp_cp_fail
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <mpi.h>
#include "hyperpar/cp.h"
#include "cp_internal.h"

_Noreturn void hp_cp_fail(const char *fmt, ...) {
    int inited = 0, finalized = 0, rank = -1;
    MPI_Initialized(&inited);
    MPI_Finalized(&finalized);
    int live = inited && !finalized;
    if (live) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (live) hp_fail_line_and_abort(HP_EXIT_CONFIG, "hp_cp: rank %d: %s", rank, msg);
    hp_fail_line_and_abort(HP_EXIT_CONFIG, "hp_cp: %s", msg);   // no MPI: exit()
}

void hp_cp_positions(int *pos, int S, int C, int cp_rank, int load_balance) {
    if (C < 1 || cp_rank < 0 || cp_rank >= C)
        hp_cp_fail("hp_cp_positions: need 0 <= cp_rank < C, got cp_rank=%d C=%d", cp_rank, C);
    if (S < 0) hp_cp_fail("hp_cp_positions: sequence length S=%d is negative", S);
    if (C == 1) { // one rank holds everything in order, whatever the layout rule
        for (int j = 0; j < S; j++) pos[j] = j;
        return;
    }
    if (load_balance) {
        if (S % (2 * C) != 0)
            hp_cp_fail("hp_cp_positions: load-balanced cp needs S divisible by 2*C, got S=%d C=%d (2*C=%d)",
                       S, C, 2 * C);
        const int k = S / (2 * C);
        const int head = cp_rank * k, tail = (2 * C - 1 - cp_rank) * k;
        for (int j = 0; j < k; j++) { pos[j] = head + j; pos[k + j] = tail + j; }
    } else {
        if (S % C != 0)
            hp_cp_fail("hp_cp_positions: contiguous cp needs S divisible by C, got S=%d C=%d", S, C);
        const int Sl = S / C;
        for (int j = 0; j < Sl; j++) pos[j] = cp_rank * Sl + j;
    }
}

// Ulysses on top: the cp-local tokens, in their order, cut into U contiguous parts
// (ulysses.md "How a sequence is cut"); with U = 1 these are the cp positions.
void hp_seq_positions(int *pos, int S, int C, int cp_rank, int U, int u, int load_balance) {
    if (U < 1 || u < 0 || u >= U)
        hp_cp_fail("hp_seq_positions: need 0 <= ulysses rank < U, got u=%d U=%d", u, U);
    const int Sc = C > 0 ? S / C : 0;
    if (U > 1 && Sc % U != 0)
        hp_cp_fail("hp_seq_positions: ulysses needs the cp-local length S/C=%d divisible by U=%d", Sc, U);
    int *all = malloc((size_t)(Sc > 0 ? Sc : 1) * sizeof *all);
    if (!all) hp_cp_fail("hp_seq_positions: out of memory (S=%d)", S);
    hp_cp_positions(all, S, C, cp_rank, load_balance);
    const int Su = Sc / U;
    memcpy(pos, all + (size_t)u * Su, (size_t)Su * sizeof *pos);
    free(all);
}
