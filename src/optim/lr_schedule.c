// lr_schedule.c - TorchTitan's LR schedule (include/hyperpar/optim.h): warmup, stable, decay.
// defines: hp_lr_schedule_resolve, hp_lr_factor, hp_lr_at
#include <math.h>
#include <stdio.h>
#include "hyperpar/optim.h"

static const double pi = 3.14159265358979323846;   // Python's math.pi, the same double

hp_lr_schedule hp_lr_schedule_resolve(const hp_run_config *rc, char *note, size_t note_len) {
    hp_lr_schedule sc;
    if (note && note_len) note[0] = '\0';
    sc.T = rc->total_steps > 0 ? rc->total_steps : rc->steps;
    sc.W = rc->warmup_steps < sc.T ? rc->warmup_steps : sc.T;
    if (rc->warmup_steps > sc.T && note)
        snprintf(note, note_len, "lr_scheduler.warmup_steps %d is longer than the schedule's %d steps: "
                 "%d warmup steps", rc->warmup_steps, sc.T, sc.W);
    if (rc->decay_ratio < 0) {   // unset: decay from the end of warmup
        sc.D = sc.T - sc.W;
    } else {
        // Python's round(): half to even, which nearbyint does in the default rounding mode
        sc.D = (int)nearbyint((double)sc.T * rc->decay_ratio);
        if (sc.D > sc.T - sc.W) {
            if (note && !note[0])
                snprintf(note, note_len, "lr_scheduler.decay_ratio %g gives %d decay steps, more than the %d "
                         "after warmup: %d decay steps", rc->decay_ratio, sc.D, sc.T - sc.W, sc.T - sc.W);
            sc.D = sc.T - sc.W;
        }
    }
    sc.S = sc.T + 1 - sc.W - sc.D;
    return sc;
}

double hp_lr_factor(const hp_run_config *rc, const hp_lr_schedule *sc, int k) {
    const int s = k - 1;
    if (s < sc->W) return (double)(s + 1) / sc->W;
    if (s < sc->W + sc->S || sc->D == 0) return 1.0;
    // past the schedule's end (the verifier's trajectory may run longer than --steps) the lr
    // stays at its last value
    double p = (double)(s + 1 - sc->W - sc->S) / sc->D;
    if (p > 1.0) p = 1.0;
    const double m = rc->min_lr_factor;
    double g;
    switch (rc->decay_type) {
    case HP_DECAY_SQRT:   g = 1.0 - sqrt(p); break;
    case HP_DECAY_COSINE: g = 0.5 * (1.0 + cos(pi * p)); break;
    default:              g = 1.0 - p; break;
    }
    return m + (1.0 - m) * g;
}

float hp_lr_at(const hp_run_config *rc, int k) {
    const hp_lr_schedule sc = hp_lr_schedule_resolve(rc, NULL, 0);
    return (float)((double)rc->lr * hp_lr_factor(rc, &sc, k));
}
