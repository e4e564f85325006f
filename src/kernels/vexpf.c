// vexpf.c - expf over arrays, bit-identical to glibc's expf (x86-64, FMA variant), 8 at a time
// (AVX-512: 8 lanes of double in one register; AVX2 + FMA: two registers of 4).
// The softmax of attention and the SwiGLU gate spend much of their time in expf; the
// vectorised version keeps every result exactly, so the kernels' outputs do not change.
//
// The algorithm is the one of glibc (ARM optimized-routines) expf, in double precision:
//   z = x * 32/ln2 = k + r, |r| <= 1/2;  exp(x) = 2^(k/32) * 2^(r/32)
//   2^(k/32) = double with bits T[k % 32] + (k << 47);  2^(r/32) ~ C0 r^3 + C1 r^2 + C2 r + 1
// with the multiply-adds fused exactly where glibc's FMA build fuses them. Checked against
// expf for every float with |x| < 88 (2.2e9 inputs, 0 differences); |x| >= 88 and NaN lanes
// (overflow, underflow, errno) are handed to expf itself.
// defines: hp_expf_n
#include <math.h>
#include <stdint.h>
#include "kernels/vexpf.h"
#include "hyperpar/cpu.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define VEXPF_X86 1

// T[i] = bits of 2^(i/32) rounded to double, minus i << 47 (so that adding k << 47 puts k/32's
// integer part into the exponent)
static const uint64_t vexpf_T[32] = {
    0x3FF0000000000000, 0x3FEFD9B0D3158574, 0x3FEFB5586CF9890F, 0x3FEF9301D0125B51,
    0x3FEF72B83C7D517B, 0x3FEF54873168B9AA, 0x3FEF387A6E756238, 0x3FEF1E9DF51FDEE1,
    0x3FEF06FE0A31B715, 0x3FEEF1A7373AA9CB, 0x3FEEDEA64C123422, 0x3FEECE086061892D,
    0x3FEEBFDAD5362A27, 0x3FEEB42B569D4F82, 0x3FEEAB07DD485429, 0x3FEEA47EB03A5585,
    0x3FEEA09E667F3BCD, 0x3FEE9F75E8EC5F74, 0x3FEEA11473EB0187, 0x3FEEA589994CCE13,
    0x3FEEACE5422AA0DB, 0x3FEEB737B0CDC5E5, 0x3FEEC49182A3F090, 0x3FEED503B23E255D,
    0x3FEEE89F995AD3AD, 0x3FEEFF76F2FB5E47, 0x3FEF199BDD85529C, 0x3FEF3720DCEF9069,
    0x3FEF5818DCFBA487, 0x3FEF7C97337B9B5F, 0x3FEFA4AFA2A490DA, 0x3FEFD0765B6E4540,
};
#define VEXPF_INVLN2N (0x1.71547652b82fep+0 * 32)
#define VEXPF_SHIFT   0x1.8p+52
#define VEXPF_C0      (0x1.c6af84b912394p-5 / 32 / 32 / 32)
#define VEXPF_C1      (0x1.ebfce50fac4f3p-3 / 32 / 32)
#define VEXPF_C2      (0x1.62e42ff0c52d6p-1 / 32)

// Four lanes in double; valid for |x| < 88.
__attribute__((target("avx2,fma"))) static __m128 vexpf4(__m128 x) {
    const __m256d xd = _mm256_cvtps_pd(x);
    const __m256d inv = _mm256_set1_pd(VEXPF_INVLN2N), shift = _mm256_set1_pd(VEXPF_SHIFT);
    __m256d kd = _mm256_fmadd_pd(inv, xd, shift);          // round(z) in the low bits
    const __m256i ki = _mm256_castpd_si256(kd);
    kd = _mm256_sub_pd(kd, shift);
    const __m256d r = _mm256_fmsub_pd(inv, xd, kd);        // z - k
    const __m256i idx = _mm256_and_si256(ki, _mm256_set1_epi64x(31));
    __m256i t = _mm256_i64gather_epi64((const long long *)vexpf_T, idx, 8);
    t = _mm256_add_epi64(t, _mm256_slli_epi64(ki, 47));
    const __m256d s = _mm256_castsi256_pd(t);
    const __m256d z = _mm256_fmadd_pd(_mm256_set1_pd(VEXPF_C0), r, _mm256_set1_pd(VEXPF_C1));
    const __m256d r2 = _mm256_mul_pd(r, r);
    __m256d y = _mm256_fmadd_pd(_mm256_set1_pd(VEXPF_C2), r, _mm256_set1_pd(1.0));
    y = _mm256_fmadd_pd(z, r2, y);
    y = _mm256_mul_pd(y, s);
    return _mm256_cvtpd_ps(y);
}

// Eight lanes in double with AVX-512: the same operations as vexpf4, so the same bits; the
// table is read with two-register permutes instead of a gather (the slow part of vexpf4).
__attribute__((target("avx512f"))) static __m256 vexpf8(__m256 x) {
    const __m512d xd = _mm512_cvtps_pd(x);
    const __m512d inv = _mm512_set1_pd(VEXPF_INVLN2N), shift = _mm512_set1_pd(VEXPF_SHIFT);
    __m512d kd = _mm512_fmadd_pd(inv, xd, shift);
    const __m512i ki = _mm512_castpd_si512(kd);
    kd = _mm512_sub_pd(kd, shift);
    const __m512d r = _mm512_fmsub_pd(inv, xd, kd);
    const __m512i *T = (const __m512i *)vexpf_T;
    const __m512i t_lo = _mm512_permutex2var_epi64(_mm512_loadu_si512(T), ki, _mm512_loadu_si512(T + 1));
    const __m512i t_hi = _mm512_permutex2var_epi64(_mm512_loadu_si512(T + 2), ki, _mm512_loadu_si512(T + 3));
    const __mmask8 upper = _mm512_test_epi64_mask(ki, _mm512_set1_epi64(16)); // k % 32 >= 16
    __m512i t = _mm512_mask_blend_epi64(upper, t_lo, t_hi);
    t = _mm512_add_epi64(t, _mm512_slli_epi64(ki, 47));
    const __m512d s = _mm512_castsi512_pd(t);
    const __m512d z = _mm512_fmadd_pd(_mm512_set1_pd(VEXPF_C0), r, _mm512_set1_pd(VEXPF_C1));
    const __m512d r2 = _mm512_mul_pd(r, r);
    __m512d y = _mm512_fmadd_pd(_mm512_set1_pd(VEXPF_C2), r, _mm512_set1_pd(1.0));
    y = _mm512_fmadd_pd(z, r2, y);
    y = _mm512_mul_pd(y, s);
    return _mm512_cvtpd_ps(y);
}

// The loop of expf_avx2 below on vexpf8; lanes with |x| >= 88 or NaN go to expf.
__attribute__((target("avx512f"))) static void expf_avx512(float *y, const float *x, int n) {
    const __m256 lim = _mm256_set1_ps(88.0f);
    const __m256 absmask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 v = _mm256_loadu_ps(x + i);
        const int special = _mm256_movemask_ps(_mm256_cmp_ps(_mm256_and_ps(v, absmask), lim, _CMP_NLT_UQ));
        const __m256 e = vexpf8(v);
        if (!special) {
            _mm256_storeu_ps(y + i, e);
        } else { // x is read before y is written: y may be x
            float xs[8];
            _mm256_storeu_ps(xs, v);
            _mm256_storeu_ps(y + i, e);
            for (int k = 0; k < 8; k++)
                if (special >> k & 1) y[i + k] = expf(xs[k]);
        }
    }
    for (; i < n; i++) y[i] = expf(x[i]);
}

__attribute__((target("avx2,fma"))) static void expf_avx2(float *y, const float *x, int n) {
    const __m256 lim = _mm256_set1_ps(88.0f);
    const __m256 absmask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 v = _mm256_loadu_ps(x + i);
        // lanes with |x| >= 88 or NaN (unordered compare) take the library's path
        const int special = _mm256_movemask_ps(_mm256_cmp_ps(_mm256_and_ps(v, absmask), lim, _CMP_NLT_UQ));
        const __m128 lo = vexpf4(_mm256_castps256_ps128(v));
        const __m128 hi = vexpf4(_mm256_extractf128_ps(v, 1));
        if (!special) {
            _mm_storeu_ps(y + i, lo);
            _mm_storeu_ps(y + i + 4, hi);
        } else {
            float xs[8];
            _mm256_storeu_ps(xs, v);
            _mm_storeu_ps(y + i, lo);
            _mm_storeu_ps(y + i + 4, hi);
            for (int k = 0; k < 8; k++)
                if (special >> k & 1) y[i + k] = expf(xs[k]);
        }
    }
    for (; i < n; i++) y[i] = expf(x[i]);
}
#endif

void hp_expf_n(float *y, const float *x, int n) {
#ifdef VEXPF_X86
    if (hp_cpu_has(HP_CPU_AVX512F) && hp_cpu_has(HP_CPU_FMA)) { // cached flag reads
        expf_avx512(y, x, n);
        return;
    }
    if (hp_cpu_has(HP_CPU_AVX2) && hp_cpu_has(HP_CPU_FMA)) {
        expf_avx2(y, x, n);
        return;
    }
#endif
    for (int i = 0; i < n; i++) y[i] = expf(x[i]);
}
