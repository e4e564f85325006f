// plan_tool.h - the parts of `hp plan` beyond the layout: --memory (and --json, --hw), the
// stride summary of big worlds, and --search. The formulas live in the library (plan.h).
// defines: tool_plan_check_flags, tool_plan_ac_name, tool_plan_memory_cmd, tool_plan_print_group_strides,
//          tool_plan_ranks_per_node, tool_plan_print_node_groups,
//          tool_plan_search_cmd, tool_plan_parse_size, TOOL_PLAN_SUMMARY_WORLD, tool_plan_print_pipeline
#ifndef HP_TOOL_PLAN_TOOL_H
#define HP_TOOL_PLAN_TOOL_H
#include <stddef.h>
#include <stdio.h>
#include "cli/cli.h"
#include "hyperpar/dims.h"

// Beyond this many ranks plan prints groups by stride and a summary unless --ranks.
#define TOOL_PLAN_SUMMARY_WORLD 64

// --hw, --mem-per-rank, --world against --nproc: one line and HP_EXIT_CONFIG, or 0.
// --world N without --search stands for --nproc N.
int tool_plan_check_flags(tool_cli *cli);
// "80GiB" -> 85899345920; "141GB" -> 1.41e11; a plain number is bytes. Returns 0, or -1.
int tool_plan_parse_size(const char *s, double *bytes);
// "none", "full" or "every:N" (--ac's spelling of rc->ac_every).
void tool_plan_ac_name(char *buf, size_t n, int ac_every);
// The --memory report of rank cli->rank (dims validated), text, and JSON with --json FILE.
int tool_plan_memory_cmd(const tool_cli *cli, const hp_dims *d);
// Nodes are this many consecutive ranks: --ranks-per-node N, else --hw's, else 8.
int tool_plan_ranks_per_node(const tool_cli *cli);
// One line per group kind: how many groups, their size, rank 0's members by stride, and
// whether rank 0's group sits inside its node of ranks_per_node ranks.
void tool_plan_print_group_strides(FILE *out, const hp_dims *d, int ranks_per_node);
// The group kinds whose every group sits inside one node of ranks_per_node consecutive ranks,
// and those that cross nodes: one line.
void tool_plan_print_node_groups(FILE *out, const hp_dims *d, int ranks_per_node);
// --search: every legal layout of --world N that fits, ranked; prints the top 10.
int tool_plan_search_cmd(const tool_cli *cli);
// `hp plan` under pp > 1: stages, their layers and ranks, the schedule grid and its ideal
// bubble (plan_pipeline.c).
void tool_plan_print_pipeline(FILE *out, const hp_dims *d, int n_layers, int M);

#endif
