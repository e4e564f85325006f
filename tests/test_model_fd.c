// test_model_fd.c - the whole model's gradient (dense and MoE, single process) against
// central finite differences of the loss.
//
// For each parameter tensor the loss is differentiated along two directions: the gradient's
// own direction u = g/|g| (checks the magnitude: dL/dh = |g|) and a random +-1 direction
// (checks the direction). Perturbing a whole tensor along a unit direction moves the loss by
// O(h |g|), far above fp32 rounding of the loss, which single-element differences of a
// 6.0-sized loss would drown in. A dropped or doubled term gives an error of order 1.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <mpi.h>
#include "hyperpar/rng.h"
#include "hyperpar/train.h"

static int failures, checks;

static void check_model(const char *name) {
    hp_model_config m;
    hp_model_config_by_name(name, &m);
    hp_run_config rc;
    hp_run_config_default(&rc);
    rc.seq_len = 16;
    rc.batch = 2;
    hp_dims d = hp_dims_default();
    d.dp_shard = 1;
    d.world = 1;
    char err[256];
    if (hp_dims_validate(&d, &m, &rc, err, sizeof err) != 0) { printf("%s\n", err); failures++; return; }
    hp_trainer *tr = hp_trainer_init(MPI_COMM_SELF, &m, &d, &rc, err, sizeof err);
    const hp_param_table *t = hp_trainer_params(tr);
    const int64_t n = t->full_numel;
    float *p0 = malloc((size_t)n * sizeof(float)), *g = malloc((size_t)n * sizeof(float));
    float *p = malloc((size_t)n * sizeof(float)), *u = malloc((size_t)n * sizeof(float));
    int *r0 = malloc((size_t)m.n_layers * rc.batch * rc.seq_len * (m.top_k + 1) * sizeof(int));
    int *r1 = malloc((size_t)m.n_layers * rc.batch * rc.seq_len * (m.top_k + 1) * sizeof(int));
    hp_trainer_gather_params(tr, p0);
    // The router gate's init (std 0.02) leaves the 8 softmax scores within ~1e-3 of each other,
    // so any perturbation flips some top-k choice. Sharpen the gate so that choices are clear
    // and its gradient can be checked like any other.
    for (int i = 0; i < t->n; i++)
        if (strstr(t->p[i].name, "router.gate"))
            for (int64_t k = 0; k < t->p[i].full_numel; k++) p0[t->p[i].full_offset + k] *= 100.0f;
    hp_trainer_set_params(tr, p0);
    const double loss = hp_trainer_forward_backward(tr);   // step 1
    hp_trainer_gather_grads(tr, g);
    const int n_moe = hp_trainer_gather_routing(tr, r0);
    const size_t route_n = (size_t)n_moe * rc.batch * rc.seq_len * m.top_k;
    printf("%s: loss at init %.5f (ln V = %.5f)\n", name, loss, log((double)m.vocab_size));
    if (!(fabs(loss - log((double)m.vocab_size)) < 1.0)) { printf("  FAIL: loss far from ln V\n"); failures++; }

    for (int i = 0; i < t->n; i++) {
        const hp_param *q = &t->p[i];
        const float *gi = g + q->full_offset;
        double gn = 0.0;
        for (int64_t k = 0; k < q->full_numel; k++) gn += (double)gi[k] * gi[k];
        gn = sqrt(gn);
        for (int dir = 0; dir < 2; dir++) {
            double gu = 0.0, un = 0.0;
            for (int64_t k = 0; k < q->full_numel; k++) {
                const double r = hp_rng_uniform(7, (uint64_t)i, (uint64_t)k) < 0.5 ? -1.0 : 1.0;
                u[k] = (float)(dir == 0 ? (gn > 0 ? gi[k] / gn : 0.0) : r / sqrt((double)q->full_numel));
                un += (double)u[k] * u[k];
                gu += (double)gi[k] * u[k];
            }
            if (un == 0.0) continue;
            // the largest step whose perturbation flips no routing choice (MoE): a flip makes
            // the loss non-differentiable there, so the step shrinks until none happens
            double h = 0.05, lp = 0.0, lm = 0.0;
            int flipped = 1;
            for (; h > 1e-3 && flipped; h *= 0.4) {
                flipped = 0;
                memcpy(p, p0, (size_t)n * sizeof(float));
                for (int64_t k = 0; k < q->full_numel; k++) p[q->full_offset + k] += (float)(h * u[k]);
                hp_trainer_set_params(tr, p);
                lp = hp_trainer_eval_loss(tr, 1);
                if (n_moe) { hp_trainer_gather_routing(tr, r1); flipped |= memcmp(r0, r1, route_n * sizeof(int)) != 0; }
                memcpy(p, p0, (size_t)n * sizeof(float));
                for (int64_t k = 0; k < q->full_numel; k++) p[q->full_offset + k] -= (float)(h * u[k]);
                hp_trainer_set_params(tr, p);
                lm = hp_trainer_eval_loss(tr, 1);
                if (n_moe) { hp_trainer_gather_routing(tr, r1); flipped |= memcmp(r0, r1, route_n * sizeof(int)) != 0; }
                if (!flipped) break;
            }
            if (flipped) { printf("  %-40s dir %d skipped: a routing choice flips at every step size\n", q->name, dir); continue; }
            const double fd = (lp - lm) / (2.0 * h);
            const double tol = 2e-2 * fabs(gu) + 1e-7 / h;   // fp32 rounding of the loss / step
            checks++;
            const int ok = fabs(fd - gu) <= tol;
            if (!ok) failures++;
            if (!ok || dir == 0)
                printf("  %-40s dir %s h %.4f: analytic %+.6e  finite-diff %+.6e  %s\n", q->name,
                       dir ? "random" : "grad  ", h, gu, fd, ok ? "ok" : "FAIL");
        }
    }
    hp_trainer_free(tr);
    free(p0); free(g); free(p); free(u); free(r0); free(r1);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    check_model("tiny");
    check_model("tiny-moe");
    printf("test_model_fd: %d passed, %d failed\n", checks - failures, failures);
    MPI_Finalize();
    return failures ? 1 : 0;
}
