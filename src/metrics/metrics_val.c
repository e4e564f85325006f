// metrics_val.c - the validation set of `hp run --validation.enable` and its rounds
// (docs/metrics.md).
// defines: hp_validation_open, hp_validation_close, hp_validation_due, hp_validation_round
//
// A round reads the same batches every time: batch b of the set is windows b*B .. b*B+B-1, from
// window 0, in order, never shuffled, never carried over from the last round (TorchTitan before
// PR #2791 kept its loader's position between rounds: other batches each round, #2636).
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include "hyperpar/metrics.h"

int hp_validation_open(hp_validation *v, const hp_job *job, int say) {
    memset(v, 0, sizeof *v);
    if (!job->val_enable) return 0;
    v->path = job->val_path ? job->val_path : job->run.data_path;   // NULL: synthetic
    v->freq = job->val_freq;
    v->batch = job->run.batch;
    v->seq_len = job->run.seq_len;
    const char *name = v->path ? v->path : "synthetic data";
    char err[384];
    // the training data keep their format. A set of its own takes --validation.dataset_format,
    // else the training data's, where auto also reads a headerless file as bytes, as --data does
    hp_data_format format = job->run.data_format;
    if (job->val_path && job->val_format != HP_JOB_VAL_FORMAT_UNSET) format = job->val_format;
    else if (job->val_path && format == HP_DATA_AUTO) format = HP_DATA_AUTO_BYTES;
    v->data = hp_data_open(v->path, format, job->model.vocab_size, err, sizeof err);
    if (!v->data) {
        if (say) fprintf(stderr, "hp: --validation.dataset_path: %s\n", err);
        return HP_EXIT_CONFIG;
    }
    const int64_t B = job->run.batch, windows = hp_data_windows(v->data, job->run.seq_len);
    int bad = 0;
    if (job->val_steps == -1 && !v->path) {
        if (say) fprintf(stderr, "hp: --validation.steps -1 (every full batch once) needs a validation "
                         "dataset: synthetic data has no end; give --validation.steps N\n");
        bad = 1;
    } else if (job->val_steps == -1) {
        v->batches = windows / B;
        if (v->batches < 1) {
            if (say) fprintf(stderr, "hp: validation: '%s' holds %lld windows of seq_len+1 = %d tokens, "
                             "fewer than one batch of global_batch_size %lld\n", name, (long long)windows,
                             job->run.seq_len + 1, (long long)B);
            bad = 1;
        }
    } else {
        v->batches = job->val_steps;
        if (v->batches * B > windows) {
            if (say) fprintf(stderr, "hp: validation.steps %lld x global_batch_size %lld = %lld windows, but "
                             "'%s' holds %lld windows of seq_len+1 = %d tokens\n", (long long)v->batches,
                             (long long)B, (long long)(v->batches * B), name, (long long)windows,
                             job->run.seq_len + 1);
            bad = 1;
        }
    }
    if (!bad && v->batches > INT_MAX - 1) {   // batch b is read as step b+1, an int
        if (say) fprintf(stderr, "hp: validation: %lld batches a round; at most %d\n", (long long)v->batches,
                         INT_MAX - 1);
        bad = 1;
    }
    if (bad) {
        hp_validation_close(v);
        return HP_EXIT_CONFIG;
    }
    return 0;
}

void hp_validation_close(hp_validation *v) {
    if (v->data) hp_data_close(v->data);
    v->data = NULL;
}

int hp_validation_due(const hp_validation *v, int step, int last_step) {
    return v->data && (step % v->freq == 0 || step == last_step);
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

double hp_validation_round(const hp_validation *v, hp_trainer *tr, int64_t *tokens, double *seconds) {
    hp_comm *c = hp_trainer_comm(tr);
    hp_barrier(c, HP_G_WORLD);   // timed as a step is: from every rank ready to every rank done
    const double t0 = now_s();
    const double loss = hp_trainer_validate(tr, v->data, v->batches);
    hp_barrier(c, HP_G_WORLD);
    *seconds = now_s() - t0;
    *tokens = v->batches * v->batch * v->seq_len;
    return loss;
}
