// float8.h - the two float8 formats of torch (precision.md §5.1) and torchao's scaled casts
// (§5.3), emulated exactly on the CPU: numerics only, no x86 CPU computes in fp8.
//   e4m3fn: sign, 4 exponent bits (bias 7), 3 mantissa bits; no inf; NaN = 0x7F / 0xFF;
//           max 448, smallest normal 2^-6, smallest subnormal 2^-9
//   e5m2:   sign, 5 exponent bits (bias 15), 2 mantissa bits; IEEE inf and NaN;
//           max 57344, smallest normal 2^-14, smallest subnormal 2^-16
// The cast is saturating round-to-nearest-even, subnormals kept: torchao clamps x*scale to
// +-max before the cast, so a finite value or an infinity lands on +-max, never on NaN or inf;
// a NaN stays a NaN (sign kept). fp8 -> fp32 is exact.
// defines: hp_fp8, hp_fp8_format, hp_fp8_max, hp_fp8_from_float, hp_fp8_to_float,
//          hp_fp8_scale, hp_fp8_quantize, hp_fp8_dequantize, hp_float8_recipe,
//          hp_float8_recipe_parse, hp_float8_recipe_name
//
//   const float s = hp_fp8_scale(amax, HP_FP8_E4M3, 0);   // 448 / amax, in float64, once rounded
//   hp_fp8_quantize(q, x, n, s, HP_FP8_E4M3);               // q[i] = cast(x[i] * s)
//   hp_fp8_dequantize(y, q, n, s, HP_FP8_E4M3);             // y[i] = value(q[i]) / s
#ifndef HYPERPAR_FLOAT8_H
#define HYPERPAR_FLOAT8_H
#include <stddef.h>
#include <stdint.h>

typedef uint8_t hp_fp8;
typedef enum { HP_FP8_E4M3 = 0, HP_FP8_E5M2 = 1 } hp_fp8_format;

float  hp_fp8_max(hp_fp8_format f);                     // 448 or 57344
hp_fp8 hp_fp8_from_float(float x, hp_fp8_format f);     // saturating RNE
float  hp_fp8_to_float(hp_fp8 code, hp_fp8_format f);   // exact

// torchao's amax_to_scale: max / max(amax, 1e-12) in float64, rounded to float32 once;
// pow2 (the rowwise recipes) floors that float32 to a power of 2.
float hp_fp8_scale(double amax, hp_fp8_format f, int pow2);

// dst[i] = cast(src[i] * scale) (the product in fp32); dst[i] = value(src[i]) / scale
void hp_fp8_quantize(hp_fp8 *dst, const float *src, size_t n, float scale, hp_fp8_format f);
void hp_fp8_dequantize(float *dst, const hp_fp8 *src, size_t n, float scale, hp_fp8_format f);

// torchao's Float8LinearRecipeName (precision.md §5.2); HP_FLOAT8_OFF: no float8 linears.
typedef enum {
    HP_FLOAT8_OFF = 0,
    HP_FLOAT8_TENSORWISE,      // e4m3 x, w; e5m2 grad_output; one scale per tensor
    HP_FLOAT8_ROWWISE,         // e4m3 everywhere; a pow2 scale per row outside the contraction
    HP_FLOAT8_ROWWISE_GW_HP,   // rowwise; weight per tensor for dgrad; wgrad in high precision
} hp_float8_recipe;

// "tensorwise", "rowwise", "rowwise-gw-hp" (and "off") -> 0 and *out; else -1.
int hp_float8_recipe_parse(const char *name, hp_float8_recipe *out);
const char *hp_float8_recipe_name(hp_float8_recipe r);

#endif
