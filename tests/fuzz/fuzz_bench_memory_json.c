// fuzz_bench_memory_json.c - hp bench --memory's reader of a child job's --memory-out JSON
// (tools/hp/bench/bench_json.c) on any bytes, counting first and then filling, as cmd_bench.c does.
#include <stdlib.h>
#include "bench/bench_json.h"
#include "fuzz_json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    cJSON *j = hp_fuzz_json(data, size);
    if (!j) return 0;
    double full = 0.0;
    const int n = tool_bench_read_memory(j, &full, NULL, 0);
    if (n > 0) {
        tool_bench_rank_bytes *rows = calloc((size_t)n, sizeof *rows);
        if (rows && tool_bench_read_memory(j, &full, rows, n) != n) abort();   // same file, same count
        if (rows && n > 1 && tool_bench_read_memory(j, &full, rows, n - 1) != n) abort();   // cap only limits the rows
        free(rows);
    }
    cJSON_Delete(j);
    return 0;
}
