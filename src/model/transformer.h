// transformer.h - the model's forward and backward on one rank (transformer.c): its state,
// the activations it keeps, and the stage entry points the trainer and the pipeline
// executor call. It knows the local shapes and the hooks (model_hooks.h), not the styles.
#ifndef HP_TRANSFORMER_H
#define HP_TRANSFORMER_H
#include <stddef.h>
#include <stdint.h>
#include "hyperpar/bf16.h"
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
    // bf16 storage (hp_transformer.store_bf16): the bf16-valued activations its backward reads
    // (g1 .. act and zbv's dy) live here, 2 bytes each, and its float buffers above are NULL
    // but h_in, rstd1, rstd2 and lse (fp32); it runs in the shared set (tf->work)
    hp_bf16 *stored;
    // bf16 storage, a block inside a stage: its input kept in 2 bytes, packed after its forward;
    // h_in is then the rank's stream buffer of the block's parity (tf->stream), where the
    // previous block writes it and its backward unpacks it (NULL: h_in is the slot's own)
    hp_bf16 *h_in_stored;
    uint32_t h_in_crc;    // under --verify: the CRC-32 of the input its forward read (HP_CHECK_STORE)
} hp_block_acts;

// The head's activations for one microbatch slot (only on the pp rank holding the head).
typedef struct hp_head_acts {
    float *h_final;          // (res, D)   the stream leaving the last block; under bf16 storage
                             //   the rank's tf->stream[L & 1], kept in h_final_stored
    float *rstdf;            // (res)      the final norm's statistics (its output, read only by
                             //   the forward's gather, is made in tf->res_a)
    float *gf;               // (reg, D)   the output GEMM's input; under bf16 storage the rank's
                             //   scratch tf->reg_b, kept in gf_stored
    hp_bf16 *h_final_stored, *gf_stored;   // bf16 storage: the two in 2 bytes (else NULL)
    uint32_t h_final_crc;    // under --verify: the CRC-32 of the input the head's forward read
    float *logits;           // (reg, Vl); under bf16 storage the rank's tf->dlogits, where the
                             //   forward makes them and the backward unpacks them
    hp_bf16 *logits_stored;  // (reg, Vl) bf16 storage: the logits kept in 2 bytes (else NULL)
    float *ce_m, *ce_se;     // (reg) per-row max and sum of exponentials (loss parallel)
    float *dy_out;           // zbv: (reg, Vl) the logits' gradient, kept by I for W
    hp_bf16 *dy_out_stored;  // zbv under bf16 storage: the same in 2 bytes (dy_out NULL)
    float *dy_embed;         // zbv: (reg, D) the embedding output's gradient (first stage)
} hp_head_acts;

typedef struct hp_float8_linears hp_float8_linears;   // float8_linears.c

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
    int bf16;                  // --mixed-precision-param bfloat16: every op's output rounded once
                               //    (precision.md §2.2); partial sums over tp only after their sum
    int split_backward;        // zbv: backwards run as I (input grads) then W (weight grads)
    int input_only;            // the running backward is an I: weight grads of linears wait for W
    int dw_in_i;               // the running block keeps no dy for a W (a MoE block): its I makes dw
    hp_block_acts *blocks;     // [n_slots * L]; slot 0's entries also carry the role indices.
                               // Buffers only for this rank's blocks (and h_in of the block after
                               // each of its stages: where that stage's output goes); a
                               // checkpointed block has only h_in (2 bytes: h_in_stored)
    int ac_every;              // activation checkpointing (config.h, hp_run_ac_block): 0 none
    hp_block_acts *recompute;  // the one set the checkpointed blocks, and under bf16 storage
                               // the stored blocks, run in (NULL: none here); its h_in points at
                               // the running block's kept input
    int store_bf16;            // bf16 storage: a block keeps its bf16 activations in 2 bytes
                               // (hp_block_acts.stored), packed after its forward and unpacked
                               // into the shared set for its backward
    hp_block_acts work;        // the shared set lent to the running stored block (a view)
    float *stream[2];          // (res, D) bf16 storage: the stream entering a block (or the
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
    // float8 linears (float8_linears.c; NULL: off): the block whose linears run now (-1: none,
    // e.g. the head) and whether it is a recompute (which casts with the forward's scales)
    hp_float8_linears *f8;
    int f8_layer, f8_recompute;
} hp_transformer;

// How the activations are kept and how the step runs them (hp_transformer_init).
typedef struct hp_transformer_opts {
    int n_slots;               // activation slots: microbatches in flight (pipeline; 1 without)
    int split_backward;        // zbv: backwards run as I then W
    int ac_every;              // activation checkpointing, as hp_run_config's
    int bf16;                  // the op rule of the bf16 policy
    int store_bf16;            // (with bf16) the blocks keep their bf16 activations in 2 bytes
    const int *stage_entry;    // [L] 1: block l starts a pipeline stage, whose input arrives from
                               //    outside the stage (NULL: block 0 only); it keeps that input
                               //    in its slot's floats, where the pipeline reads and writes it,
                               //    or under store_bf16 in its slot's 2-byte copy
                               //    (hp_transformer_stream_stored), which the stage unpacks first
} hp_transformer_opts;

// Sizes every activation slot for the shapes and the options; the hooks are copied.
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
// bf16 storage their 2-byte copies: hp_transformer_stream_stored); the
// backward's gradient of the stream is in tf->res_b on entry (unless last) and on exit
// (unless first). A checkpointed block's backward first reruns its forward (collectives
// included) from its kept input into the recompute set.
void   hp_transformer_forward_layers(hp_transformer *tf, int l0, int l1, int first, int last);
void   hp_transformer_backward_layers(hp_transformer *tf, int l0, int l1, int first, int last);
float *hp_transformer_stream(hp_transformer *tf, int l);
// Under bf16 storage, the running slot's 2-byte copy of the stream entering block l (l == L:
// the head), else NULL. A stage that does not end the model packs its output into the next
// stage's (the pipeline sends it as it is), and one that does not start it unpacks its own
// first (the pipeline receives into it).
hp_bf16 *hp_transformer_stream_stored(hp_transformer *tf, int l);
// "attention.wq.weight"'s role name without ".weight" ("attention.wq"), for filters.
const char *hp_transformer_role_name(hp_block_param r);
// Float8 linears (precision.md §5): after hp_transformer_init, converts the block linears the
// filter leaves (float8.h recipe; filter: TorchTitan's filter_fqns as a comma list). 0 or -1.
int    hp_float8_linears_init(hp_transformer *tf, int recipe, const char *filter);
void   hp_float8_linears_free(hp_transformer *tf);
// 1 when w is a weight of block tf->f8_layer that float8 converted.
int    hp_float8_linear_converted(const hp_transformer *tf, const float *w);
// The float8 path of a linear of block tf->f8_layer: 1 when w is a converted one (done), else 0.
int    hp_float8_linear_fwd(const hp_transformer *tf, float *y, const float *x, const float *w,
                            int N, int in, int out);
int    hp_float8_linear_bwd(const hp_transformer *tf, float *dx, float *dw, const float *dy,
                            const float *x, const float *w, int N, int in, int out, float dx_beta);
// The same as hp_moe_weights's f8_fwd / f8_bwd (ctx: the hp_transformer; the backward adds).
// Sets tf->f8_layer = l and starts its forward or backward: no tensorwise amax taken yet.
void   hp_float8_layer_begin(hp_transformer *tf, int l);
int    hp_float8_tensorwise(const hp_transformer *tf);   // float8 on, recipe tensorwise
// Tensorwise, before a linear runs by row blocks: the amax of its whole input x (N, in) / of
// its whole grad_output dy (N, out), MAX-reduced over tp where that dim is a tp shard, for every
// block's cast (and the backward's dw). No-ops for a weight that is not converted.
void   hp_float8_prepare_x(hp_transformer *tf, const float *w, const float *x, int N, int in);
void   hp_float8_prepare_dy(hp_transformer *tf, const float *w, const float *dy, int N, int out);
// The SP all-gather of a float8 tensorwise input into a region whose consumers w[0..n_w) all
// convert (torchao's Float8 TP, precision.md §5.4): in (res, D) cast with the tensor's scale
// (its amax MAX-reduced over tp; an AC recompute takes the forward's), 1 byte an element, into
// out (reg, D), then rows() over its row blocks (async TP: as each member's shard lands);
// backward: the grad_output in e5m2. The consumers cast with that amax. 1 when done, 0 when
// it does not apply (another recipe, a consumer not converted, no SP gather, zbv's I).
int    hp_float8_sp_gather_consume(hp_transformer *tf, float *out, const float *in, int D,
                                   const float *const *w, int n_w, int backward,
                                   hp_region_rows_fn *rows, void *rows_ctx);
int    hp_float8_moe_fwd(void *ctx, float *y, const float *x, const float *w, int N, int in, int out);
int    hp_float8_moe_bwd(void *ctx, float *dx, float *dw, const float *dy, const float *x,
                         const float *w, int N, int in, int out);   // block l's input (l == L: the head's)
// zbv's W of a stage: the linears' weight grads from what the stage's I kept, then (after the
// last microbatch) the units' reduction. The I is hp_transformer_backward_layers with
// tf->input_only set.
void   hp_transformer_weight_grads_layers(hp_transformer *tf, int l0, int l1, int first, int last);

#endif
