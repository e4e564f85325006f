// bf16.c - the array forms of bf16.h's rounding: the integer rule written without a branch
// (NaN selected, not jumped over) so that the compiler vectorises it; no VCVTNEPS2BF16, which
// flushes denormals (precision.md §3). Each element's result is bf16.h's scalar one.
// defines: hp_bf16_round, hp_bf16_pack, hp_bf16_pack_exact, hp_bf16_unpack,
//          hp_bf16_narrow_in_place, hp_bf16_widen_in_place
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
int hp_bf16_pack_exact(hp_bf16 *dst, const float *src, size_t n) {
    uint32_t low = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &src[i], sizeof u);
        low |= u & 0xFFFFu;
        dst[i] = (hp_bf16)(u >> 16);
    }
    return low == 0;
}

// (one clone per vector width, chosen at load time; integer ops: the same bits in each)
__attribute__((optimize("tree-vectorize"), target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
void hp_bf16_unpack(float *dst, const hp_bf16 *src, size_t n) {
    for (size_t i = 0; i < n; i++) {
        const uint32_t u = (uint32_t)src[i] << 16;
        memcpy(&dst[i], &u, sizeof u);
    }
}

// (element i is written at bytes [2i, 2i+2), below element i's own [4i, 4i+4): first to last,
//  nothing is overwritten before it is read)
void hp_bf16_narrow_in_place(float *buf, size_t n) {
    unsigned char *bytes = (unsigned char *)buf;
    for (size_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, bytes + 4 * i, sizeof u);
        const hp_bf16 b = (hp_bf16)(rounded_bits(u) >> 16);
        memcpy(bytes + 2 * i, &b, sizeof b);
    }
}

// (element i's float goes to [4i, 4i+4), over the bf16 of elements 2i and 2i+1: last to first,
//  both were read already)
void hp_bf16_widen_in_place(float *buf, size_t n) {
    unsigned char *bytes = (unsigned char *)buf;
    for (size_t i = n; i-- > 0;) {
        hp_bf16 b;
        memcpy(&b, bytes + 2 * i, sizeof b);
        const uint32_t u = (uint32_t)b << 16;
        memcpy(bytes + 4 * i, &u, sizeof u);
    }
}
