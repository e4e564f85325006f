// cp_stats.h - work counters of the context-parallel attention (cp.h), per process.
// They show that block skipping works: with the head-tail layout every cp rank hands the
// kernel the same number of query-key pairs; with the contiguous layout rank i does i+1
// blocks. Counters are plain process-wide statics, not atomics: they are updated only from
// the rank's main thread, around the attention kernel calls (the kernels' worker threads,
// src/kernels/parallel.h, never touch them).
// defines: hp_cp_stats, hp_cp_stats_get, hp_cp_stats_reset
//
//   hp_cp_stats_reset();
//   hp_cp_attention_forward(...);
//   hp_cp_stats st;  hp_cp_stats_get(&st);   // st.fwd_pairs, st.skipped, ...
#ifndef HYPERPAR_CP_STATS_H
#define HYPERPAR_CP_STATS_H
#include <stdint.h>

typedef struct hp_cp_stats {
    uint64_t fwd_calls;   // hp_attention_forward calls made by hp_cp_attention_forward
    uint64_t fwd_pairs;   // sum over those calls of B * H * (query rows) * (key rows)
    uint64_t bwd_calls;   // the same for hp_attention_backward in hp_cp_attention_backward
    uint64_t bwd_pairs;
    uint64_t full;        // forward (q chunk, kv chunk) blocks whose keys are all visible
    uint64_t diag;        // ... partly visible (causal by position inside the block)
    uint64_t skipped;     // ... with no visible key: no kernel call
} hp_cp_stats;

void hp_cp_stats_get(hp_cp_stats *out);
void hp_cp_stats_reset(void);

#endif
