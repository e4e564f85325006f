// run_sample.h - samples during training (sample.every, docs/model_io.md), llm.c's and
// nanochat's habit: after every N-th step and the last, the model as it is writes
// sample.max_new_tokens tokens after sample.prompt, printed and written to metrics.jsonl.
// defines: tool_sampler, tool_sampler_check, tool_sampler_open/_close, tool_sampler_due, tool_sampler_run
#ifndef HP_TOOL_RUN_SAMPLE_H
#define HP_TOOL_RUN_SAMPLE_H
#include "cli/cli.h"
#include "run_prompt.h"
#include "hyperpar/metrics.h"
#include "hyperpar/train.h"

typedef struct tool_sampler {
    int every;               // 0: off
    int last_step;
    tool_prompt prompt;      // rank 0's (the others only gather)
    const tool_cli *cli;
    int rank;
} tool_sampler;

// Before any rank starts: the sample.* keys and the prompt. One line and HP_EXIT_CONFIG, or 0.
int  tool_sampler_check(const tool_cli *cli);
// On every rank; 0, or HP_EXIT_CONFIG (rank 0 says why).
int  tool_sampler_open(tool_sampler *s, const tool_cli *cli, int rank);
void tool_sampler_close(tool_sampler *s);
int  tool_sampler_due(const tool_sampler *s, int step);
// Collective: the parameters gathered to rank 0, which generates on its own (a one-process
// decoder: the trainer's layout needs none) and logs. 0, or HP_EXIT_FAIL.
int  tool_sampler_run(tool_sampler *s, hp_trainer *tr, hp_metrics *mt, int step);
#endif
