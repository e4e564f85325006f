// structure.h - the structure check of a verified run (precision.md §4.1): while the verifier's
// parallel run is on, the styles compare what a collective or a recompute produced against
// what the policy prescribes from its inputs, bit for bit, and note each comparison here; the
// verifier reads the counts on every rank afterwards (verify.c) and fails on any mismatch.
// It runs in fp32 too: there "prescribed" is the plain value (a cast that is the identity).
// defines: hp_structure_check, hp_structure_enable/enabled/reset, hp_structure_pass/fail,
//          hp_structure_checks, hp_structure_failures, hp_structure_first, hp_structure_name,
//          hp_structure_check_bf16_wire, hp_structure_looks_rounded, hp_structure_check_fp32_arrival
//
//   if (hp_structure_enabled()) {
//       if (memcmp(got, want, bytes)) hp_structure_fail(HP_CHECK_GATHER, "unit %d, rank %d", u, r);
//       else hp_structure_pass(HP_CHECK_GATHER);
//   }
#ifndef HYPERPAR_STRUCTURE_H
#define HYPERPAR_STRUCTURE_H
#include <stddef.h>
#include <stdint.h>

typedef enum hp_structure_check {
    HP_CHECK_GATHER = 0,   // a gathered unit's own slot = the policy's cast of the current master
    HP_CHECK_RECOMPUTE,    // an activation-checkpointing recompute = its forward, bit for bit
    HP_CHECK_REDUCE,       // a reduced gradient shard = the fixed-order fp32 sum of the staged inputs
    HP_CHECK_ACCUMULATE,   // a unit's gradient sum over microbatches = their fp32 sum, in order
    HP_CHECK_PARTIAL,      // a row-parallel output entering its tp sum is the GEMM's fp32 result
    HP_CHECK_EXCHANGE,     // what a pipeline stage receives = what its neighbour's schedule hands on
    HP_CHECK_WIRE_BF16,    // what a 2-byte activation exchange sends is bf16 already: packing is exact
    HP_CHECK_FLOAT8_SCALE, // a float8 amax (so its scale) = the MAX over its tp group of the locals
    HP_CHECK_FLOAT8_CAST,  // a float8 dgrad = the product of the recipe's casts, recomputed here
    HP_CHECK_FLOAT8_SP_GATHER, // a float8 SP all-gather's codes = the cast of the shard with its scale
    HP_CHECK_STORE,        // the input a block's (or the head's) backward unpacks from its 2-byte
                           //   store = the one its forward read (CRC-32 of the fp32 bytes)
    HP_CHECK_COUNT
} hp_structure_check;

void hp_structure_enable(int on);   // on: the checks run (and cost: the verifier's run only)
int  hp_structure_enabled(void);
void hp_structure_reset(void);      // counts and messages to zero
void hp_structure_pass(hp_structure_check k);
void hp_structure_fail(hp_structure_check k, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
uint64_t    hp_structure_checks(hp_structure_check k);     // comparisons made (passed or not)
uint64_t    hp_structure_failures(hp_structure_check k);
const char *hp_structure_first(hp_structure_check k);      // the first failure's text, "" none
const char *hp_structure_name(hp_structure_check k);       // "parameter all-gather", ...

// HP_CHECK_WIRE_BF16 on x (n floats) about to travel as 2-byte bf16: every value must be one
// already (its low 16 bits zero, NaN aside), so the exchange moves the same floats as a 4-byte
// one would. `what` names the exchange in the failure text. Nothing when checks are off.
void hp_structure_check_bf16_wire(const float *x, size_t n, const char *what);
// 1 when x (n floats), which should be an fp32 result, looks rounded to bf16: 64 or more
// nonzero values, all bf16-representable (by chance: 2^-16 a value). *nonzero gets their count.
int hp_structure_looks_rounded(const float *x, size_t n, size_t *nonzero);
// HP_CHECK_WIRE_BF16 on x (n floats) just received that must be fp32 (partial sums about to
// be added): if it looks rounded, it travelled in 2 bytes.
void hp_structure_check_fp32_arrival(const float *x, size_t n, const char *what);

#endif
