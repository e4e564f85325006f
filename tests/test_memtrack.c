// test_memtrack.c - the tracking allocator (memtrack.h): zeroed, 64-aligned blocks, current and
// high-water bytes per category and in total, reset of the peaks, bad input refused.
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
    return test_summary("test_memtrack");
}
