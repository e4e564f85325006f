// fp32.c - the fp32 precision: the model's reference. Linears through the one GEMM entry,
// op outputs as computed, activations kept in floats, and the regions' own *_consume /
// *_produce (which every precision without whole-tensor casts shares).
// defines: hp_precision_init, hp_precision_free, hp_precision_plain_regions, hp_precision_fp32_fill,
//          hp_precision_kernel_linears, hp_linear_kernels_fp32, hp_linear_kernels_bf16
#include <string.h>
#include "hyperpar/kernels.h"
#include "precision/precision.h"
#include "precision/precision_internal.h"

static void plain_enter_consume(void *ctx, const hp_region_hooks *rh, float *out, const float *in, int D,
                                int nreg, hp_region_rows_fn *rows, void *rows_ctx, const float *const *w,
                                int n_w) {
    (void)ctx; (void)nreg; (void)w; (void)n_w;
    rh->enter_consume(rh->ctx, out, in, D, rows, rows_ctx);
}
static void plain_exit_produce(void *ctx, const hp_region_hooks *rh, float *out, float *partial, int D,
                               int nreg, hp_region_rows_fn *rows, void *rows_ctx, const float *w,
                               const float *x, int in) {
    (void)ctx; (void)nreg; (void)w; (void)x; (void)in;
    rh->exit_produce(rh->ctx, out, partial, D, rows, rows_ctx);
}
static void plain_exit_backward_consume(void *ctx, const hp_region_hooks *rh, float *din, const float *dout,
                                        int D, int nreg, hp_region_rows_fn *rows, void *rows_ctx,
                                        const float *const *w, int n_w) {
    (void)ctx; (void)nreg; (void)w; (void)n_w;
    rh->exit_backward_consume(rh->ctx, din, dout, D, rows, rows_ctx);
}
static void plain_enter_backward_produce(void *ctx, const hp_region_hooks *rh, float *din, float *dout,
                                         int D, int nreg, hp_region_rows_fn *rows, void *rows_ctx,
                                         const float *const *dy, const float *const *w, const int *out, int n) {
    (void)ctx; (void)nreg; (void)dy; (void)w; (void)out; (void)n;
    rh->enter_backward_produce(rh->ctx, din, dout, D, rows, rows_ctx);
}

void hp_precision_plain_regions(hp_precision_hooks *h) {
    h->enter_consume = plain_enter_consume;
    h->exit_produce = plain_exit_produce;
    h->exit_backward_consume = plain_exit_backward_consume;
    h->enter_backward_produce = plain_enter_backward_produce;
}

static void no_block(void *ctx, int l, int recompute) { (void)ctx; (void)l; (void)recompute; }
static void no_block_end(void *ctx) { (void)ctx; }
static void as_computed(void *ctx, float *x, size_t n) { (void)ctx; (void)x; (void)n; }

const hp_linear_kernels hp_linear_kernels_fp32 = { hp_linear_forward, hp_linear_backward,
                                                   hp_linear_backward_first };
const hp_linear_kernels hp_linear_kernels_bf16 = { hp_linear_forward_bf16, hp_linear_backward_bf16,
                                                   hp_linear_backward_first_bf16 };

static const hp_linear_kernels *kernels(void *ctx) { return *(const hp_linear_kernels *const *)ctx; }

static void kernel_forward(void *ctx, float *y, const float *x, const float *w, int N, int in, int out) {
    kernels(ctx)->forward(y, x, w, N, in, out);
}
static void kernel_backward(void *ctx, float *dx, float *dw, const float *dy, const float *x,
                            const float *w, int N, int in, int out) {
    kernels(ctx)->backward(dx, dw, dy, x, w, N, in, out);
}
static void kernel_backward_dx(void *ctx, float *dx, float *dw, const float *dy, const float *x,
                               const float *w, int N, int in, int out, int first) {
    (void)dw; (void)x;   // (the weight gradient: in the dw half)
    (first ? kernels(ctx)->backward_first : kernels(ctx)->backward)(dx, NULL, dy, NULL, w, N, in, out);
}
static void kernel_backward_dw(void *ctx, float *dw, const float *dy, const float *x, const float *w,
                               int N, int in, int out) {
    (void)w;
    kernels(ctx)->backward(NULL, dw, dy, x, NULL, N, in, out);
}

void hp_precision_kernel_linears(hp_precision_hooks *h) {
    h->linear_forward = kernel_forward;
    h->linear_backward = kernel_backward;
    h->linear_backward_dx = kernel_backward_dx;
    h->linear_backward_dw = kernel_backward_dw;
}

// fp32's context: only its kernels (one for every model: nothing to free)
static const hp_linear_kernels *const fp32_ctx = &hp_linear_kernels_fp32;

void hp_precision_fp32_fill(hp_precision_hooks *h) {
    h->block_begin = no_block;
    h->block_end = no_block_end;
    h->op_output = as_computed;
    h->tp_partial = as_computed;
    h->ctx = (void *)&fp32_ctx;
    hp_precision_kernel_linears(h);
    hp_precision_plain_regions(h);
    h->stored_bytes = 0;
    h->keep = NULL;
    h->restore = NULL;
    h->release = NULL;
}

int hp_precision_init(hp_precision_hooks *h, int bf16, int store) {
    memset(h, 0, sizeof *h);
    hp_precision_fp32_fill(h);
    return bf16 ? hp_precision_bf16_init(h, store) : 0;
}

void hp_precision_free(hp_precision_hooks *h) {
    if (h->release) h->release(h->ctx);
    memset(h, 0, sizeof *h);
}
