// ulysses.h - Ulysses sequence parallel around the attention core, alone or with ring CP
// (the 2-D Ulysses x ring of USP). spec: docs/ulysses.md.
// defines: hp_ulysses_attn (opaque), hp_ulysses_attn_init/free, forward, backward
//
// A rank holds Su = S/(C*U) tokens of a sequence (its part of the cp-local tokens) with all
// its H query and Hkv kv heads. An all-to-all over the ulysses group (HP_G_ULYSSES) trades
// heads for tokens: afterwards it holds H/U query heads for all S/C cp-local tokens, runs the
// attention core on them (plain causal attention, or ring attention over the cp group), and a
// reverse all-to-all brings the output back to its own tokens with all heads. When Hkv < U
// each kv head is first repeated U/Hkv times (its gradient is the sum over the copies).
//
//   hp_ulysses_attn *ua = hp_ulysses_attn_init(B, Su, H, Hkv, hd, U, C, 0);
//   hp_ulysses_attention_forward(ua, comm, HP_ROTATE_RING, 1, out, q, k, v, pos_cp);
//   hp_ulysses_attention_backward(ua, comm, HP_ROTATE_RING, 1, dq, dk, dv, dout, pos_cp);
//   hp_ulysses_attn_free(ua);
#ifndef HYPERPAR_ULYSSES_H
#define HYPERPAR_ULYSSES_H
#include "comm.h"
#include "config.h"

typedef struct hp_ulysses_attn hp_ulysses_attn;

// Sizes one attention's state (what the forward keeps for the backward). H % U == 0, and Hkv
// and U divide one another. wire_bf16 (the bf16 policy): q, k, v, dout and the output, dq, and
// dk / dv without repeated kv heads travel as 2 bytes (their values are bf16, or rounded to
// bf16 by the model right after; the same floats arrive), and the gathered q, k, v kept for
// the backward are kept in 2 bytes (the core runs on fp32 copies in the scratch). Returns NULL
// (one line on stderr) on bad sizes or no memory.
hp_ulysses_attn *hp_ulysses_attn_init(int B, int Su, int H, int Hkv, int hd, int U, int C,
                                      int wire_bf16);
void hp_ulysses_attn_free(hp_ulysses_attn *ua);
// The exchange buffers and repeated kv heads are only read inside one attention's forward or
// backward, so the attentions of a rank can share them: ua then uses with's (made at the first
// forward or backward, kept until the last user is freed). Call before ua's first forward;
// returns 0 (also when they share already), or -1 when their sizes differ or ua has run.
int hp_ulysses_attn_share_scratch(hp_ulysses_attn *ua, hp_ulysses_attn *with);

// out (B, Su, H, hd) overwritten; q (B, Su, H, hd), k/v (B, Su, Hkv, hd) this rank's tokens
// after RoPE; pos_cp (S/C) the positions of the whole cp-local sequence (hp_cp_positions),
// whose part u (contiguous) is this rank's. Collective over the ulysses and cp groups.
void hp_ulysses_attention_forward(hp_ulysses_attn *ua, hp_comm *comm, hp_cp_rotate rotate,
                                  int load_balance, float *out, const float *q, const float *k,
                                  const float *v, const int *pos_cp);
// dq (B, Su, H, hd), dk/dv (B, Su, Hkv, hd) are ACCUMULATED into; dout (B, Su, H, hd).
void hp_ulysses_attention_backward(hp_ulysses_attn *ua, hp_comm *comm, hp_cp_rotate rotate,
                                   int load_balance, float *dq, float *dk, float *dv,
                                   const float *dout, const int *pos_cp);

// The kv heads each ulysses rank attends with after the exchange, and how often each kv head
// is repeated before it (1: no repetition).
int hp_ulysses_kv_heads(int Hkv, int U);
int hp_ulysses_kv_repeat(int Hkv, int U);

#endif
