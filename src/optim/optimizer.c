// optimizer.c - the optimiser step on a rank's shards (optimizer.h): the choice of update and
// its hyperparameters; the arithmetic is the elementwise kernels' (src/kernels/optim.c).
// This folder may include base and kernels (scripts/check_layers.py).
// defines: hp_optimizer_update
#include "hyperpar/kernels.h"
#include "hyperpar/optim.h"
#include "optim/optimizer.h"

void hp_optimizer_update(const hp_run_config *rc, float *p, const float *g, float *m, float *v,
                         size_t n, int t) {
    const float lr = hp_lr_at(rc, t);   // the schedule's lr of step t (rc->lr when constant)
    if (rc->optimizer == HP_OPT_ADAMW)
        hp_adamw_update(p, g, m, v, n, lr, rc->beta1, rc->beta2, rc->eps, rc->weight_decay, t);
    else
        hp_sgd_update(p, g, n, lr);
}
