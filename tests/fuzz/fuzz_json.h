// fuzz_json.h - fuzz input bytes -> cJSON, exactly as hp_json_load reads a file: the bytes with
// a NUL appended, then cJSON_Parse (which stops at the first NUL, as it does for a file).
//
//   cJSON *j = hp_fuzz_json(data, size);   // NULL: not JSON (nothing to read, not a failure)
//   if (j) { reader(j, ...); cJSON_Delete(j); }
#ifndef HP_FUZZ_JSON_H
#define HP_FUZZ_JSON_H
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>
#include "fuzz_target.h"

static inline cJSON *hp_fuzz_json(const uint8_t *data, size_t size) {
    char *text = malloc(size + 1);
    if (!text) return NULL;
    if (size) memcpy(text, data, size);
    text[size] = '\0';
    cJSON *j = cJSON_Parse(text);
    free(text);
    return j;
}

#endif
