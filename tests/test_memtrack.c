// test_memtrack.c - the tracking allocator (memtrack.h): zeroed, 64-aligned blocks, current and
// high-water bytes per category and in total, reset of the peaks, realloc, bad input refused.
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "hyperpar/memtrack.h"
#include "test_check.h"


int main(void) {
    hp_mem_stats s;
    hp_mem_get_stats(&s);
    CHECK(s.total_current == 0 && s.total_peak == 0 && s.n_live == 0, "starts empty");
    CHECK(!strcmp(hp_mem_category_name(HP_MEM_FSDP_WORKING), "fsdp_working") &&
          !strcmp(hp_mem_category_name(HP_MEM_OTHER), "other") && hp_mem_category_name(HP_MEM_COUNT) == NULL,
          "category names are the planner's keys");

    float *a = hp_mem_alloc(HP_MEM_ACTIVATIONS, 1000 * sizeof(float));
    unsigned char *b = hp_mem_alloc(HP_MEM_PARAMS, 3);
    CHECK(a && b && (uintptr_t)a % 64 == 0 && (uintptr_t)b % 64 == 0, "64-byte aligned");
    int zero = 1;
    for (int i = 0; i < 1000; i++) zero &= a[i] == 0.0f;
    CHECK(zero && b[0] == 0 && b[2] == 0, "zeroed like calloc");
    for (int i = 0; i < 1000; i++) a[i] = (float)i;   // the whole block is writable
    CHECK(hp_mem_size(a) == 4000 && hp_mem_size(b) == 3 && hp_mem_size(NULL) == 0, "sizes kept");
    hp_mem_get_stats(&s);
    CHECK(s.current[HP_MEM_ACTIVATIONS] == 4000 && s.current[HP_MEM_PARAMS] == 3 &&
          s.total_current == 4003 && s.total_peak == 4003 && s.n_live == 2, "current bytes per category");

    hp_mem_free(a);
    float *c = hp_mem_alloc(HP_MEM_ACTIVATIONS, 1000);
    hp_mem_get_stats(&s);
    CHECK(s.current[HP_MEM_ACTIVATIONS] == 1000 && s.peak[HP_MEM_ACTIVATIONS] == 4000 &&
          s.total_current == 1003 && s.total_peak == 4003, "high-water marks stay after a free");
    // the total peak is the most held at once, not the sum of the category peaks
    void *g = hp_mem_alloc(HP_MEM_GRADS, 2000);
    hp_mem_get_stats(&s);
    CHECK(s.total_current == 3003 && s.total_peak == 4003 && s.peak[HP_MEM_GRADS] == 2000,
          "total peak is of the sum at one time: %zu", s.total_peak);

    hp_mem_reset_peak();
    hp_mem_get_stats(&s);
    CHECK(s.peak[HP_MEM_ACTIVATIONS] == 1000 && s.total_peak == 3003, "reset: peaks restart at current");
    void *z = hp_mem_alloc(HP_MEM_SCRATCH, 0);
    void *z2 = hp_mem_alloc(HP_MEM_SCRATCH, 0);
    CHECK(z && z2 && z != z2 && hp_mem_size(z) == 0, "zero bytes: a unique pointer counting 0");
    CHECK(hp_mem_alloc(HP_MEM_COUNT, 8) == NULL && hp_mem_alloc((hp_mem_category)-1, 8) == NULL,
          "unknown category refused");
    CHECK(hp_mem_alloc(HP_MEM_OTHER, SIZE_MAX - 10) == NULL, "impossible size refused");
    hp_mem_free(NULL);
    hp_mem_free(b); hp_mem_free(c); hp_mem_free(g); hp_mem_free(z); hp_mem_free(z2);
    hp_mem_get_stats(&s);
    CHECK(s.total_current == 0 && s.n_live == 0 && s.current[HP_MEM_PARAMS] == 0 && s.total_peak == 3003,
          "everything freed");

    // realloc: NULL allocates; growing keeps the data and zeroes the rest; the counters move
    // by the difference (a resize in place: old and new are never counted together)
    hp_mem_reset_peak();
    int *r = hp_mem_realloc(NULL, HP_MEM_COMM_SCRATCH, 10 * sizeof(int));
    for (int i = 0; r && i < 10; i++) r[i] = i + 1;
    int *r2 = r ? hp_mem_realloc(r, HP_MEM_COMM_SCRATCH, 1000 * sizeof(int)) : NULL;
    int kept = r2 != NULL, zeroed = r2 != NULL;
    for (int i = 0; r2 && i < 1000; i++) {
        if (i < 10) kept &= r2[i] == i + 1;
        else zeroed &= r2[i] == 0;
    }
    hp_mem_get_stats(&s);
    CHECK(kept && zeroed && (uintptr_t)r2 % 64 == 0 && hp_mem_size(r2) == 4000, "realloc grows, keeps, zeroes");
    CHECK(s.current[HP_MEM_COMM_SCRATCH] == 4000 && s.peak[HP_MEM_COMM_SCRATCH] == 4000 &&
          s.total_current == 4000 && s.total_peak == 4000 && s.n_live == 1,
          "realloc counts the new size only: current %zu, peak %zu, live %zu",
          s.current[HP_MEM_COMM_SCRATCH], s.total_peak, s.n_live);
    int *r3 = hp_mem_realloc(r2, HP_MEM_OTHER, 8);   // shrink, and move to another category
    hp_mem_get_stats(&s);
    CHECK(r3 && r3[0] == 1 && r3[1] == 2 && hp_mem_size(r3) == 8 && s.current[HP_MEM_COMM_SCRATCH] == 0 &&
          s.current[HP_MEM_OTHER] == 8 && s.peak[HP_MEM_COMM_SCRATCH] == 4000 && s.total_current == 8,
          "realloc shrinks and recategorises");
    CHECK(hp_mem_realloc(r3, HP_MEM_COUNT, 8) == NULL && hp_mem_realloc(r3, HP_MEM_OTHER, SIZE_MAX - 10) == NULL &&
          r3[1] == 2 && hp_mem_size(r3) == 8, "a refused realloc leaves the block as it was");
    hp_mem_free(r3);
    hp_mem_get_stats(&s);
    CHECK(s.total_current == 0 && s.n_live == 0, "realloc'd block freed");

    // the interval mark (hp run's "memory since the last log") restarts alone: the run's peak stays
    void *big = hp_mem_alloc(HP_MEM_ACTIVATIONS, 5000);
    hp_mem_free(big);
    void *small = hp_mem_alloc(HP_MEM_ACTIVATIONS, 700);
    hp_mem_reset_interval_peak();
    void *tmp = hp_mem_alloc(HP_MEM_SCRATCH, 300);
    hp_mem_free(tmp);
    hp_mem_get_stats(&s);
    CHECK(s.interval_peak == 1000 && s.total_peak == 5000, "interval peak %zu (want 1000), run peak %zu (want 5000)",
          s.interval_peak, s.total_peak);
    hp_mem_reset_peak();
    hp_mem_get_stats(&s);
    CHECK(s.interval_peak == 700 && s.total_peak == 700, "reset_peak restarts the interval mark too");
    hp_mem_free(small);
    return test_summary("test_memtrack");
}
