// verify_compare.c - the tolerance table and the checks between two verification records
// (verify_record.h): rerun determinism, same_as twins, resume. Pure: no MPI.
// defines: hp_verify_tol, hp_verify_rerun_check, hp_verify_same_as_check, hp_verify_resume_check
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "hyperpar/verify_record.h"

// recipes.md (fp32); src/verify/verify.c says why each is what it is
const hp_verify_tolerances hp_verify_tol = {
    .loss = 1e-5, .grad = 1e-5, .param = 1e-5, .param_adamw = 1e-4, .traj = 1e-4, .resume = 1e-5,
    .closeness_bf16 = 2.8, .traj_bf16 = 1e-3,
};

static int say(char *why, int cap, const char *f, ...) __attribute__((format(printf, 3, 4)));
static int say(char *why, int cap, const char *f, ...) {
    if (why && cap > 0) {
        va_list ap;
        va_start(ap, f);
        vsnprintf(why, (size_t)cap, f, ap);
        va_end(ap);
    }
    return 1;
}

// 1 when both files exist and hold the same bytes.
static int files_equal(const char *a, const char *b) {
    FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
    int same = fa && fb;
    while (same) {
        char ba[65536], bb[65536];
        size_t na = fread(ba, 1, sizeof ba, fa), nb = fread(bb, 1, sizeof bb, fb);
        if (na != nb || memcmp(ba, bb, na)) same = 0;
        if (na == 0) break;
    }
    if (fa) fclose(fa);
    if (fb) fclose(fb);
    return same;
}

int hp_verify_rerun_check(const hp_verify_record *first, const hp_verify_record *again,
                          const char *grads_first, const char *grads_again, char *why, int cap) {
    if (why && cap > 0) why[0] = '\0';
    if (again->steps != first->steps)
        return say(why, cap, "%d losses, the first run has %d", again->steps, first->steps);
    for (int s = 0; s < first->steps; s++)
        if (memcmp(&again->losses[s], &first->losses[s], sizeof(double)))
            return say(why, cap, "differs at step %d: loss %.17g != %.17g", s + 1, again->losses[s], first->losses[s]);
    if (grads_first && grads_again && !files_equal(grads_first, grads_again))
        return say(why, cap, "different gradients of step 1 (%s vs %s)", grads_again, grads_first);
    return 0;
}

// The worst relative difference of a's losses to b's over their common steps (NaN counts).
static double traj_diff(const double *a, const double *b, int n) {
    double w = 0;
    for (int s = 0; s < n; s++) {
        const double d = fabs(a[s] - b[s]) / fabs(b[s]);
        if (d > w || d != d) w = d;
    }
    return w;
}

// Two runs of other layouts follow each other within the trajectory tolerance of their
// precision: fp32's, or under bf16 its own (each layout rounds its own partial sums).
static double traj_tolerance(const hp_verify_record *a, const hp_verify_record *b) {
    const int bf16 = !strcmp(a->precision, "bfloat16") || !strcmp(b->precision, "bfloat16");
    return bf16 ? hp_verify_tol.traj_bf16 : hp_verify_tol.traj;
}

int hp_verify_same_as_check(const hp_verify_record *x, const hp_verify_record *twin, double *worst,
                            char *why, int cap) {
    if (why && cap > 0) why[0] = '\0';
    const int n = x->steps < twin->steps ? x->steps : twin->steps;
    const double w = traj_diff(x->losses, twin->losses, n), tol = traj_tolerance(x, twin);
    if (worst) *worst = w;
    if (n == 0) return say(why, cap, "no common steps to compare");
    if (!(w <= tol))
        return say(why, cap, "loss trajectory differs by %.3g relative (> %.0e)", w, tol);
    return 0;
}

int hp_verify_resume_check(const hp_verify_record *straight, const hp_verify_record *resumed,
                           int same_layout, double *worst, char *why, int cap) {
    if (why && cap > 0) why[0] = '\0';
    const int n = resumed->steps, off = straight->steps - n;
    if (worst) *worst = -1;
    if (n < 1 || off < 0)
        return say(why, cap, "%d resumed losses against %d uninterrupted ones", n, straight->steps);
    const double w = traj_diff(resumed->losses, straight->losses + off, n);
    if (worst) *worst = w;
    if (same_layout && memcmp(resumed->losses, straight->losses + off, (size_t)n * sizeof(double)))
        return say(why, cap, "resumed losses of steps %d-%d are not bit-identical to the uninterrupted "
                   "run's (worst %.3g)", off + 1, off + n, w);
    const double tol = traj_tolerance(straight, resumed) > hp_verify_tol.traj ? hp_verify_tol.traj_bf16
                                                                              : hp_verify_tol.resume;
    if (!same_layout && !(w <= tol))
        return say(why, cap, "resumed losses of steps %d-%d differ by more than %.0e from the uninterrupted "
                   "run's (worst %.3g)", off + 1, off + n, tol, w);
    return 0;
}
