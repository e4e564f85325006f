// memtrack.h - a tracking allocator: every buffer a rank allocates, by the planner's memory
// category, with current and high-water bytes per category and in total, so that the
// predicted memory (plan.h) can be compared with what a run really held.
// defines: hp_mem_category, hp_mem_category_name, hp_mem_alloc, hp_mem_realloc, hp_mem_free,
//          hp_mem_size, hp_mem_stats, hp_mem_get_stats, hp_mem_reset_peak,
//          hp_mem_reset_interval_peak
//
//   float *acts = hp_mem_alloc(HP_MEM_ACTIVATIONS, n * sizeof(float));   // zeroed, 64-aligned
//   ...
//   hp_mem_free(acts);
//   hp_mem_stats s;  hp_mem_get_stats(&s);
//   printf("activations peak %zu B, total peak %zu B\n", s.peak[HP_MEM_ACTIVATIONS], s.total_peak);
//
// Single-threaded per rank: the counters are plain integers, not atomics. That is enough
// because hyperpar allocates only from the rank's main thread (set-up, the first forward's
// lazily sized buffers, checkpoints); the kernels' OpenMP / BLAS threads compute into buffers
// they are handed and never allocate through here. One rank = one process (MPI), so ranks
// never share these counters.
#ifndef HYPERPAR_MEMTRACK_H
#define HYPERPAR_MEMTRACK_H
#include <stddef.h>

// The keys of hp_plan_memory / `hp plan --json`'s "memory" object, in that order.
typedef enum {
    HP_MEM_PARAMS = 0,      // params_bytes: the parameter shards
    HP_MEM_GRADS,           // grads_bytes
    HP_MEM_OPTIMIZER,       // optimizer_bytes: AdamW m, v
    HP_MEM_FSDP_WORKING,    // fsdp_working_bytes: one gathered unit and its grads
    HP_MEM_COMM_SCRATCH,    // comm_scratch_bytes: FSDP staging, the comm layer's own buffers
    HP_MEM_ACCUMULATION,    // accumulation_bytes: acc_g, kept_p
    HP_MEM_ACTIVATIONS,     // activation_bytes: what the forward keeps for the backward
    HP_MEM_SCRATCH,         // scratch_bytes: backward scratch, ring K/V, token ids
    HP_MEM_OTHER,           // everything else (tables, routing records, I/O)
    HP_MEM_COUNT
} hp_mem_category;

// "params", "grads", "optimizer", "fsdp_working", "comm_scratch", "accumulation",
// "activations", "scratch", "other"; NULL out of range.
const char *hp_mem_category_name(hp_mem_category c);

// bytes zeroed (like calloc), aligned to 64 bytes; NULL when out of memory or c is out of
// range. bytes 0 gives a valid, unique pointer that counts 0 bytes.
void *hp_mem_alloc(hp_mem_category c, size_t bytes);
// Resizes a block of hp_mem_alloc to bytes (NULL p: hp_mem_alloc): the first min(old, new)
// bytes kept, any new ones zeroed, still 64-aligned, the block now counted under c with its
// new size. The counters see a resize in place: old and new copy are never counted at once.
// Returns NULL (p untouched, like realloc) when out of memory or c is out of range.
void *hp_mem_realloc(void *p, hp_mem_category c, size_t bytes);
// Frees a block of hp_mem_alloc (NULL is a no-op) and takes its bytes off its category.
void hp_mem_free(void *p);
// The bytes p was allocated with (0 for NULL).
size_t hp_mem_size(const void *p);

typedef struct hp_mem_stats {
    size_t current[HP_MEM_COUNT];   // bytes held now
    size_t peak[HP_MEM_COUNT];      // the most each category held at once since the last reset
    size_t total_current;
    size_t total_peak;              // the most held at once in all (not the sum of the peaks)
    size_t interval_peak;           // the same since hp_mem_reset_interval_peak (or reset_peak)
    size_t n_live;                  // blocks not yet freed
} hp_mem_stats;
void hp_mem_get_stats(hp_mem_stats *out);
// Restarts the high-water marks at the bytes held now (e.g. after set-up, to see a step's).
void hp_mem_reset_peak(void);
// Restarts interval_peak alone, at the bytes held now: a logger's "high-water since the last
// log" (hp run's step line) without moving the run's marks that hp_trainer_measured reports.
void hp_mem_reset_interval_peak(void);

#endif
