// cmd_bench.c - `hp bench` (placeholder until the benchmarks land)
#include "cli.h"
int hp_cmd_bench(int argc, char **argv) { (void)argc; (void)argv; fprintf(stderr, "hp bench: not built yet\n"); return 1; }
