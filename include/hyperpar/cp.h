// cp.h - context parallel: the sequence split over the cp group, and ring attention.
// spec: docs/torchtitan.md §6.
// defines: hp_cp_positions, hp_cp_attention_forward, hp_cp_attention_backward
//
// Load-balanced layout (default): the sequence of S tokens is cut into 2C chunks of
// k = S/(2C); cp rank i holds chunk i followed by chunk 2C-1-i. Without balancing, rank i
// holds [i*S/C, (i+1)*S/C). Attention is causal by GLOBAL position, so a rank's queries
// meet every rank's keys through the ring, and partial results merge by log-sum-exp.
//
//   int pos[S / C];  hp_cp_positions(pos, S, C, cp_rank, 1);
//   hp_cp_attention_forward(comm, HP_ROTATE_RING, 1, 0, out, lse, q, k, v, pos, B, S / C, H, Hkv, hd);
#ifndef HYPERPAR_CP_H
#define HYPERPAR_CP_H
#include "comm.h"
#include "config.h"

// pos (S/C): the global positions of cp rank `cp_rank`'s tokens, in local order.
void hp_cp_positions(int *pos, int S, int C, int cp_rank, int load_balance);
// pos (S/(C*U)): the positions ulysses rank u of cp rank cp_rank holds: part u of the cp
// positions cut into U contiguous parts (U = 1: hp_cp_positions).
void hp_seq_positions(int *pos, int S, int C, int cp_rank, int U, int u, int load_balance);

// Causal attention of this rank's queries over the keys of the whole cp group (HP_G_CP of
// comm; size 1 -> plain causal attention). q (B,Sl,H,hd), k/v (B,Sl,Hkv,hd), pos (Sl) are
// this rank's; every rank of the group has the same B, Sl and layout rule.
// out (B,Sl,H,hd) and lse (B,Sl,H) are overwritten. kv_bf16 (the bf16 policy, k and v
// bf16 values): K/V travel in 2 bytes, dK/dV sums in 4 (the same floats either way).
void hp_cp_attention_forward(hp_comm *comm, hp_cp_rotate rotate, int load_balance, int kv_bf16,
                             float *out, float *lse,
                             const float *q, const float *k, const float *v, const int *pos,
                             int B, int Sl, int H, int Hkv, int hd);
// Backward: dq, dk, dv (this rank's shapes) are ACCUMULATED into; dk/dv contributions made
// on other ranks travel back to their owners.
void hp_cp_attention_backward(hp_comm *comm, hp_cp_rotate rotate, int load_balance, int kv_bf16,
                              float *dq, float *dk, float *dv, const float *dout,
                              const float *out, const float *lse,
                              const float *q, const float *k, const float *v, const int *pos,
                              int B, int Sl, int H, int Hkv, int hd);

#endif
