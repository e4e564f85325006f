// trainer_eval.c - validation: the loss of a held-out set's batches under the run's layout,
// forward only (docs/metrics.md).
// defines: hp_trainer_eval_batch, hp_trainer_validate
//
// The batch is read as a training step reads its own (each dp rank its sequences, cut to its
// cp positions; pp: hp_pp_run_forward, microbatch by microbatch), from the validation set in
// place of the training one, and reduced as the step's loss is. No gradient is computed, the
// optimiser state, the step count and the last step's routing record are left as they were.
#include "train/trainer_internal.h"

double hp_trainer_eval_batch(hp_trainer *tr, hp_data *data, int64_t batch) {
    hp_data *train_data = tr->data;
    tr->data = data;   // batch b is what step b+1 reads: windows b*B .. b*B+B-1
    const double loss = hp_trainer_eval_loss(tr, (int)(batch + 1));
    tr->data = train_data;
    // units the forward kept for a backward that never comes are freed here, so that the next
    // step gathers every unit anew (the pipeline's forward does it itself)
    if (!tr->pp) hp_fsdp_release_all(&tr->fsdp);
    return loss;
}

double hp_trainer_validate(hp_trainer *tr, hp_data *data, int64_t n_batches) {
    double sum = 0.0;
    for (int64_t b = 0; b < n_batches; b++) sum += hp_trainer_eval_batch(tr, data, b);
    return n_batches > 0 ? sum / (double)n_batches : 0.0;
}
