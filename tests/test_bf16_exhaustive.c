// test_bf16_exhaustive.c - every one of the 2^32 fp32 bit patterns through hp_bf16_from_float
// (include/hyperpar/bf16.h, PyTorch's integer rule) against a reference that rounds with the
// FPU instead: for a float of biased exponent E, bf16 keeps 8 significant bits, so its quantum is
//   q = 2^(max(E, 1) - 127 - 7)         (E = 0, the subnormals, share the quantum of E = 1)
// and the nearest multiple of q, ties to even, is (|x| + c) - c in double with c = 1.5 * 2^52 q:
// c + |x| lies in [2^52 q, 2^53 q), where a double's spacing is exactly q, and the FPU rounds
// to nearest even (x86-64 SSE2, no -ffast-math). A result of 2^128 or more is +-inf; the sign is
// copied back (so -0 stays -0). NaNs: the result must be a NaN, the sign kept; infinities stay.
// Two threads share the patterns. Exit 0 only when no pattern differs.
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "hyperpar/bf16.h"
#include "test_check.h"

typedef struct { uint64_t lo, hi, bad, nans; uint32_t first_bad; } range_job;

static double magic[256];   // c of each biased exponent

static float reference(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    const double c = magic[(u >> 23) & 0xFF];
    const double a = fabs((double)f);
    volatile double sum = a + c;   // rounded to a multiple of q by the FPU
    double r = sum - c;            // exact
    if (r >= 0x1p128) r = INFINITY;
    return (float)copysign(r, (double)f);
}

static void *run(void *p) {
    range_job *j = p;
    for (uint64_t i = j->lo; i < j->hi; i++) {
        const uint32_t u = (uint32_t)i;
        float f;
        memcpy(&f, &u, sizeof f);
        const float got = hp_bf16_to_float(hp_bf16_from_float(f));
        int ok;
        if (isnan(f)) {
            j->nans++;
            ok = isnan(got) && signbit(got) == signbit(f);
        } else if (isinf(f)) {
            ok = got == f;
        } else {
            const float want = reference(f);
            ok = !memcmp(&got, &want, sizeof got);
        }
        if (!ok && j->bad++ == 0) j->first_bad = u;
    }
    return NULL;
}

int main(void) {
    for (int e = 0; e < 256; e++) magic[e] = 1.5 * ldexp(1.0, 52 + (e < 1 ? 1 : e) - 127 - 7);
    // spot checks of the reference itself: ties to even, the top of the range, subnormals
    CHECK(reference(1.00390625f) == 1.0f, "1 + 2^-8 (a tie) -> 1 (even)");
    CHECK(reference(1.01171875f) == 1.015625f, "1 + 3 * 2^-8 (a tie) -> 1 + 2^-6 (even)");
    CHECK(isinf(reference(3.4028235e38f)), "FLT_MAX rounds to inf");
    CHECK(reference(0x1p-130f) == 0x1p-130f && reference(0x1p-135f) == 0.0f, "a bf16 subnormal is kept; a quarter of the smallest goes to 0");
    CHECK(reference(0x1.8p-134f) == 0x1p-133f, "half the smallest bf16 subnormal and more rounds up");
    range_job jobs[2] = { { 0, 1ull << 31, 0, 0, 0 }, { 1ull << 31, 1ull << 32, 0, 0, 0 } };
    pthread_t t;
    const int two = pthread_create(&t, NULL, run, &jobs[1]) == 0;
    run(&jobs[0]);
    if (two) pthread_join(t, NULL);
    else run(&jobs[1]);
    const uint64_t bad = jobs[0].bad + jobs[1].bad, nans = jobs[0].nans + jobs[1].nans;
    const uint32_t first = jobs[0].bad ? jobs[0].first_bad : jobs[1].first_bad;
    CHECK(nans == 2ull * ((1u << 23) - 1), "%llu NaN patterns seen, 2 (2^23 - 1) expected", (unsigned long long)nans);
    CHECK(bad == 0, "%llu of 2^32 patterns differ from the reference; the first 0x%08x", (unsigned long long)bad, first);
    return test_summary("test_bf16_exhaustive");
}
