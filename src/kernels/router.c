// router.c - MoE router: scores = softmax or sigmoid of the gate logits, then the top-k
// experts per token with their gate weights. The selection itself carries no gradient;
// the gates do, through the selected scores (and the optional renormalisation).
// defines: hp_router_scores_forward, hp_router_scores_backward,
//          hp_router_topk, hp_router_topk_backward
#include <math.h>
#include <stdio.h>
#include "hyperpar/kernels.h"

// TorchTitan divides by (sum + 1e-20); the constant only matters when every selected
// score underflows (sigmoid), where it avoids 0/0.
#define ROUTE_NORM_TINY 1e-20

void hp_router_scores_forward(float *scores,       // (N, E)
                              const float *logits, // (N, E)
                              int N, int E, int score_func) {
    for (int i = 0; i < N; i++) {
        const float *l = logits + (size_t)i * E;
        float *s = scores + (size_t)i * E;
        if (score_func == 1) {
            for (int e = 0; e < E; e++) s[e] = 1.0f / (1.0f + expf(-l[e]));
            continue;
        }
        float mx = -INFINITY; // softmax in fp32, max subtracted
        for (int e = 0; e < E; e++) if (l[e] > mx) mx = l[e];
        double sum = 0.0;
        for (int e = 0; e < E; e++) { s[e] = expf(l[e] - mx); sum += s[e]; }
        float inv = (float)(1.0 / sum);
        for (int e = 0; e < E; e++) s[e] *= inv;
    }
}

void hp_router_scores_backward(float *dlogits,       // (N, E) +=
                               const float *dscores, // (N, E)
                               const float *scores,  // (N, E)
                               int N, int E, int score_func) {
    for (int i = 0; i < N; i++) {
        const float *g = dscores + (size_t)i * E, *s = scores + (size_t)i * E;
        float *dl = dlogits + (size_t)i * E;
        if (score_func == 1) {
            for (int e = 0; e < E; e++) dl[e] += g[e] * s[e] * (1.0f - s[e]);
            continue;
        }
        double dot = 0.0; // softmax: dl_e = s_e (g_e - sum_f g_f s_f)
        for (int e = 0; e < E; e++) dot += (double)g[e] * s[e];
        float fd = (float)dot;
        for (int e = 0; e < E; e++) dl[e] += s[e] * (g[e] - fd);
    }
}

void hp_router_topk(int *idx,            // (N, K)
                    float *gates,        // (N, K)
                    const float *scores, // (N, E)
                    int N, int E, int K, int route_norm, float route_scale) {
    if (K < 1 || K > E) {
        fprintf(stderr, "hp_router_topk: need 1 <= top_k <= num_experts, got top_k=%d, num_experts=%d\n", K, E);
        return;
    }
    for (int i = 0; i < N; i++) {
        const float *s = scores + (size_t)i * E;
        int *id = idx + (size_t)i * K;
        float *g = gates + (size_t)i * K;
        // K passes of a scan: strict '>' keeps the lower id on a tie, and the ids already
        // chosen are skipped (K is small, so the quadratic membership test is cheap).
        for (int k = 0; k < K; k++) {
            int best = -1;
            for (int e = 0; e < E; e++) {
                int taken = 0;
                for (int kk = 0; kk < k; kk++) if (id[kk] == e) { taken = 1; break; }
                if (taken) continue;
                if (best < 0 || s[e] > s[best]) best = e;
            }
            id[k] = best;
        }
        double sum = 0.0;
        for (int k = 0; k < K; k++) sum += s[id[k]];
        float inv = route_norm ? (float)(1.0 / (sum + ROUTE_NORM_TINY)) : 1.0f;
        for (int k = 0; k < K; k++) g[k] = route_norm ? s[id[k]] * inv * route_scale
                                                      : s[id[k]] * route_scale;
    }
}

// Without route_norm: dscore[e_k] += c * dg_k. With it, g_k = c s_k / S (S = sum of the
// K selected scores): dscore[e_m] += c/S * (dg_m - sum_k dg_k s_k / S).
void hp_router_topk_backward(float *dscores,      // (N, E) +=
                             const float *dgates, // (N, K)
                             const int *idx,      // (N, K)
                             const float *scores, // (N, E)
                             int N, int E, int K, int route_norm, float route_scale) {
    if (K < 1 || K > E) {
        fprintf(stderr, "hp_router_topk_backward: need 1 <= top_k <= num_experts, got top_k=%d, num_experts=%d\n", K, E);
        return;
    }
    for (int i = 0; i < N; i++) {
        const float *s = scores + (size_t)i * E;
        const int *id = idx + (size_t)i * K;
        const float *dg = dgates + (size_t)i * K;
        float *ds = dscores + (size_t)i * E;
        if (!route_norm) {
            for (int k = 0; k < K; k++) ds[id[k]] += dg[k] * route_scale;
            continue;
        }
        double sum = 0.0, dot = 0.0;
        for (int k = 0; k < K; k++) sum += s[id[k]];
        sum += ROUTE_NORM_TINY;
        for (int k = 0; k < K; k++) dot += (double)dg[k] * s[id[k]];
        float inv = (float)(1.0 / sum), mean = (float)(dot / sum);
        for (int k = 0; k < K; k++) ds[id[k]] += route_scale * inv * (dg[k] - mean);
    }
}
