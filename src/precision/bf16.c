// bf16.c - the bf16 policy (docs/precision.md, TorchTitan's MixedPrecisionPolicy with
// param_dtype bfloat16): every op computes in fp32 and its output is rounded to bf16 once;
// the linears take bf16 operands and accumulate in fp32. Outputs that are partial sums over
// tp (row-parallel linears, the vocab-split embedding, input grads of column-parallel linears)
// are rounded only after the region has summed them in fp32, so the result does not move with
// the tp degree. With storage, the activations the model keeps are its bf16 values in 2 bytes:
// every one is an op output rounded once, so the round trip is exact (checked at each keep).
// The precision's failpoints live here: bf16_truncate, bf16_tp_partial_rounded,
// bf16_recompute_fp32.
// defines: hp_precision_bf16_init
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "hyperpar/bf16.h"
#include "hyperpar/failpoint.h"
#include "kernels/parallel.h"   // hp_par_bf16_round, _pack_exact, _unpack
#include "precision/precision_internal.h"

typedef struct {
    const hp_linear_kernels *linears;   // bf16's (first: the shared linear hooks read it)
    int fp32_now;   // the block running now computes in fp32 (the bf16_recompute_fp32 bug)
} bf16_policy;

static void bf16_block_begin(void *ctx, int l, int recompute) {
    (void)l;
    bf16_policy *p = ctx;
    // (bf16_recompute_fp32: the bug recomputes a checkpointed block without the op rule)
    p->fp32_now = recompute && hp_failpoint(HP_FP_BF16_RECOMPUTE_FP32);
    p->linears = p->fp32_now ? &hp_linear_kernels_fp32 : &hp_linear_kernels_bf16;
}
static void bf16_block_end(void *ctx) {
    bf16_policy *p = ctx;
    p->fp32_now = 0;
    p->linears = &hp_linear_kernels_bf16;
}

static void bf16_op_output(void *ctx, float *x, size_t n) {
    if (((const bf16_policy *)ctx)->fp32_now) return;
    if (!hp_failpoint(HP_FP_BF16_TRUNCATE)) { hp_par_bf16_round(x, n); return; }
    for (size_t i = 0; i < n; i++) {   // (the bug of bf16_truncate: the low half dropped)
        uint32_t u;
        memcpy(&u, &x[i], sizeof u);
        u &= 0xFFFF0000u;
        memcpy(&x[i], &u, sizeof u);
    }
}

// (the bug of bf16_tp_partial_rounded, TorchTitan #1750's shape: a row-parallel output rounded
//  to bf16 on each rank before the sum over tp, so the sum is of rounded partials)
static void bf16_tp_partial(void *ctx, float *x, size_t n) {
    (void)ctx;
    if (hp_failpoint(HP_FP_BF16_TP_PARTIAL_ROUNDED)) hp_bf16_round(x, n);
}

// Packs n floats that must be bf16 values into 2 bytes each; one that is not stops the job.
static void bf16_keep(void *ctx, void *dst, const float *src, size_t n, const char *what, int mb) {
    (void)ctx;
    if (hp_par_bf16_pack_exact(dst, src, n)) return;
    if (mb >= 0)
        hp_fail_line_and_abort(1, "hp: bf16 activation storage: the %s (microbatch %d) holds a value "
                               "that is not bf16; every kept activation must be an op output rounded "
                               "once", what, mb);
    hp_fail_line_and_abort(1, "hp: bf16 activation storage: the %s holds a value that is not bf16; "
                           "every kept activation must be an op output rounded once", what);
}
static void bf16_restore(void *ctx, float *dst, const void *src, size_t n) {
    (void)ctx;
    hp_par_bf16_unpack(dst, src, n);
}

int hp_precision_bf16_init(hp_precision_hooks *h, int store) {
    bf16_policy *p = calloc(1, sizeof *p);
    if (!p) return -1;
    p->linears = &hp_linear_kernels_bf16;
    h->ctx = p;
    h->release = free;
    h->block_begin = bf16_block_begin;
    h->block_end = bf16_block_end;
    h->op_output = bf16_op_output;
    h->tp_partial = bf16_tp_partial;
    hp_precision_kernel_linears(h);
    if (store) {
        h->stored_bytes = sizeof(hp_bf16);
        h->keep = bf16_keep;
        h->restore = bf16_restore;
    }
    return 0;
}
