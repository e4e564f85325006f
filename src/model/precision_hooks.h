// precision_hooks.h - the calls the model makes into whatever precision is on, as a table of
// function pointers with their context, as model_hooks.h is for the parallelism. The model
// (transformer.c, moe.c) runs every linear, rounds every op's output, keeps every stored
// activation and wraps every tp region that feeds or drains a GEMM through this table; it
// never asks which precision fills it. src/precision/ has the implementations (fp32, the
// bf16 policy with or without 2-byte storage, float8 linears over either), and the train
// layer picks one, as it picks the styles (src/train/trainer_hooks.c).
#ifndef HP_MODEL_PRECISION_HOOKS_H
#define HP_MODEL_PRECISION_HOOKS_H
#include <stddef.h>

struct hp_region_hooks;
typedef void hp_region_rows_fn(void *rows_ctx, int row0, int nrows);

typedef struct hp_precision_hooks {
    void *ctx;
    // The linears of block l (l >= 0) run between block_begin and block_end; outside them (the
    // embedding, the head) a linear belongs to no block. recompute: the forward an activation
    // checkpoint reruns in the block's backward.
    void (*block_begin)(void *ctx, int l, int recompute);
    void (*block_end)(void *ctx);
    // The op rule: an op's complete output x (n) as the precision holds it (in place).
    void (*op_output)(void *ctx, float *x, size_t n);
    // A row-parallel partial (n) about to be summed over tp: it stays the GEMM's fp32 result in
    // every precision (the hook exists for the failpoint that breaks that rule).
    void (*tp_partial)(void *ctx, float *x, size_t n);
    // y (N, out) = x (N, in) w^T, w (out, in).
    void (*linear_forward)(void *ctx, float *y, const float *x, const float *w, int N, int in, int out);
    // dx (N, in) += dy w and dw (out, in) += dy^T x; either output may be NULL.
    void (*linear_backward)(void *ctx, float *dx, float *dw, const float *dy, const float *x,
                            const float *w, int N, int in, int out);
    // The input-gradient half of a linear's backward, on a block of rows: dx = dy w (first:
    // written, else added). dw: the weight gradient if this precision makes it in the same
    // call (then it adds dy^T x over these rows, and linear_backward_dw does nothing for w),
    // NULL where the weight gradient waits (zbv's I).
    void (*linear_backward_dx)(void *ctx, float *dx, float *dw, const float *dy, const float *x,
                               const float *w, int N, int in, int out, int first);
    // The weight-gradient half over all N rows: dw += dy^T x, unless linear_backward_dx made it.
    void (*linear_backward_dw)(void *ctx, float *dw, const float *dy, const float *x,
                               const float *w, int N, int in, int out);
    // The tp regions whose collective feeds or drains GEMMs (model_hooks.h's *_consume and
    // *_produce), called with the region hooks and the GEMMs' weights: a precision whose
    // linears cast with the amax of the whole tensor takes it here, or runs the GEMMs once
    // over all nreg rows around the plain collective.
    void (*enter_consume)(void *ctx, const struct hp_region_hooks *rh, float *out, const float *in,
                          int D, int nreg, hp_region_rows_fn *rows, void *rows_ctx,
                          const float *const *w, int n_w);
    void (*exit_produce)(void *ctx, const struct hp_region_hooks *rh, float *out, float *partial,
                         int D, int nreg, hp_region_rows_fn *rows, void *rows_ctx, const float *w,
                         const float *x, int in);
    void (*exit_backward_consume)(void *ctx, const struct hp_region_hooks *rh, float *din,
                                  const float *dout, int D, int nreg, hp_region_rows_fn *rows,
                                  void *rows_ctx, const float *const *w, int n_w);
    void (*enter_backward_produce)(void *ctx, const struct hp_region_hooks *rh, float *din,
                                   float *dout, int D, int nreg, hp_region_rows_fn *rows,
                                   void *rows_ctx, const float *const *dy, const float *const *w,
                                   const int *out, int n);
    // Stored activations: stored_bytes per element (0: the model keeps its floats). keep packs
    // n floats that are values of the stored type (op outputs under the op rule) into dst, and
    // stops the job with one line naming what (and the microbatch mb) when one is not; restore
    // unpacks them.
    size_t stored_bytes;
    void (*keep)(void *ctx, void *dst, const float *src, size_t n, const char *what, int mb);
    void (*restore)(void *ctx, float *dst, const void *src, size_t n);
    void (*release)(void *ctx);   // frees ctx (NULL: nothing to free)
} hp_precision_hooks;

#endif
