// optim.c - optimiser updates on flat buffers (a rank's shard of the parameters).
// Elementwise, so sharding them (FSDP, ZeRO) gives the same values as the full update, and
// contiguous ranges run in parallel (kernels/parallel.h) with the same result per element.
// defines: hp_sgd_update, hp_adamw_update
#include <math.h>
#include <stdio.h>
#include "hyperpar/kernels.h"
#include "kernels/parallel.h"
#include "hyperpar/cpu.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define OPT_X86 1
#endif

#define OPT_CHUNK 16384 // elements per parallel item

void hp_sgd_update(float *p, const float *g, size_t n, float lr) {
    for (size_t i = 0; i < n; i++) p[i] -= lr * g[i];
}

// AdamW as torch.optim.AdamW (decoupled weight decay, bias-corrected, eps outside sqrt):
//   m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g^2;  mhat = m/(1-b1^t);  vhat = v/(1-b2^t)
//   p = p - lr*wd*p - lr*mhat/(sqrt(vhat)+eps), both terms computed from the OLD p
// (torch scales p by (1 - lr*wd) first and then adds the Adam step: the same thing).
typedef struct {
    float *p, *m, *v;
    const float *g;
    size_t n;
    float lr, beta1, beta2, eps, weight_decay, bc1, bc2;
} adamw_job;

#ifdef OPT_X86
// The same operations as the scalar loop below, in the same order, 8 lanes at a time: IEEE
// add, mul, div and sqrt round the same in AVX as in SSE scalar code, and no multiply-add is
// fused (target "avx" has no FMA), so every element is bit-identical. Returns where it stopped.
__attribute__((target("avx"))) static size_t adamw_avx(const adamw_job *J, size_t i0, size_t i1) {
    float *p = J->p, *m = J->m, *v = J->v;
    const float *g = J->g;
    const __m256 b1 = _mm256_set1_ps(J->beta1), b2 = _mm256_set1_ps(J->beta2);
    const __m256 ob1 = _mm256_set1_ps(1.0f - J->beta1), ob2 = _mm256_set1_ps(1.0f - J->beta2);
    const __m256 bc1 = _mm256_set1_ps(J->bc1), bc2 = _mm256_set1_ps(J->bc2);
    const __m256 lr = _mm256_set1_ps(J->lr), lrwd = _mm256_set1_ps(J->lr * J->weight_decay);
    const __m256 eps = _mm256_set1_ps(J->eps);
    size_t i = i0;
    for (; i + 8 <= i1; i += 8) {
        const __m256 gi = _mm256_loadu_ps(g + i);
        const __m256 mi = _mm256_add_ps(_mm256_mul_ps(b1, _mm256_loadu_ps(m + i)), _mm256_mul_ps(ob1, gi));
        const __m256 vi = _mm256_add_ps(_mm256_mul_ps(b2, _mm256_loadu_ps(v + i)),
                                        _mm256_mul_ps(_mm256_mul_ps(ob2, gi), gi));
        _mm256_storeu_ps(m + i, mi);
        _mm256_storeu_ps(v + i, vi);
        const __m256 mhat = _mm256_div_ps(mi, bc1), vhat = _mm256_div_ps(vi, bc2);
        const __m256 pi = _mm256_loadu_ps(p + i);
        const __m256 step = _mm256_div_ps(_mm256_mul_ps(lr, mhat), _mm256_add_ps(_mm256_sqrt_ps(vhat), eps));
        _mm256_storeu_ps(p + i, _mm256_sub_ps(_mm256_sub_ps(pi, _mm256_mul_ps(lrwd, pi)), step));
    }
    return i;
}
#endif

static void adamw_items(void *ctx, int lo, int hi) {
    const adamw_job *J = ctx;
    size_t i0 = (size_t)lo * OPT_CHUNK;
    const size_t i1 = (size_t)hi * OPT_CHUNK < J->n ? (size_t)hi * OPT_CHUNK : J->n;
    float *p = J->p, *m = J->m, *v = J->v;
    const float *g = J->g;
    const float lr = J->lr, beta1 = J->beta1, beta2 = J->beta2, eps = J->eps;
    const float weight_decay = J->weight_decay, bc1 = J->bc1, bc2 = J->bc2;
#ifdef OPT_X86
    if (hp_cpu_has(HP_CPU_AVX)) i0 = adamw_avx(J, i0, i1);
#endif
    for (size_t i = i0; i < i1; i++) {
        float gi = g[i];
        float mi = beta1 * m[i] + (1.0f - beta1) * gi;
        float vi = beta2 * v[i] + (1.0f - beta2) * gi * gi;
        m[i] = mi;
        v[i] = vi;
        float mhat = mi / bc1, vhat = vi / bc2;
        float pi = p[i];
        p[i] = pi - lr * weight_decay * pi - lr * mhat / (sqrtf(vhat) + eps);
    }
}

void hp_adamw_update(float *p, const float *g, float *m, float *v, size_t n,
                     float lr, float beta1, float beta2, float eps, float weight_decay, int t) {
    if (t < 1) { // the bias correction 1 - beta^t would divide by zero
        fprintf(stderr, "hp_adamw_update: step t must be >= 1, got %d\n", t);
        return;
    }
    adamw_job J = { .p = p, .m = m, .v = v, .g = g, .n = n, .lr = lr, .beta1 = beta1,
                    .beta2 = beta2, .eps = eps, .weight_decay = weight_decay };
    J.bc1 = (float)(1.0 - pow((double)beta1, t)); // bias corrections in double, then fp32
    J.bc2 = (float)(1.0 - pow((double)beta2, t));
    hp_par_for((int)((n + OPT_CHUNK - 1) / OPT_CHUNK), 4, 0, adamw_items, &J);
}
