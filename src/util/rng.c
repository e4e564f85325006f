// rng.c - the counter-based generator of rng.h: every value is a pure function of its key,
// so any rank can make any element of any tensor (or any token of any batch) by itself.
//
// The formulas below are part of the interchange: an outside tool (a Python or PyTorch
// checker) may reproduce the initial model and the synthetic data bit for bit from them.
// Do not change them without changing that tool.
//
//   mix(z):  z ^= z >> 30; z *= 0xbf58476d1ce4e5b9; z ^= z >> 27; z *= 0x94d049bb133111eb;
//            z ^= z >> 31                                   (splitmix64 finaliser, mod 2^64)
//   hp_hash64(a,b,c,d) = mix(mix(mix(mix(a ^ 0x9e3779b97f4a7c15) ^ b) ^ c) ^ d)
//   hp_name_id(s)      = FNV-1a 64 over the bytes of s (offset 0xcbf29ce484222325,
//                        prime 0x100000001b3)
//   hp_rng_uniform(seed,stream,i) = ((hp_hash64(seed,stream,i,0) >> 11) + 0.5) / 2^53
//   hp_rng_normal(seed,stream,i)  = (float)(sqrt(-2 ln u1) * cos(2 pi u2)), in double,
//        u1 = ((hp_hash64(seed,stream,i,1) >> 11) + 0.5) / 2^53
//        u2 = ((hp_hash64(seed,stream,i,2) >> 11) + 0.5) / 2^53
// defines: hp_hash64, hp_name_id, hp_rng_uniform, hp_rng_normal
#include "hyperpar/rng.h"

#include <math.h>

// splitmix64's output function: a bijection on 64 bits with full avalanche.
static uint64_t mix64(uint64_t z) {
    z ^= z >> 30; z *= 0xbf58476d1ce4e5b9ULL;
    z ^= z >> 27; z *= 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return z;
}

uint64_t hp_hash64(uint64_t a, uint64_t b, uint64_t c, uint64_t d) {
    // the constant keeps mix64(0) = 0 from making the all-zero key a fixed point
    uint64_t h = mix64(a ^ 0x9e3779b97f4a7c15ULL);
    h = mix64(h ^ b);
    h = mix64(h ^ c);
    h = mix64(h ^ d);
    return h;
}

uint64_t hp_name_id(const char *name) {
    uint64_t h = 0xcbf29ce484222325ULL;
    for (const unsigned char *p = (const unsigned char *)name; p && *p; p++) {
        h ^= *p;
        h *= 0x100000001b3ULL;
    }
    return h;
}

// top 53 bits -> the centre of one of 2^53 equal cells of (0,1): never 0 nor 1, so log() is safe
static double unit_open(uint64_t h) {
    return ((double)(h >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

double hp_rng_uniform(uint64_t seed, uint64_t stream, uint64_t index) {
    return unit_open(hp_hash64(seed, stream, index, 0));
}

float hp_rng_normal(uint64_t seed, uint64_t stream, uint64_t index) {
    const double two_pi = 6.283185307179586476925286766559;
    double u1 = unit_open(hp_hash64(seed, stream, index, 1));
    double u2 = unit_open(hp_hash64(seed, stream, index, 2));
    return (float)(sqrt(-2.0 * log(u1)) * cos(two_pi * u2));
}
