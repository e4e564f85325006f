// rope.c - rotary position embedding with interleaved pairs (x[2j], x[2j+1]), in place.
// f_j = theta^(-2j/hd), a = pos * f_j; positions are global (sequence / context parallel
// ranks pass the positions of their own tokens). The cos/sin table of a rank's positions is
// computed once (hp_rope_table, TorchTitan's precompute_freqs_cis): angles in double, cos and
// sin rounded to float, reused by every layer, batch row and head, forward and backward.
// Llama 3.1 rescales the frequencies (hp_rope_table_llama3, from HF's rope_scaling).
// Positions are independent: ranges of them run in parallel (kernels/parallel.h), each
// element computed as in the serial loop.
// defines: hp_rope_table, hp_rope_table_llama3, hp_rope_forward, hp_rope_backward
#include <math.h>
#include <stdio.h>
#include "hyperpar/kernels.h"
#include "kernels/parallel.h"

#define ROPE_MIN_POS 32 // positions per thread below which a job runs inline

static int head_dim_ok(int hd, const char *who) {
    if (hd > 0 && hd % 2 == 0) return 1;
    fprintf(stderr, "%s: head_dim must be even and > 0, got %d\n", who, hd);
    return 0;
}

// Llama 3.1's frequency of pair j (hp_rope_table_llama3's rule), in double
static double llama3_freq(double f, double factor, double low, double high, double original_max) {
    const double wavelen = 2.0 * 3.14159265358979323846 / f;   // (2 pi in double, as HF and TorchTitan)
    if (wavelen < original_max / high) return f;             // high frequencies: kept
    if (wavelen > original_max / low) return f / factor;     // low frequencies: scaled
    const double s = (original_max / wavelen - low) / (high - low);
    return (1.0 - s) * f / factor + s * f;                   // between: blended
}

int hp_rope_table(float *cs,        // (2, S, hd/2): cos, then sin
                  const int *pos,   // (S)
                  float theta, int S, int hd) {
    return hp_rope_table_llama3(cs, pos, theta, 0.0f, 0.0f, 0.0f, 0, S, hd);
}

int hp_rope_table_llama3(float *cs, const int *pos, float theta, float factor, float low, float high,
                         int original_max, int S, int hd) {
    if (!head_dim_ok(hd, "hp_rope_table")) return -1;
    if (factor != 0.0f && !(factor >= 1.0f && low > 0.0f && high > low && original_max >= 1 && isfinite(factor) &&
                            isfinite(high))) {
        fprintf(stderr, "hp_rope_table_llama3: the rescale needs factor >= 1, 0 < low < high, original_max >= 1; "
                "got %g, %g, %g, %d\n", (double)factor, (double)low, (double)high, original_max);
        return -1;
    }
    const int npair = hd / 2;
    for (int j = 0; j < npair; j++) {
        double f = pow((double)theta, -2.0 * j / hd);
        if (factor != 0.0f) f = llama3_freq(f, factor, low, high, original_max);
        for (int t = 0; t < S; t++) {
            const double a = (double)pos[t] * f;
            cs[(size_t)t * npair + j] = (float)cos(a);
            cs[((size_t)S + t) * npair + j] = (float)sin(a);
        }
    }
    return 0;
}

typedef struct {
    float *x;
    const float *cs;
    float dir;
    int B, S, nh, hd;
} rope_job;

// Positions [t_lo, t_hi).
static void rope_positions(void *ctx, int t_lo, int t_hi) {
    const rope_job *J = ctx;
    const int B = J->B, S = J->S, nh = J->nh, hd = J->hd, npair = hd / 2;
    for (int t = t_lo; t < t_hi; t++) {
        const float *c = J->cs + (size_t)t * npair, *s = J->cs + ((size_t)S + t) * npair;
        for (int b = 0; b < B; b++)
            for (int h = 0; h < nh; h++) {
                float *xp = J->x + (((size_t)b * S + t) * nh + h) * hd;
                for (int j = 0; j < npair; j++) {
                    const float x0 = xp[2 * j], x1 = xp[2 * j + 1], sj = J->dir * s[j];
                    xp[2 * j]     = x0 * c[j] - x1 * sj;
                    xp[2 * j + 1] = x0 * sj + x1 * c[j];
                }
            }
    }
}

// dir = +1 applies R(pos), dir = -1 applies R(pos)^T = R(-pos).
static void rope_apply(float *x, const float *cs, int B, int S, int nh, int hd, float dir,
                       const char *who) {
    if (!head_dim_ok(hd, who)) return;
    rope_job J = { .x = x, .cs = cs, .dir = dir, .B = B, .S = S, .nh = nh, .hd = hd };
    hp_par_for(S, ROPE_MIN_POS, 0, rope_positions, &J);
}

void hp_rope_forward(float *x,          // (B, S, nh, hd) in place
                     const float *cs,   // (2, S, hd/2) hp_rope_table
                     int B, int S, int nh, int hd) {
    rope_apply(x, cs, B, S, nh, hd, 1.0f, "hp_rope_forward");
}

// The rotation is orthogonal, so its gradient is the inverse rotation.
void hp_rope_backward(float *dx,        // (B, S, nh, hd) in place
                      const float *cs,  // (2, S, hd/2) hp_rope_table
                      int B, int S, int nh, int hd) {
    rope_apply(dx, cs, B, S, nh, hd, -1.0f, "hp_rope_backward");
}
