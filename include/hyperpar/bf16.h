// bf16.h - bfloat16 rounding (precision.md §3): the upper half of an fp32 pattern, rounded to
// nearest, ties to even, by PyTorch's integer rule (c10/util/BFloat16.h round_to_nearest_even):
// add 0x7FFF plus bit 16, keep the upper 16 bits. NaN stays NaN (quieted), denormals are kept
// (the AVX512_BF16 instructions flush them: hyperpar does not use them for casts), overflow
// rounds to +-inf. bf16 -> fp32 is exact.
//
// Under --mixed-precision-param bfloat16 hyperpar keeps bf16 values in fp32 buffers (a "bf16-valued"
// float: its low 16 bits are zero), rounding at every op boundary with hp_bf16_round; the wire
// and the GEMM's operands carry the 2-byte form (hp_bf16_pack / hp_bf16_unpack).
// defines: hp_bf16, hp_bf16_from_float, hp_bf16_to_float, hp_bf16_round_float, hp_bf16_round,
//          hp_bf16_pack, hp_bf16_pack_exact, hp_bf16_unpack, hp_bf16_narrow_in_place,
//          hp_bf16_widen_in_place
//
//   hp_bf16_round(y, (size_t)N * out);            // an op's output, rounded once
//   hp_bf16_pack(wire, shard, n); ... hp_bf16_unpack(full, wire, n * G);   // 2 bytes on the wire
#ifndef HYPERPAR_BF16_H
#define HYPERPAR_BF16_H
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef uint16_t hp_bf16;

static inline hp_bf16 hp_bf16_from_float(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7FFFFFFFu) > 0x7F800000u) return (hp_bf16)((u >> 16) | 0x0040u);   // NaN, quiet
    return (hp_bf16)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

static inline float hp_bf16_to_float(hp_bf16 b) {
    const uint32_t u = (uint32_t)b << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static inline float hp_bf16_round_float(float f) { return hp_bf16_to_float(hp_bf16_from_float(f)); }

// x[i] <- round(x[i]) in place, n elements
void hp_bf16_round(float *x, size_t n);
// dst (n bf16) <- round(src (n fp32)); dst (n fp32) <- src (n bf16), exact
void hp_bf16_pack(hp_bf16 *dst, const float *src, size_t n);
void hp_bf16_unpack(float *dst, const hp_bf16 *src, size_t n);
// dst (n bf16) <- the upper halves of src (n fp32) that are bf16 already: 1 when every low half
// was zero (the copy is exact, unpack gives src back bit for bit), else 0 (dst holds the upper
// halves, truncated: the caller's invariant broke). For bf16 activations kept in 2 bytes.
int hp_bf16_pack_exact(hp_bf16 *dst, const float *src, size_t n);
// In place, for a float buffer that travels as 2 bytes: narrow packs its n floats into bf16
// at its start (each one rounded); widen turns n bf16 at its start back into n floats
// (exact, last element first, so no value is overwritten before it is read).
void hp_bf16_narrow_in_place(float *buf, size_t n);
void hp_bf16_widen_in_place(float *buf, size_t n);

#endif
