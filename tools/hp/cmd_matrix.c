// cmd_matrix.c - `hp matrix` (placeholder until the completeness matrix lands)
#include "cli.h"
int hp_cmd_matrix(int argc, char **argv) { (void)argc; (void)argv; fprintf(stderr, "hp matrix: not built yet\n"); return 1; }
