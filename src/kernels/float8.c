// float8.c - float8.h: the e4m3fn and e5m2 casts by integer rounding (one rule for both
// formats, from the table below), and torchao's scale and scaled casts.
// defines: hp_fp8_max, hp_fp8_from_float, hp_fp8_to_float, hp_fp8_scale, hp_fp8_quantize,
//          hp_fp8_dequantize, hp_float8_recipe_parse, hp_float8_recipe_name
#include <math.h>
#include <string.h>
#include "hyperpar/float8.h"

typedef struct {
    int    mbits;      // stored mantissa bits
    int    bias;       // exponent bias
    int    emin;       // exponent of the smallest normal: 1 - bias
    hp_fp8 max_code;   // the largest finite magnitude's code
    hp_fp8 nan_code;   // the NaN this cast returns (sign added)
    float  max;
    float  subnormal;  // the smallest subnormal, 2^(emin - mbits)
} fp8_layout;

static const fp8_layout layouts[2] = {
    [HP_FP8_E4M3] = { 3, 7, -6, 0x7E, 0x7F, 448.0f, 0x1p-9f },      // 0x7F (all ones): the only NaN
    [HP_FP8_E5M2] = { 2, 15, -14, 0x7B, 0x7F, 57344.0f, 0x1p-16f },  // 0x7C inf, 0x7D..0x7F NaN
};

float hp_fp8_max(hp_fp8_format f) { return layouts[f].max; }

hp_fp8 hp_fp8_from_float(float x, hp_fp8_format f) {
    const fp8_layout *L = &layouts[f];
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    const hp_fp8 sign = (hp_fp8)((u >> 24) & 0x80u);
    uint32_t a = u & 0x7FFFFFFFu;
    if (a > 0x7F800000u) return (hp_fp8)(sign | L->nan_code);
    if (a == 0x7F800000u) return (hp_fp8)(sign | L->max_code);   // saturated, as after torchao's clamp
    uint32_t code;
    if (a >= (uint32_t)(127 + L->emin) << 23) {
        // a normal fp8: keep mbits of the fp32 mantissa, rounding to nearest even at that bit
        // (a carry into the exponent is the right result), then move the exponent's bias
        const int shift = 23 - L->mbits;
        a += ((a >> shift) & 1u) + (1u << (shift - 1)) - 1u;
        code = (a >> shift) - ((uint32_t)(127 - L->bias) << L->mbits);
    } else {
        // a subnormal fp8 (or zero): |x| in units of the smallest subnormal 2^(emin - mbits),
        // scaled exactly (a power of 2, the result below 2^mbits), rounded to an integer by the
        // FPU's nearest-even on adding 2^23 (float spacing 1 there); 2^mbits is the smallest
        // normal's code, so a round-up lands right
        float y;
        memcpy(&y, &a, sizeof y);
        y /= L->subnormal;   // exact: a power of 2, no overflow
        code = (uint32_t)((y + 0x1p23f) - 0x1p23f);
    }
    if (code > L->max_code) code = L->max_code;   // saturate: never inf or NaN from a finite value
    return (hp_fp8)(sign | code);
}

float hp_fp8_to_float(hp_fp8 code, hp_fp8_format f) {
    const fp8_layout *L = &layouts[f];
    const int mag = code & 0x7F, e = mag >> L->mbits, m = mag & ((1 << L->mbits) - 1);
    const int e_all_ones = (0x7F >> L->mbits);
    float v;
    if (f == HP_FP8_E4M3 && mag == 0x7F) v = NAN;
    else if (f == HP_FP8_E5M2 && e == e_all_ones) v = m ? NAN : INFINITY;
    else if (e == 0) v = (float)m * L->subnormal;   // exact
    else {   // the fp32 pattern: exponent rebiased, mantissa bits moved to the top
        const uint32_t bits = (uint32_t)(e - L->bias + 127) << 23 | (uint32_t)m << (23 - L->mbits);
        memcpy(&v, &bits, sizeof v);
    }
    return (code & 0x80) ? -v : v;
}

float hp_fp8_scale(double amax, hp_fp8_format f, int pow2) {
    // float64 keeps the scale equal between eager and compiled torchao (pytorch/ao#904)
    const double s = (double)layouts[f].max / (amax > 1e-12 ? amax : 1e-12);
    float scale = (float)s;
    if (pow2) {   // the floor to a power of 2: the exponent kept, the mantissa cleared
        uint32_t u;
        memcpy(&u, &scale, sizeof u);
        u &= 0xFF800000u;
        memcpy(&scale, &u, sizeof u);
    }
    return scale;
}

void hp_fp8_quantize(hp_fp8 *dst, const float *src, size_t n, float scale, hp_fp8_format f) {
    for (size_t i = 0; i < n; i++) dst[i] = hp_fp8_from_float(src[i] * scale, f);
}

void hp_fp8_dequantize(float *dst, const hp_fp8 *src, size_t n, float scale, hp_fp8_format f) {
    for (size_t i = 0; i < n; i++) dst[i] = hp_fp8_to_float(src[i], f) / scale;
}

static const char *const recipe_names[] = {
    [HP_FLOAT8_OFF] = "off", [HP_FLOAT8_TENSORWISE] = "tensorwise",
    [HP_FLOAT8_ROWWISE] = "rowwise", [HP_FLOAT8_ROWWISE_GW_HP] = "rowwise-gw-hp",
};

int hp_float8_recipe_parse(const char *name, hp_float8_recipe *out) {
    for (int r = HP_FLOAT8_OFF; r <= HP_FLOAT8_ROWWISE_GW_HP; r++)
        if (name && strcmp(name, recipe_names[r]) == 0) { *out = (hp_float8_recipe)r; return 0; }
    return -1;
}

const char *hp_float8_recipe_name(hp_float8_recipe r) {
    return r >= HP_FLOAT8_OFF && r <= HP_FLOAT8_ROWWISE_GW_HP ? recipe_names[r] : "?";
}
