// memtrack.c - the tracking allocator of memtrack.h: a 64-byte header before each block holds
// its size and category, so hp_mem_free needs nothing but the pointer and the data stays
// 64-byte aligned (whole cache lines; any SIMD width hyperpar's kernels use).
// defines: hp_mem_category_name, hp_mem_alloc, hp_mem_realloc, hp_mem_free, hp_mem_size,
//          hp_mem_get_stats, hp_mem_reset_peak, hp_mem_reset_interval_peak
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "hyperpar/memtrack.h"

#define HP_MEM_ALIGN 64
#define HP_MEM_MAGIC 0x6870266d656d7472ull   // catches a free of a foreign or freed pointer

typedef struct header {
    size_t bytes;
    uint64_t magic;
    int category;
} header;
_Static_assert(sizeof(header) <= HP_MEM_ALIGN, "the header fits its 64 bytes");

static hp_mem_stats stats;   // one rank = one process; see memtrack.h for why no atomics

const char *hp_mem_category_name(hp_mem_category c) {
    static const char *const names[HP_MEM_COUNT] = {
        "params", "grads", "optimizer", "fsdp_working", "comm_scratch", "accumulation",
        "activations", "scratch", "other",
    };
    return (unsigned)c < HP_MEM_COUNT ? names[c] : NULL;
}

static header *header_of(const void *p) { return (header *)((char *)(uintptr_t)p - HP_MEM_ALIGN); }

// A zeroed block of `bytes` of category c behind its header, or NULL (out of memory,
// impossible size); not counted yet.
static header *block_new(hp_mem_category c, size_t bytes) {
    if (bytes > SIZE_MAX - 2 * HP_MEM_ALIGN) return NULL;
    // round up so the block ends on a whole line too: aligned_alloc wants a multiple
    const size_t total = HP_MEM_ALIGN + (bytes + HP_MEM_ALIGN - 1) / HP_MEM_ALIGN * HP_MEM_ALIGN;
    header *h = aligned_alloc(HP_MEM_ALIGN, total);
    if (!h) return NULL;
    memset(h, 0, total);
    h->bytes = bytes;
    h->magic = HP_MEM_MAGIC;
    h->category = (int)c;
    return h;
}

// Takes `bytes` off the counters of category c (sign < 0) or adds them (sign > 0).
static void count(int c, size_t bytes, int sign) {
    if (sign < 0) {
        stats.current[c] -= bytes;
        stats.total_current -= bytes;
        return;
    }
    stats.current[c] += bytes;
    stats.total_current += bytes;
    if (stats.current[c] > stats.peak[c]) stats.peak[c] = stats.current[c];
    if (stats.total_current > stats.total_peak) stats.total_peak = stats.total_current;
    if (stats.total_current > stats.interval_peak) stats.interval_peak = stats.total_current;
}

void *hp_mem_alloc(hp_mem_category c, size_t bytes) {
    if ((unsigned)c >= HP_MEM_COUNT) return NULL;
    header *h = block_new(c, bytes);
    if (!h) return NULL;
    stats.n_live++;
    count(c, bytes, +1);
    return (char *)h + HP_MEM_ALIGN;
}

void *hp_mem_realloc(void *p, hp_mem_category c, size_t bytes) {
    if (!p) return hp_mem_alloc(c, bytes);
    if ((unsigned)c >= HP_MEM_COUNT) return NULL;
    header *old = header_of(p);
    if (old->magic != HP_MEM_MAGIC) abort();   // not ours, or freed: fail loudly
    header *h = block_new(c, bytes);
    if (!h) return NULL;   // p stays as it was, like realloc
    memcpy((char *)h + HP_MEM_ALIGN, p, old->bytes < bytes ? old->bytes : bytes);
    // the block changes size in place as far as the counters go: the moment both copies
    // exist is the copy's, not a buffer anyone holds
    count(old->category, old->bytes, -1);
    count(c, bytes, +1);
    old->magic = 0;
    free(old);
    return (char *)h + HP_MEM_ALIGN;
}

void hp_mem_free(void *p) {
    if (!p) return;
    header *h = header_of(p);
    if (h->magic != HP_MEM_MAGIC) abort();   // not ours, or freed twice: fail loudly
    h->magic = 0;
    count(h->category, h->bytes, -1);
    stats.n_live--;
    free(h);
}

size_t hp_mem_size(const void *p) { return p ? header_of(p)->bytes : 0; }

void hp_mem_get_stats(hp_mem_stats *out) { *out = stats; }

void hp_mem_reset_peak(void) {
    for (int c = 0; c < HP_MEM_COUNT; c++) stats.peak[c] = stats.current[c];
    stats.total_peak = stats.interval_peak = stats.total_current;
}

void hp_mem_reset_interval_peak(void) { stats.interval_peak = stats.total_current; }
