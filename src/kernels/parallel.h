// parallel.h - a deterministic parallel-for for the kernels (internal, not part of the API).
// [0, n) is cut into fixed contiguous ranges (a few per thread) that the threads take in
// turn; every item must be computed the same way whichever range and thread run it, so
// results are bit-identical for any thread count and any scheduling. The thread
// count is OpenBLAS's (openblas_set_num_threads / OPENBLAS_NUM_THREADS): one knob for both.
// defines: hp_par_fn, hp_par_for, hp_par_threads, hp_par_zero, hp_par_bf16_round,
//          hp_par_bf16_pack, hp_par_bf16_pack_exact, hp_par_bf16_unpack
#ifndef HP_KERNELS_PARALLEL_H
#define HP_KERNELS_PARALLEL_H
#include <stddef.h>
#include <stdint.h>

// Runs items [lo, hi) of a job; ctx is the caller's.
typedef void (*hp_par_fn)(void *ctx, int lo, int hi);

// Runs fn over [0, n) and returns when every range is done. min_items: fewer items per thread
// than this run inline (the hand-off costs a few microseconds). blas_serial = 1: the ranges
// call sgemm themselves, so OpenBLAS runs single-threaded until the job ends.
void hp_par_for(int n, int min_items, int blas_serial, hp_par_fn fn, void *ctx);

// The threads hp_par_for would use now (>= 1).
int hp_par_threads(void);

// x[0..n) = 0.0f, on the job's threads when n is large (a buffer of a step, not a struct).
void hp_par_zero(float *x, size_t n);

// hyperpar/bf16.h's array conversions of a step's buffers on the job's threads when n is large:
// memory-bound, elementwise, so the bits are the serial ones. Not from inside another job
// (hp_par_for runs one job at a time), except under blas_serial, where they run inline.
void hp_par_bf16_round(float *x, size_t n);
void hp_par_bf16_pack(uint16_t *dst, const float *src, size_t n);
int  hp_par_bf16_pack_exact(uint16_t *dst, const float *src, size_t n);   // 1: every value was bf16
void hp_par_bf16_unpack(float *dst, const uint16_t *src, size_t n);

#endif
