// pipeline.h - pipeline parallel: which stage holds which layers, where each stage runs, and
// the order of actions each pp rank takes (spec: docs/pipeline.md). Pure functions of
// the degrees, like the mesh: `hp plan` prints them and the trainer runs them.
// defines: hp_pp_schedule, hp_pp_action, hp_pp_layout, hp_pp_layout_init, hp_pp_schedule_build
//
//   hp_pp_layout lay;
//   hp_pp_layout_init(&lay, &dims, model.n_layers);      // P*V stages, their layers and ranks
//   int first = lay.stage_first[s], n = lay.stage_layers[s], on = lay.stage_rank[s];
//   hp_pp_action act[HP_PP_MAX_ACTIONS];
//   int n_act = hp_pp_schedule_build(&lay, M, pp_rank, act);   // this pp rank's actions
//
// Stages: the L blocks cut into P*V contiguous groups, the first L mod (P*V) one block longer;
// stage 0 also holds tok_embeddings, the last norm and output. Loop placement (gpipe, 1f1b,
// interleaved-1f1b): stage s on pp rank s mod P. V placement (zbv): s on rank s for s < P,
// else 2P-1-s. Every schedule runs each stage's backwards in ascending microbatch order, so
// gradients sum alike (bit-identical across schedules).
#ifndef HYPERPAR_PIPELINE_H
#define HYPERPAR_PIPELINE_H
#include "dims.h"

typedef enum {
    HP_PP_GPIPE = 0, HP_PP_1F1B = 1, HP_PP_INTERLEAVED_1F1B = 2, HP_PP_ZBV = 3, HP_PP_SCHEDULES
} hp_pp_schedule;

// "gpipe", "1f1b", "interleaved-1f1b", "zbv"; parse returns -1 for an unknown name.
const char *hp_pp_schedule_name(int schedule);
int         hp_pp_schedule_parse(const char *name);
// V for the schedule when dims leave it 0.
int         hp_pp_virtual(const hp_dims *d);
// 1 when the schedule splits each backward into an input half I and a weight half W run later
// (zbv): a unit's weight gradients are then written by its W, after other units' backwards.
static inline int hp_pp_splits_backward(const hp_dims *d) {
    return d->pp > 1 && d->pp_schedule == HP_PP_ZBV;
}

#define HP_PP_MAX_STAGES 256

typedef struct hp_pp_layout {
    int P, V, n_stages, L, schedule;
    int stage_first[HP_PP_MAX_STAGES];   // first block of each stage
    int stage_layers[HP_PP_MAX_STAGES];  // how many blocks
    int stage_rank[HP_PP_MAX_STAGES];    // the pp rank it runs on
} hp_pp_layout;

// Fills the layout (dims validated, L >= P*V). Returns 0, or -1 when it cannot hold P*V stages.
int hp_pp_layout_init(hp_pp_layout *lay, const hp_dims *d, int n_layers);
int hp_pp_layer_stage(const hp_pp_layout *lay, int layer);    // the stage holding block layer
// FSDP unit (0 embeddings, 1+l block l, L+1 head) -> stage.
int hp_pp_unit_stage(const hp_pp_layout *lay, int unit);

// One action of a schedule: forward F, full backward B, or under zbv the split backward's
// input half I and weight half W, of stage `stage` on microbatch `mb`.
typedef enum { HP_PP_F = 0, HP_PP_B, HP_PP_I, HP_PP_W } hp_pp_op;
typedef struct hp_pp_action { unsigned char op; short stage; int mb; } hp_pp_action;

// The actions pp rank p takes in one step with M microbatches, in order; writes at most
// 3*V*M actions into out and returns their count (< 0 when M does not fit the schedule).
int hp_pp_schedule_build(const hp_pp_layout *lay, int M, int p, hp_pp_action *out);

// The ideal bubble of the schedule: the idle fraction of a pp rank when every F, B (I + W)
// takes its nominal time (F = I = W = 1, B = 2), from a simulation of the action lists
// with their dependencies. Returns -1 if the schedule deadlocks (a bug).
double hp_pp_ideal_bubble(const hp_pp_layout *lay, int M);

#endif
