// test_generate.c - generation (generate.h) against the training forward and across layouts,
// on 1, 2 or 4 ranks (the layouts of the world size it is started on):
//   - the KV cache: a sequence fed one token at a time gives, position by position, the
//     cross-entropy the training forward (hp_trainer on one process) computes for it, and
//     the last logits of a one-forward prefill equal those of the token-by-token run;
//   - every layout (tp, pp, tp x pp) gives the one process's logits within 1e-5 at every
//     position, and the same greedy ids (compared while the reference's top two logits are
//     apart by more than the tolerance: a near tie may fall either way) and seeded samples;
//   - the sampler: greedy takes the first of tied maxima, top_k 1 and a tiny top_p are
//     greedy at any temperature, a seed repeats its draws, and at temperature 1 the draws
//     follow the softmax (frequencies within 5 sigma over 20000 draws);
//   - the refusals: a prompt past the cache's room, a degree other than tp / pp.
//   mpiexec -np 1|2|4 test_generate
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "hyperpar/generate.h"
#include "hyperpar/params.h"
#include "hyperpar/train.h"
#include "test_mpi_check.h"

enum { T = 24, NEW = 20, ROOM = 64 };

typedef struct layout { const char *name; int tp, pp; } layout;

static int one_process(hp_dims *d, const hp_model_config *m, hp_run_config *rc) {
    char err[512];
    *d = hp_dims_default();
    d->dp_shard = 1;
    d->world = 1;
    return hp_dims_validate(d, m, rc, err, sizeof err);
}

// The initial model of seed 7 with the output projection scaled up, so that the logits spread
// and greedy choices are rarely near ties.
static float *model_full(const hp_model_config *m, int64_t *numel) {
    hp_run_config rc;
    hp_run_config_default(&rc);
    hp_dims d;
    hp_param_table t;
    if (one_process(&d, m, &rc) != 0 || hp_params_build(&t, m, &d, 0) != 0) return NULL;
    float *full = malloc((size_t)t.full_numel * sizeof(float));
    if (full) {
        hp_params_init_full(&t, 7, full);
        for (int i = 0; i < t.n; i++)
            if (!strcmp(t.p[i].name, "output.weight"))
                for (int64_t k = 0; k < t.p[i].full_numel; k++) full[t.p[i].full_offset + k] *= 12.0f;
    }
    *numel = t.full_numel;
    hp_params_free(&t);
    return full;
}

// The training forward's mean cross-entropy of ids[0..T] (T positions) on one process.
static double trainer_loss(const hp_model_config *m, const float *full, const int32_t *ids) {
    hp_run_config rc;
    hp_run_config_default(&rc);
    rc.seq_len = T;
    rc.batch = 1;
    hp_dims d;
    char err[512];
    if (one_process(&d, m, &rc) != 0) return NAN;
    hp_trainer *tr = hp_trainer_init(MPI_COMM_SELF, m, &d, &rc, err, sizeof err);
    CHECK(tr != NULL, "trainer: %s", err);
    if (!tr) return NAN;
    hp_trainer_set_params(tr, full);
    const hp_batch b = { ids, NULL, 1, T };
    double loss = NAN;
    if (hp_trainer_feed(tr, &b, err, sizeof err) == 0) loss = hp_trainer_forward_backward(tr);
    else CHECK(0, "feed: %s", err);
    hp_trainer_free(tr);
    return loss;
}

static double cross_entropy(const float *logits, int V, int target) {
    double mx = logits[0], sum = 0.0;
    for (int i = 1; i < V; i++) if (logits[i] > mx) mx = logits[i];
    for (int i = 0; i < V; i++) sum += exp((double)logits[i] - mx);
    return log(sum) + mx - logits[target];
}

static double max_rel(const float *a, const float *b, int n) {
    double worst = 0.0, scale = 1e-3;
    for (int i = 0; i < n; i++) if (fabs(b[i]) > scale) scale = fabs(b[i]);
    for (int i = 0; i < n; i++) { const double e = fabs((double)a[i] - b[i]) / scale; if (e > worst) worst = e; }
    return worst;
}

static hp_decoder *decoder(MPI_Comm comm, const hp_model_config *m, int tp, int pp, const float *full) {
    int world;
    MPI_Comm_size(comm, &world);
    hp_dims d = hp_dims_default();
    d.dp_shard = 1;
    d.tp = tp;
    d.pp = pp;
    d.world = world;
    char err[512];
    if (hp_dims_validate(&d, m, NULL, err, sizeof err) != 0) { CHECK(0, "dims: %s", err); return NULL; }
    hp_decoder *dec = hp_decoder_init(comm, m, &d, full, ROOM, err, sizeof err);
    CHECK(dec != NULL, "decoder tp %d pp %d: %s", tp, pp, err);
    return dec;
}

// Token by token over ids[0..n): the logits after each position into logits[n][V].
static void stepwise(hp_decoder *dec, const int *ids, int n, float *logits) {
    const int V = hp_decoder_vocab(dec);
    hp_decoder_reset(dec);
    for (int i = 0; i < n; i++) CHECK(hp_decoder_forward(dec, ids + i, 1, logits + (size_t)i * V) == 0, "forward %d", i);
    CHECK(hp_decoder_position(dec) == n, "position %d after %d tokens", hp_decoder_position(dec), n);
}

// The KV cache against the training forward, on one process (every rank alone).
static void check_cache(const hp_model_config *m, const float *full, const int32_t *ids) {
    hp_decoder *dec = decoder(MPI_COMM_SELF, m, 1, 1, full);
    if (!dec) return;
    const int V = hp_decoder_vocab(dec);
    float *steps = malloc((size_t)T * V * sizeof(float)), *prefill = malloc((size_t)V * sizeof(float));
    int prompt[T];
    for (int i = 0; i < T; i++) prompt[i] = ids[i];
    stepwise(dec, prompt, T, steps);
    double ce = 0.0;
    for (int i = 0; i < T; i++) ce += cross_entropy(steps + (size_t)i * V, V, ids[i + 1]);
    ce /= T;
    const double want = trainer_loss(m, full, ids);
    CHECK(fabs(ce - want) <= 1e-5 * fabs(want), "%s: the cache's cross-entropy %.9f, the training forward's %.9f",
          m->name, ce, want);
    hp_decoder_reset(dec);
    CHECK(hp_decoder_forward(dec, prompt, T, prefill) == 0, "prefill");
    const double e = max_rel(prefill, steps + (size_t)(T - 1) * V, V);
    CHECK(e <= 1e-5, "%s: prefill's last logits differ from the token-by-token run's by %.3g", m->name, e);
    // the cache's room is a hard limit: T more positions do not fit in ROOM - T
    int more[ROOM];
    for (int i = 0; i < ROOM; i++) more[i] = i % V;
    CHECK(hp_decoder_forward(dec, more, ROOM - T + 1, prefill) == -1, "a forward past the cache's room was taken");
    CHECK(hp_decoder_position(dec) == T, "a refused forward moved the position to %d", hp_decoder_position(dec));
    if (g_wrank == 0)
        printf("%s: KV cache: cross-entropy %.9f vs the training forward's %.9f (rel %.2e); prefill vs steps %.2e\n",
               m->name, ce, want, fabs(ce - want) / want, e);
    free(steps);
    free(prefill);
    hp_decoder_free(dec);
}

// A layout against one process: logits at every position, greedy ids, seeded samples.
static void check_layout(const hp_model_config *m, const float *full, const int32_t *ids, const layout *l) {
    hp_decoder *ref = decoder(MPI_COMM_SELF, m, 1, 1, full);
    hp_decoder *dec = decoder(MPI_COMM_WORLD, m, l->tp, l->pp, full);
    if (!ref || !dec) { hp_decoder_free(ref); hp_decoder_free(dec); return; }
    const int V = hp_decoder_vocab(dec);
    float *a = malloc((size_t)T * V * sizeof(float)), *b = malloc((size_t)T * V * sizeof(float));
    int prompt[T];
    for (int i = 0; i < T; i++) prompt[i] = ids[i];
    stepwise(ref, prompt, T, a);
    stepwise(dec, prompt, T, b);
    double worst = 0.0;
    for (int i = 0; i < T; i++) { const double e = max_rel(b + (size_t)i * V, a + (size_t)i * V, V); if (e > worst) worst = e; }
    CHECK(worst <= 1e-5, "%s %s: logits differ from one process's by %.3g", m->name, l->name, worst);

    // greedy: the same ids while the reference's choice is clear of a near tie
    const hp_sampling greedy = { 0.0f, 0, 1.0f, 0 };
    int out_a[NEW], out_b[NEW];
    const int na = hp_generate(ref, prompt, 4, NEW, &greedy, -1, out_a, NULL, NULL, NULL);
    const int nb = hp_generate(dec, prompt, 4, NEW, &greedy, -1, out_b, NULL, NULL, NULL);
    CHECK(na == NEW && nb == NEW, "greedy wrote %d and %d tokens, want %d", na, nb, NEW);
    int same = 0;
    {   // the margins of the reference's choices, replayed
        float *lg = malloc((size_t)V * sizeof(float));
        hp_decoder_reset(ref);
        hp_decoder_forward(ref, prompt, 4, lg);
        for (int i = 0; i < NEW && i < na && i < nb; i++) {
            float top = -INFINITY, second = -INFINITY;
            for (int v = 0; v < V; v++) {
                if (lg[v] > top) { second = top; top = lg[v]; }
                else if (lg[v] > second) second = lg[v];
            }
            if (top - second <= 1e-5f * fabsf(top)) break;   // a near tie: either is right
            CHECK(out_a[i] == out_b[i], "%s %s: greedy token %d is %d, one process's %d", m->name, l->name, i, out_b[i], out_a[i]);
            if (out_a[i] != out_b[i]) break;
            same++;
            hp_decoder_forward(ref, out_a + i, 1, lg);
        }
        free(lg);
    }
    CHECK(same >= NEW / 2, "%s %s: only %d greedy tokens compared", m->name, l->name, same);
    // seeded sampling: the same draws on every layout
    const hp_sampling s = { 0.9f, 40, 0.95f, 5 };
    int sa[NEW], sb[NEW];
    const int ka = hp_generate(ref, prompt, 4, NEW, &s, -1, sa, NULL, NULL, NULL);
    const int kb = hp_generate(dec, prompt, 4, NEW, &s, -1, sb, NULL, NULL, NULL);
    CHECK(ka == kb && ka == NEW && !memcmp(sa, sb, sizeof sa), "%s %s: seeded samples differ from one process's",
          m->name, l->name);
    if (g_wrank == 0)
        printf("%s %s: logits within %.2e of one process; %d greedy ids equal; %d seeded samples equal\n",
               m->name, l->name, worst, same, ka);
    free(a);
    free(b);
    hp_decoder_free(ref);
    hp_decoder_free(dec);
}

static void check_sampler(void) {
    enum { V = 6, DRAWS = 20000 };
    float scratch[2 * V];
    const float tied[V] = { 0.5f, 2.0f, -1.0f, 2.0f, 0.0f, 1.0f };
    const hp_sampling greedy = { 0.0f, 0, 1.0f, 1 };
    CHECK(hp_sample_token(tied, V, &greedy, 0, scratch) == 1, "greedy: a tie goes to the lower id");
    const hp_sampling k1 = { 2.0f, 1, 1.0f, 3 }, p0 = { 2.0f, 0, 1e-6f, 3 };
    const float clear[V] = { 0.5f, 2.0f, -1.0f, 2.5f, 0.0f, 1.0f };
    for (uint64_t draw = 0; draw < 50; draw++) {
        CHECK(hp_sample_token(clear, V, &k1, draw, scratch) == 3, "top_k 1 is greedy");
        CHECK(hp_sample_token(clear, V, &p0, draw, scratch) == 3, "a tiny top_p is greedy");
    }
    const hp_sampling t1 = { 1.0f, 0, 1.0f, 11 }, t1_other = { 1.0f, 0, 1.0f, 12 };
    double p[V], total = 0.0;
    for (int i = 0; i < V; i++) total += (p[i] = exp(clear[i]));
    int count[V] = { 0 }, differ = 0;
    for (uint64_t draw = 0; draw < DRAWS; draw++) {
        const int x = hp_sample_token(clear, V, &t1, draw, scratch);
        CHECK(x == hp_sample_token(clear, V, &t1, draw, scratch), "draw %llu: the same seed drew another token",
              (unsigned long long)draw);
        differ += x != hp_sample_token(clear, V, &t1_other, draw, scratch);
        if (x >= 0 && x < V) count[x]++;
    }
    for (int i = 0; i < V; i++) {
        const double q = p[i] / total, sigma = sqrt(DRAWS * q * (1 - q));
        CHECK(fabs(count[i] - DRAWS * q) <= 5 * sigma + 1, "token %d drawn %d times, the softmax says %.0f", i, count[i],
              DRAWS * q);
    }
    CHECK(differ > DRAWS / 4, "another seed changed only %d of %d draws", differ, DRAWS);
    // top_k 2 at temperature 1: only the two highest (ids 3 and 1) are ever drawn
    const hp_sampling k2 = { 1.0f, 2, 1.0f, 4 };
    for (uint64_t draw = 0; draw < 200; draw++) {
        const int x = hp_sample_token(clear, V, &k2, draw, scratch);
        CHECK(x == 1 || x == 3, "top_k 2 drew %d", x);
    }
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int world;
    MPI_Comm_rank(MPI_COMM_WORLD, &g_wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    check_sampler();
    const char *models[] = { "tiny", "tiny-moe" };
    for (int k = 0; k < 2; k++) {
        hp_model_config m;
        hp_model_config_by_name(models[k], &m);
        int64_t numel = 0;
        float *full = model_full(&m, &numel);
        CHECK(full != NULL, "no model");
        if (!full) break;
        int32_t ids[T + 1];
        for (int i = 0; i <= T; i++) ids[i] = (int32_t)((i * 37 + 11 * k + 5) % m.vocab_size);
        check_cache(&m, full, ids);
        static const layout by_world[][2] = { { { "1 process", 1, 1 }, { NULL, 0, 0 } },
                                              { { "tp 2", 2, 1 }, { "pp 2", 1, 2 } },
                                              { { "tp 4", 4, 1 }, { "tp 2 x pp 2", 2, 2 } } };
        const int w = world == 1 ? 0 : world == 2 ? 1 : 2;
        for (int i = 0; i < 2; i++)
            if (by_world[w][i].name) check_layout(&m, full, ids, &by_world[w][i]);
        if (world > 1) {   // a degree generation does not take: refused with one line, no rank stuck
            hp_dims d = hp_dims_default();
            d.dp_shard = world;
            d.world = world;
            char err[512] = "";
            hp_dims_validate(&d, &m, NULL, err, sizeof err);
            hp_decoder *bad = hp_decoder_init(MPI_COMM_WORLD, &m, &d, full, ROOM, err, sizeof err);
            CHECK(bad == NULL && err[0], "a dp_shard %d decoder was made", world);
            if (g_wrank == 0 && k == 0) printf("refused: %s\n", err);
            hp_decoder_free(bad);
        }
        free(full);
    }
    int fails = 0;
    MPI_Allreduce(&g_fail, &fails, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (g_wrank == 0) printf("%s: %d checks failed (world %d)\n", fails ? "FAIL" : "PASS", fails, world);
    MPI_Finalize();
    return fails ? 1 : 0;
}
