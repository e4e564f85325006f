// bf16.c - the array forms of bf16.h's rounding: the integer rule written without a branch
// (NaN selected, not jumped over) so that the compiler vectorises it; no VCVTNEPS2BF16, which
// flushes denormals (precision.md §3). Each element's result is bf16.h's scalar one.
// defines: hp_bf16_round, hp_bf16_pack, hp_bf16_unpack
#include "hyperpar/bf16.h"

// The rounded pattern, in the upper 16 bits: NaN quieted and kept, else round-to-nearest-even.
static inline uint32_t rounded_bits(uint32_t u) {
    const uint32_t rne = u + 0x7FFFu + ((u >> 16) & 1u);
    const uint32_t nan = u | 0x00400000u;
    return ((u & 0x7FFFFFFFu) > 0x7F800000u ? nan : rne) & 0xFFFF0000u;
}

// (one clone per vector width, chosen at load time; integer ops: the same bits in each)
__attribute__((optimize("tree-vectorize"), target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
void hp_bf16_round(float *x, size_t n) {
    for (size_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &x[i], sizeof u);
        u = rounded_bits(u);
        memcpy(&x[i], &u, sizeof u);
    }
}

// (one clone per vector width, chosen at load time; integer ops: the same bits in each)
__attribute__((optimize("tree-vectorize"), target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
void hp_bf16_pack(hp_bf16 *dst, const float *src, size_t n) {
    for (size_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &src[i], sizeof u);
        dst[i] = (hp_bf16)(rounded_bits(u) >> 16);
    }
}

// (one clone per vector width, chosen at load time; integer ops: the same bits in each)
__attribute__((optimize("tree-vectorize"), target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
void hp_bf16_unpack(float *dst, const hp_bf16 *src, size_t n) {
    for (size_t i = 0; i < n; i++) {
        const uint32_t u = (uint32_t)src[i] << 16;
        memcpy(&dst[i], &u, sizeof u);
    }
}
