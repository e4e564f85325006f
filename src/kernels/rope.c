// rope.c - rotary position embedding with interleaved pairs (x[2j], x[2j+1]), in place.
// f_j = theta^(-2j/hd), a = pos * f_j; positions are global (sequence / context parallel
// ranks pass the positions of their own tokens). Angles are computed in double, then
// cos/sin rounded to float, once per (position, pair) and reused over batch and heads.
// Positions are independent: ranges of them run in parallel (kernels/parallel.h), each
// element computed as in the serial loop.
// defines: hp_rope_forward, hp_rope_backward
#include <math.h>
#include <stdio.h>
#include "hyperpar/kernels.h"
#include "kernels/parallel.h"

#define ROPE_CHUNK 64   // pairs whose cos/sin are held at once (a stack buffer, no malloc)
#define ROPE_MIN_POS 32 // positions per thread below which a job runs inline

typedef struct {
    float *x;
    const int *pos;
    float theta, dir;
    int B, S, nh, hd;
} rope_job;

// Positions [t_lo, t_hi).
static void rope_positions(void *ctx, int t_lo, int t_hi) {
    const rope_job *J = ctx;
    float *x = J->x;
    const int *pos = J->pos;
    const float theta = J->theta, dir = J->dir;
    const int B = J->B, S = J->S, nh = J->nh, hd = J->hd;
    int npair = hd / 2;
    float c[ROPE_CHUNK], s[ROPE_CHUNK];
    double f[ROPE_CHUNK];
    for (int j0 = 0; j0 < npair; j0 += ROPE_CHUNK) {
        int nj = npair - j0 < ROPE_CHUNK ? npair - j0 : ROPE_CHUNK;
        for (int jj = 0; jj < nj; jj++) f[jj] = pow((double)theta, -2.0 * (j0 + jj) / hd);
        for (int t = t_lo; t < t_hi; t++) {
            for (int jj = 0; jj < nj; jj++) {
                double a = (double)pos[t] * f[jj];
                c[jj] = (float)cos(a);
                s[jj] = dir * (float)sin(a);
            }
            for (int b = 0; b < B; b++) {
                for (int h = 0; h < nh; h++) {
                    float *xp = x + (((size_t)b * S + t) * nh + h) * hd + 2 * j0;
                    for (int jj = 0; jj < nj; jj++) {
                        float x0 = xp[2 * jj], x1 = xp[2 * jj + 1];
                        xp[2 * jj]     = x0 * c[jj] - x1 * s[jj];
                        xp[2 * jj + 1] = x0 * s[jj] + x1 * c[jj];
                    }
                }
            }
        }
    }
}

// dir = +1 applies R(pos), dir = -1 applies R(pos)^T = R(-pos).
static void rope_apply(float *x, const int *pos, float theta, int B, int S, int nh, int hd,
                       float dir, const char *who) {
    if (hd <= 0 || hd % 2 != 0) {
        fprintf(stderr, "%s: head_dim must be even and > 0, got %d\n", who, hd);
        return;
    }
    rope_job J = { .x = x, .pos = pos, .theta = theta, .dir = dir, .B = B, .S = S, .nh = nh, .hd = hd };
    hp_par_for(S, ROPE_MIN_POS, 0, rope_positions, &J);
}

void hp_rope_forward(float *x,          // (B, S, nh, hd) in place
                     const int *pos,    // (S)
                     float theta, int B, int S, int nh, int hd) {
    rope_apply(x, pos, theta, B, S, nh, hd, 1.0f, "hp_rope_forward");
}

// The rotation is orthogonal, so its gradient is the inverse rotation.
void hp_rope_backward(float *dx,        // (B, S, nh, hd) in place
                      const int *pos,   // (S)
                      float theta, int B, int S, int nh, int hd) {
    rope_apply(dx, pos, theta, B, S, nh, hd, -1.0f, "hp_rope_backward");
}
