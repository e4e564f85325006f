// fuzz_run_json.c - hp matrix's reader of a run's --verify JSON (tools/hp/run_json.c) on any
// bytes. Invariants: the step counts stay within the arrays they index.
#include <stdlib.h>
#include <string.h>
#include "run_json.h"
#include "fuzz_json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    cJSON *j = hp_fuzz_json(data, size);
    if (!j) return 0;
    hp_run_numbers rn;
    memset(&rn, 0, sizeof rn);
    hp_run_json_read(j, NULL, &rn);          // the later runs: losses only
    hp_recipe_result x;
    memset(&x, 0, sizeof x);
    x.world = 4;
    hp_run_json_read(j, &x, &rn);            // the first run: everything
    if (rn.steps < 0 || rn.steps > HP_MATRIX_MAX_STEPS || x.steps < 0 || x.steps > rn.steps) abort();
    if (memchr(x.worst_grad, '\0', sizeof x.worst_grad) == NULL ||
        memchr(x.failure, '\0', sizeof x.failure) == NULL) abort();
    cJSON_Delete(j);
    return 0;
}
