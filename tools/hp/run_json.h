// run_json.h - reads the JSON result one `hp run --verify --json F` leaves for `hp matrix`.
// Pure: it takes a parsed cJSON, so a fuzzer (tests/fuzz/fuzz_run_json.c) can call it on any
// bytes. Missing or mistyped keys read as "no number" (-1, 0 or ""), never as a crash.
// defines: hp_run_numbers, hp_run_json_read
//
//   cJSON *j = hp_json_load("runs/M4-s2.json");
//   hp_run_numbers rn;  hp_recipe_result x = {0};
//   hp_run_json_read(j, &x, &rn);      // x may be NULL: the losses and the verdict only
//   cJSON_Delete(j);
#ifndef HP_TOOL_RUN_JSON_H
#define HP_TOOL_RUN_JSON_H
#include <cjson/cJSON.h>
#include "report.h"

// One run's numbers: the whole result on the first run, the losses only on the others.
typedef struct hp_run_numbers {
    int    pass, steps;
    int    exact;                      // losses read from "losses_exact" (every bit)
    double losses[HP_MATRIX_MAX_STEPS];
} hp_run_numbers;

// Fills *rn from j (any JSON value), and *x too when x is not NULL.
void hp_run_json_read(const cJSON *j, hp_recipe_result *x, hp_run_numbers *rn);

#endif
