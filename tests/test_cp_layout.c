// test_cp_layout.c - hp_cp_positions (single process, no MPI): the head-tail and the
// contiguous layouts of spec §6, checked as permutations and against the worked example.
//   test_cp_layout            the checks
//   test_cp_layout bad-lb     S not divisible by 2C  -> one error line, exit code 2
//   test_cp_layout bad-contig S not divisible by C   -> one error line, exit code 2
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "hyperpar/cp.h"
#include "test_check.h"


// Every layout must hand out each position of [0, S) exactly once, and each rank's
// positions must be increasing (causal order inside a rank).
static void check_partition(int S, int C, int lb) {
    int *seen = calloc((size_t)S + 1, sizeof *seen), *pos = malloc(((size_t)S + 1) * sizeof *pos);
    int ok = 1, sorted = 1, Sl = S / C;
    for (int r = 0; r < C; r++) {
        hp_cp_positions(pos, S, C, r, lb);
        for (int j = 0; j < Sl; j++) {
            if (pos[j] < 0 || pos[j] >= S) ok = 0; else seen[pos[j]]++;
            if (j > 0 && pos[j] <= pos[j - 1]) sorted = 0;
        }
        if (lb && C > 1) { // chunk r then chunk 2C-1-r
            int k = S / (2 * C);
            for (int j = 0; j < k; j++)
                if (pos[j] != r * k + j || pos[k + j] != (2 * C - 1 - r) * k + j) ok = 0;
        } else {
            for (int j = 0; j < Sl; j++) if (pos[j] != r * Sl + j) ok = 0;
        }
    }
    for (int i = 0; i < S; i++) if (seen[i] != 1) ok = 0;
    CHECK(ok, "S=%d C=%d lb=%d: not the expected partition of [0,S)", S, C, lb);
    CHECK(sorted, "S=%d C=%d lb=%d: a rank's positions are not increasing", S, C, lb);
    free(seen);
    free(pos);
}

int main(int argc, char **argv) {
    int pos[64];
    if (argc > 1 && strcmp(argv[1], "bad-lb") == 0) { hp_cp_positions(pos, 10, 4, 0, 1); return 0; }
    if (argc > 1 && strcmp(argv[1], "bad-contig") == 0) { hp_cp_positions(pos, 10, 4, 1, 0); return 0; }

    // spec §6 example: L=16, C=2: rank 0 <- [0..3, 12..15], rank 1 <- [4..7, 8..11]
    const int want0[8] = {0, 1, 2, 3, 12, 13, 14, 15}, want1[8] = {4, 5, 6, 7, 8, 9, 10, 11};
    hp_cp_positions(pos, 16, 2, 0, 1);
    CHECK(memcmp(pos, want0, sizeof want0) == 0, "C=2 rank 0 head-tail positions");
    hp_cp_positions(pos, 16, 2, 1, 1);
    CHECK(memcmp(pos, want1, sizeof want1) == 0, "C=2 rank 1 head-tail positions");
    // C=4, S=16: k=2, rank 1 <- chunks 1 and 6
    const int want41[4] = {2, 3, 12, 13};
    hp_cp_positions(pos, 16, 4, 1, 1);
    CHECK(memcmp(pos, want41, sizeof want41) == 0, "C=4 rank 1 head-tail positions");
    // contiguous
    const int wantc[4] = {8, 9, 10, 11};
    hp_cp_positions(pos, 16, 4, 2, 0);
    CHECK(memcmp(pos, wantc, sizeof wantc) == 0, "C=4 rank 2 contiguous positions");
    // C=1 is the identity for both rules, for any S (no 2C divisibility needed)
    hp_cp_positions(pos, 7, 1, 0, 1);
    int id = 1;
    for (int j = 0; j < 7; j++) if (pos[j] != j) id = 0;
    CHECK(id, "C=1 head-tail is the identity");

    const int Cs[] = {1, 2, 3, 4, 8};
    for (int ci = 0; ci < 5; ci++)
    for (int lb = 0; lb <= 1; lb++)
    for (int m = 0; m <= 3; m++) { // S = 0 (empty) and a few multiples of 2C
        int C = Cs[ci], S = 2 * C * m;
        check_partition(S, C, lb);
    }
    check_partition(12, 3, 0); // contiguous needs only C | S

    return test_summary("test_cp_layout");
}
