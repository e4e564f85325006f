// bench_json.h - reads the JSON files `hp bench` gets back from its child jobs: the per-rank
// bytes of a --memory job (--memory-out FILE) and the result of one `hp run --verify --json F`
// for --recipes. Pure: they take a parsed cJSON, so tests/fuzz/ can feed them any bytes; a key
// that is missing or not a number makes the file unusable (-1), never a crash.
// defines: tool_bench_rank_bytes, tool_bench_read_memory, tool_bench_run_result, tool_bench_read_run
//
//   tool_bench_rank_bytes rows[8];  double full;
//   int n = tool_bench_read_memory(j, &full, rows, 8);   // -1: not a --memory-out file
//   tool_bench_run_result r;
//   if (tool_bench_read_run(j, &r) == 0) printf("%d ranks moved %.0f bytes\n", r.world, r.bytes_counted);
#ifndef HP_TOOL_BENCH_JSON_H
#define HP_TOOL_BENCH_JSON_H
#include <cjson/cJSON.h>

typedef struct { double persistent, working, padding; } tool_bench_rank_bytes;

// {"full_bytes": B, "ranks": [{"persistent": P, "working": W, "padding": D}, ...]}: *full_bytes
// and up to cap rows. Returns the number of ranks in the file (which may exceed cap; only cap
// are stored), or -1 when a key is missing or not a number.
int tool_bench_read_memory(const cJSON *j, double *full_bytes, tool_bench_rank_bytes *rows, int cap);

typedef struct { int world, pass; double bytes_counted, bytes_predicted; } tool_bench_run_result;

// {"world": N, "pass": true, "bytes_counted": C, "bytes_predicted": P}: 0, or -1 when world
// or a byte count is missing or not a number (pass reads false unless it is true).
int tool_bench_read_run(const cJSON *j, tool_bench_run_result *r);

#endif
