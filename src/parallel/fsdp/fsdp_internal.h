// fsdp_internal.h - what fsdp.c (when a unit moves) and fsdp_wire.c (in which bytes: bf16 and
// fp8) share of the FSDP state: a unit's spans, the chunk geometry, the unit buffers.
#ifndef HP_PARALLEL_FSDP_INTERNAL_H
#define HP_PARALLEL_FSDP_INTERNAL_H
#include "fsdp.h"

// The params of unit u in one stack: indices [i0, i1), their shards [s0, s0+n) of the shard
// buffer (contiguous: the table orders params by unit, dense before experts), and the group
// of size G they are sharded over. 0 when the unit has none in that stack.
typedef struct stack_span { int i0, i1; int64_t s0, n; hp_group_kind group; int G; } stack_span;
int hp_fsdp_stack_span_of(const hp_fsdp_state *fs, int u, hp_stack st, stack_span *sp);

// Copies chunk k of the local tensor to (to_shard = 1) or from (0) a padded shard; to a
// shard, its padding rows (chunk k past the tensor's rows) are written as zeros.
void hp_fsdp_chunk_copy(const hp_param *p, int k, float *local, float *shard, int to_shard);
int    hp_fsdp_in_shards(const hp_fsdp_state *fs, int u);   // unit u's tensors are its shards
float *hp_fsdp_grad_of(hp_fsdp_state *fs, int i);           // parameter i's unsharded grad sum
// Under the structure check: the staged (G, n) inputs of a span's reduction, kept for later.
void hp_fsdp_keep_reduce_inputs(hp_fsdp_state *fs, const stack_span *sp, const float *staged);

// fsdp_wire.c: the staged floats (G, n) of a span's all-gather in bf16, or in fp8 for the
// converted weights (the others bf16 or fp32); the bf16 reduction of a span's grads into g.
const float *hp_fsdp_gather_bf16(hp_fsdp_state *fs, const stack_span *sp);
const float *hp_fsdp_gather_fp8(hp_fsdp_state *fs, const stack_span *sp);
void hp_fsdp_reduce_in_bf16(hp_fsdp_state *fs, const stack_span *sp, float *g);
int  hp_fsdp_f8_param(const hp_fsdp_state *fs, int i);              // i moves as fp8 codes
int  hp_fsdp_span_converted(const hp_fsdp_state *fs, const stack_span *sp);   // how many do
void hp_fsdp_check_fp8_gather(hp_fsdp_state *fs, int u);           // its structure check

#endif
