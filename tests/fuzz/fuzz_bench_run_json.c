// fuzz_bench_run_json.c - hp bench --recipes' reader of a run's --json result
// (tools/hp/bench/bench_json.c) on any bytes.
#include <stdlib.h>
#include "bench/bench_json.h"
#include "fuzz_json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    cJSON *j = hp_fuzz_json(data, size);
    if (!j) return 0;
    tool_bench_run_result r;
    if (tool_bench_read_run(j, &r) == 0 && r.pass != 0 && r.pass != 1) abort();
    cJSON_Delete(j);
    return 0;
}
