// trainer_internal.h - the state of one rank's training job, shared by the files that make
// a step: trainer.c (data, step, optimiser), ../model/transformer.c (forward/backward),
// ../parallel/fsdp.c (shards, unit gather/reduce) and ../parallel/tp.c (tp regions, loss).
#ifndef HP_TRAINER_INTERNAL_H
#define HP_TRAINER_INTERNAL_H
#include "hyperpar/comm.h"
#include "hyperpar/data.h"
#include "hyperpar/moe.h"
#include "hyperpar/params.h"
#include "hyperpar/train.h"
#include "hyperpar/ulysses.h"

// A block's parameters, by role (their table indices are looked up once, in hp_transformer_alloc).
typedef enum {
    BP_ATTN_NORM, BP_WQ, BP_WK, BP_WV, BP_WO, BP_FFN_NORM,
    BP_W1, BP_W2, BP_W3, BP_GATE, BP_EW1, BP_EW2, BP_EW3, BP_SW1, BP_SW2, BP_SW3,
    BP_COUNT
} hp_block_param;

// Activations one block keeps for its backward. Rows: "res" = the residual stream of this
// rank (B_l x S_res tokens; S_res = S_c/T under sequence parallel), "reg" = inside a tensor
// parallel region (B_l x S_c: the cp-local sequence, replicated over tp).
typedef struct hp_block_acts {
    float *h_in;          // (res, D)   block input
    float *n1, *rstd1;    // (res, D), (res)
    float *g1;            // (reg, D)   normed input inside the region
    float *q, *k, *v;     // (reg, Hl*hd), (reg, Hkvl*hd) x2, after RoPE
    float *att, *lse;     // (reg, Hl*hd), (reg, Hl)
    float *h_mid;         // (res, D)
    float *n2, *rstd2;    // (res, D), (res)
    float *g2;            // (reg, D)
    float *a1, *a3, *act; // (reg, Fl) dense FFN
    hp_moe_state *moe;    // MoE block state (NULL for dense blocks)
    hp_ulysses_attn *uly; // Ulysses: the attention core's exchanged q, k, v, out (NULL: U = 1)
    // zbv's split backward: the output gradients of the block's linears, kept by I for W
    float *dy_wo, *dy_w2;          // (reg, D)
    float *dy_w1, *dy_w3;          // (reg, Fl)
    float *dy_q, *dy_k, *dy_v;     // (reg, Hl*hd), (reg, Hkvl*hd) x2
    int pid[BP_COUNT];    // parameter table index of each role (-1: absent in this block)
} hp_block_acts;

// The head's activations for one microbatch slot (only on the pp rank holding the head).
typedef struct hp_head_acts {
    float *h_final;          // (res, D)   the stream leaving the last block
    float *nf, *rstdf;       // (res, D), (res)
    float *gf;               // (reg, D)
    float *logits;           // (reg, Vl)
    float *ce_m, *ce_se;     // (reg) per-row max and sum of exponentials (loss parallel)
    float *dy_out;           // zbv: (reg, Vl) the logits' gradient, kept by I for W
    float *dy_embed;         // zbv: (reg, D) the embedding output's gradient (first stage)
} hp_head_acts;

typedef struct hp_pp_state hp_pp_state;   // pipeline_run.c

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

    // persistent state: this rank's shards (padded), flat, in table order
    float *p_shard, *g_shard, *m_shard, *v_shard;   // (pt.shard_numel)
    // one FSDP unit gathered at a time: its unsharded local params and their grads
    float *work_p, *work_g;                         // (pt.max_unit_work)
    float *comm_buf;                                // gather / reduce-scatter staging
    int64_t comm_buf_numel;
    int    gathered_unit;                           // -1 when none

    // gradient accumulation: the step runs M microbatches of Bl sequences each (Bl_step = M*Bl
    // is the data shard's batch); grads of every unit accumulate over them in acc_g and are
    // reduced once, after the last microbatch's backward of the unit
    int M, mb;               // microbatches per step, the one running now
    int Bl_step;
    float *acc_g;            // (sum of unit_work_numel) when M > 1 or pp > 1, else NULL
    int64_t *acc_offset;     // [n_units] each unit's place in acc_g (and kept_p)
    float *kept_p;           // pp: every local unit's gathered params, kept for the step
    int *unit_kept;          // [n_units] 1: unit gathered into kept_p this step
    int *routing_step;       // (n_moe, Bl_step*Sc, K) every microbatch's routing, for the verifier

    // local sizes (per microbatch)
    int Bl, Sc, Ss;          // local batch, this rank's tokens of a sequence (S/(C*U): cp, then
                             // ulysses), residual seq (Sc / T with SP)
    int Sc_cp;               // the cp-local tokens S/C the attention core sees (Ulysses gathers them)
    int Nres, Nreg;          // rows of the residual stream, rows inside a tp region
    int D, Hl, Hkvl, hd, Fl, Vl, v0;
    int *pos;                // (Sc) global positions of this rank's tokens
    int *pos_cp;             // (Sc_cp) global positions of the cp-local tokens
    int *tokens, *labels;    // (Bl_step, Sc) cp-local, the whole step's; microbatch mb's rows
                             // are [mb*Nreg, (mb+1)*Nreg)
    int64_t n_valid_global;  // valid labels of the global batch

    // activations: n_slots microbatches in flight (pipeline; 1 without pp), slot-major
    int n_slots, slot;       // slots, and the one the running microbatch uses
    size_t activation_bytes; // what the slots' activations take on this rank
    int split_backward;      // zbv: backwards run as I (input grads) then W (weight grads)
    int input_only;          // the running backward is an I: weight grads of linears wait for W
    hp_pp_state *pp;         // pipeline parallel (pp > 1), else NULL
    hp_block_acts *blocks;   // [n_slots * L]; slot 0's entries also carry the role indices
    hp_head_acts *heads;     // [n_slots]
    int *layer_local;        // [L] 1: this rank's pp rank holds block l
    int head_local;          // this rank holds the head (norm, output): the last stage
    int pid_tok, pid_norm, pid_out;   // table indices of the top-level parameters
    float *ce_tl;
    float *dlogits;          // (reg, Vl)
    float *tp_buf;           // (reg, D) staging of sequence all-gather / reduce-scatter
    float *res_a, *res_b;    // (res, D) scratch
    float *reg_a, *reg_b;    // (reg, D) scratch
    float *reg_q, *reg_k, *reg_v, *reg_att;           // backward scratch
    float *reg_f1, *reg_f2, *reg_f3;                  // (reg, Fl) backward scratch
    double loss_local;       // this rank's share of the loss (sum CE / N_global)
    double ce_sum_local;     // the sum of CE over the last forward's microbatch
};

// ---- trainer.c ------------------------------------------------------------------------
// Copies the routing of the microbatch that just ran forward through blocks [l0, l1) into
// the step's routing, so the verifier sees every token's experts.
void hp_trainer_keep_routing(hp_trainer *tr, int l0, int l1);

// ---- pipeline_run.c -------------------------------------------------------------------
// Lays out this rank's schedule and sets tr->n_slots (before hp_transformer_alloc).
int    hp_pp_init(hp_trainer *tr, char *err, size_t errlen);
void   hp_pp_free(hp_trainer *tr);
double hp_pp_run_step(hp_trainer *tr);       // forward + backward of the step: this rank's CE sum
double hp_pp_run_forward(hp_trainer *tr);    // forward only (evaluation)
double hp_pp_idle_fraction(const hp_trainer *tr);   // of the last step, on this rank
int    hp_pp_timeline(const hp_trainer *tr, float *out, int cap);   // [n][5], returns n

// ---- fsdp.c ---------------------------------------------------------------------------
int  hp_fsdp_alloc(hp_trainer *tr);
void hp_fsdp_free(hp_trainer *tr);
void hp_fsdp_init_params(hp_trainer *tr);         // counter-based init of this rank's shards
void hp_fsdp_gather_unit(hp_trainer *tr, int u);   // all-gather unit u into work_p
void hp_fsdp_release_unit(hp_trainer *tr, int u);  // reshard after forward / backward
void hp_fsdp_release_all(hp_trainer *tr);          // pp: reshard every kept unit (step end)
void hp_fsdp_zero_unit_grads(hp_trainer *tr, int u);
void hp_fsdp_reduce_unit(hp_trainer *tr, int u);   // work_g of u -> reduced g_shard
// Pointer to parameter i (and its grad) inside the gathered unit.
float *hp_fsdp_param(hp_trainer *tr, int i);
float *hp_fsdp_grad(hp_trainer *tr, int i);
double hp_fsdp_gather_full(hp_trainer *tr, const float *shard, float *full);

// ---- tp.c -----------------------------------------------------------------------------
// Enter a tp region: in (res, D) -> out (reg, D): all-gather along the sequence under SP,
// a copy without. Backward: din (res) = reduce-scatter (SP) / all-reduce of dout (reg).
void hp_tp_region_enter(hp_trainer *tr, float *out, const float *in, int D);
void hp_tp_region_enter_backward(hp_trainer *tr, float *din, float *dout, int D);
// Leave a tp region: partial in (reg, D) -> out (res, D): reduce-scatter (SP) / all-reduce.
// Backward: din (reg) = all-gather (SP) / copy of dout (res).
void hp_tp_region_exit(hp_trainer *tr, float *out, float *in, int D);
void hp_tp_region_exit_backward(hp_trainer *tr, float *din, const float *dout, int D);
// Vocab-parallel cross-entropy of logits (reg, Vl): returns sum of CE over valid rows; keeps
// m and se for the backward.
double hp_tp_cross_entropy(hp_trainer *tr, const float *logits, const int *labels,
                           float *m, float *se);

// ---- transformer.c --------------------------------------------------------------------
int    hp_transformer_alloc(hp_trainer *tr);
void   hp_transformer_free(hp_trainer *tr);
double hp_transformer_forward(hp_trainer *tr);     // returns this rank's loss share
void   hp_transformer_backward(hp_trainer *tr);    // leaves reduced gradient shards
// One pipeline stage on the running microbatch (tr->mb, tr->slot): blocks [l0, l1), with
// the embedding when first and the head and loss (tr->ce_sum_local) when last. The stream
// enters at hp_transformer_stream(tr, l0) and leaves at hp_transformer_stream(tr, l1); the
// backward's gradient of the stream is in tr->res_b on entry (unless last) and on exit
// (unless first).
void   hp_transformer_forward_layers(hp_trainer *tr, int l0, int l1, int first, int last);
void   hp_transformer_backward_layers(hp_trainer *tr, int l0, int l1, int first, int last);
float *hp_transformer_stream(hp_trainer *tr, int l);   // block l's input (l == L: the head's)
// zbv's W of a stage: the linears' weight grads from what the stage's I kept, then (after the
// last microbatch) the units' reduction. The I is hp_transformer_backward_layers with
// tr->input_only set.
void   hp_transformer_weight_grads_layers(hp_trainer *tr, int l0, int l1, int first, int last);

#endif
