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
    int pid[BP_COUNT];    // parameter table index of each role (-1: absent in this block)
} hp_block_acts;

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
    float *acc_g;            // (sum of unit_work_numel) when M > 1, else NULL
    int64_t *acc_offset;     // [n_units] each unit's place in acc_g
    int *routing_step;       // (n_moe, Bl_step*Sc, K) every microbatch's routing, for the verifier

    // local sizes (per microbatch)
    int Bl, Sc, Ss;          // local batch, cp-local seq, residual seq (Sc / T with SP)
    int Nres, Nreg;          // rows of the residual stream, rows inside a tp region
    int D, Hl, Hkvl, hd, Fl, Vl, v0;
    int *pos;                // (Sc) global positions of the cp-local tokens
    int *tokens, *labels;    // (Bl_step, Sc) cp-local, the whole step's; microbatch mb's rows
                             // are [mb*Nreg, (mb+1)*Nreg)
    int64_t n_valid_global;  // valid labels of the global batch

    // activations
    hp_block_acts *blocks;   // [L]
    int pid_tok, pid_norm, pid_out;   // table indices of the top-level parameters
    float *h_final, *nf, *rstdf, *gf, *logits, *ce_m, *ce_se, *ce_tl;
    float *dlogits;          // (reg, Vl)
    float *tp_buf;           // (reg, D) staging of sequence all-gather / reduce-scatter
    float *res_a, *res_b;    // (res, D) scratch
    float *reg_a, *reg_b;    // (reg, D) scratch
    float *reg_q, *reg_k, *reg_v, *reg_att;           // backward scratch
    float *reg_f1, *reg_f2, *reg_f3;                  // (reg, Fl) backward scratch
    double loss_local;       // this rank's share of the loss (sum CE / N_global)
    double ce_sum_local;     // the sum of CE over the last forward's microbatch
};

// ---- fsdp.c ---------------------------------------------------------------------------
int  hp_fsdp_alloc(hp_trainer *tr);
void hp_fsdp_free(hp_trainer *tr);
void hp_fsdp_init_params(hp_trainer *tr);         // counter-based init of this rank's shards
void hp_fsdp_gather_unit(hp_trainer *tr, int u);   // all-gather unit u into work_p
void hp_fsdp_release_unit(hp_trainer *tr, int u);  // reshard after forward / backward
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

#endif
