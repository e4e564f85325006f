// optim.h - the learning rate of each step: TorchTitan's LR schedule, exactly
// (torchtitan/components/lr_scheduler.py; docs/job_file.md, lr_scheduler.*).
// defines: hp_lr_schedule, hp_lr_schedule_resolve, hp_lr_factor, hp_lr_at
//
//   hp_run_config rc;
//   hp_run_config_default(&rc);
//   rc.lr = 0.1f; rc.steps = 10; rc.warmup_steps = 2; rc.decay_ratio = -1;   // decay from warmup
//   for (int k = 1; k <= rc.steps; k++) printf("%g\n", hp_lr_at(&rc, k));  // 0.05, 0.1, 0.1, 0.0875 ...
//
// With T the schedule's length (total_steps, else steps), W = min(warmup_steps, T) warmup
// steps, D = round_half_even(T * decay_ratio) decay steps (at most T - W; T - W when
// decay_ratio is unset) and S = T + 1 - W - D stable ones (one of them virtual: the last lr is
// never 0), step k (1-based, s = k - 1) multiplies lr by
//   f(s) = (s + 1) / W                      s < W
//        = 1                                s < W + S
//        = m + (1 - m) g,  p = (s + 1 - W - S) / D,  m = min_lr_factor,
//          g = 1 - p | 1 - sqrt(p) | (1 + cos(pi p)) / 2     (linear | sqrt | cosine)
// computed in double and rounded to fp32 once, on every rank alike. Past the schedule's end
// (k > T + 1: a verified trajectory longer than --steps) p stays 1: the last lr is kept. The defaults (warmup 0,
// decay_ratio 0) give f = 1: a constant lr, bit for bit the lr given.
#ifndef HYPERPAR_OPTIM_H
#define HYPERPAR_OPTIM_H
#include <stddef.h>
#include "config.h"

typedef struct hp_lr_schedule {
    int T, W, D, S;   // length, warmup, decay and stable steps, as above
} hp_lr_schedule;

// Resolves rc's schedule. A warmup longer than T or a decay longer than T - W is clamped, as
// TorchTitan does, and one line saying so goes to note (note[0] = '\0' when nothing was).
hp_lr_schedule hp_lr_schedule_resolve(const hp_run_config *rc, char *note, size_t note_len);

// f(k - 1) for step k >= 1 of the resolved schedule (double).
double hp_lr_factor(const hp_run_config *rc, const hp_lr_schedule *sc, int k);

// The lr step k used: (float)(lr * f(k - 1)).
float hp_lr_at(const hp_run_config *rc, int k);

#endif
