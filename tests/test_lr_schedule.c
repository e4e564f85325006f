// test_lr_schedule.c - TorchTitan's LR schedule (include/hyperpar/optim.h) on TorchTitan's two
// test vectors (tests/unit_tests/test_lr_scheduler.py: lr 0.1, 10 steps, 2 warmup) and our own:
// sqrt and cosine decay, min_lr_factor, total_steps beyond steps, Python's round half to even,
// the clamps and their notes, and the default: a constant lr, bit for bit.
#include <math.h>
#include <string.h>
#include "hyperpar/optim.h"
#include "test_check.h"

static hp_run_config base(void) {
    hp_run_config rc;
    hp_run_config_default(&rc);
    rc.lr = 0.1f;
    rc.steps = 10;
    rc.warmup_steps = 2;
    return rc;
}

// the factors f(0..n-1) of rc against want, each within 1e-12 (double arithmetic)
static void expect_factors(const char *what, const hp_run_config *rc, const double *want, int n) {
    const hp_lr_schedule sc = hp_lr_schedule_resolve(rc, NULL, 0);
    for (int k = 1; k <= n; k++) {
        const double f = hp_lr_factor(rc, &sc, k);
        CHECK(fabs(f - want[k - 1]) < 1e-12, "%s: step %d factor %.17g, want %.17g", what, k, f, want[k - 1]);
    }
}

int main(void) {
    // TorchTitan's vectors
    hp_run_config rc = base();
    rc.decay_ratio = -1;   // unset: linear decay from the end of warmup
    hp_lr_schedule sc0;
    const double tt_unset[] = { 0.5, 1, 1, 7.0 / 8, 6.0 / 8, 5.0 / 8, 4.0 / 8, 3.0 / 8, 2.0 / 8, 1.0 / 8 };
    expect_factors("TT no decay_ratio", &rc, tt_unset, 10);
    rc.decay_ratio = 0.5;
    const double tt_half[] = { 0.5, 1, 1, 1, 1, 1, 0.8, 0.6, 0.4, 0.2 };
    expect_factors("TT decay_ratio 0.5", &rc, tt_half, 10);
    // the lr is the product, rounded to fp32 once
    CHECK(fabs(hp_lr_at(&rc, 7) - 0.08) < 1e-8, "lr of step 7 = 0.1 * 0.8: %.9g", hp_lr_at(&rc, 7));

    // sqrt and cosine over the same 5 decay steps, min_lr_factor 0.1
    rc.decay_ratio = 0.5;
    rc.min_lr_factor = 0.1;
    rc.decay_type = HP_DECAY_SQRT;
    double want[10];
    for (int k = 1; k <= 10; k++) {
        const double p = (k - 6) / 5.0;   // W 2, S 4: decay from step 7
        want[k - 1] = k <= 2 ? k / 2.0 : k <= 6 ? 1.0 : 0.1 + 0.9 * (1 - sqrt(p));
    }
    expect_factors("sqrt, min 0.1", &rc, want, 10);
    rc.decay_type = HP_DECAY_COSINE;
    for (int k = 7; k <= 10; k++) want[k - 1] = 0.1 + 0.9 * 0.5 * (1 + cos(3.14159265358979323846 * (k - 6) / 5.0));
    expect_factors("cosine, min 0.1", &rc, want, 10);
    CHECK(fabs(hp_lr_factor(&rc, &(hp_lr_schedule){ 10, 2, 5, 4 }, 11) - 0.1) < 1e-12,
          "the virtual step T+1 reaches min_lr_factor exactly");

    // past the end the last lr is kept, also without decay steps (no division by zero)
    CHECK(fabs(hp_lr_factor(&rc, &(hp_lr_schedule){ 10, 2, 5, 4 }, 15) - 0.1) < 1e-12, "past T + 1: min_lr_factor");
    rc.steps = 1;
    rc.decay_ratio = 0.4;
    sc0 = hp_lr_schedule_resolve(&rc, NULL, 0);
    CHECK(sc0.D == 0 && hp_lr_factor(&rc, &sc0, 5) == 1.0, "T 1, no decay step: step 5 keeps the lr (D %d)", sc0.D);

    // total_steps beyond steps: the schedule is the longer one's (a resume continues it)
    rc = base();
    rc.decay_ratio = -1;
    rc.total_steps = 20;
    hp_lr_schedule sc = hp_lr_schedule_resolve(&rc, NULL, 0);
    CHECK(sc.T == 20 && sc.W == 2 && sc.D == 18 && sc.S == 1, "total_steps 20: T %d W %d D %d S %d", sc.T, sc.W, sc.D, sc.S);
    CHECK(fabs(hp_lr_factor(&rc, &sc, 4) - 17.0 / 18) < 1e-12, "total_steps 20: step 4 factor 17/18");

    // Python's round: half to even (T 10, ratio 0.25 -> 2.5 -> 2; ratio 0.35 -> 3.5 -> 4)
    rc = base();
    rc.decay_ratio = 0.25;
    sc = hp_lr_schedule_resolve(&rc, NULL, 0);
    CHECK(sc.D == 2, "round(2.5) = 2 decay steps, got %d", sc.D);
    rc.decay_ratio = 0.35;
    sc = hp_lr_schedule_resolve(&rc, NULL, 0);
    CHECK(sc.D == 4, "round(3.5) = 4 decay steps, got %d", sc.D);

    // clamps, each said
    char note[256];
    rc = base();
    rc.warmup_steps = 15;
    sc = hp_lr_schedule_resolve(&rc, note, sizeof note);
    CHECK(sc.W == 10 && sc.D == 0 && strstr(note, "warmup_steps 15") != NULL, "warmup clamped to T: W %d, note '%s'",
          sc.W, note);
    rc = base();
    rc.decay_ratio = 1.0;
    sc = hp_lr_schedule_resolve(&rc, note, sizeof note);
    CHECK(sc.D == 8 && sc.S == 1 && strstr(note, "decay_ratio") != NULL, "decay clamped to T - W: D %d, note '%s'",
          sc.D, note);
    rc = base();
    hp_lr_schedule_resolve(&rc, note, sizeof note);
    CHECK(note[0] == '\0', "no clamp, no note: '%s'", note);

    // the default: no warmup, no decay, the lr itself at every step
    hp_run_config_default(&rc);
    rc.steps = 7;
    int constant = 1;
    for (int k = 1; k <= 7; k++) constant &= hp_lr_at(&rc, k) == rc.lr;
    CHECK(constant, "default schedule: every step's lr is --lr bit for bit");
    return test_summary("test_lr_schedule");
}
