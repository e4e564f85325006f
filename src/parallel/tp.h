// tp.h - tensor parallel + sequence parallel + loss parallel (tp.c): the state of one rank's
// tp regions and vocab-parallel cross-entropy, over the HP_G_TP group of its comm.
// defines: hp_tp_state, hp_tp_init/free, hp_tp_region_enter/exit (+ backward), hp_tp_cross_entropy
#ifndef HP_PARALLEL_TP_H
#define HP_PARALLEL_TP_H
#include "hyperpar/comm.h"
#include "hyperpar/shapes.h"

typedef struct hp_tp_state {
    hp_comm *comm;
    hp_local_shapes sh;   // T, sp, Bl, Sc, Ss, Nres, Nreg, Vl, v0
    float *buf;           // (reg, D) staging of the sequence all-gather / reduce-scatter
    float *ce_tl;         // (reg) the target logits of the loss
} hp_tp_state;

int  hp_tp_init(hp_tp_state *st, hp_comm *comm, const hp_local_shapes *sh);   // 0, or -1 (memory)
void hp_tp_free(hp_tp_state *st);
// Enter a tp region: in (res, D) -> out (reg, D): all-gather along the sequence under SP,
// a copy without. Backward: din (res) = reduce-scatter (SP) / all-reduce of dout (reg).
void hp_tp_region_enter(hp_tp_state *st, float *out, const float *in, int D);
void hp_tp_region_enter_backward(hp_tp_state *st, float *din, float *dout, int D);
// Leave a tp region: partial in (reg, D) -> out (res, D): reduce-scatter (SP) / all-reduce.
// Backward: din (reg) = all-gather (SP) / copy of dout (res).
void hp_tp_region_exit(hp_tp_state *st, float *out, float *in, int D);
void hp_tp_region_exit_backward(hp_tp_state *st, float *din, const float *dout, int D);
// Vocab-parallel cross-entropy of logits (reg, Vl): returns sum of CE over valid rows; keeps
// m and se (reg) for the backward.
double hp_tp_cross_entropy(hp_tp_state *st, const float *logits, const int *labels,
                           float *m, float *se);

#endif
