// float8_linear.c - a float8 linear y = x w^T as torchao's Float8Linear computes it
// (precision.md §5.2-5.3), emulated: each operand of each of the three GEMMs is cast to fp8
// with its scale (from the caller's amax), dequantised (value / scale) and the fp32 GEMM
// (hp_gemm) multiplies the dequantised operands; the caller rounds the output once to the
// param dtype. Rowwise scales cover one index outside the GEMM's contraction dim, so an
// operand is cast once per GEMM it feeds, along the other dim each time.
// defines: hp_float8_amax_sizes, hp_float8_amax_all, hp_float8_forward_amax, hp_float8_backward_amax,
//          hp_float8_grad_format, hp_float8_linear_forward, hp_float8_linear_backward
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "hyperpar/failpoint.h"
#include "hyperpar/float8.h"
#include "hyperpar/kernels.h"
#include "kernels/gemm.h"

// max |v| with NaN kept (torch.max of abs propagates it, and so a NaN scale)
static float amax_step(float m, float v) {
    const float a = fabsf(v);
    return (isnan(a) || a > m) ? a : m;
}

static float amax_all(const float *x, size_t n) {
    float m = 0.0f;
    for (size_t i = 0; i < n; i++) m = amax_step(m, x[i]);
    return m;
}

float hp_float8_amax_all(const float *x, size_t n) { return amax_all(x, n); }

static void amax_rows(float *amax, const float *x, int R, int C) {   // amax (R): row r over C
    for (int r = 0; r < R; r++) amax[r] = amax_all(x + (size_t)r * C, (size_t)C);
}

static void amax_cols(float *amax, const float *x, int R, int C) {   // amax (C): column c over R
    for (int c = 0; c < C; c++) amax[c] = 0.0f;
    for (int r = 0; r < R; r++)
        for (int c = 0; c < C; c++) amax[c] = amax_step(amax[c], x[(size_t)r * C + c]);
}

static int rowwise(hp_float8_recipe r) { return r == HP_FLOAT8_ROWWISE || r == HP_FLOAT8_ROWWISE_GW_HP; }

void hp_float8_amax_sizes(hp_float8_amax_n *n, hp_float8_recipe recipe, int N, int in, int out) {
    const int rw = rowwise(recipe);
    n->x = rw ? N : 1;
    n->w = rw ? out : 1;
    n->dy = rw ? N : 1;
    n->wt = recipe == HP_FLOAT8_ROWWISE ? in : recipe == HP_FLOAT8_ROWWISE_GW_HP ? 1 : 0;
    n->dyt = recipe == HP_FLOAT8_ROWWISE ? out : 0;
    n->xt = recipe == HP_FLOAT8_ROWWISE ? in : 0;
}

void hp_float8_forward_amax(hp_float8_amax *a, const float *x, const float *w, hp_float8_recipe recipe,
                            int N, int in, int out) {
    if (rowwise(recipe)) {
        amax_rows(a->x, x, N, in);
        amax_rows(a->w, w, out, in);
    } else {
        a->x[0] = amax_all(x, (size_t)N * in);
        a->w[0] = amax_all(w, (size_t)out * in);
    }
}

void hp_float8_backward_amax(hp_float8_amax *a, const float *dy, const float *x, const float *w,
                             hp_float8_recipe recipe, int N, int in, int out) {
    if (recipe == HP_FLOAT8_TENSORWISE) {   // x and w keep the forward's casts
        a->dy[0] = amax_all(dy, (size_t)N * out);
        return;
    }
    amax_rows(a->dy, dy, N, out);                       // dgrad: dy row i over out
    if (recipe == HP_FLOAT8_ROWWISE_GW_HP) {
        a->wt[0] = amax_all(w, (size_t)out * in);       // dgrad: w per tensor
        return;
    }
    amax_cols(a->wt, w, out, in);                       // dgrad: w column k over out
    amax_cols(a->dyt, dy, N, out);                      // wgrad: dy column o over N
    amax_cols(a->xt, x, N, in);                         // wgrad: x column k over N
}

hp_fp8_format hp_float8_grad_format(hp_float8_recipe recipe) {
    // (float8_grad_e4m3: the bug casts tensorwise grad_output to e4m3, whose range 448 clips)
    if (recipe == HP_FLOAT8_TENSORWISE && !hp_failpoint(HP_FP_FLOAT8_GRAD_E4M3)) return HP_FP8_E5M2;
    return HP_FP8_E4M3;
}

typedef enum { PER_TENSOR, PER_ROW, PER_COL } scale_axis;

// dst (R, C) = value(cast(src * s)) / s, with s from amax[0] (PER_TENSOR), amax[r] (PER_ROW)
// or amax[c] (PER_COL): the product in fp32, the scale in float64 rounded once (float8.h)
static void cast_dequant(float *dst, const float *src, const float *amax, scale_axis axis,
                         int R, int C, hp_fp8_format f, int pow2) {
    float *scale = malloc((size_t)(axis == PER_COL ? C : 1) * sizeof(float));
    if (axis == PER_COL)
        for (int c = 0; c < C; c++) scale[c] = hp_fp8_scale(amax[c], f, pow2);
    else if (axis == PER_TENSOR) scale[0] = hp_fp8_scale(amax[0], f, pow2);
    for (int r = 0; r < R; r++) {
        const float *x = src + (size_t)r * C;
        float *y = dst + (size_t)r * C;
        const float sr = axis == PER_ROW ? hp_fp8_scale(amax[r], f, pow2) : scale[0];
        for (int c = 0; c < C; c++) {
            const float s = axis == PER_COL ? scale[c] : sr;
            y[c] = hp_fp8_to_float(hp_fp8_from_float(x[c] * s, f), f) / s;
        }
    }
    free(scale);
}

void hp_float8_linear_forward(float *y, const float *x, const float *w, const hp_float8_amax *a,
                              hp_float8_recipe recipe, int N, int in, int out) {
    if (N <= 0 || out <= 0) return;
    if (in <= 0) { memset(y, 0, (size_t)N * out * sizeof(float)); return; }
    const int rw = rowwise(recipe);
    float *xq = malloc((size_t)N * in * sizeof(float)), *wq = malloc((size_t)out * in * sizeof(float));
    cast_dequant(xq, x, a->x, rw ? PER_ROW : PER_TENSOR, N, in, HP_FP8_E4M3, rw);
    cast_dequant(wq, w, a->w, rw ? PER_ROW : PER_TENSOR, out, in, HP_FP8_E4M3, rw);
    hp_gemm(HP_GEMM_N, HP_GEMM_T, N, out, in, 1.0f, xq, in, wq, in, 0.0f, y, out);   // y = x w^T
    free(xq);
    free(wq);
}

void hp_float8_linear_backward(float *dx, float *dw, const float *dy, const float *x, const float *w,
                               const hp_float8_amax *a, hp_float8_recipe recipe, int hp_bf16,
                               float dx_beta, int N, int in, int out) {
    if (N <= 0 || in <= 0) return;
    if (out <= 0) {
        if (dx && dx_beta == 0.0f) memset(dx, 0, (size_t)N * in * sizeof(float));
        return;
    }
    const int rw = rowwise(recipe);
    const hp_fp8_format gf = hp_float8_grad_format(recipe);
    float *dyq = malloc((size_t)N * out * sizeof(float));
    float *wq = dx ? malloc((size_t)out * in * sizeof(float)) : NULL;
    float *xq = dw && recipe != HP_FLOAT8_ROWWISE_GW_HP ? malloc((size_t)N * in * sizeof(float)) : NULL;
    if (dx) {   // dx = dy w: contraction over out; dy per row i, w per column k (or per tensor)
        cast_dequant(dyq, dy, a->dy, rw ? PER_ROW : PER_TENSOR, N, out, gf, rw);
        if (recipe == HP_FLOAT8_TENSORWISE) cast_dequant(wq, w, a->w, PER_TENSOR, out, in, HP_FP8_E4M3, 0);
        else cast_dequant(wq, w, a->wt, recipe == HP_FLOAT8_ROWWISE ? PER_COL : PER_TENSOR, out, in,
                          HP_FP8_E4M3, 1);
        hp_gemm(HP_GEMM_N, HP_GEMM_N, N, in, out, 1.0f, dyq, out, wq, in, dx_beta, dx, in);
    }
    if (dw) {   // dw += dy^T x: contraction over N; dy per column o, x per column k
        if (recipe == HP_FLOAT8_ROWWISE_GW_HP) {   // high precision: the param dtype's GEMM
            if (hp_bf16) hp_gemm_bf16(HP_GEMM_T, HP_GEMM_N, out, in, N, 1.0f, dy, out, x, in, 1.0f, dw, in);
            else hp_gemm(HP_GEMM_T, HP_GEMM_N, out, in, N, 1.0f, dy, out, x, in, 1.0f, dw, in);
        } else {
            if (recipe == HP_FLOAT8_TENSORWISE) {
                if (!dx) cast_dequant(dyq, dy, a->dy, PER_TENSOR, N, out, gf, 0);   // the same cast
                cast_dequant(xq, x, a->x, PER_TENSOR, N, in, HP_FP8_E4M3, 0);
            } else {
                cast_dequant(dyq, dy, a->dyt, PER_COL, N, out, gf, 1);
                cast_dequant(xq, x, a->xt, PER_COL, N, in, HP_FP8_E4M3, 1);
            }
            hp_gemm(HP_GEMM_T, HP_GEMM_N, out, in, N, 1.0f, dyq, out, xq, in, 1.0f, dw, in);
        }
    }
    free(dyq);
    free(wq);
    free(xq);
}
