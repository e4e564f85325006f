// rope.c - rotary position embedding with interleaved pairs (x[2j], x[2j+1]), in place.
// f_j = theta^(-2j/hd), a = pos * f_j; positions are global (sequence / context parallel
// ranks pass the positions of their own tokens). The cos/sin table of a rank's positions is
// computed once (hp_rope_table, TorchTitan's precompute_freqs_cis): angles in double, cos and
// sin rounded to float, reused by every layer, batch row and head, forward and backward.
// Positions are independent: ranges of them run in parallel (kernels/parallel.h), each
// element computed as in the serial loop.
// defines: hp_rope_table, hp_rope_forward, hp_rope_backward
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

int hp_rope_table(float *cs,        // (2, S, hd/2): cos, then sin
                  const int *pos,   // (S)
                  float theta, int S, int hd) {
    if (!head_dim_ok(hd, "hp_rope_table")) return -1;
    const int npair = hd / 2;
    for (int j = 0; j < npair; j++) {
        const double f = pow((double)theta, -2.0 * j / hd);
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
