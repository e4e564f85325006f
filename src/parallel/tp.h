// tp.h - tensor parallel + sequence parallel + loss parallel (tp.c): the state of one rank's
// tp regions and vocab-parallel cross-entropy, over the HP_G_TP group of its comm.
// defines: hp_tp_state, hp_rows_fn, hp_tp_init/free, hp_tp_set_async, hp_tp_region_enter/exit
//          (+ backward), their _consume / _produce forms (async TP), hp_tp_sp_gathers,
//          hp_tp_region_gather_fp8_consume, hp_tp_take_async_ops,
//          hp_tp_cross_entropy
#ifndef HP_PARALLEL_TP_H
#define HP_PARALLEL_TP_H
#include "hyperpar/comm.h"
#include "hyperpar/float8.h"
#include "hyperpar/shapes.h"

typedef struct hp_tp_state {
    hp_comm *comm;
    hp_local_shapes sh;   // T, sp, Bl, Sc, Ss, Nres, Nreg, Vl, v0
    float *buf;           // (reg, D) staging of the sequence all-gather / reduce-scatter
    int wire_bf16;        // the bf16 policy: the all-gathers move 2 bytes (their values are
                          // bf16); the reduce-scatters sum fp32 partials in 4
    float *ce_tl;         // (reg) the target logits of the loss
    // async TP (docs/async_tp.md): on with --async-tp (tp > 1, SP on)
    int async;
    float *rs_rows;       // (T, res, D) the members' partials of my rows, as they arrive
    MPI_Request *reqs;    // (2T) the open all-gather or reduce-scatter
    long async_ops;       // fused ops run overlapped since the last hp_tp_take_async_ops
    // a float8 SP all-gather in progress (hp_tp_region_gather_fp8): buf holds 1-byte codes
    float fp8_scale;      // > 0 during the gather
    hp_fp8_format fp8_format;
} hp_tp_state;

// Computes the rows [row0, row0 + nrows) of what a region's GEMMs read or write (the model's
// own linears, with its bf16 policy): a gathered input's consumers, or a partial's producer.
typedef void hp_rows_fn(void *ctx, int row0, int nrows);

int  hp_tp_init(hp_tp_state *st, hp_comm *comm, const hp_local_shapes *sh, int wire_bf16);   // 0, or -1 (memory)
// Turns the overlapped forms on (the caller checked tp > 1 and SP on); 0, or -1 (memory).
int  hp_tp_set_async(hp_tp_state *st, int on);
void hp_tp_free(hp_tp_state *st);
// Enter a tp region: in (res, D) -> out (reg, D): all-gather along the sequence under SP,
// a copy without. Backward: din (res) = reduce-scatter (SP) / all-reduce of dout (reg).
void hp_tp_region_enter(hp_tp_state *st, float *out, const float *in, int D);
void hp_tp_region_enter_backward(hp_tp_state *st, float *din, float *dout, int D);
// Leave a tp region: partial in (reg, D) -> out (res, D): reduce-scatter (SP) / all-reduce.
// Backward: din (reg) = all-gather (SP) / copy of dout (res).
void hp_tp_region_exit(hp_tp_state *st, float *out, float *in, int D);
void hp_tp_region_exit_backward(hp_tp_state *st, float *din, const float *dout, int D);
// Enter a region and run its consumers: out = all-gather of in, then consume() over its rows.
// Under SP with tp > 1 consume runs once per row block [b*Sc + t*Ss, +Ss) of member t (the
// GEMM's bits then depend only on the block, whatever the kernel's shape-chosen blocking):
// plain, after the blocking all-gather, in member order; async, own member first, then member
// (r+s) mod T as its shard lands. Otherwise one call over all rows (the unsplit GEMM).
void hp_tp_region_enter_consume(hp_tp_state *st, float *out, const float *in, int D,
                                hp_rows_fn *consume, void *ctx);
// Leave a region from a partial that produce() writes into partial (reg, D) block by block:
// plain, every block then the blocking reduce-scatter; async, member (r+s) mod T's blocks
// computed and sent at step s, own last, then the member-ordered fp32 sum (bitwise the same).
void hp_tp_region_exit_produce(hp_tp_state *st, float *out, float *partial, int D,
                               hp_rows_fn *produce, void *ctx);
// The same two on the backward's side: din (reg) = all-gather of dout (res) under SP (a copy
// without), then consume() over its rows; produce() writes dout (reg) by rows, then din (res) =
// its reduce-scatter under SP (an all-reduce without).
void hp_tp_region_exit_backward_consume(hp_tp_state *st, float *din, const float *dout, int D,
                                        hp_rows_fn *consume, void *ctx);
void hp_tp_region_enter_backward_produce(hp_tp_state *st, float *din, float *dout, int D,
                                         hp_rows_fn *produce, void *ctx);
// 1 when entering a region all-gathers the sequence (SP on, tp > 1).
int  hp_tp_sp_gathers(const hp_tp_state *st);
// The SP all-gather of a float8 tensorwise input (torchao's Float8 TP, precision.md §5.4), and
// its consumers: in (res, D), this rank's shard, cast with scale (its tensor's, over tp) to
// 1-byte codes of format, all-gathered and dequantized into out (reg, D) - the values the
// consuming linears' own cast of the gathered tensor gives, bit for bit - then consume() over
// every member's row blocks as hp_tp_region_enter_consume (async: each member's as it lands).
// SP on and tp > 1 only (hp_tp_sp_gathers).
void hp_tp_region_gather_fp8_consume(hp_tp_state *st, float *out, const float *in, int D, float scale,
                                     hp_fp8_format format, hp_rows_fn *consume, void *ctx);
// Fused ops run overlapped since the last call (and resets the count).
long hp_tp_take_async_ops(hp_tp_state *st);
// Vocab-parallel cross-entropy of logits (reg, Vl): returns sum of CE over valid rows; keeps
// m and se (reg) for the backward.
double hp_tp_cross_entropy(hp_tp_state *st, const float *logits, const int *labels,
                           float *m, float *se);

#endif
