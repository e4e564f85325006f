// hf_index.c - model.safetensors.index.json, the list of a sharded Hugging Face folder's weight
// files (its weight_map: tensor name -> file), read into the distinct file names, in order.
// defines: hp_hf_index_shards
#include <stdio.h>
#include <string.h>
#include <cjson/cJSON.h>
#include "model_io/model_tensors.h"
#include "util/file_io.h"

int hp_hf_index_shards(const char *text, size_t len, const char *path, char (*names)[HP_HF_SHARD_NAME],
                       int max, int *n, char *err, size_t errlen) {
    *n = 0;
    cJSON *ix = cJSON_ParseWithLength(text, len);
    if (!ix) { snprintf(err, errlen, "%s is not JSON", path); return -1; }
    const cJSON *map = cJSON_GetObjectItemCaseSensitive(ix, "weight_map"), *e;
    int rc = cJSON_IsObject(map) ? 0 : -1;
    if (rc) snprintf(err, errlen, "%s has no weight_map object", path);
    for (e = rc ? NULL : map->child; e; e = e->next) {
        const char *f = cJSON_IsString(e) ? e->valuestring : NULL;
        const size_t fl = f ? strlen(f) : 0;
        // a file of the folder itself: a plain name, never a path out of it
        if (!f || fl == 0 || fl >= HP_HF_SHARD_NAME || strchr(f, '/') || strchr(f, '\\') || !strcmp(f, "..") ||
            !strcmp(f, ".")) {
            char shown[96];
            snprintf(err, errlen, "%s: the weight_map entry of %s is not a file name in the folder", path,
                     hp_json_shown(e->string ? e->string : "?", shown, sizeof shown, 80));
            rc = -1;
            break;
        }
        int seen = 0;
        for (int i = 0; i < *n && !seen; i++) seen = !strcmp(names[i], f);
        if (seen) continue;
        if (*n == max) { snprintf(err, errlen, "%s names more than %d shards", path, max); rc = -1; break; }
        memcpy(names[(*n)++], f, fl + 1);
    }
    if (rc == 0 && *n == 0) { snprintf(err, errlen, "%s: its weight_map names no file", path); rc = -1; }
    cJSON_Delete(ix);
    if (rc) *n = 0;
    return rc;
}
