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
// masked entries take exp(0) and are then zeroed. The other passes over a row (max, shift,
// mask, dS) run 16 lanes at a time with AVX-512 where the CPU has it, and the double sums of
// several rows run side by side, each in its own order: the same bits as the scalar loops.
// Under the bf16 policy (the _bf16 entry points) the products of two bf16 operands (the scores,
// dP) go to hp_gemm_bf16; P and dS are fp32, so their products stay hp_gemm.
// defines: hp_attention_forward, hp_attention_backward, hp_attention_forward_bf16,
//          hp_attention_backward_bf16
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "hyperpar/cpu.h"
#include "hyperpar/kernels.h"
#include "kernels/gemm.h"
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

// ---- the elementwise work of a score row, vectorised over independent elements ----------
// Each helper gives exactly the serial loop's result (in its comment): the operations per
// element are the same IEEE ones, nothing is reassociated, and a row's double sum keeps its
// order (several rows are summed side by side instead). The AVX-512 paths use masks for the
// causal visibility (kpos[j] <= qp) and for the tail of a row.
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define ATTN_X86 1
static int attn_avx512(void) { return hp_cpu_has(HP_CPU_AVX512F); } // a cached flag read

// Lanes j0 .. j0+15 of a row of n: the tail mask and the visibility mask.
__attribute__((target("avx512f"))) static __mmask16 lanes_visible(__mmask16 *tail, const int *kp,
                                                                   __m512i qpv, int j0, int n) {
    *tail = n - j0 >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - j0)) - 1);
    const __m512i kv = _mm512_maskz_loadu_epi32(*tail, kp + j0);
    return _mm512_mask_cmple_epi32_mask(*tail, kv, qpv);
}

__attribute__((target("avx512f"))) static float row_max_avx512(const float *s, const int *kp, int qp, int n) {
    const __m512i qpv = _mm512_set1_epi32(qp);
    __m512 mx = _mm512_set1_ps(-INFINITY);
    for (int j = 0; j < n; j += 16) {
        __mmask16 tail;
        const __mmask16 vis = lanes_visible(&tail, kp, qpv, j, n);
        const __m512 v = _mm512_maskz_loadu_ps(tail, s + j);
        mx = _mm512_mask_mov_ps(mx, _mm512_mask_cmp_ps_mask(vis, v, mx, _CMP_GT_OQ), v); // NaN: kept out
    }
    return _mm512_reduce_max_ps(mx);
}

// p[j] = kp[j] <= qp ? expf(p[j] - sub) : 0
__attribute__((target("avx512f"))) static void row_exp_avx512(float *p, const int *kp, int qp, float sub, int n) {
    const __m512i qpv = _mm512_set1_epi32(qp);
    const __m512 subv = _mm512_set1_ps(sub);
    for (int j = 0; j < n; j += 16) {
        __mmask16 tail;
        const __mmask16 vis = lanes_visible(&tail, kp, qpv, j, n);
        _mm512_mask_storeu_ps(p + j, tail, _mm512_maskz_sub_ps(vis, _mm512_maskz_loadu_ps(tail, p + j), subv));
    }
    hp_expf_n(p, p, n);
    for (int j = 0; j < n; j += 16) {
        __mmask16 tail;
        const __mmask16 vis = lanes_visible(&tail, kp, qpv, j, n);
        _mm512_mask_storeu_ps(p + j, tail, _mm512_maskz_loadu_ps(vis, p + j));
    }
}

// d[j] = p[j] * (d[j] - D)
__attribute__((target("avx512f"))) static void row_ds_avx512(float *d, const float *p, float D, int n) {
    const __m512 Dv = _mm512_set1_ps(D);
    for (int j = 0; j < n; j += 16) {
        const __mmask16 tail = n - j >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - j)) - 1);
        const __m512 dj = _mm512_sub_ps(_mm512_maskz_loadu_ps(tail, d + j), Dv);
        _mm512_mask_storeu_ps(d + j, tail, _mm512_mul_ps(_mm512_maskz_loadu_ps(tail, p + j), dj));
    }
}
#endif

// The serial scan's value: mx = -INFINITY; for j: if (kp[j] <= qp && s[j] > mx) mx = s[j].
static float row_max(const float *s, const int *kp, int qp, int n) {
#ifdef ATTN_X86
    if (attn_avx512()) {
        float mx = row_max_avx512(s, kp, qp, n);
        if (mx != 0.0f) return mx;
        // equal maxima differ only in the sign of a zero: the scan keeps the first one
    }
#endif
    float mx = -INFINITY;
    for (int j = 0; j < n; j++)
        if (kp[j] <= qp && s[j] > mx) mx = s[j];
    return mx;
}

// p[j] = kp[j] <= qp ? expf(p[j] - sub) : 0 (masked entries take exp(0), then are zeroed)
static void row_exp(float *p, const int *kp, int qp, float sub, int n) {
#ifdef ATTN_X86
    if (attn_avx512()) { row_exp_avx512(p, kp, qp, sub, n); return; }
#endif
    for (int j = 0; j < n; j++) p[j] = kp[j] <= qp ? p[j] - sub : 0.0f;
    hp_expf_n(p, p, n);
    for (int j = 0; j < n; j++) if (kp[j] > qp) p[j] = 0.0f;
}

// d[j] = p[j] * (d[j] - D), j < n
static void row_ds(float *d, const float *p, float D, int n) {
#ifdef ATTN_X86
    if (attn_avx512()) { row_ds_avx512(d, p, D, n); return; }
#endif
    for (int j = 0; j < n; j++) d[j] = p[j] * (d[j] - D);
}

#define ROWS_SIDE 8 // rows summed side by side: independent double chains, not one latency-bound

// sum[r] = sum over j < n, in order, of (double)x[r * ldx + j], for r < nr
static void row_sums(double *sum, const float *x, int ldx, int nr, int n) {
    int r0 = 0;
    for (; r0 + ROWS_SIDE <= nr; r0 += ROWS_SIDE) {
        double acc[ROWS_SIDE] = { 0.0 };
        const float *x0 = x + (size_t)r0 * ldx;
        for (int j = 0; j < n; j++)
            for (int r = 0; r < ROWS_SIDE; r++) acc[r] += x0[(size_t)r * ldx + j];
        for (int r = 0; r < ROWS_SIDE; r++) sum[r0 + r] = acc[r];
    }
    for (; r0 < nr; r0++) {
        double acc = 0.0;
        for (int j = 0; j < n; j++) acc += x[(size_t)r0 * ldx + j];
        sum[r0] = acc;
    }
}

typedef void gemm_fn(hp_gemm_op ta, hp_gemm_op tb, int M, int N, int K, float alpha, const float *A,
                     int lda, const float *B, int ldb, float beta, float *C, int ldc);

// Everything an item needs: the arguments of the public call.
typedef struct {
    gemm_fn *bf16_pair;   // the products of two bf16-valued operands (hp_gemm or hp_gemm_bf16)
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
            J->bf16_pair(HP_GEMM_N, HP_GEMM_T, tq, nke, hd,
                    scale, qt, qs, kt, ks, 0.0f, sc, nke);
            // P = exp(S - rowmax) on the visible keys, 0 elsewhere; rowsum in double, in j order
            double rowsum[TQ];
            float rowmax[TQ];
            for (int r = 0; r < tq; r++) {
                float *s = sc + (size_t)r * nke;
                const int qp = qpos[i0 + r];
                const float mx = row_max(s, kpos + j0, qp, nke);
                if (mx == -INFINITY) // this row sees nothing here: zero weights
                    for (int j = 0; j < nke; j++) s[j] = 0.0f;
                else
                    row_exp(s, kpos + j0, qp, mx, nke);
                rowmax[r] = mx;
            }
            row_sums(rowsum, sc, nke, tq, nke); // a row of zeros sums to 0.0 as before
            // ob (tq, hd) = P v
            hp_gemm(HP_GEMM_N, HP_GEMM_N, tq, hd, nke,
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

static void forward(gemm_fn *bf16_pair, float *out, float *lse, const float *q, const float *k,
                    const float *v, const int *qpos, const int *kpos, int B, int Sq, int Sk, int H,
                    int Hkv, int hd, int q_lo, int q_hi, int k_lo, int k_hi) {
    if (!attn_check("hp_attention_forward", B, Sq, Sk, H, Hkv, hd, q_lo, q_hi, k_lo, k_hi)) return;
    if (q_hi - q_lo <= 0 || k_hi - k_lo <= 0 || B == 0) return;
    attn_job J = { .bf16_pair = bf16_pair, .out = out, .lse = lse, .q = q, .k = k, .v = v,
                   .qpos = qpos, .kpos = kpos, .B = B, .Sq = Sq, .Sk = Sk, .H = H, .Hkv = Hkv,
                   .hd = hd, .q_lo = q_lo, .q_hi = q_hi, .k_lo = k_lo, .k_hi = k_hi };
    hp_par_for(B * Hkv, 1, 1, forward_items, &J);
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
    forward(hp_gemm, out, lse, q, k, v, qpos, kpos, B, Sq, Sk, H, Hkv, hd, q_lo, q_hi, k_lo, k_hi);
}

void hp_attention_forward_bf16(float *out, float *lse, const float *q, const float *k, const float *v,
                               const int *qpos, const int *kpos, int B, int Sq, int Sk, int H, int Hkv,
                               int hd, int q_lo, int q_hi, int k_lo, int k_hi) {
    forward(hp_gemm_bf16, out, lse, q, k, v, qpos, kpos, B, Sq, Sk, H, Hkv, hd, q_lo, q_hi, k_lo, k_hi);
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
            J->bf16_pair(HP_GEMM_N, HP_GEMM_T, tq, nke, hd,
                    scale, q + qoff, qs, k + koff, ks, 0.0f, pm, nke);
            float Di[TQ];
            int any = 0;
            for (int r = 0; r < tq; r++) {
                size_t row = ((size_t)b * Sq + i0 + r) * H + h;
                float l = lse[row];
                float *p = pm + (size_t)r * nke;
                if (l == -INFINITY) { // the row saw no key at all: no gradient
                    for (int j = 0; j < nke; j++) p[j] = 0.0f;
                    continue;
                }
                row_exp(p, kpos + j0, qpos[i0 + r], l, nke);
                any = 1;
            }
            if (!any) continue;
            // D_i = dout_i . out_i in double, d in order; rows side by side
            for (int r0 = 0; r0 < tq; r0 += ROWS_SIDE) {
                const int nr = tq - r0 < ROWS_SIDE ? tq - r0 : ROWS_SIDE;
                double acc[ROWS_SIDE] = { 0.0 };
                const float *g = dout + qoff + (size_t)r0 * qs, *o = out + qoff + (size_t)r0 * qs;
                for (int d = 0; d < hd; d++)
                    for (int r = 0; r < nr; r++) acc[r] += (double)g[(size_t)r * qs + d] * o[(size_t)r * qs + d];
                for (int r = 0; r < nr; r++) {
                    const size_t row = ((size_t)b * Sq + i0 + r0 + r) * H + h;
                    Di[r0 + r] = lse[row] == -INFINITY ? 0.0f : (float)acc[r];
                }
            }
            // dv_j += sum_i P_ij dout_i
            hp_gemm(HP_GEMM_T, HP_GEMM_N, nke, hd, tq,
                    1.0f, pm, nke, dout + qoff, qs, 1.0f, dv + koff, ks);
            // dP (tq, nke) = dout v^T
            J->bf16_pair(HP_GEMM_N, HP_GEMM_T, tq, nke, hd,
                    1.0f, dout + qoff, qs, v + koff, ks, 0.0f, ds, nke);
            // dS = P * (dP - D_i); masked entries have P = 0
            for (int r = 0; r < tq; r++) row_ds(ds + (size_t)r * nke, pm + (size_t)r * nke, Di[r], nke);
            // dq_i += scale * sum_j dS_ij k_j ; dk_j += scale * sum_i dS_ij q_i
            hp_gemm(HP_GEMM_N, HP_GEMM_N, tq, hd, nke,
                    scale, ds, nke, k + koff, ks, 1.0f, dq + qoff, qs);
            hp_gemm(HP_GEMM_T, HP_GEMM_N, nke, hd, tq,
                    scale, ds, nke, q + qoff, qs, 1.0f, dk + koff, ks);
        }
    }
    free(pm);
}

static void backward(gemm_fn *bf16_pair, float *dq, float *dk, float *dv, const float *dout,
                     const float *out, const float *lse, const float *q, const float *k, const float *v,
                     const int *qpos, const int *kpos, int B, int Sq, int Sk, int H, int Hkv, int hd,
                     int q_lo, int q_hi, int k_lo, int k_hi) {
    if (!attn_check("hp_attention_backward", B, Sq, Sk, H, Hkv, hd, q_lo, q_hi, k_lo, k_hi)) return;
    if (q_hi - q_lo <= 0 || k_hi - k_lo <= 0 || B == 0) return;
    attn_job J = { .bf16_pair = bf16_pair, .lse = (float *)lse, .dq = dq, .dk = dk, .dv = dv,
                   .dout = dout, .o = out, .q = q, .k = k, .v = v, .qpos = qpos, .kpos = kpos,
                   .B = B, .Sq = Sq, .Sk = Sk, .H = H, .Hkv = Hkv, .hd = hd,
                   .q_lo = q_lo, .q_hi = q_hi, .k_lo = k_lo, .k_hi = k_hi };
    hp_par_for(B * Hkv, 1, 1, backward_items, &J);
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
    backward(hp_gemm, dq, dk, dv, dout, out, lse, q, k, v, qpos, kpos, B, Sq, Sk, H, Hkv, hd,
             q_lo, q_hi, k_lo, k_hi);
}

void hp_attention_backward_bf16(float *dq, float *dk, float *dv, const float *dout, const float *out,
                                const float *lse, const float *q, const float *k, const float *v,
                                const int *qpos, const int *kpos, int B, int Sq, int Sk, int H, int Hkv,
                                int hd, int q_lo, int q_hi, int k_lo, int k_hi) {
    backward(hp_gemm_bf16, dq, dk, dv, dout, out, lse, q, k, v, qpos, kpos, B, Sq, Sk, H, Hkv, hd,
             q_lo, q_hi, k_lo, k_hi);
}
