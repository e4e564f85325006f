// optimizer.h - the optimiser of a training step: which update (--optimizer sgd|adamw) with
// which hyperparameters, applied to a rank's flat shards (FSDP's p/g/m/v). The arithmetic is
// the elementwise kernels' (hp_sgd_update, hp_adamw_update in kernels.h), so a sharded update
// gives the values of the full one. A new optimiser: its kernel under src/kernels, its case here.
// defines: hp_optimizer_update
//
//   hp_optimizer_update(&rc, p_shard, g_shard, m_shard, v_shard, n, step);   // step >= 1
#ifndef HP_OPTIM_OPTIMIZER_H
#define HP_OPTIM_OPTIMIZER_H
#include <stddef.h>
#include "hyperpar/config.h"

// One update of n elements at step t (>= 1, AdamW's bias correction) with the lr of the
// schedule at step t (hyperpar/optim.h): AdamW with rc's beta1, beta2, eps and weight decay
// (m, v: its moments); SGD (m, v unused).
void hp_optimizer_update(const hp_run_config *rc, float *p, const float *g, float *m, float *v,
                         size_t n, int t);

#endif
