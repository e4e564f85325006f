// structure.c - the counters of the structure check (structure.h). One process-wide set: a rank
// is one process, and the verifier reads and resets them around its parallel run.
// defines: the functions of structure.h
#include <stdarg.h>
#include <stdio.h>
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
        [HP_CHECK_FLOAT8_SCALE] = "float8 scales",
        [HP_CHECK_FLOAT8_CAST] = "float8 casts",
    };
    return (unsigned)k < HP_CHECK_COUNT ? names[k] : "?";
}
