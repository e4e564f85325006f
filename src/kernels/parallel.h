// parallel.h - a deterministic parallel-for for the kernels (internal, not part of the API).
// [0, n) is cut into one contiguous range per thread and every item is computed the same way
// whichever thread runs it, so results are bit-identical for any thread count. The thread
// count is OpenBLAS's (openblas_set_num_threads / OPENBLAS_NUM_THREADS): one knob for both.
// defines: hp_par_fn, hp_par_for, hp_par_threads
#ifndef HP_KERNELS_PARALLEL_H
#define HP_KERNELS_PARALLEL_H

// Runs items [lo, hi) of a job; ctx is the caller's.
typedef void (*hp_par_fn)(void *ctx, int lo, int hi);

// Runs fn over [0, n) and returns when every range is done. min_items: fewer items per thread
// than this run inline (the hand-off costs a few microseconds). blas_serial = 1: the ranges
// call sgemm themselves, so OpenBLAS runs single-threaded until the job ends.
void hp_par_for(int n, int min_items, int blas_serial, hp_par_fn fn, void *ctx);

// The threads hp_par_for would use now (>= 1).
int hp_par_threads(void);

#endif
