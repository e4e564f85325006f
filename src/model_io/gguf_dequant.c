// gguf_dequant.c - a GGUF tensor as float32 (hyperpar/gguf.h): F32, F16, BF16 and ggml's block
// quantisations Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 (32 elements a block, one f16 scale d and for _1 a
// min m: x = d*q (+ m)) and the K-quants Q4_K, Q5_K, Q6_K (super-blocks of 256 with 6- or 8-bit
// sub-block scales). Written from the block layouts of ggml-common.h; each loop reads one block
// as bytes (no struct overlay, so no packing or alignment assumptions).
// defines: hp_gguf_can_dequantize, hp_gguf_dequantize
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "hyperpar/dims.h"
#include "hyperpar/gguf.h"

static float f16(const unsigned char *p) {   // IEEE binary16, little-endian, exactly
    const unsigned h = (unsigned)p[0] | ((unsigned)p[1] << 8);
    const unsigned sign = h >> 15, exp = (h >> 10) & 0x1F, mant = h & 0x3FF;
    float v;
    if (exp == 0) v = ldexpf((float)mant, -24);                         // zero, subnormal
    else if (exp == 31) v = mant ? NAN : INFINITY;
    else v = ldexpf((float)(mant | 0x400), (int)exp - 25);
    return sign ? -v : v;
}
static float bf16(const unsigned char *p) {
    const uint32_t x = ((uint32_t)p[0] << 16) | ((uint32_t)p[1] << 24);
    float v;
    memcpy(&v, &x, 4);
    return v;
}

// 32 elements: d (f16), [m (f16)], 16 bytes of nibbles: element j low nibble of byte j, j+16 high
static void q4(const unsigned char *b, float *y, int with_min, int no_min_bug) {
    const float d = f16(b), m = with_min && !no_min_bug ? f16(b + 2) : 0.0f;
    const unsigned char *qs = b + (with_min ? 4 : 2);
    const int off = with_min ? 0 : 8;
    for (int j = 0; j < 16; j++) {   // (no "+ 0" for Q4_0: -0 stays -0, as ggml computes it)
        y[j] = with_min ? (float)(qs[j] & 0xF) * d + m : (float)((qs[j] & 0xF) - off) * d;
        y[j + 16] = with_min ? (float)(qs[j] >> 4) * d + m : (float)((qs[j] >> 4) - off) * d;
    }
}
// 32 elements: d, [m], 32 high bits (u32 qh), 16 bytes of low nibbles; Q5_0 centred at 16
static void q5(const unsigned char *b, float *y, int with_min) {
    const float d = f16(b), m = with_min ? f16(b + 2) : 0.0f;
    const unsigned char *h = b + (with_min ? 4 : 2), *qs = h + 4;
    const uint32_t qh = (uint32_t)h[0] | ((uint32_t)h[1] << 8) | ((uint32_t)h[2] << 16) | ((uint32_t)h[3] << 24);
    const int off = with_min ? 0 : 16;
    for (int j = 0; j < 16; j++) {
        const int lo = (int)((qs[j] & 0xF) | (((qh >> j) & 1u) << 4));
        const int hi = (int)((qs[j] >> 4) | (((qh >> (j + 16)) & 1u) << 4));
        y[j] = with_min ? (float)lo * d + m : (float)(lo - off) * d;
        y[j + 16] = with_min ? (float)hi * d + m : (float)(hi - off) * d;
    }
}
static void q8_0(const unsigned char *b, float *y) {
    const float d = f16(b);
    for (int j = 0; j < 32; j++) y[j] = (float)(signed char)b[2 + j] * d;
}
// Q4_K / Q5_K's 12 bytes of eight 6-bit (scale, min) pairs
static void scale_min(int j, const unsigned char *q, int *sc, int *mn) {
    if (j < 4) { *sc = q[j] & 63; *mn = q[j + 4] & 63; }
    else {
        *sc = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
        *mn = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
    }
}
// 256: d, dmin (f16), scales[12], [qh[32] for Q5_K], qs[128]; sub-block k of 32: d*sc_k*q - dmin*m_k
static void qk45(const unsigned char *b, float *y, int five) {
    const float d = f16(b), dmin = f16(b + 2);
    const unsigned char *sc = b + 4, *qh = b + 16, *qs = b + (five ? 48 : 16);
    for (int g = 0; g < 4; g++) {   // 64 elements: the low nibbles of 32 bytes, then the high
        int s0, m0, s1, m1;
        scale_min(2 * g, sc, &s0, &m0);
        scale_min(2 * g + 1, sc, &s1, &m1);
        const float d0 = d * (float)s0, d1 = d * (float)s1, n0 = dmin * (float)m0, n1 = dmin * (float)m1;
        for (int l = 0; l < 32; l++) {
            int lo = qs[32 * g + l] & 0xF, hi = qs[32 * g + l] >> 4;
            if (five) { lo += ((qh[l] >> (2 * g)) & 1) << 4; hi += ((qh[l] >> (2 * g + 1)) & 1) << 4; }
            y[64 * g + l] = d0 * (float)lo - n0;
            y[64 * g + 32 + l] = d1 * (float)hi - n1;
        }
    }
}
// 256: ql[128] (low 4 bits), qh[64] (high 2 bits), scales[16] (int8, per 16), d (f16); q - 32
static void q6_k(const unsigned char *b, float *y) {
    const unsigned char *ql = b, *qh = b + 128;
    const signed char *sc = (const signed char *)(b + 192);
    const float d = f16(b + 208);
    for (int h = 0; h < 2; h++) {   // two halves of 128
        const unsigned char *l4 = ql + 64 * h, *h2 = qh + 32 * h;
        const signed char *s = sc + 8 * h;
        float *o = y + 128 * h;
        for (int l = 0; l < 32; l++) {
            const int is = l / 16;
            const int a = (int)((l4[l] & 0xF) | (((h2[l] >> 0) & 3) << 4)) - 32;
            const int b2 = (int)((l4[l + 32] & 0xF) | (((h2[l] >> 2) & 3) << 4)) - 32;
            const int c = (int)((l4[l] >> 4) | (((h2[l] >> 4) & 3) << 4)) - 32;
            const int e = (int)((l4[l + 32] >> 4) | (((h2[l] >> 6) & 3) << 4)) - 32;
            o[l] = d * (float)s[is] * (float)a;
            o[l + 32] = d * (float)s[is + 2] * (float)b2;
            o[l + 64] = d * (float)s[is + 4] * (float)c;
            o[l + 96] = d * (float)s[is + 6] * (float)e;
        }
    }
}

int hp_gguf_can_dequantize(int type) {
    switch (type) {
    case HP_GGML_F32: case HP_GGML_F16: case HP_GGML_BF16: case HP_GGML_Q4_0: case HP_GGML_Q4_1:
    case HP_GGML_Q5_0: case HP_GGML_Q5_1: case HP_GGML_Q8_0: case HP_GGML_Q4_K: case HP_GGML_Q5_K:
    case HP_GGML_Q6_K: return 1;
    default: return 0;
    }
}

int hp_gguf_dequantize(const hp_gguf *g, const hp_gguf_tensor *t, float *out, int flags, char *err, size_t errlen) {
    if (!hp_gguf_can_dequantize(t->type)) {
        snprintf(err, errlen, "%s: tensor %s is %s, which hp cannot dequantise (it reads F32, F16, BF16, Q4_0, "
                 "Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K, Q6_K)", g->file, t->name, hp_gguf_type_name(t->type));
        return HP_EXIT_CONFIG;
    }
    const unsigned char *p = t->data;
    const int64_t n = t->numel;
    switch (t->type) {
    case HP_GGML_F32: memcpy(out, p, (size_t)n * 4); break;
    case HP_GGML_F16: for (int64_t i = 0; i < n; i++) out[i] = f16(p + 2 * i); break;
    case HP_GGML_BF16: for (int64_t i = 0; i < n; i++) out[i] = bf16(p + 2 * i); break;
    case HP_GGML_Q4_0: for (int64_t i = 0; i < n / 32; i++) q4(p + 18 * i, out + 32 * i, 0, 0); break;
    case HP_GGML_Q4_1:
        for (int64_t i = 0; i < n / 32; i++) q4(p + 20 * i, out + 32 * i, 1, flags & HP_GGUF_BUG_Q4_1_NO_MIN);
        break;
    case HP_GGML_Q5_0: for (int64_t i = 0; i < n / 32; i++) q5(p + 22 * i, out + 32 * i, 0); break;
    case HP_GGML_Q5_1: for (int64_t i = 0; i < n / 32; i++) q5(p + 24 * i, out + 32 * i, 1); break;
    case HP_GGML_Q8_0: for (int64_t i = 0; i < n / 32; i++) q8_0(p + 34 * i, out + 32 * i); break;
    case HP_GGML_Q4_K: for (int64_t i = 0; i < n / 256; i++) qk45(p + 144 * i, out + 256 * i, 0); break;
    case HP_GGML_Q5_K: for (int64_t i = 0; i < n / 256; i++) qk45(p + 176 * i, out + 256 * i, 1); break;
    case HP_GGML_Q6_K: for (int64_t i = 0; i < n / 256; i++) q6_k(p + 210 * i, out + 256 * i); break;
    default: break;
    }
    return 0;
}
