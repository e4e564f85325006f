// ulysses.c - Ulysses sequence parallel: the head <-> token all-to-alls around the attention
// core, kv-head repetition when there are fewer kv heads than ulysses ranks, and the core
// itself through cp.h (plain causal attention, or ring attention over the cp group).
// spec: docs/ulysses.md. defines: the functions of ulysses.h
//
// Layouts (row-major): "local" (B, Su, heads, hd) = this rank's tokens, all heads;
// "gathered" (B, Sc, heads/U, hd) = every ulysses rank's tokens (rank w's at [w*Su, (w+1)*Su)),
// this rank's share of the heads (rank v holds heads [v*heads/U, (v+1)*heads/U)).
// Every loop runs in a fixed order, so results are bit-identical run to run.
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "hyperpar/bf16.h"
#include "hyperpar/cp.h"
#include "hyperpar/failpoint.h"
#include "hyperpar/memtrack.h"
#include "hyperpar/structure.h"
#include "hyperpar/ulysses.h"
#include "kernels/parallel.h"   // hp_par_bf16_pack_exact, hp_par_bf16_unpack

// What an attention reads only inside its forward or its backward: the exchange buffers and
// the repeated kv heads. Attentions run one at a time, so the blocks of a rank can share one
// (hp_ulysses_attn_share_scratch); its buffers are made at the first forward or backward.
typedef struct ulysses_scratch {
    int refs;                       // attentions using it
    float *send, *recv;             // exchange buffers (the largest local tensor)
    float *ke, *ve;                 // (B, Su, Hke, hd) repeated kv heads / their grads
    float *q, *k, *v;               // under the bf16 policy: the gathered q, k, v the core reads
} ulysses_scratch;

struct hp_ulysses_attn {
    int B, Su, H, Hkv, hd, U, C, Sc;
    int Hu, Hke, Hkvu, rep;     // query heads per rank; kv heads after repetition, per rank; copies
    float *q, *k, *v, *out, *lse;   // gathered layout, kept for the backward (q, k, v: under the
                                    //    bf16 policy the scratch's, kept in q16, k16, v16)
    hp_bf16 *q16, *k16, *v16;       // the bf16 policy: q, k, v arrived in 2 bytes and stay so
    float *send, *recv, *ke, *ve;   // the scratch's, while a forward or backward runs
    ulysses_scratch *scr;           // its own, or shared with other attentions
    int *counts;                    // (U) equal element counts of one exchange
    int wire_bf16;                  // the bf16 policy: exchanges of bf16 values move 2 bytes
};

int hp_ulysses_kv_repeat(int Hkv, int U) { return Hkv >= U ? 1 : U / Hkv; }
int hp_ulysses_kv_heads(int Hkv, int U) { return (Hkv >= U ? Hkv : U) / U; }

static float *fbuf(size_t n) { return hp_mem_alloc(HP_MEM_ACTIVATIONS, (n ? n : 1) * sizeof(float)); }
static hp_bf16 *hbuf(size_t n) { return hp_mem_alloc(HP_MEM_ACTIVATIONS, (n ? n : 1) * sizeof(hp_bf16)); }

hp_ulysses_attn *hp_ulysses_attn_init(int B, int Su, int H, int Hkv, int hd, int U, int C,
                                      int wire_bf16) {
    if (U < 1 || H % U != 0 || Hkv < 1 || !(Hkv >= U ? Hkv % U == 0 : U % Hkv == 0)) {
        fprintf(stderr, "hp_ulysses_attn_init: heads %d and kv heads %d do not split over ulysses %d\n",
                H, Hkv, U);
        return NULL;
    }
    hp_ulysses_attn *ua = hp_mem_alloc(HP_MEM_OTHER, sizeof *ua);
    if (!ua) return NULL;
    *ua = (hp_ulysses_attn){ .B = B, .Su = Su, .H = H, .Hkv = Hkv, .hd = hd, .U = U, .C = C,
                             .Sc = Su * U, .Hu = H / U, .rep = hp_ulysses_kv_repeat(Hkv, U),
                             .wire_bf16 = wire_bf16 };
    ua->Hke = Hkv * ua->rep;
    ua->Hkvu = ua->Hke / U;
    const size_t nq = (size_t)B * Su * H * hd, nk = (size_t)B * Su * ua->Hke * hd;
    ua->out = fbuf(nq); ua->lse = fbuf((size_t)B * Su * H);
    if (wire_bf16) { ua->q16 = hbuf(nq); ua->k16 = hbuf(nk); ua->v16 = hbuf(nk); }
    else { ua->q = fbuf(nq); ua->k = fbuf(nk); ua->v = fbuf(nk); }
    ua->scr = hp_mem_alloc(HP_MEM_OTHER, sizeof *ua->scr);
    if (ua->scr) ua->scr->refs = 1;
    ua->counts = hp_mem_alloc(HP_MEM_ACTIVATIONS, (size_t)U * sizeof(int));
    if (!ua->out || !ua->lse || !ua->scr || !ua->counts ||
        (wire_bf16 ? !ua->q16 || !ua->k16 || !ua->v16 : !ua->q || !ua->k || !ua->v)) {
        hp_ulysses_attn_free(ua);
        return NULL;
    }
    return ua;
}

// Drops ua's use of its scratch, freeing it with its last user.
static void scratch_release(hp_ulysses_attn *ua) {
    ulysses_scratch *s = ua->scr;
    ua->scr = NULL;
    ua->send = ua->recv = ua->ke = ua->ve = NULL;
    if (ua->wire_bf16) ua->q = ua->k = ua->v = NULL;
    if (!s || --s->refs > 0) return;
    hp_mem_free(s->send); hp_mem_free(s->recv); hp_mem_free(s->ke); hp_mem_free(s->ve);
    hp_mem_free(s->q); hp_mem_free(s->k); hp_mem_free(s->v);
    hp_mem_free(s);
}

// Lends ua its scratch, made at the first forward or backward of an attention using it.
static void scratch_bind(hp_ulysses_attn *ua) {
    ulysses_scratch *s = ua->scr;
    if (!s->send) {
        const size_t nq = (size_t)ua->B * ua->Su * ua->H * ua->hd, nk = (size_t)ua->B * ua->Su * ua->Hke * ua->hd;
        s->send = fbuf(nq > nk ? nq : nk); s->recv = fbuf(nq > nk ? nq : nk);
        s->ke = fbuf(nk); s->ve = fbuf(nk);
        if (ua->wire_bf16) { s->q = fbuf(nq); s->k = fbuf(nk); s->v = fbuf(nk); }
        if (!s->send || !s->recv || !s->ke || !s->ve || (ua->wire_bf16 && (!s->q || !s->k || !s->v)))
            hp_fail_line_and_abort(1, "hp_ulysses: out of memory for the exchange buffers");
    }
    ua->send = s->send; ua->recv = s->recv; ua->ke = s->ke; ua->ve = s->ve;
    if (ua->wire_bf16) { ua->q = s->q; ua->k = s->k; ua->v = s->v; }
}

int hp_ulysses_attn_share_scratch(hp_ulysses_attn *ua, hp_ulysses_attn *with) {
    if (ua == with || ua->scr == with->scr) return 0;
    if (ua->scr->send || ua->B != with->B || ua->Su != with->Su || ua->H != with->H || ua->Hke != with->Hke ||
        ua->hd != with->hd || ua->wire_bf16 != with->wire_bf16)
        return -1;
    scratch_release(ua);
    ua->scr = with->scr;
    ua->scr->refs++;
    return 0;
}

void hp_ulysses_attn_free(hp_ulysses_attn *ua) {
    if (!ua) return;
    scratch_release(ua);
    hp_mem_free(ua->q); hp_mem_free(ua->k); hp_mem_free(ua->v); hp_mem_free(ua->out); hp_mem_free(ua->lse);
    hp_mem_free(ua->q16); hp_mem_free(ua->k16); hp_mem_free(ua->v16);
    hp_mem_free(ua->counts);
    hp_mem_free(ua);
}

// The all-to-all of send (per_member elements to each member) into recv; returns recv.
// bf16 (the policy, and values that are bf16 already, or that the model rounds next with
// nothing in between): 2 bytes travel, narrowed in place in send and widened in place in
// recv; the same floats arrive.
static const float *exchange(hp_ulysses_attn *ua, hp_comm *comm, size_t per_member, int bf16,
                             const char *what) {
    for (int w = 0; w < ua->U; w++) ua->counts[w] = (int)per_member;
    if (!bf16) {
        hp_alltoallv(comm, HP_G_ULYSSES, ua->recv, ua->counts, ua->send, ua->counts);
        return ua->recv;
    }
    const size_t n = per_member * (size_t)ua->U;
    if (what) hp_structure_check_bf16_wire(ua->send, n, what);
    hp_bf16_narrow_in_place(ua->send, n);
    hp_alltoallv_bf16(comm, HP_G_ULYSSES, (hp_bf16 *)(void *)ua->recv, ua->counts,
                      (const hp_bf16 *)(void *)ua->send, ua->counts);
    hp_bf16_widen_in_place(ua->recv, n);
    return ua->recv;
}

// local (B, Su, nh, hd) -> gathered (B, Sc, nh/U, hd): scatter heads, gather tokens.
static void heads_to_tokens(hp_ulysses_attn *ua, hp_comm *comm, float *gathered, const float *local, int nh,
                            const char *what) {
    const int U = ua->U, B = ua->B, Su = ua->Su, hd = ua->hd, nu = nh / U;
    const size_t run = (size_t)nu * hd, per = (size_t)B * Su * run;
    // (ulysses_all_to_all_layout: the bug sends rank v the heads of rank U-1-v)
    const int mirror = hp_failpoint(HP_FP_ULYSSES_A2A_LAYOUT);
    for (int v = 0; v < U; v++) {
        const int hv = mirror ? U - 1 - v : v;
        for (int b = 0; b < B; b++)
            for (int s = 0; s < Su; s++)
                memcpy(ua->send + (size_t)v * per + ((size_t)b * Su + s) * run,
                       local + (((size_t)b * Su + s) * nh + (size_t)hv * nu) * hd, run * sizeof(float));
    }
    const float *recv = exchange(ua, comm, per, ua->wire_bf16, what);
    for (int w = 0; w < U; w++)
        for (int b = 0; b < B; b++)
            memcpy(gathered + ((size_t)b * ua->Sc + (size_t)w * Su) * run,
                   recv + (size_t)w * per + (size_t)b * Su * run, (size_t)Su * run * sizeof(float));
}

// gathered (B, Sc, nh/U, hd) -> local (B, Su, nh, hd), overwritten or (add) accumulated.
// bf16: the model rounds what arrives to bf16 next (an output, or a grad added to zeros), so
// rounding before the exchange instead gives the same floats in 2 bytes.
static void tokens_to_heads(hp_ulysses_attn *ua, hp_comm *comm, float *local, const float *gathered,
                            int nh, int add, int bf16) {
    const int U = ua->U, B = ua->B, Su = ua->Su, hd = ua->hd, nu = nh / U;
    const size_t run = (size_t)nu * hd, per = (size_t)B * Su * run;
    for (int v = 0; v < U; v++)
        for (int b = 0; b < B; b++)
            memcpy(ua->send + (size_t)v * per + (size_t)b * Su * run,
                   gathered + ((size_t)b * ua->Sc + (size_t)v * Su) * run, (size_t)Su * run * sizeof(float));
    const float *recv = exchange(ua, comm, per, bf16, NULL);
    for (int w = 0; w < U; w++)
        for (int b = 0; b < B; b++)
            for (int s = 0; s < Su; s++) {
                const float *src = recv + (size_t)w * per + ((size_t)b * Su + s) * run;
                float *dst = local + (((size_t)b * Su + s) * nh + (size_t)w * nu) * hd;
                if (add) for (size_t i = 0; i < run; i++) dst[i] += src[i];
                else memcpy(dst, src, run * sizeof(float));
            }
}

// kv (B, Su, Hkv, hd) -> (B, Su, Hkv*rep, hd): head h' reads kv head h'/rep.
static void repeat_kv(const hp_ulysses_attn *ua, float *out, const float *in) {
    const size_t hd = (size_t)ua->hd;
    for (size_t t = 0; t < (size_t)ua->B * ua->Su; t++)
        for (int h = 0; h < ua->Hke; h++)
            memcpy(out + (t * ua->Hke + h) * hd, in + (t * ua->Hkv + h / ua->rep) * hd, hd * sizeof(float));
}

// The structure check of a repeated kv head's grads under the bf16 policy: its copies enter
// an fp32 sum, so they must arrive as the attention's fp32 grads, in 4 bytes.
static void check_copies_fp32(const hp_ulysses_attn *ua, const float *dexp, const char *what) {
    if (ua->wire_bf16)
        hp_structure_check_fp32_arrival(dexp, (size_t)ua->B * ua->Su * ua->Hke * ua->hd, what);
}

// dkv (B, Su, Hkv, hd) += the sum over each head's copies, in copy order.
static void sum_repeats(const hp_ulysses_attn *ua, float *dkv, const float *dexp) {
    const size_t hd = (size_t)ua->hd;
    // (ulysses_kv_grad_sum: the bug keeps the first copy's gradient only)
    const int copies = hp_failpoint(HP_FP_ULYSSES_KV_GRAD_SUM) ? 1 : ua->rep;
    for (size_t t = 0; t < (size_t)ua->B * ua->Su; t++)
        for (int h = 0; h < ua->Hkv; h++) {
            float *d = dkv + (t * ua->Hkv + h) * hd;
            for (int c = 0; c < copies; c++) {
                const float *s = dexp + (t * ua->Hke + (size_t)h * ua->rep + c) * hd;
                for (size_t i = 0; i < hd; i++) d[i] += s[i];
            }
        }
}

// The bf16 policy: the gathered q, k, v arrived in 2 bytes (bf16 values) and are kept so; the
// core runs on fp32 copies in the scratch. pack: after the forward; else unpack, before the
// backward. The pack is exact (it checks: a value that is not bf16 stops the job).
static void kept_bf16(hp_ulysses_attn *ua, int pack) {
    const size_t nq = (size_t)ua->B * ua->Sc * ua->Hu * ua->hd, nk = (size_t)ua->B * ua->Sc * ua->Hkvu * ua->hd;
    if (!pack) {
        hp_par_bf16_unpack(ua->q, ua->q16, nq);
        hp_par_bf16_unpack(ua->k, ua->k16, nk);
        hp_par_bf16_unpack(ua->v, ua->v16, nk);
        return;
    }
    if (!hp_par_bf16_pack_exact(ua->q16, ua->q, nq) || !hp_par_bf16_pack_exact(ua->k16, ua->k, nk) ||
        !hp_par_bf16_pack_exact(ua->v16, ua->v, nk))
        hp_fail_line_and_abort(1, "hp: ulysses: a gathered q, k or v value is not bf16; it cannot be kept in 2 bytes");
}

void hp_ulysses_attention_forward(hp_ulysses_attn *ua, hp_comm *comm, hp_cp_rotate rotate,
                                  int load_balance, float *out, const float *q, const float *k,
                                  const float *v, const int *pos_cp) {
    scratch_bind(ua);
    const float *kx = k, *vx = v;
    if (ua->rep > 1) {
        repeat_kv(ua, ua->ke, k);
        repeat_kv(ua, ua->ve, v);
        kx = ua->ke;
        vx = ua->ve;
    }
    heads_to_tokens(ua, comm, ua->q, q, ua->H, "ulysses q");
    heads_to_tokens(ua, comm, ua->k, kx, ua->Hke, "ulysses k");
    heads_to_tokens(ua, comm, ua->v, vx, ua->Hke, "ulysses v");
    hp_cp_attention_forward(comm, rotate, load_balance, ua->wire_bf16, ua->out, ua->lse, ua->q, ua->k, ua->v,
                            pos_cp, ua->B, ua->Sc, ua->Hu, ua->Hkvu, ua->hd);
    tokens_to_heads(ua, comm, out, ua->out, ua->H, 0, ua->wire_bf16);
    if (ua->wire_bf16) kept_bf16(ua, 1);
}

void hp_ulysses_attention_backward(hp_ulysses_attn *ua, hp_comm *comm, hp_cp_rotate rotate,
                                   int load_balance, float *dq, float *dk, float *dv,
                                   const float *dout, const int *pos_cp) {
    scratch_bind(ua);
    const size_t nq = (size_t)ua->B * ua->Sc * ua->Hu * ua->hd;
    const size_t nk = (size_t)ua->B * ua->Sc * ua->Hkvu * ua->hd;
    float *dout_g = hp_mem_alloc(HP_MEM_SCRATCH, nq * sizeof(float)), *dq_g = hp_mem_alloc(HP_MEM_SCRATCH, nq * sizeof(float));
    float *dk_g = hp_mem_alloc(HP_MEM_SCRATCH, nk * sizeof(float)), *dv_g = hp_mem_alloc(HP_MEM_SCRATCH, nk * sizeof(float));
    if (!dout_g || !dq_g || !dk_g || !dv_g) {
        hp_fail_line_and_abort(HP_EXIT_FAIL, "hp: ulysses attention backward: out of memory (%zu + %zu floats)",
                               2 * nq, 2 * nk);
    }
    heads_to_tokens(ua, comm, dout_g, dout, ua->H, "ulysses dout");
    // (the bug of ulysses_bf16_state_stale: the core reads the gathered q, k, v the scratch
    //  holds, the last forward's, another block's)
    if (ua->wire_bf16 && !hp_failpoint(HP_FP_ULYSSES_BF16_STATE_STALE)) kept_bf16(ua, 0);
    hp_cp_attention_backward(comm, rotate, load_balance, ua->wire_bf16, dq_g, dk_g, dv_g, dout_g, ua->out, ua->lse,
                             ua->q, ua->k, ua->v, pos_cp, ua->B, ua->Sc, ua->Hu, ua->Hkvu, ua->hd);
    // (dq, dk, dv arrive onto the model's zeros, which it rounds next; the grads of repeated
    //  kv heads are summed over their copies first, in fp32, so they travel in 4 bytes)
    tokens_to_heads(ua, comm, dq, dq_g, ua->H, 1, ua->wire_bf16);
    if (ua->rep > 1) {
        // (the bug of ulysses_bf16_kv_copies: the copies' grads travel in 2 bytes, rounded
        //  before their sum)
        const int rounded = ua->wire_bf16 && hp_failpoint(HP_FP_ULYSSES_BF16_KV_COPIES);
        tokens_to_heads(ua, comm, ua->ke, dk_g, ua->Hke, 0, rounded);
        tokens_to_heads(ua, comm, ua->ve, dv_g, ua->Hke, 0, rounded);
        check_copies_fp32(ua, ua->ke, "ulysses dk of repeated kv heads");
        check_copies_fp32(ua, ua->ve, "ulysses dv of repeated kv heads");
        sum_repeats(ua, dk, ua->ke);
        sum_repeats(ua, dv, ua->ve);
    } else {
        tokens_to_heads(ua, comm, dk, dk_g, ua->Hke, 1, ua->wire_bf16);
        tokens_to_heads(ua, comm, dv, dv_g, ua->Hke, 1, ua->wire_bf16);
    }
    hp_mem_free(dout_g); hp_mem_free(dq_g); hp_mem_free(dk_g); hp_mem_free(dv_g);
}
