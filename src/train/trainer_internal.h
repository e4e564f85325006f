// trainer_internal.h - the state of one rank's training job, private to the library: the train
// layer (trainer.c, trainer_hooks.c, pipeline_run.c) and above it src/verify/dump/dump.c and
// src/checkpoint (save / load a trainer's shards); never a public header. It owns one state per
// parallel style and the model, and hands the model the styles' calls as hooks.
#ifndef HP_TRAINER_INTERNAL_H
#define HP_TRAINER_INTERNAL_H
#include "hyperpar/comm.h"
#include "hyperpar/data.h"
#include "hyperpar/params.h"
#include "hyperpar/shapes.h"
#include "hyperpar/train.h"
#include "hyperpar/ulysses.h"
#include "model/transformer.h"
#include "parallel/fsdp/fsdp.h"
#include "parallel/tp.h"

typedef struct hp_pp_state hp_pp_state;   // pipeline_run.c

// The attention core's style: ring / all-gather CP over HP_G_CP, with Ulysses around it when
// ulysses > 1 (its per-block state is an hp_ulysses_attn). Filled by trainer_hooks.c.
typedef struct hp_attn_style {
    hp_comm *comm;
    hp_cp_rotate rotate;
    int load_balance;
    const int *pos;      // (Sc) this rank's positions (the ring's queries and keys)
    const int *pos_cp;   // (Sc_cp) the cp-local positions (Ulysses' exchanged sequence)
    int U, C;
    hp_local_shapes sh;
    int bf16;            // the bf16 policy: exchanges of bf16 activations move 2 bytes
    hp_ulysses_attn *scratch_from;   // the rank's first Ulysses state, whose exchange buffers
                         //   every other one shares (hp_ulysses_attn_share_scratch)
} hp_attn_style;

struct hp_trainer {
    hp_model_config m;
    hp_dims         d;
    hp_run_config   rc;
    MPI_Comm        world;
    int             rank;
    hp_comm        *comm;
    hp_coords       co;
    hp_param_table  pt;
    hp_data        *data;
    int             step;        // steps done so far
    hp_local_shapes sh;          // this rank's local shapes (shapes.h)

    // the styles, each with its own state
    hp_fsdp_state   fsdp;        // FSDP2 / HSDP / DDP: shards, units, accumulation
    hp_tp_state     tp;          // TP + SP + loss parallel
    hp_attn_style   attn;        // CP ring / all-gather, Ulysses
    hp_pp_state    *pp;          // pipeline parallel (pp > 1), else NULL
    // the model: its activations, driven through the hooks filled from the styles
    hp_transformer  tf;
    long async_tp_ops;           // fused ops async TP ran overlapped in the last forward_backward
    int n_slots;                 // activation slots (pipeline: microbatches in flight; 1 without)
    int split_backward;          // zbv

    // the step's data
    int *pos;                // (Sc) global positions of this rank's tokens
    float *rope;             // (2, Sc, hd/2) their RoPE cos and sin (hp_rope_table)
    int *pos_cp;             // (Sc_cp) global positions of the cp-local tokens
    int *tokens, *labels;    // (Bl_step, Sc) cp-local, the whole step's
    int64_t n_valid_global;  // valid labels of the global batch
    // a batch the program gave (hp_trainer_feed, trainer.c): this rank's Bl_step
    // sequences of S inputs and S labels, before the cp cut; the next forward_backward reads
    // them in place of the data source's (malloc'd at the first feed, untracked: none of the
    // planner's buffers, and a run never fed has none)
    int *feed_in, *feed_tg;  // (Bl_step, S)
    int feed_pending;        // 1 from a feed to the forward_backward that reads it
    int *routing_step;       // (n_moe, Bl_step*Sc, K) every microbatch's routing, for the verifier
                             // (the model's forwards record it: tf.routing)
    uint64_t step_bytes[HP_G_COUNT][HP_OP_COUNT];   // the last step's traffic (comm.h)
    uint64_t step_start[HP_G_COUNT][HP_OP_COUNT];   // the counters when the running phase began
};

// ---- trainer_hooks.c ------------------------------------------------------------------
// The model's hooks (model_hooks.h) over this trainer's style states.
void hp_trainer_hooks(hp_trainer *tr, hp_model_hooks *hk);
// The run's precision into hk->prec (before the model), then its float8 linears over the
// model tr->tf (after it); 0 or -1. The trainer frees tf.hk.prec with hp_precision_free.
int  hp_trainer_precision(hp_trainer *tr, hp_model_hooks *hk);
int  hp_trainer_precision_convert(hp_trainer *tr);
// The attention style's per-rank part (set before the model sizes its blocks).
void hp_attn_style_init(hp_attn_style *a, hp_trainer *tr);

// ---- trainer_measure.c ----------------------------------------------------------------
// sign -1 at a step phase's start (keeps the counters), +1 at its end (adds the difference to
// step_bytes, which hp_trainer_forward_backward, the first phase, zeroes).
void hp_trainer_count_bytes(hp_trainer *tr, int sign);

// ---- pipeline_run.c -------------------------------------------------------------------
// Lays out this rank's schedule and sets tr->n_slots, tr->split_backward (before the model).
int    hp_pp_init(hp_trainer *tr, char *err, size_t errlen);
void   hp_pp_free(hp_trainer *tr);
double hp_pp_run_step(hp_trainer *tr);       // forward + backward of the step: this rank's CE sum
double hp_pp_run_forward(hp_trainer *tr);    // forward only (evaluation)
double hp_pp_idle_fraction(const hp_trainer *tr);   // of the last step, on this rank
int    hp_pp_timeline(const hp_trainer *tr, float *out, int cap);   // [n][5], returns n
size_t hp_pp_boundary_bytes(const hp_trainer *tr);  // the stage-gradient buffers (0 without pp)

#endif
