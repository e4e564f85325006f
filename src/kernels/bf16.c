// bf16.c - the array forms of bf16.h's rounding: plain loops over the integer rule, which the
// compiler vectorises (no VCVTNEPS2BF16: it flushes denormals, precision.md §3).
// defines: hp_bf16_round, hp_bf16_pack, hp_bf16_unpack
#include "hyperpar/bf16.h"

void hp_bf16_round(float *x, size_t n) {
    for (size_t i = 0; i < n; i++) x[i] = hp_bf16_round_float(x[i]);
}

void hp_bf16_pack(hp_bf16 *dst, const float *src, size_t n) {
    for (size_t i = 0; i < n; i++) dst[i] = hp_bf16_from_float(src[i]);
}

void hp_bf16_unpack(float *dst, const hp_bf16 *src, size_t n) {
    for (size_t i = 0; i < n; i++) dst[i] = hp_bf16_to_float(src[i]);
}
