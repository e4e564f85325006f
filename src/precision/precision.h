// precision.h - the precisions the model runs in: the implementations of the model's precision
// hooks (model/precision_hooks.h), which the train layer applies as it applies the styles.
//
//   hp_precision_hooks prec;
//   hp_precision_init(&prec, bf16, store);       // fp32, or the bf16 policy (store: 2 bytes)
//   hk.prec = prec;                              // with the styles' hooks
//   hp_transformer_init(&tf, ..., &hk, &opt);
//   hp_precision_float8_apply(&tf, recipe, filter, bf16);   // float8 linears over it, or nothing
//   ... steps ...
//   hp_precision_hooks used = tf.hk.prec;
//   hp_transformer_free(&tf);
//   hp_precision_free(&used);
//
// fp32.c: every op in fp32, linears through hp_gemm, activations kept in floats.
// bf16.c: the bf16 policy (docs/precision.md): every op computes in fp32 and its output is
//         rounded to bf16 once, the linears take bf16 operands; with store its activations
//         are kept in 2 bytes.
// float8.c over float8_linears.c: TorchTitan's float8 converter; the linears its filter
//         converts run in float8, everything else in the precision it wraps.
#ifndef HP_PRECISION_H
#define HP_PRECISION_H
#include "model/precision_hooks.h"
#include "model/transformer.h"

// Fills *h with fp32 (bf16 0) or the bf16 policy (store: its activations kept in 2 bytes).
// Returns 0 or -1 (memory).
int  hp_precision_init(hp_precision_hooks *h, int bf16, int store);
// After hp_transformer_init: the block linears recipe's filter leaves (hyperpar/float8.h; filter:
// TorchTitan's filter_fqns as a comma list) run in float8, over the precision tf->hk.prec was
// (which it wraps, in place; bf16: it is the bf16 policy). Nothing when recipe is off. 0 or -1.
int  hp_precision_float8_apply(hp_transformer *tf, int recipe, const char *filter, int bf16);
// Releases what init and apply made (h: the hooks the model ran with, tf->hk.prec).
void hp_precision_free(hp_precision_hooks *h);

#endif
