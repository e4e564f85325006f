// attention.c - causal multi-head attention (GQA) over one block of keys, merged into a
// running (out, lse) by log-sum-exp, and its flash-attention style backward.
// Ring attention (context parallel) calls the forward once per kv block it receives and
// the backward once per block with the FINAL out/lse; a single call over all keys is the
// plain causal attention. Visibility is by global position: key j is seen by query i iff
// kpos[j] <= qpos[i].
// Work is done per (batch, query head, tile of TQ queries) with sgemm for the products;
// softmax statistics are accumulated in double. Loop order is fixed (deterministic).
// The (batch, kv head) pairs are independent items - each writes only its own rows of out/lse
// (dq) and of dk/dv - so they run in parallel (kernels/parallel.h), each with single-threaded
// sgemm: the calls are small (hd = 64 deep) and thread poorly inside OpenBLAS. An item does its
// query heads and tiles in the serial order, so results do not depend on the thread count.
// The exps of a row go through hp_expf_n (kernels/vexpf.h: vectorised, the same bits as expf);
// masked entries take exp(0) and are then zeroed.
// defines: hp_attention_forward, hp_attention_backward
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <cblas.h>
#include "hyperpar/kernels.h"
#include "kernels/parallel.h"
#include "kernels/vexpf.h"

#define TQ 128 // query rows per tile: scores buffer is TQ x (keys of the block)

// Checks shared by forward and backward; prints one line and returns 0 on bad input.
static int attn_check(const char *who, int B, int Sq, int Sk, int H, int Hkv, int hd,
                      int q_lo, int q_hi, int k_lo, int k_hi) {
    if (B < 0 || Sq < 0 || Sk < 0 || hd <= 0 || H <= 0 || Hkv <= 0 || H % Hkv != 0) {
        fprintf(stderr, "%s: need H %% Hkv == 0 and positive dims (B=%d Sq=%d Sk=%d H=%d Hkv=%d hd=%d)\n",
                who, B, Sq, Sk, H, Hkv, hd);
        return 0;
    }
    if (q_lo < 0 || q_hi > Sq || k_lo < 0 || k_hi > Sk) {
        fprintf(stderr, "%s: block out of range: queries [%d,%d) of Sq=%d, keys [%d,%d) of Sk=%d\n",
                who, q_lo, q_hi, Sq, k_lo, k_hi, Sk);
        return 0;
    }
    return 1;
}

// Keys [*j0, *j1) of [k_lo, k_hi) that can be visible to some query of the tile (kpos <= qmax).
// For the usual sorted positions this cuts the causal block's fully masked part.
static void key_span(int *j0, int *j1, const int *qpos, int i0, int tq,
                     const int *kpos, int k_lo, int k_hi) {
    int qmax = qpos[i0];
    for (int r = 1; r < tq; r++) if (qpos[i0 + r] > qmax) qmax = qpos[i0 + r];
    int a = k_lo, b = k_hi;
    while (a < b && kpos[a] > qmax) a++;
    while (b > a && kpos[b - 1] > qmax) b--;
    *j0 = a; *j1 = b;
}

// Everything an item needs: the arguments of the public call.
typedef struct {
    float *out, *lse, *dq, *dk, *dv;
    const float *dout, *o, *q, *k, *v;
    const int *qpos, *kpos;
    int B, Sq, Sk, H, Hkv, hd, q_lo, q_hi, k_lo, k_hi;
} attn_job;

// Items [it_lo, it_hi) of the forward: item = b * Hkv + kv head.
static void forward_items(void *ctx, int it_lo, int it_hi) {
    const attn_job *J = ctx;
    float *out = J->out, *lse = J->lse;
    const float *q = J->q, *k = J->k, *v = J->v;
    const int *qpos = J->qpos, *kpos = J->kpos;
    const int Sq = J->Sq, Sk = J->Sk, H = J->H, Hkv = J->Hkv, hd = J->hd;
    const int q_lo = J->q_lo, q_hi = J->q_hi, k_lo = J->k_lo, k_hi = J->k_hi;
    int nq = q_hi - q_lo, nk = k_hi - k_lo;
    int tqmax = nq < TQ ? nq : TQ;
    float *sc = malloc(((size_t)tqmax * nk + (size_t)tqmax * hd) * sizeof(float));
    if (!sc) { fprintf(stderr, "hp_attention_forward: out of memory (%d x %d scores)\n", tqmax, nk); return; }
    float *ob = sc + (size_t)tqmax * nk; // (tq, hd) unnormalised block output
    const float scale = 1.0f / sqrtf((float)hd);
    const int qs = H * hd, ks = Hkv * hd; // row strides of q/out and k/v
    const int grp = H / Hkv;

    for (int it = it_lo; it < it_hi; it++)
    for (int h = (it % Hkv) * grp; h < (it % Hkv + 1) * grp; h++) {
        const int b = it / Hkv, kh = h / grp;
        for (int i0 = q_lo; i0 < q_hi; i0 += TQ) {
            int tq = q_hi - i0 < TQ ? q_hi - i0 : TQ;
            int j0, j1;
            key_span(&j0, &j1, qpos, i0, tq, kpos, k_lo, k_hi);
            int nke = j1 - j0;
            if (nke <= 0) continue; // no query of the tile sees any key of the block
            const float *qt = q + ((size_t)b * Sq + i0) * qs + (size_t)h * hd;
            const float *kt = k + ((size_t)b * Sk + j0) * ks + (size_t)kh * hd;
            const float *vt = v + ((size_t)b * Sk + j0) * ks + (size_t)kh * hd;
            // scores (tq, nke) = scale * q k^T
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, tq, nke, hd,
                        scale, qt, qs, kt, ks, 0.0f, sc, nke);
            double rowsum[TQ];
            float rowmax[TQ];
            for (int r = 0; r < tq; r++) {
                float *s = sc + (size_t)r * nke;
                const int qp = qpos[i0 + r];
                float mx = -INFINITY;
                for (int j = 0; j < nke; j++)
                    if (kpos[j0 + j] <= qp && s[j] > mx) mx = s[j];
                double sum = 0.0;
                if (mx == -INFINITY) { // this row sees nothing here: zero weights
                    for (int j = 0; j < nke; j++) s[j] = 0.0f;
                } else {
                    for (int j = 0; j < nke; j++) s[j] = kpos[j0 + j] <= qp ? s[j] - mx : 0.0f;
                    hp_expf_n(s, s, nke);
                    for (int j = 0; j < nke; j++) {
                        float p = kpos[j0 + j] <= qp ? s[j] : 0.0f;
                        s[j] = p;
                        sum += p;
                    }
                }
                rowmax[r] = mx;
                rowsum[r] = sum;
            }
            // ob (tq, hd) = P v
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, tq, hd, nke,
                        1.0f, sc, nke, vt, ks, 0.0f, ob, hd);
            // merge each row into the running (out, lse)
            for (int r = 0; r < tq; r++) {
                if (rowmax[r] == -INFINITY) continue; // untouched
                size_t row = ((size_t)b * Sq + i0 + r) * H + h;
                float *o = out + row * hd;
                const float *obr = ob + (size_t)r * hd;
                double lse_b = (double)rowmax[r] + log(rowsum[r]);
                double lse_o = (double)lse[row];
                if (lse_o == -INFINITY) { // first block this row sees
                    float inv = (float)(1.0 / rowsum[r]);
                    for (int d = 0; d < hd; d++) o[d] = obr[d] * inv;
                    lse[row] = (float)lse_b;
                } else {
                    double mx = lse_o > lse_b ? lse_o : lse_b;
                    double nl = mx + log(exp(lse_o - mx) + exp(lse_b - mx)); // logaddexp
                    float ca = (float)exp(lse_o - nl);                // weight of the old out
                    float cb = (float)(exp(lse_b - nl) / rowsum[r]);  // weight of P v
                    for (int d = 0; d < hd; d++) o[d] = o[d] * ca + obr[d] * cb;
                    lse[row] = (float)nl;
                }
            }
        }
    }
    free(sc);
}

void hp_attention_forward(float *out,        // (B, Sq, H, hd)  merged into
                          float *lse,        // (B, Sq, H)      merged into
                          const float *q,    // (B, Sq, H, hd)
                          const float *k,    // (B, Sk, Hkv, hd)
                          const float *v,    // (B, Sk, Hkv, hd)
                          const int *qpos,   // (Sq)
                          const int *kpos,   // (Sk)
                          int B, int Sq, int Sk, int H, int Hkv, int hd,
                          int q_lo, int q_hi, int k_lo, int k_hi) {
    if (!attn_check("hp_attention_forward", B, Sq, Sk, H, Hkv, hd, q_lo, q_hi, k_lo, k_hi)) return;
    if (q_hi - q_lo <= 0 || k_hi - k_lo <= 0 || B == 0) return;
    attn_job J = { .out = out, .lse = lse, .q = q, .k = k, .v = v, .qpos = qpos, .kpos = kpos,
                   .B = B, .Sq = Sq, .Sk = Sk, .H = H, .Hkv = Hkv, .hd = hd,
                   .q_lo = q_lo, .q_hi = q_hi, .k_lo = k_lo, .k_hi = k_hi };
    hp_par_for(B * Hkv, 1, 1, forward_items, &J);
}

// Items [it_lo, it_hi) of the backward: item = b * Hkv + kv head; its query heads in order,
// so dk/dv of the kv head add up in the serial order.
static void backward_items(void *ctx, int it_lo, int it_hi) {
    const attn_job *J = ctx;
    float *dq = J->dq, *dk = J->dk, *dv = J->dv;
    const float *dout = J->dout, *out = J->o, *lse = J->lse, *q = J->q, *k = J->k, *v = J->v;
    const int *qpos = J->qpos, *kpos = J->kpos;
    const int Sq = J->Sq, Sk = J->Sk, H = J->H, Hkv = J->Hkv, hd = J->hd;
    const int q_lo = J->q_lo, q_hi = J->q_hi, k_lo = J->k_lo, k_hi = J->k_hi;
    int nq = q_hi - q_lo, nk = k_hi - k_lo;
    int tqmax = nq < TQ ? nq : TQ;
    float *pm = malloc(2 * (size_t)tqmax * nk * sizeof(float));
    if (!pm) { fprintf(stderr, "hp_attention_backward: out of memory (%d x %d scores)\n", tqmax, nk); return; }
    float *ds = pm + (size_t)tqmax * nk; // (tq, nke) dP, then dS in place
    const float scale = 1.0f / sqrtf((float)hd);
    const int qs = H * hd, ks = Hkv * hd;
    const int grp = H / Hkv;

    for (int it = it_lo; it < it_hi; it++)
    for (int h = (it % Hkv) * grp; h < (it % Hkv + 1) * grp; h++) {
        const int b = it / Hkv, kh = h / grp;
        for (int i0 = q_lo; i0 < q_hi; i0 += TQ) {
            int tq = q_hi - i0 < TQ ? q_hi - i0 : TQ;
            int j0, j1;
            key_span(&j0, &j1, qpos, i0, tq, kpos, k_lo, k_hi);
            int nke = j1 - j0;
            if (nke <= 0) continue;
            size_t qoff = ((size_t)b * Sq + i0) * qs + (size_t)h * hd;
            size_t koff = ((size_t)b * Sk + j0) * ks + (size_t)kh * hd;
            // recompute the scores exactly as the forward does
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, tq, nke, hd,
                        scale, q + qoff, qs, k + koff, ks, 0.0f, pm, nke);
            float Di[TQ];
            int any = 0;
            for (int r = 0; r < tq; r++) {
                size_t row = ((size_t)b * Sq + i0 + r) * H + h;
                float l = lse[row];
                float *p = pm + (size_t)r * nke;
                const int qp = qpos[i0 + r];
                if (l == -INFINITY) { // the row saw no key at all: no gradient
                    for (int j = 0; j < nke; j++) p[j] = 0.0f;
                    Di[r] = 0.0f;
                    continue;
                }
                for (int j = 0; j < nke; j++) p[j] = kpos[j0 + j] <= qp ? p[j] - l : 0.0f;
                hp_expf_n(p, p, nke);
                for (int j = 0; j < nke; j++) if (kpos[j0 + j] > qp) p[j] = 0.0f;
                const float *g = dout + row * hd, *o = out + row * hd;
                double acc = 0.0; // D_i = dout_i . out_i
                for (int d = 0; d < hd; d++) acc += (double)g[d] * o[d];
                Di[r] = (float)acc;
                any = 1;
            }
            if (!any) continue;
            // dv_j += sum_i P_ij dout_i
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, nke, hd, tq,
                        1.0f, pm, nke, dout + qoff, qs, 1.0f, dv + koff, ks);
            // dP (tq, nke) = dout v^T
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, tq, nke, hd,
                        1.0f, dout + qoff, qs, v + koff, ks, 0.0f, ds, nke);
            // dS = P * (dP - D_i); masked entries have P = 0
            for (int r = 0; r < tq; r++) {
                const float *p = pm + (size_t)r * nke;
                float *d = ds + (size_t)r * nke;
                for (int j = 0; j < nke; j++) d[j] = p[j] * (d[j] - Di[r]);
            }
            // dq_i += scale * sum_j dS_ij k_j ; dk_j += scale * sum_i dS_ij q_i
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, tq, hd, nke,
                        scale, ds, nke, k + koff, ks, 1.0f, dq + qoff, qs);
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, nke, hd, tq,
                        scale, ds, nke, q + qoff, qs, 1.0f, dk + koff, ks);
        }
    }
    free(pm);
}

void hp_attention_backward(float *dq,        // (B, Sq, H, hd)  +=
                           float *dk,        // (B, Sk, Hkv, hd) +=
                           float *dv,        // (B, Sk, Hkv, hd) +=
                           const float *dout,// (B, Sq, H, hd)
                           const float *out, // (B, Sq, H, hd)
                           const float *lse, // (B, Sq, H)
                           const float *q, const float *k, const float *v,
                           const int *qpos, const int *kpos,
                           int B, int Sq, int Sk, int H, int Hkv, int hd,
                           int q_lo, int q_hi, int k_lo, int k_hi) {
    if (!attn_check("hp_attention_backward", B, Sq, Sk, H, Hkv, hd, q_lo, q_hi, k_lo, k_hi)) return;
    if (q_hi - q_lo <= 0 || k_hi - k_lo <= 0 || B == 0) return;
    attn_job J = { .lse = (float *)lse, .dq = dq, .dk = dk, .dv = dv, .dout = dout, .o = out,
                   .q = q, .k = k, .v = v, .qpos = qpos, .kpos = kpos,
                   .B = B, .Sq = Sq, .Sk = Sk, .H = H, .Hkv = Hkv, .hd = hd,
                   .q_lo = q_lo, .q_hi = q_hi, .k_lo = k_lo, .k_hi = k_hi };
    hp_par_for(B * Hkv, 1, 1, backward_items, &J);
}
