// bench_json.c - readers of the JSON files hp bench's child jobs write (see bench_json.h).
// defines: tool_bench_read_memory, tool_bench_read_run
#include "bench_json.h"

// The number under key k of object j into *out: 0, or -1 when absent or not a number.
static int number(const cJSON *j, const char *k, double *out) {
    const cJSON *v = cJSON_GetObjectItem(j, k);
    if (!cJSON_IsNumber(v)) return -1;
    *out = v->valuedouble;
    return 0;
}

int tool_bench_read_memory(const cJSON *j, double *full_bytes, tool_bench_rank_bytes *rows, int cap) {
    if (number(j, "full_bytes", full_bytes) != 0) return -1;
    const cJSON *ranks = cJSON_GetObjectItem(j, "ranks");
    if (!cJSON_IsArray(ranks)) return -1;
    int n = 0;
    const cJSON *o;
    cJSON_ArrayForEach(o, ranks) {
        tool_bench_rank_bytes b;
        if (number(o, "persistent", &b.persistent) || number(o, "working", &b.working) ||
            number(o, "padding", &b.padding))
            return -1;
        if (n < cap) rows[n] = b;
        n++;
    }
    return n;
}

int tool_bench_read_run(const cJSON *j, tool_bench_run_result *r) {
    double world;
    if (number(j, "world", &world) || number(j, "bytes_counted", &r->bytes_counted) ||
        number(j, "bytes_predicted", &r->bytes_predicted))
        return -1;
    r->world = cJSON_GetObjectItem(j, "world")->valueint;   // cJSON saturates it to int
    r->pass = cJSON_IsTrue(cJSON_GetObjectItem(j, "pass"));
    return 0;
}
