// ep_dispatch.h - expert-parallel token dispatch and combine over the HP_G_EP group (private).
// spec: docs/torchtitan.md §4.2-4.3; docs/moe.md, docs/traffic_moe.md.
// defines: hp_ep_dispatch, hp_ep_init/free, hp_ep_route, hp_ep_dispatch_rows,
//          hp_ep_combine_rows, hp_ep_dispatch_grad, hp_ep_combine_grad
//
// The MoE block hands over the rows it routes (n rows, K entries each, with global expert
// ids and gate weights). The dispatcher moves them to the ranks that own the experts and
// lays them out EXPERT-MAJOR for this rank's El local experts:
//   xe (Mr, D): rows [off[l], off[l+1]) belong to local expert l (global id e0 + l).
// The caller runs the experts on xe and hands back ye (Mr, D); combine returns
//   out[r] = sum_k gate[r,k] * Expert_{idx[r,k]}(x[r])   for the n rows.
// Backward mirrors it (dispatch_grad, combine_grad). Two paths:
//  - HP_DISPATCH_ALLTOALL: counting sort of the entries by global expert id, counts
//    exchanged with an equal-split all-to-all, rows by a variable all-to-all, received rows
//    (source-major) permuted to local-expert-major; combine is the inverse all-to-all and the
//    K-weighted sum happens at the row's owner (the unweighted expert outputs are kept there
//    for the gate gradient).
//  - HP_DISPATCH_ALLGATHER: every member gathers the rows, ids and gates of the whole group,
//    picks the entries of its local experts, sums gate * y per row into a zero buffer
//    (n_ep*n, D) and a reduce-scatter hands each member the sum for its own rows.
// Every loop runs in a fixed order, so results are bit-identical run to run.
#ifndef HYPERPAR_EP_DISPATCH_H
#define HYPERPAR_EP_DISPATCH_H
#include "hyperpar/comm.h"
#include "hyperpar/config.h"

typedef struct hp_ep_dispatch {
    hp_dispatcher mode;
    int wire_bf16;         // the bf16 policy: token rows and their grads travel in 2 bytes
                           // (the experts' outputs and input grads, summed after, in 4)
    int n_ep, ep_rank;     // HP_G_EP group size and this rank's index in it
    int n, K, E, El, e0, D;
    int Mr;                // entries computed here after hp_ep_route (expert-major rows)
    int cap;               // room for n_ep * n * K entries
    int *off;              // (El+1) start of each local expert's rows in xe
    int *perm;             // (cap) expert-major row p -> received row (a2a) / gathered entry (ag)
    int *idx;              // (n, K) copy of the routed ids        (a2a)
    float *gates;          // (n, K) copy of the gate weights      (a2a)
    int *counts_local;     // (E) entries sent to each global expert          (a2a)
    int *counts_recv;      // (n_ep, El) entries received [source][local expert] (a2a)
    int *send_counts;      // (n_ep) floats sent to each member = rows * D      (a2a)
    int *recv_counts;      // (n_ep) floats received from each member           (a2a)
    int *sorted;           // (n*K) sorted position -> entry r*K+k               (a2a)
    int *pos;              // (n*K) entry r*K+k -> sorted position               (a2a)
    float *xs;             // (n*K, D) rows in sorted (send) order                (a2a)
    float *ys;             // (n*K, D) expert outputs back home, sorted order; kept for backward
    float *xr;             // (cap, D) rows in received (source-major) order      (a2a)
    int *idx_g;            // (n_ep*n, K) gathered ids                             (ag)
    float *gates_g;        // (n_ep*n, K) gathered gates                           (ag)
    int *loc;              // (n_ep*n*K) gathered entry -> expert-major row, or -1 (ag)
    float *xg;             // (n_ep*n, D) gathered rows / gathered dout            (ag)
    float *part;           // (n_ep*n, D) partial sums before the reduce-scatter  (ag)
    float *dpart;          // (n_ep*n, K) partial gate grads                       (ag)
    float *tmp;            // (n, D) reduce-scatter result                        (ag)
} hp_ep_dispatch;

// Sizes the dispatcher for n routed rows of width D, top-K, E experts of which this rank
// owns [e0, e0+El). The group is HP_G_EP of comm; it must hold E / El members and this rank
// must be member e0 / El. Returns 0, or -1 after printing one line naming the mismatch.
int  hp_ep_init(hp_ep_dispatch *d, hp_comm *comm, hp_dispatcher mode, int n, int K, int E,
                int El, int e0, int D);
void hp_ep_free(hp_ep_dispatch *d);

// Routes the n rows: idx (n, K) global expert ids, gates (n, K). Collective over ep
// (counts exchange, or gather of ids and gates). Sets d->Mr and d->off.
void hp_ep_route(hp_ep_dispatch *d, hp_comm *comm, const int *idx, const float *gates);
// xe (Mr, D) expert-major = the rows x (n, D) that chose this rank's experts.
void hp_ep_dispatch_rows(hp_ep_dispatch *d, hp_comm *comm, float *xe, const float *x);
// out (n, D) overwritten = sum over k of gate * y of the entries, ye (Mr, D) expert-major.
void hp_ep_combine_rows(hp_ep_dispatch *d, hp_comm *comm, float *out, const float *ye);
// Backward of combine: dye (Mr, D) overwritten = gate * dout[row] of each entry;
// dgates (n, K) overwritten = dout[r] . y_{r,k}. ye (Mr, D) is the forward's expert output.
void hp_ep_dispatch_grad(hp_ep_dispatch *d, hp_comm *comm, float *dye, float *dgates,
                         const float *dout, const float *ye);
// Backward of dispatch: dx (n, D) += sum over k of the entries' input grads dxe (Mr, D).
void hp_ep_combine_grad(hp_ep_dispatch *d, hp_comm *comm, float *dx, const float *dxe);

// The MoE block's dispatch (moe.h) through the steps above; its context is the hp_comm *.
struct hp_moe_dispatch_ops;
const struct hp_moe_dispatch_ops *hp_ep_moe_ops(void);
// The same with 2-byte token rows (wire_bf16), for the bf16 policy.
const struct hp_moe_dispatch_ops *hp_ep_moe_ops_bf16(void);

#endif
