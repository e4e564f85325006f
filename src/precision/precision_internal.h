// precision_internal.h - what the implementations of src/precision/ share: the plain region
// wrappers (the region's own *_consume / *_produce) and the fp32 linears.
#ifndef HP_PRECISION_INTERNAL_H
#define HP_PRECISION_INTERNAL_H
#include "model/model_hooks.h"

// The kernels of a precision's linears (hyperpar/kernels.h's fp32 or bf16 ones).
typedef struct hp_linear_kernels {
    void (*forward)(float *y, const float *x, const float *w, int N, int in, int out);
    void (*backward)(float *dx, float *dw, const float *dy, const float *x, const float *w,
                     int N, int in, int out);
    void (*backward_first)(float *dx, float *dw, const float *dy, const float *x, const float *w,
                           int N, int in, int out);
} hp_linear_kernels;
extern const hp_linear_kernels hp_linear_kernels_fp32, hp_linear_kernels_bf16;

// The linear hooks over those kernels: ctx must start with a `const hp_linear_kernels *`.
void hp_precision_kernel_linears(hp_precision_hooks *h);
void hp_precision_plain_regions(hp_precision_hooks *h);   // the four region wrappers
void hp_precision_fp32_fill(hp_precision_hooks *h);       // every hook, fp32 (ctx: its own)
int  hp_precision_bf16_init(hp_precision_hooks *h, int store);

#endif
