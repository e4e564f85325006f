// precision_internal.h - what the implementations of src/precision/ share: the plain region
// wrappers (the region's own *_consume / *_produce) and the fp32 linears.
#ifndef HP_PRECISION_INTERNAL_H
#define HP_PRECISION_INTERNAL_H
#include "model/model_hooks.h"

void hp_precision_plain_regions(hp_precision_hooks *h);   // the four region wrappers
void hp_precision_fp32_fill(hp_precision_hooks *h);       // every hook, fp32 (ctx left as is)
int  hp_precision_bf16_init(hp_precision_hooks *h, int store);

#endif
