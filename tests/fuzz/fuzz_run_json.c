// fuzz_run_json.c - the library's reader of a run's --json verification record
// (src/verify/verify_json.c, which hp matrix reads) on any bytes. Invariants: the counts stay
// within the arrays they index, the strings stay terminated, and what it read writes again.
#include <stdlib.h>
#include <string.h>
#include "hyperpar/verify_record.h"
#include "fuzz_target.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    // the bytes with a NUL appended, as hp_json_load reads a file (cJSON stops at a NUL)
    char *text = malloc(size + 1);
    if (!text) return 0;
    if (size) memcpy(text, data, size);
    text[size] = '\0';
    hp_verify_record r;
    const int rc = hp_verify_record_parse(&r, text, strlen(text));
    free(text);
    if (rc != 0) return 0;
    if (r.steps < 0 || r.steps > HP_VERIFY_MAX_STEPS || r.steps_ref < 0 || r.steps_ref > HP_VERIFY_MAX_STEPS ||
        r.n_moe_layers < 0 || r.n_moe_layers > HP_VERIFY_MAX_MOE || r.pp_stats < 0 || r.pp_stats > HP_VERIFY_MAX_PP ||
        r.pp_ranks < 0 || r.pp_ranks > HP_VERIFY_PP_RANKS) abort();
    for (int p = 0; p < r.pp_ranks; p++) if (r.pp_n[p] < 0 || r.pp_n[p] > HP_VERIFY_PP_ACTIONS) abort();
    if (memchr(r.worst_grad, '\0', sizeof r.worst_grad) == NULL ||
        memchr(r.failure, '\0', sizeof r.failure) == NULL) abort();
    char *again = hp_verify_record_print(&r);
    if (!again) abort();
    free(again);
    return 0;
}
