// rng.h - counter-based randomness: a value depends only on its key, never on call order,
// so a rank fills its own shard of a tensor without making the whole tensor.
// The exact formulas (written out in src/util/rng.c) are part of the interchange: an outside
// tool may reproduce the initial model and the synthetic data from them.
// defines: hp_hash64, hp_name_id, hp_rng_uniform, hp_rng_normal
#ifndef HYPERPAR_RNG_H
#define HYPERPAR_RNG_H
#include <stdint.h>

// Mixes four 64-bit words into one (splitmix64-style finaliser chain).
uint64_t hp_hash64(uint64_t a, uint64_t b, uint64_t c, uint64_t d);
// FNV-1a 64 of a parameter name: the stream id of that parameter's init.
uint64_t hp_name_id(const char *name);
// Uniform in (0, 1) and standard normal (Box-Muller) keyed by (seed, stream, index).
double hp_rng_uniform(uint64_t seed, uint64_t stream, uint64_t index);
float  hp_rng_normal(uint64_t seed, uint64_t stream, uint64_t index);

#endif
