// transformer.h - the model's forward and backward on one rank (transformer.c): its state,
// the activations it keeps, and the stage entry points the trainer and the pipeline
// executor call. It knows the local shapes and the hooks (model_hooks.h), not the styles.
#ifndef HP_TRANSFORMER_H
#define HP_TRANSFORMER_H
#include <stddef.h>
#include <stdint.h>
#include "hyperpar/params.h"
#include "hyperpar/shapes.h"
#include "model/model_hooks.h"

// A block's parameters, by role (their table indices are looked up once, at init).
typedef enum {
    BP_ATTN_NORM, BP_WQ, BP_WK, BP_WV, BP_WO, BP_FFN_NORM,
    BP_W1, BP_W2, BP_W3, BP_GATE, BP_EW1, BP_EW2, BP_EW3, BP_SW1, BP_SW2, BP_SW3,
    BP_COUNT
} hp_block_param;

// Activations one block keeps for its backward. Rows: "res" = the residual stream of this
// rank (B_l x S_res tokens; S_res = S_c/T under sequence parallel), "reg" = inside a tensor
// parallel region (B_l x S_c: the cp-local sequence, replicated over tp).
typedef struct hp_block_acts {
    float *h_in;          // (res, D)   block input (a shared buffer under h_in_stored, below)
    float *n1, *rstd1;    // (res, D), (res)
    float *g1;            // (reg, D)   normed input inside the region
    float *q, *k, *v;     // (reg, Hl*hd), (reg, Hkvl*hd) x2, after RoPE
    float *att, *lse;     // (reg, Hl*hd), (reg, Hl)
    float *h_mid;         // (res, D)
    float *n2, *rstd2;    // (res, D), (res)
    float *g2;            // (reg, D)
    float *a1, *a3, *act; // (reg, Fl) dense FFN
    hp_moe_state *moe;    // MoE block state (NULL for dense blocks)
    void *attn;           // the attention core's state (hp_attention_hooks; NULL: none)
    // zbv's split backward: the output gradients of the block's linears, kept by I for W
    float *dy_wo, *dy_w2;          // (reg, D)
    float *dy_w1, *dy_w3;          // (reg, Fl)
    float *dy_q, *dy_k, *dy_v;     // (reg, Hl*hd), (reg, Hkvl*hd) x2
    int pid[BP_COUNT];    // parameter table index of each role (-1: absent in this block)
    // packed storage (hp_transformer.store_packed): the activations its backward reads that the
    // precision keeps (g1 .. act and zbv's dy) live here, hk.prec.stored_bytes each, and its
    // float buffers above are NULL but h_in, rstd1, rstd2 and lse (fp32); it runs in the shared
    // set (tf->work)
    void *stored;
    // packed storage, a block inside a stage: its input kept packed after its forward; h_in is
    // then the rank's stream buffer of the block's parity (tf->stream), where the previous
    // block writes it and its backward restores it (NULL: h_in is the slot's own)
    void *h_in_stored;
    uint32_t h_in_crc;    // under --verify: the CRC-32 of the input its forward read (HP_CHECK_STORE)
} hp_block_acts;

// The head's activations for one microbatch slot (only on the pp rank holding the head).
typedef struct hp_head_acts {
    float *h_final;          // (res, D)   the stream leaving the last block; under packed storage
                             //   the rank's tf->stream[L & 1], kept in h_final_stored
    float *rstdf;            // (res)      the final norm's statistics (its output, read only by
                             //   the forward's gather, is made in tf->res_a)
    float *gf;               // (reg, D)   the output GEMM's input; under packed storage the rank's
                             //   scratch tf->reg_b, kept in gf_stored
    void *h_final_stored, *gf_stored;   // packed storage: the two packed (else NULL)
    uint32_t h_final_crc;    // under --verify: the CRC-32 of the input the head's forward read
    float *logits;           // (reg, Vl); under packed storage the rank's tf->dlogits, where the
                             //   forward makes them and the backward unpacks them
    void *logits_stored;     // (reg, Vl) packed storage: the logits kept packed (else NULL)
    float *ce_m, *ce_se;     // (reg) per-row max and sum of exponentials (loss parallel)
    float *dy_out;           // zbv: (reg, Vl) the logits' gradient, kept by I for W
    void *dy_out_stored;     // zbv under packed storage: the same packed (dy_out NULL)
    float *dy_embed;         // zbv: (reg, D) the embedding output's gradient (first stage)
} hp_head_acts;

typedef struct hp_transformer {
    hp_model_config m;
    hp_local_shapes sh;
    const hp_param_table *pt;
    hp_model_hooks hk;
    // the step's data, owned by the caller
    const int *pos;            // (Sc) global positions of this rank's tokens
    const float *rope;         // (2, Sc, hd/2) their RoPE cos and sin (hp_rope_table)
    const int *tokens, *labels;   // (M*Nreg) the step's; microbatch mb's rows [mb*Nreg, (mb+1)*Nreg)
    int64_t n_valid_global;    // valid labels of the global batch
    // what runs now: microbatch mb in activation slot `slot` of n_slots (pipeline; 1 without)
    int mb, slot, n_slots;
    int split_backward;        // zbv: backwards run as I (input grads) then W (weight grads)
    int input_only;            // the running backward is an I: weight grads of linears wait for W
    int dw_in_i;               // the running block keeps no dy for a W (a MoE block): its I makes dw
    hp_block_acts *blocks;     // [n_slots * L]; slot 0's entries also carry the role indices.
                               // Buffers only for this rank's blocks (and h_in of the block after
                               // each of its stages: where that stage's output goes); a
                               // checkpointed block has only h_in (packed: h_in_stored)
    int ac_every;              // activation checkpointing (config.h, hp_run_ac_block): 0 none
    hp_block_acts *recompute;  // the one set the checkpointed blocks, and under bf16 storage
                               // the packed blocks, run in (NULL: none here); its h_in points at
                               // the running block's kept input
    int store_packed;          // the precision keeps activations packed (hk.prec.stored_bytes
                               // each): a block keeps them in hp_block_acts.stored, packed after
                               // its forward and restored into the shared set for its backward
    hp_block_acts work;        // the shared set lent to the running stored block (a view)
    float *stream[2];          // (res, D) packed storage: the stream entering a block (or the
                               //    head) in floats, by its parity (NULL: none here)
    hp_moe_state *moe_scratch_from;   // the rank's first MoE state, whose scratch every
                               //    other one shares (hp_moe_share_scratch)
    int *routing;              // (n_moe, M*Nreg, K) the step's routing, the caller's: each
                               // forward records its MoE blocks' here (NULL: not recorded), a
                               // recompute is checked against it
    hp_head_acts *heads;       // [n_slots]
    int *layer_local;          // [L] 1: this rank's pp rank holds block l
    int *stage_entry;          // [L] 1: block l starts a stage (hp_transformer_opts)
    int head_local;            // this rank holds the head (norm, output): the last stage
    int pid_tok, pid_norm, pid_out;   // table indices of the top-level parameters
    size_t activation_bytes;   // what the slots' activations and the recompute set take here
    float *dlogits;            // (reg, Vl)
    float *res_n;              // (res, D) the running block's norm outputs n1 and n2 (only its
                               //    forward reads them; counted with the activations)
    float *res_a, *res_b;      // (res, D) scratch; res_b carries the stream's gradient
    float *reg_a, *reg_b;      // (reg, D) scratch
    float *reg_q, *reg_k, *reg_v, *reg_att;   // backward scratch
    float *reg_f1, *reg_f2, *reg_f3;          // (reg, Fl) backward scratch
    double loss_local;         // this rank's share of the loss (sum CE / N_global)
    double ce_sum_local;       // the sum of CE over the last forward's microbatch
} hp_transformer;

// How the activations are kept and how the step runs them (hp_transformer_init).
typedef struct hp_transformer_opts {
    int n_slots;               // activation slots: microbatches in flight (pipeline; 1 without)
    int split_backward;        // zbv: backwards run as I then W
    int ac_every;              // activation checkpointing, as hp_run_config's
    const int *stage_entry;    // [L] 1: block l starts a pipeline stage, whose input arrives from
                               //    outside the stage (NULL: block 0 only); it keeps that input
                               //    in its slot's floats, where the pipeline reads and writes it,
                               //    or under packed storage in its slot's packed copy
                               //    (hp_transformer_stream_stored), which the stage unpacks first
} hp_transformer_opts;

// Sizes every activation slot for the shapes, the options and the precision's storage
// (hk->prec.stored_bytes); the hooks are copied.
// Returns 0 or -1 (memory).
int    hp_transformer_init(hp_transformer *tf, const hp_model_config *m, const hp_local_shapes *sh,
                           const hp_param_table *pt, const hp_model_hooks *hk,
                           const hp_transformer_opts *opt);
void   hp_transformer_free(hp_transformer *tf);
double hp_transformer_forward(hp_transformer *tf);     // returns this rank's loss share
void   hp_transformer_backward(hp_transformer *tf);    // leaves reduced gradient shards
// One pipeline stage on the running microbatch (tf->mb, tf->slot): blocks [l0, l1), with
// the embedding when first and the head and loss (tf->ce_sum_local) when last. The stream
// enters at hp_transformer_stream(tf, l0) and leaves at hp_transformer_stream(tf, l1) (under
// packed storage their packed copies: hp_transformer_stream_stored); the
// backward's gradient of the stream is in tf->res_b on entry (unless last) and on exit
// (unless first). A checkpointed block's backward first reruns its forward (collectives
// included) from its kept input into the recompute set.
void   hp_transformer_forward_layers(hp_transformer *tf, int l0, int l1, int first, int last);
void   hp_transformer_backward_layers(hp_transformer *tf, int l0, int l1, int first, int last);
float *hp_transformer_stream(hp_transformer *tf, int l);
// Under packed storage, the running slot's packed copy of the stream entering block l (l == L:
// the head; hk.prec.stored_bytes an element), else NULL. A stage that does not end the model packs its output into the next
// stage's (the pipeline sends it as it is), and one that does not start it unpacks its own
// first (the pipeline receives into it).
void  *hp_transformer_stream_stored(hp_transformer *tf, int l);
// "attention.wq.weight"'s role name without ".weight" ("attention.wq"), for filters.
const char *hp_transformer_role_name(hp_block_param r);
// zbv's W of a stage: the linears' weight grads from what the stage's I kept, then (after the
// last microbatch) the units' reduction. The I is hp_transformer_backward_layers with
// tf->input_only set.
void   hp_transformer_weight_grads_layers(hp_transformer *tf, int l0, int l1, int first, int last);

#endif
