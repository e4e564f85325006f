// test_validation.c - validation rounds (hp_trainer_validate, training-job.md §5) on 2 ranks,
// under one process and five 2-rank layouts (dp_shard, tp, cp, pp, MoE with ep):
//   - two rounds at equal parameters agree bit for bit, and so does each batch read again
//     after the others (no state carried from batch to batch or round to round);
//   - a round leaves training as it was: the losses and grad norms of the steps after it are
//     bit-identical to those of a run without rounds (no gradient, optimiser untouched);
//   - the round's loss is the same double on every rank, and equals the one-process round
//     within the verifier's loss tolerance (1e-5 relative).
//   mpiexec -np 2 test_validation
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "hyperpar/train.h"
#include "test_mpi_check.h"

enum { STEPS = 3, BATCHES = 3 };

typedef struct layout { const char *name, *model; int dp_shard, tp, cp, pp, ep; } layout;

typedef struct outcome { double val[STEPS]; int ok; } outcome;

static hp_trainer *make(MPI_Comm comm, const layout *l, hp_run_config *rc, hp_model_config *m) {
    int world;
    MPI_Comm_size(comm, &world);
    hp_model_config_by_name(l->model, m);
    hp_run_config_default(rc);
    rc->seq_len = 16;
    rc->optimizer = HP_OPT_ADAMW;
    rc->lr = 1e-3f;
    hp_dims d = hp_dims_default();
    d.dp_shard = l->dp_shard;
    d.tp = l->tp;
    d.cp = l->cp;
    d.pp = l->pp;
    d.ep = l->ep;
    d.world = world;
    char err[256];
    if (hp_dims_validate(&d, m, rc, err, sizeof err) != 0) {
        CHECK(0, "%s: %s", l->name, err);
        return NULL;
    }
    hp_trainer *tr = hp_trainer_init(comm, m, &d, rc, err, sizeof err);
    CHECK(tr != NULL, "%s: %s", l->name, err);
    return tr;
}

// The same double on every rank of comm.
static int same_everywhere(MPI_Comm comm, double x) {
    double lo = x, hi = x;
    MPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_DOUBLE, MPI_MIN, comm);
    MPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_DOUBLE, MPI_MAX, comm);
    return memcmp(&lo, &hi, sizeof lo) == 0 && memcmp(&lo, &x, sizeof x) == 0;
}

// STEPS steps with a round after each (out->val), against a twin trained without rounds.
static outcome run_layout(MPI_Comm comm, const layout *l) {
    outcome out = { { 0 }, 0 };
    hp_run_config rc;
    hp_model_config m;
    hp_trainer *a = make(comm, l, &rc, &m), *b = make(comm, l, &rc, &m);
    char err[256];
    hp_data *val = hp_data_open(NULL, HP_DATA_AUTO, m.vocab_size, err, sizeof err);   // synthetic: the first batches' ids
    if (!a || !b || !val) { hp_trainer_free(a); hp_trainer_free(b); if (val) hp_data_close(val); return out; }
    int bad = 0;
    for (int s = 0; s < STEPS; s++) {
        hp_step_stats sa, sb;
        hp_trainer_step(a, &sa);
        hp_trainer_step(b, &sb);
        // the steps after a round are the steps without one, bit for bit
        bad |= memcmp(&sa.loss, &sb.loss, sizeof sa.loss) != 0 || memcmp(&sa.grad_norm, &sb.grad_norm, sizeof sa.grad_norm) != 0;
        CHECK(!bad, "%s: step %d loss %.17g / %.17g, grad norm %.17g / %.17g: a round changed the training",
              l->name, s + 1, sa.loss, sb.loss, sa.grad_norm, sb.grad_norm);
        out.val[s] = hp_trainer_validate(a, val, BATCHES);
        const double again = hp_trainer_validate(a, val, BATCHES);
        CHECK(memcmp(&again, &out.val[s], sizeof again) == 0, "%s: step %d: rounds at equal parameters %.17g, %.17g",
              l->name, s + 1, out.val[s], again);
        CHECK(isfinite(out.val[s]) && same_everywhere(comm, out.val[s]), "%s: step %d: the round's loss differs "
              "between ranks (or is not finite)", l->name, s + 1);
        // each batch alone, last to first: the values the round averaged, in the round's order
        double per[BATCHES], sum = 0.0;
        for (int k = BATCHES - 1; k >= 0; k--) per[k] = hp_trainer_eval_batch(a, val, k);
        for (int k = 0; k < BATCHES; k++) sum += per[k];
        const double mean = sum / BATCHES;
        CHECK(memcmp(&mean, &out.val[s], sizeof mean) == 0, "%s: step %d: batches read in reverse give the mean "
              "%.17g, the round %.17g", l->name, s + 1, mean, out.val[s]);
        CHECK(per[0] != per[1] && per[1] != per[2], "%s: the batches are distinct (%.9g %.9g %.9g)", l->name, per[0],
              per[1], per[2]);
    }
    hp_data_close(val);
    hp_trainer_free(a);
    hp_trainer_free(b);
    out.ok = 1;
    return out;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int world;
    MPI_Comm_rank(MPI_COMM_WORLD, &g_wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    if (world != 2) {
        if (g_wrank == 0) fprintf(stderr, "test_validation: run on 2 ranks (mpiexec -np 2)\n");
        MPI_Finalize();
        return 2;
    }
    // the one-process reference: each rank alone (both must agree too)
    MPI_Comm self;
    MPI_Comm_split(MPI_COMM_WORLD, g_wrank, 0, &self);
    const layout one = { "1 process", "tiny", 1, 1, 1, 1, 1 }, one_moe = { "1 process moe", "tiny-moe", 1, 1, 1, 1, 1 };
    const outcome ref = run_layout(self, &one), ref_moe = run_layout(self, &one_moe);
    MPI_Comm_free(&self);
    for (int s = 0; s < STEPS; s++)
        CHECK(same_everywhere(MPI_COMM_WORLD, ref.val[s]), "1 process: the two ranks' runs differ at step %d", s + 1);

    const layout layouts[] = {
        { "dp_shard 2", "tiny", 2, 1, 1, 1, 1 }, { "tp 2", "tiny", 1, 2, 1, 1, 1 }, { "cp 2", "tiny", 1, 1, 2, 1, 1 },
        { "pp 2", "tiny", 1, 1, 1, 2, 1 }, { "moe dp_shard 2 ep 2", "tiny-moe", 2, 1, 1, 1, 2 },
    };
    for (size_t i = 0; i < sizeof layouts / sizeof layouts[0]; i++) {
        const layout *l = &layouts[i];
        const outcome o = run_layout(MPI_COMM_WORLD, l);
        const outcome *r = strcmp(l->model, "tiny") ? &ref_moe : &ref;
        if (!o.ok || !r->ok) continue;
        double worst = 0.0;
        for (int s = 0; s < STEPS; s++) {
            const double rel = fabs(o.val[s] - r->val[s]) / fabs(r->val[s]);
            if (rel > worst) worst = rel;
            CHECK(rel <= 1e-5, "%s: step %d: round loss %.9g, one process %.9g (relative %.2e > 1e-5)", l->name, s + 1,
                  o.val[s], r->val[s], rel);
        }
        if (g_wrank == 0)
            printf("%-22s rounds after steps 1..%d: %.7f %.7f %.7f, worst relative difference to 1 process %.2e\n",
                   l->name, STEPS, o.val[0], o.val[1], o.val[2], worst);
    }
    int fail = g_fail, pass = g_pass;
    MPI_Allreduce(MPI_IN_PLACE, &fail, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &pass, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (g_wrank == 0) printf("test_validation: %d passed, %d failed\n", pass, fail);
    MPI_Finalize();
    return fail ? 1 : 0;
}
