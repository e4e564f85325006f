// moe.h - the MoE block (router, routed experts, shared experts) with expert parallel
// dispatch. spec: docs/model.md (MoE), docs/torchtitan.md §4.2-4.3, §8.
// defines: hp_moe_dims, hp_moe_weights, hp_moe_grads, hp_moe_state (opaque),
//          hp_moe_dispatch_ops (how rows reach their experts), the block's forward/backward
//
//   hp_moe_state *st = hp_moe_state_init(&md);
//   hp_moe_forward(st, comm, out, x, &w);          // over EP dispatch on comm's HP_G_EP
//   hp_moe_backward(st, comm, dx, &g, dout, &w);
//   hp_moe_state_free(st);
// (the model instead sets its dispatch once, hp_moe_set_dispatch, and calls hp_moe_block_*)
//
// The block runs INSIDE a tensor-parallel region: its input rows x are replicated over the
// tp group, and its output is a PARTIAL sum over tp (the caller reduces it once, reduce-
// scatter under SP or all-reduce without). With every degree 1 it is the plain MoE of model.md.
//
//  - EP (ep > 1): experts split on dim 0 over HP_G_EP; tokens go to their experts' owners
//    by all-to-all (counts exchanged first) or, with HP_DISPATCH_ALLGATHER, by all-gather of
//    tokens + local selection + reduce-scatter back.
//  - token_split > 1 (ep > 1, etp == 1, tp > 1: EP borrows the tp ranks): tp rank t routes
//    only rows [t*n, (t+1)*n), n = N / token_split; the other rows' output is 0 here, so the
//    output is a true partial sum over tp.
//  - expert hidden split (expert_tp > 1: etp == tp with ep > 1, or tp with ep == 1): each
//    rank holds Fe/expert_tp of every local expert's hidden dim; outputs are partial.
//  - shared experts: w1/w3 colwise, w2 rowwise over tp (Fs/tp), output partial.
//  - the router gate is replicated; its gradient is partial over tp (the caller all-reduces it).
#ifndef HYPERPAR_MOE_H
#define HYPERPAR_MOE_H
#include "comm.h"
#include "config.h"

typedef struct hp_moe_dims {
    int N;             // rows (tokens) of x on this rank (replicated over tp)
    int D, E, K;       // model dim, experts, top-k
    int El, e0;        // local experts: global ids [e0, e0+El)
    int Fel;           // local hidden width of one expert (Fe / expert_tp)
    int Fsl;           // local shared-expert width (Fe*n_shared / tp), 0 = no shared experts
    int token_split;   // tp ranks splitting the rows for dispatch (1 = no split)
    int token_rank;    // this rank's slice index (tp coordinate) when token_split > 1
    hp_score_func score_func;
    int route_norm;
    float route_scale;
    hp_dispatcher dispatcher;
    // The precision (src/model/precision_hooks.h; NULL: fp32, activations kept in floats): it
    // runs the experts' linears (a routed expert's w is its slice of w1/w2/w3, local expert l
    // at l * Fel * D, which tells a float8 precision which expert it is), holds the complete
    // outputs by its op rule (partials are not: the caller applies it to the block's output
    // after its sum over tp), and, when it packs activations (stored_bytes > 0), keeps the
    // input, the dispatched rows, the experts' and shared experts' w1/w3 outputs and their
    // SwiGLU packed; they then run in fp32 copies in the (shared) scratch.
    const struct hp_precision_hooks *prec;
} hp_moe_dims;

typedef struct hp_moe_weights {
    const float *gate;     // (E, D)
    const float *w1;       // (El, Fel, D)
    const float *w2;       // (El, D, Fel)
    const float *w3;       // (El, Fel, D)
    const float *sw1;      // (Fsl, D)   shared experts (NULL when Fsl == 0)
    const float *sw2;      // (D, Fsl)
    const float *sw3;      // (Fsl, D)
} hp_moe_weights;

typedef struct hp_moe_grads {  // every one accumulated into (+=)
    float *gate, *w1, *w2, *w3, *sw1, *sw2, *sw3;
} hp_moe_grads;

typedef struct hp_moe_state hp_moe_state;   // activations saved for backward

// How routed rows reach their experts and come back: the model's MoE block calls these,
// a parallel style implements them (expert parallel over HP_G_EP: src/parallel/ep_dispatch.c).
// init sizes one block's dispatcher for n routed rows (K entries each, global expert ids),
// E experts of which this rank computes [e0, e0+El), width D; it returns the dispatcher's
// state (NULL after one line on stderr) and the room for expert-major rows in *cap.
// route returns Mr, the rows computed here, and points *off (El+1) at each local expert's
// first row. The rest mirror hp_ep_*: xe (Mr, D) = dispatched x (n, D); out (n, D) = the
// gate-weighted sum of ye (Mr, D); dye, dgates from dout; dx (n, D) += combined dxe.
typedef struct hp_moe_dispatch_ops {
    void *(*init)(void *ctx, hp_dispatcher mode, int n, int K, int E, int El, int e0, int D,
                  int *cap);
    void (*free)(void *self);
    int  (*route)(void *self, const int *idx, const float *gates, const int **off);
    void (*dispatch_rows)(void *self, float *xe, const float *x);
    void (*combine_rows)(void *self, float *out, const float *ye);
    void (*dispatch_grad)(void *self, float *dye, float *dgates, const float *dout, const float *ye);
    void (*combine_grad)(void *self, float *dx, const float *dxe);
} hp_moe_dispatch_ops;

hp_moe_state *hp_moe_state_init(const hp_moe_dims *md);
void          hp_moe_state_free(hp_moe_state *st);
// The scratch (what a forward reads only inside it: the router's logits, the shared experts'
// output; and the backward's grads) is only read inside one block's forward or backward, so
// the blocks of a rank can share one: st then uses with's (sized at the first forward, kept
// until its last user is freed).
// Call before st's first forward; returns 0 (also when they share already), or -1 when their
// dims differ or st has run.
//   for (int l = 1; l < n_moe; l++) hp_moe_share_scratch(state[l], state[0]);
int hp_moe_share_scratch(hp_moe_state *st, hp_moe_state *with);
// The block's dispatch: ops with their context (the ops' init runs at the first forward).
// Returns 0, or -1 when st already dispatched through another context.
int  hp_moe_set_dispatch(hp_moe_state *st, const hp_moe_dispatch_ops *ops, void *ctx);
// The block over the dispatch set above (the model calls these).
// out (N, D) overwritten with this rank's partial output; x (N, D).
void hp_moe_block_forward(hp_moe_state *st, float *out, const float *x, const hp_moe_weights *w);
// dx (N, D) += partial input grad; grads accumulated. Must follow the forward on st.
void hp_moe_block_backward(hp_moe_state *st, float *dx, hp_moe_grads *g, const float *dout,
                           const hp_moe_weights *w);
// The same over expert parallel dispatch on comm's HP_G_EP group (the parallel layer's
// ep_dispatch.c sets it up on the first call; a later call must pass an ep group of the same size).
void hp_moe_forward(hp_moe_state *st, hp_comm *comm, float *out, const float *x,
                    const hp_moe_weights *w);
void hp_moe_backward(hp_moe_state *st, hp_comm *comm, float *dx, hp_moe_grads *g,
                     const float *dout, const hp_moe_weights *w);
// The experts each row chose in the last forward, (N, K) global ids, descending score:
// all N rows (the router runs on every row even when dispatch is split).
const int *hp_moe_routing(const hp_moe_state *st);

#endif
