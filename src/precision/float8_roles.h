// float8_roles.h - the block linears float8 may convert, shared by float8_linears.c (which
// ones, their dims, their reduced amax) and float8.c (the model's float8 linears at run time).
#ifndef HP_PRECISION_FLOAT8_ROLES_H
#define HP_PRECISION_FLOAT8_ROLES_H
#include "hyperpar/float8.h"
#include "hyperpar/kernels.h"
#include "model/transformer.h"

// The linears a block may have that the float8 filter converts (the dense FFN in dense blocks,
// the shared and the routed experts in MoE blocks), in the order their kept amax are stored;
// the routed experts' (from HP_F8_FIRST_EXPERT on) are kept apart, per local expert.
enum { HP_F8_N_ROLES = 13, HP_F8_FIRST_EXPERT = 10, HP_F8_N_EXPERT_ROLES = 3 };
extern const hp_block_param hp_float8_roles[HP_F8_N_ROLES];

static inline int hp_float8_is_expert(int k) { return k >= HP_F8_FIRST_EXPERT; }
static inline int hp_float8_rows_amax(hp_float8_recipe r) {
    return r == HP_FLOAT8_ROWWISE || r == HP_FLOAT8_ROWWISE_GW_HP;
}
// Full (model) and local dims of a role's weight (out, in), and which of them is a tp shard.
void hp_float8_role_dims(const hp_model_config *m, const hp_local_shapes *sh, hp_block_param r,
                         int *out, int *in, int *out_l, int *in_l);
// Which amax of a linear are MAX-reduced over tp (counts; 0 for the ones not reduced).
void hp_float8_reduced(hp_float8_amax_n *red, hp_float8_recipe r, int N, int in, int out,
                       int in_split, int out_split);
// 1 when role k of block l is a linear of the model the filter converts.
int  hp_float8_block_role_on(const hp_model_config *m, const hp_local_shapes *sh, int l, int k,
                             const char *filter);

#endif
