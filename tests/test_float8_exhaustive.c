// test_float8_exhaustive.c - every one of the 2^32 fp32 bit patterns through
// hp_fp8_from_float (include/hyperpar/float8.h), in both formats, against a reference that
// rounds with the FPU instead of integer arithmetic: for a float of biased exponent E (E = 0,
// the fp32 subnormals, are far below both formats' range and share the smallest exponent), the
// fp8 quantum is
//   q = 2^(max(E - 127, emin) - mbits)      (emin: -6 e4m3fn, -14 e5m2; mbits 3, 2)
// and the nearest multiple of q, ties to even, is (|x| + c) - c in double with c = 1.5 * 2^52 q
// (c + |x| lies in [2^52 q, 2^53 q), where a double's spacing is exactly q; x86-64 SSE2 rounds
// to nearest even, no -ffast-math). Above the format's max the result is max (torchao clamps
// before the cast; an infinity too); the sign is copied back (-0 stays -0); a NaN stays a NaN.
// The 256 codes of each format are checked against the spec's definitions first (so that the
// decoder this test compares through cannot hide an encoder bug). Two threads share the patterns;
// a negative pattern is checked as the sign-flipped code of its magnitude's.
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "hyperpar/float8.h"
#include "test_check.h"

typedef struct { int mbits, emin; double max; } spec;
static const spec specs[2] = { [HP_FP8_E4M3] = { 3, -6, 448.0 }, [HP_FP8_E5M2] = { 2, -14, 57344.0 } };

typedef struct { uint64_t lo, hi, bad[2], nans; uint32_t first_bad[2]; } range_job;

static double magic[2][256];   // c of each fp32 biased exponent, per format

static float reference(float f, hp_fp8_format fmt) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    const double c = magic[fmt][(u >> 23) & 0xFF];
    volatile double sum = fabs((double)f) + c;   // rounded to a multiple of q by the FPU
    double r = sum - c;                         // exact
    if (r > specs[fmt].max) r = specs[fmt].max;
    return (float)copysign(r, (double)f);
}

// Blocks of patterns through the array forms (scale 1: the product and the quotient are exact),
// so the casts run as a kernel would call them. Only the non-negative patterns meet the
// reference: each negative one -x must then give exactly the code of x with the sign bit set
// (both formats are sign-magnitude), which checks all 2^32 at half the reference's cost.
enum { BLOCK = 4096 };
static void *run(void *p) {
    range_job *j = p;
    float f[BLOCK], neg[BLOCK], got[BLOCK];
    hp_fp8 q[BLOCK], qn[BLOCK];
    for (uint64_t i0 = j->lo; i0 < j->hi; i0 += BLOCK) {
        for (int k = 0; k < BLOCK; k++) {
            const uint32_t u = (uint32_t)(i0 + (uint64_t)k), un = u | 0x80000000u;
            memcpy(&f[k], &u, sizeof u);
            memcpy(&neg[k], &un, sizeof un);
        }
        for (int fmt = 0; fmt < 2; fmt++) {
            hp_fp8_quantize(q, f, BLOCK, 1.0f, (hp_fp8_format)fmt);
            hp_fp8_quantize(qn, neg, BLOCK, 1.0f, (hp_fp8_format)fmt);
            hp_fp8_dequantize(got, q, BLOCK, 1.0f, (hp_fp8_format)fmt);
            for (int k = 0; k < BLOCK; k++) {
                int ok;
                if (isnan(f[k])) ok = isnan(got[k]) && !signbit(got[k]);
                else {
                    const float want = isinf(f[k]) ? (float)specs[fmt].max : reference(f[k], (hp_fp8_format)fmt);
                    ok = !memcmp(&got[k], &want, sizeof want);
                }
                ok = ok && qn[k] == (hp_fp8)(q[k] | 0x80);
                if (!ok && j->bad[fmt]++ == 0) j->first_bad[fmt] = (uint32_t)(i0 + (uint64_t)k);
            }
        }
        for (int k = 0; k < BLOCK; k++) j->nans += 2 * (isnan(f[k]) != 0);
    }
    return NULL;
}

// The 256 codes from the spec's definition (precision.md §5.1), written out separately.
static void check_codes(hp_fp8_format fmt) {
    const char *name = fmt == HP_FP8_E4M3 ? "e4m3fn" : "e5m2";
    const int mbits = specs[fmt].mbits, bias = fmt == HP_FP8_E4M3 ? 7 : 15;
    int bad = 0, nans = 0, infs = 0;
    float prev = -1.0f;
    for (int c = 0; c < 256; c++) {
        const int e = (c & 0x7F) >> mbits, m = c & ((1 << mbits) - 1), emax = 0x7F >> mbits;
        double want;
        if (fmt == HP_FP8_E4M3 && (c & 0x7F) == 0x7F) want = NAN;
        else if (fmt == HP_FP8_E5M2 && e == emax) want = m ? NAN : INFINITY;
        else if (e == 0) want = m * pow(2.0, 1 - bias) / (1 << mbits);
        else want = (1.0 + (double)m / (1 << mbits)) * pow(2.0, e - bias);
        if (c & 0x80) want = -want;
        const float got = hp_fp8_to_float((hp_fp8)c, fmt);
        if (isnan(want)) { nans++; bad += !isnan(got); continue; }
        if (isinf(want)) infs++;
        bad += got != (float)want || !signbit(got) != !signbit(want);
        // every finite code is its own cast; positive codes increase with the code
        if (!isinf(want)) bad += hp_fp8_from_float(got, fmt) != c;
        if (c < 0x80 && !isinf(want)) { bad += !(got > prev) && c > 0; prev = got; }
    }
    CHECK(bad == 0, "%s: %d of 256 codes differ from the spec's values", name, bad);
    CHECK(nans == (fmt == HP_FP8_E4M3 ? 2 : 6) && infs == (fmt == HP_FP8_E4M3 ? 0 : 2),
          "%s: %d NaN and %d inf codes", name, nans, infs);
    CHECK(hp_fp8_to_float(fmt == HP_FP8_E4M3 ? 0x7E : 0x7B, fmt) == (float)specs[fmt].max &&
          hp_fp8_max(fmt) == (float)specs[fmt].max, "%s: the largest finite code is max", name);
    CHECK(hp_fp8_to_float(1, fmt) == (float)ldexp(1.0, specs[fmt].emin - mbits) &&
          hp_fp8_to_float((hp_fp8)(1 << mbits), fmt) == (float)ldexp(1.0, specs[fmt].emin),
          "%s: smallest subnormal 2^%d, smallest normal 2^%d", name, specs[fmt].emin - mbits, specs[fmt].emin);
}

int main(void) {
    for (int fmt = 0; fmt < 2; fmt++) {
        check_codes((hp_fp8_format)fmt);
        for (int e = 0; e < 256; e++) {
            int ex = e - 127;
            if (ex < specs[fmt].emin) ex = specs[fmt].emin;
            magic[fmt][e] = 1.5 * ldexp(1.0, 52 + ex - specs[fmt].mbits);
        }
    }
    // spot checks of the reference itself: ties to even, saturation, subnormals
    CHECK(reference(1.0625f, HP_FP8_E4M3) == 1.0f && reference(1.1875f, HP_FP8_E4M3) == 1.25f,
          "e4m3: 1 + 2^-4 (a tie) -> 1; 1 + 3 * 2^-4 (a tie) -> 1.25 (even)");
    CHECK(reference(464.0f, HP_FP8_E4M3) == 448.0f && reference(1e30f, HP_FP8_E4M3) == 448.0f &&
          reference(-500.0f, HP_FP8_E4M3) == -448.0f, "e4m3 saturates at 448");
    CHECK(reference(0x1p-10f, HP_FP8_E4M3) == 0.0f && reference(0x1.8p-10f, HP_FP8_E4M3) == 0x1p-9f,
          "e4m3: half the smallest subnormal (a tie) -> 0; more rounds up");
    CHECK(reference(61440.0f, HP_FP8_E5M2) == 57344.0f && reference(0x1p-17f, HP_FP8_E5M2) == 0.0f,
          "e5m2: saturates at 57344; 2^-17 (a tie) -> 0");
    // torchao's scales: float64 division once rounded; the rowwise power-of-2 floor
    CHECK(hp_fp8_scale(3.0, HP_FP8_E4M3, 0) == (float)(448.0 / 3.0), "scale 448/3 from float64");
    CHECK(hp_fp8_scale(3.0, HP_FP8_E4M3, 1) == 128.0f && hp_fp8_scale(0.0, HP_FP8_E5M2, 0) == (float)(57344.0 / 1e-12),
          "pow2 floor of 149.33 is 128; amax 0 takes 1e-12");
    hp_fp8 q[3];
    float y[3];
    const float x[3] = { 1.0f, -2.5f, 1000.0f };
    hp_fp8_quantize(q, x, 3, 2.0f, HP_FP8_E4M3);
    hp_fp8_dequantize(y, q, 3, 2.0f, HP_FP8_E4M3);
    CHECK(y[0] == 1.0f && y[1] == -2.5f && y[2] == 224.0f, "scaled cast by 2: 1, -2.5 and 1000 (saturated to 448/2)");

    range_job jobs[2] = { { 0, 1ull << 30, { 0, 0 }, 0, { 0, 0 } }, { 1ull << 30, 1ull << 31, { 0, 0 }, 0, { 0, 0 } } };
    pthread_t t;
    const int two = pthread_create(&t, NULL, run, &jobs[1]) == 0;
    run(&jobs[0]);
    if (two) pthread_join(t, NULL);
    else run(&jobs[1]);
    CHECK(jobs[0].nans + jobs[1].nans == 2ull * ((1u << 23) - 1), "%llu NaN patterns seen, 2 (2^23 - 1) expected",
          (unsigned long long)(jobs[0].nans + jobs[1].nans));
    for (int fmt = 0; fmt < 2; fmt++) {
        const uint64_t bad = jobs[0].bad[fmt] + jobs[1].bad[fmt];
        const uint32_t first = jobs[0].bad[fmt] ? jobs[0].first_bad[fmt] : jobs[1].first_bad[fmt];
        CHECK(bad == 0, "%s: %llu of 2^32 patterns differ from the reference; the first 0x%08x",
              fmt == HP_FP8_E4M3 ? "e4m3fn" : "e5m2", (unsigned long long)bad, first);
    }
    return test_summary("test_float8_exhaustive");
}
