// structure.c - the counters of the structure check (structure.h). One process-wide set: a rank
// is one process, and the verifier reads and resets them around its parallel run.
// defines: the functions of structure.h
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "hyperpar/bf16.h"
#include "hyperpar/structure.h"

static int enabled;
static uint64_t checks[HP_CHECK_COUNT], failures[HP_CHECK_COUNT];
static char first[HP_CHECK_COUNT][200];

void hp_structure_enable(int on) { enabled = on; }
int hp_structure_enabled(void) { return enabled; }

void hp_structure_reset(void) {
    for (int k = 0; k < HP_CHECK_COUNT; k++) {
        checks[k] = failures[k] = 0;
        first[k][0] = '\0';
    }
}

void hp_structure_pass(hp_structure_check k) { checks[k]++; }

void hp_structure_fail(hp_structure_check k, const char *fmt, ...) {
    checks[k]++;
    if (failures[k]++ == 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(first[k], sizeof first[k], fmt, ap);
        va_end(ap);
    }
}

uint64_t hp_structure_checks(hp_structure_check k) { return checks[k]; }
uint64_t hp_structure_failures(hp_structure_check k) { return failures[k]; }
const char *hp_structure_first(hp_structure_check k) { return first[k]; }

const char *hp_structure_name(hp_structure_check k) {
    static const char *const names[HP_CHECK_COUNT] = {
        [HP_CHECK_GATHER] = "parameter all-gather",
        [HP_CHECK_RECOMPUTE] = "activation-checkpointing recompute",
        [HP_CHECK_REDUCE] = "gradient reduction",
        [HP_CHECK_ACCUMULATE] = "gradient accumulation",
        [HP_CHECK_PARTIAL] = "tp partial sums",
        [HP_CHECK_EXCHANGE] = "pipeline stage exchange",
        [HP_CHECK_WIRE_BF16] = "2-byte activation exchange",
        [HP_CHECK_FLOAT8_SCALE] = "float8 scales",
        [HP_CHECK_FLOAT8_CAST] = "float8 casts",
        [HP_CHECK_FLOAT8_SP_GATHER] = "float8 SP all-gather",
        [HP_CHECK_STORE] = "2-byte input store",
    };
    return (unsigned)k < HP_CHECK_COUNT ? names[k] : "?";
}

void hp_structure_check_bf16_wire(const float *x, size_t n, const char *what) {
    if (!hp_structure_enabled()) return;
    for (size_t i = 0; i < n; i++) {
        const float r = hp_bf16_round_float(x[i]);
        if (memcmp(&r, &x[i], sizeof r) != 0 && x[i] == x[i]) {
            hp_structure_fail(HP_CHECK_WIRE_BF16, "%s: element %zu is %.9g, not a bf16 value: the "
                              "2-byte exchange would round it to %.9g", what, i, (double)x[i], (double)r);
            return;
        }
    }
    hp_structure_pass(HP_CHECK_WIRE_BF16);
}

int hp_structure_looks_rounded(const float *x, size_t n, size_t *nonzero) {
    size_t nz = 0, rounded = 0;
    for (size_t i = 0; i < n; i++) {
        if (x[i] == 0.0f) continue;
        nz++;
        rounded += hp_bf16_round_float(x[i]) == x[i];
    }
    if (nonzero) *nonzero = nz;
    return nz >= 64 && rounded == nz;
}

void hp_structure_check_fp32_arrival(const float *x, size_t n, const char *what) {
    if (!hp_structure_enabled()) return;
    size_t nonzero;
    if (hp_structure_looks_rounded(x, n, &nonzero))
        hp_structure_fail(HP_CHECK_WIRE_BF16, "%s: all %zu nonzero values arrived as bf16, where "
                          "fp32 partials travel in 4 bytes", what, nonzero);
    else
        hp_structure_pass(HP_CHECK_WIRE_BF16);
}
