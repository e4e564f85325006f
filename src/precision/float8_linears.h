// float8_linears.h - what the plan layer and FSDP need of the float8 linears (float8_linears.c):
// which weights convert, and the amax values one block MAX-reduces over tp, for the traffic formula
// (docs/precision.md: 4 bytes a value). The run time is float8.c, behind the precision hooks.
// defines: hp_float8_block_amax_reduced, hp_float8_param_converted
#ifndef HP_PRECISION_FLOAT8_LINEARS_H
#define HP_PRECISION_FLOAT8_LINEARS_H
#include <stdint.h>
#include "hyperpar/config.h"
#include "hyperpar/shapes.h"

// Block l under recipe (hyperpar/float8.h) and filter (a comma list), per microbatch: *fwd
// values reduced by its forward, *bwd by one backward (zbv's I and W each run one; an
// activation-checkpointing recompute reduces none: it reuses the forward's), plus *fwd_entry
// and *bwd_entry values for each routed entry (row, expert) its local experts compute: an
// amax per row over a routed expert's etp-split hidden (the rowwise recipes).
// fsdp_f8: --float8-fsdp-all-gather, where a dense weight's amax is taken at its all-gather
// (its tp reduction is counted with the gather's, not here).
void hp_float8_block_amax_reduced(const hp_model_config *m, const hp_local_shapes *sh, int recipe,
                                  const char *filter, int fsdp_f8, int l, uint64_t *fwd, uint64_t *bwd,
                                  uint64_t *fwd_entry, uint64_t *bwd_entry);

// 1 when the parameter named name (full shape out x in) is the weight of a block linear the
// float8 filter converts (recipe on): the weights the fp8 all-gather casts.
int hp_float8_param_converted(int recipe, const char *filter, const char *name, int64_t out, int64_t in);

// Block l's tp region all-gathers that move float8 codes (1 byte an element) under recipe and
// filter: *fwd of its forward (the attention's input, the dense FFN's), *bwd of one backward
// (the grad_output of wo, w2; none under zbv, whose I gathers plain). 0 without tensorwise SP.
void hp_float8_block_sp_gathers(const hp_model_config *m, const hp_local_shapes *sh, int recipe,
                                const char *filter, int l, int *fwd, int *bwd);

#endif
