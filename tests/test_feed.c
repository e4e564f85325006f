// test_feed.c - the program's own batch (hp_trainer_feed / hp_trainer_step_batch, train.h)
// against the built-in data path, on 1, 2 or 4 ranks (the layouts of the world size it is
// started on):
//   - STEPS steps fed the ids a data source would have given are bit for bit the steps
//     hp_trainer_step takes from it: loss, grad norm, lr and, at the end, every parameter;
//     both batch forms (rows of S+1 ids; S inputs + S labels), the same traffic counters
//     (the feed's own check is outside the step's bytes), and both sources: synthetic
//     ids (read with hp_trainer_sequence) and an llm.c shard this test writes, whose windows
//     it cuts itself ((step-1)*B + g mod Nw, docs/data.md), wrapping past the shard's end;
//   - bad batches (an id >= vocab, a negative id, a label that is neither an id nor -100,
//     wrong n_seqs / seq_len, no tokens, ranks that pass different batches, a bad id on one
//     rank only) return HP_EXIT_CONFIG with one line, the same line on every rank, and change
//     nothing: the next fed step is again the data path's step, bit for bit;
//   - a fed step does not stick: the step after it, unfed, reads the data source again;
//   - labels -100 are accepted and leave the loss finite.
//   mpiexec -np 1|2|4 test_feed [WORKDIR]
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "hyperpar/optim.h"
#include "hyperpar/train.h"
#include "test_mpi_check.h"

enum { STEPS = 4, B = 8, S = 16, NW = 20 };   // NW windows in the shard: steps 3 and 4 wrap

typedef struct layout { const char *name; int dp_shard, tp, cp, pp, M; } layout;

static const char *g_shard;   // the llm.c shard (written by rank 0)
static int g_quiet;           // the refusals' lines are printed for the first case only
static int32_t g_tokens[NW * (S + 1) + 5];   // its ids (a 5-token tail: not a window)

static hp_trainer *make(const layout *l, const char *data, hp_run_config *rc) {
    int world;
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    hp_model_config m;
    hp_model_config_by_name("tiny", &m);
    hp_run_config_default(rc);
    rc->seq_len = S;
    rc->batch = B;
    rc->steps = STEPS;
    rc->microbatches = l->M;
    rc->optimizer = HP_OPT_ADAMW;
    rc->lr = 3e-3f;
    rc->warmup_steps = 2;        // the lr moves: 1.5e-3, 3e-3, then the decay
    rc->decay_ratio = -1;
    rc->total_steps = STEPS + 3;
    rc->max_norm = 1.0f;
    rc->data_path = data;
    hp_dims d = hp_dims_default();
    d.dp_shard = l->dp_shard;
    d.tp = l->tp;
    d.cp = l->cp;
    d.pp = l->pp;
    d.world = world;
    char err[512];
    if (hp_dims_validate(&d, &m, rc, err, sizeof err) != 0) {
        CHECK(0, "%s: %s", l->name, err);
        return NULL;
    }
    hp_trainer *tr = hp_trainer_init(MPI_COMM_WORLD, &m, &d, rc, err, sizeof err);
    CHECK(tr != NULL, "%s: %s", l->name, err);
    return tr;
}

// The global batch of `step` as the source gives it: rows of S+1 ids. Synthetic: what
// hp_trainer_sequence reads (the trainer `src`); the shard: its windows, cut here.
static void source_batch(hp_trainer *src, int step, int32_t *ids) {
    int row[S + 1];
    for (int g = 0; g < B; g++) {
        if (src) {
            hp_trainer_sequence(src, row, step, g);
            for (int i = 0; i <= S; i++) ids[g * (S + 1) + i] = row[i];
        } else {
            const int w = ((step - 1) * B + g) % NW;
            memcpy(ids + g * (S + 1), g_tokens + (size_t)w * (S + 1), (S + 1) * sizeof(int32_t));
        }
    }
}

// The same batch as S inputs + S labels.
static void split_batch(const int32_t *ids, int32_t *in, int32_t *tg) {
    for (int g = 0; g < B; g++)
        for (int i = 0; i < S; i++) {
            in[g * S + i] = ids[g * (S + 1) + i];
            tg[g * S + i] = ids[g * (S + 1) + i + 1];
        }
}

static int same_bits(double a, double b) { return memcmp(&a, &b, sizeof a) == 0; }

static int same_stats(const hp_step_stats *a, const hp_step_stats *b) {
    return a->step == b->step && same_bits(a->loss, b->loss) && same_bits(a->grad_norm, b->grad_norm) &&
           same_bits(a->lr, b->lr);
}

// 1 when the string is the same on every rank.
static int same_line_everywhere(const char *s) {
    uint64_t h = 1469598103934665603ull;
    for (const char *p = s; *p; p++) h = (h ^ (unsigned char)*p) * 1099511628211ull;
    unsigned long long v[2] = { h, ~h };
    MPI_Allreduce(MPI_IN_PLACE, v, 2, MPI_UNSIGNED_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
    return v[0] == h && v[1] == ~h;
}

// A refused batch: HP_EXIT_CONFIG, one line holding `want`, alike on every rank.
static void expect_refused(hp_trainer *tr, const char *name, const char *what, const hp_batch *b, const char *want) {
    char err[512] = "";
    hp_step_stats st;
    memset(&st, 0, sizeof st);
    const int rc = hp_trainer_step_batch(tr, b, &st, err, sizeof err);
    CHECK(rc == HP_EXIT_CONFIG, "%s: %s: returned %d, want %d (HP_EXIT_CONFIG)", name, what, rc, HP_EXIT_CONFIG);
    CHECK(strstr(err, want) != NULL && strchr(err, '\n') == NULL, "%s: %s: the line '%s' lacks '%s'", name, what,
          err, want);
    CHECK(same_line_everywhere(err), "%s: %s: the ranks got different lines (here '%s')", name, what, err);
    CHECK(st.step == 0, "%s: %s: a refused batch filled the stats (step %d)", name, what, st.step);
    if (g_wrank == 0 && !g_quiet) printf("  refused (%s): %s\n", what, err);
}

static float *gather(hp_trainer *tr) {
    const size_t n = (size_t)hp_trainer_params(tr)->full_numel;
    float *full = g_wrank == 0 ? malloc(n * sizeof(float)) : NULL;
    hp_trainer_gather_params(tr, full);
    return full;
}

// One layout, one source (shard: the llm.c file, else synthetic ids).
static void run_case(const layout *l, int shard) {
    char name[128];
    snprintf(name, sizeof name, "%s, %s", l->name, shard ? "llm.c shard" : "synthetic");
    hp_run_config rc;
    // ref: the data path; fed: rows of S+1; split: S inputs + S labels
    hp_trainer *ref = make(l, shard ? g_shard : NULL, &rc), *fed = make(l, NULL, &rc), *split = make(l, NULL, &rc);
    if (!ref || !fed || !split) { hp_trainer_free(ref); hp_trainer_free(fed); hp_trainer_free(split); return; }
    hp_trainer *src = shard ? NULL : ref;
    int32_t ids[B * (S + 1)], in[B * S], tg[B * S];
    double loss[STEPS + 3] = { 0 }, lr[STEPS + 3] = { 0 };   // (steps 1 .. STEPS+2)
    int equal = 1;
    char err[512];
    for (int s = 1; s <= STEPS; s++) {
        hp_step_stats a, b, c;
        CHECK(hp_trainer_step(ref, &a) == 0, "%s: step %d of the data path failed", name, s);
        source_batch(src, s, ids);
        split_batch(ids, in, tg);
        const hp_batch rows = { .tokens = ids, .n_seqs = B, .seq_len = S };
        const hp_batch two = { .tokens = in, .labels = tg, .n_seqs = B, .seq_len = S };
        err[0] = '\0';
        CHECK(hp_trainer_step_batch(fed, &rows, &b, err, sizeof err) == 0, "%s: step %d fed: %s", name, s, err);
        CHECK(hp_trainer_step_batch(split, &two, &c, err, sizeof err) == 0, "%s: step %d fed (labels): %s", name, s,
              err);
        equal &= same_stats(&a, &b) && same_stats(&a, &c);
        CHECK(same_stats(&a, &b), "%s: step %d: data path loss %.17g grad norm %.17g lr %.9g, fed %.17g %.17g %.9g",
              name, s, a.loss, a.grad_norm, a.lr, b.loss, b.grad_norm, b.lr);
        CHECK(same_stats(&a, &c), "%s: step %d: data path loss %.17g grad norm %.17g, fed with labels %.17g %.17g",
              name, s, a.loss, a.grad_norm, c.loss, c.grad_norm);
        uint64_t ba[HP_G_COUNT][HP_OP_COUNT], bb[HP_G_COUNT][HP_OP_COUNT];
        hp_trainer_step_bytes(ref, ba);
        hp_trainer_step_bytes(fed, bb);
        CHECK(memcmp(ba, bb, sizeof ba) == 0, "%s: step %d: the fed step's traffic counters differ", name, s);
        CHECK(a.lr == (double)hp_lr_at(&rc, s) && a.step == s, "%s: step %d: st.lr %.9g, the schedule's %.9g", name,
              s, a.lr, (double)hp_lr_at(&rc, s));
        loss[s] = a.loss;
        lr[s] = a.lr;
    }
    CHECK(lr[1] != lr[2] && lr[2] != lr[STEPS], "%s: the lr did not move (%g %g %g)", name, lr[1], lr[2], lr[STEPS]);
    float *pa = gather(ref), *pb = gather(fed), *pc = gather(split);
    const size_t n = (size_t)hp_trainer_params(ref)->full_numel;
    if (g_wrank == 0) {
        CHECK(memcmp(pa, pb, n * sizeof(float)) == 0, "%s: the parameters after %d steps differ (fed)", name, STEPS);
        CHECK(memcmp(pa, pc, n * sizeof(float)) == 0, "%s: the parameters after %d steps differ (labels)", name, STEPS);
        equal &= memcmp(pa, pb, n * sizeof(float)) == 0 && memcmp(pa, pc, n * sizeof(float)) == 0;
    }
    free(pa); free(pb); free(pc);

    // bad batches on `fed`: refused, alike everywhere, nothing changed
    if (g_wrank == 0 && !g_quiet) printf("%s: bad batches at step %d, every rank's line:\n", name, STEPS + 1);
    const int s = STEPS + 1;
    source_batch(src, s, ids);
    split_batch(ids, in, tg);
    int32_t bad[B * (S + 1)];
    const hp_batch rows = { .tokens = ids, .n_seqs = B, .seq_len = S };
    const hp_batch badrows = { .tokens = bad, .n_seqs = B, .seq_len = S };
    memcpy(bad, ids, sizeof bad);
    bad[3 * (S + 1) + 5] = 256;   // the vocab is 256
    expect_refused(fed, name, "id >= vocab", &badrows, "token id 256 at sequence 3, position 5 is outside the vocabulary [0, 256)");
    memcpy(bad, ids, sizeof bad);
    bad[B * (S + 1) - 1] = -1;
    expect_refused(fed, name, "negative id", &badrows, "token id -1 at sequence 7, position 16");
    int32_t badtg[B * S];
    memcpy(badtg, tg, sizeof badtg);
    badtg[2] = -7;
    const hp_batch badlab = { .tokens = in, .labels = badtg, .n_seqs = B, .seq_len = S };
    expect_refused(fed, name, "label -7", &badlab, "label -7 at sequence 0, position 2 is neither an id");
    const hp_batch short_batch = { .tokens = ids, .n_seqs = B - 1, .seq_len = S };
    expect_refused(fed, name, "n_seqs", &short_batch, "a batch of 7 x 16, the trainer's is 8 sequences (run.batch) x 16");
    const hp_batch long_seq = { .tokens = ids, .n_seqs = B, .seq_len = S + 1 };
    expect_refused(fed, name, "seq_len", &long_seq, "x 16 positions (run.seq_len)");
    const hp_batch none = { .n_seqs = B, .seq_len = S };
    expect_refused(fed, name, "no tokens", &none, "tokens NULL");
    expect_refused(fed, name, "no batch", NULL, "tokens NULL");
    int world;
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    if (world > 1) {
        memcpy(bad, ids, sizeof bad);
        if (g_wrank == 1) bad[0] = (bad[0] + 1) % 256;   // a rank-dependent batch
        expect_refused(fed, name, "ranks differ", &badrows, "the ranks passed different batches");
        memcpy(bad, ids, sizeof bad);
        if (g_wrank == world - 1) bad[S] = 300;   // bad on one rank only: every rank refuses
        expect_refused(fed, name, "bad on one rank", &badrows, "token id 300 at sequence 0, position 16");
    }
    // the refusals changed nothing: fed step STEPS+1 is the data path's, bit for bit
    hp_step_stats a, b;
    CHECK(hp_trainer_step(ref, &a) == 0, "%s: step %d of the data path failed", name, s);
    CHECK(hp_trainer_step_batch(fed, &rows, &b, err, sizeof err) == 0, "%s: step %d fed: %s", name, s, err);
    CHECK(same_stats(&a, &b), "%s: step %d after the refusals: data path %.17g %.17g, fed %.17g %.17g", name, s,
          a.loss, a.grad_norm, b.loss, b.grad_norm);
    equal &= same_stats(&a, &b);
    loss[s] = a.loss;
    // a fed step does not stick: the next, unfed, reads the data source (synthetic: the same
    // ids as ref's; the shard's fed trainer reads synthetic ids, so only the synthetic case)
    if (!shard) {
        CHECK(hp_trainer_step(ref, &a) == 0 && hp_trainer_step(fed, &b) == 0, "%s: step %d failed", name, s + 1);
        CHECK(same_stats(&a, &b), "%s: step %d unfed after fed ones: %.17g / %.17g", name, s + 1, a.loss, b.loss);
        equal &= same_stats(&a, &b);
        loss[s + 1] = a.loss;
    }
    // labels -100: ignored, the loss stays finite
    for (int i = 0; i < B * S; i += 2) tg[i] = -100;
    const hp_batch masked = { .tokens = in, .labels = tg, .n_seqs = B, .seq_len = S };
    hp_step_stats c;
    CHECK(hp_trainer_step_batch(split, &masked, &c, err, sizeof err) == 0 && isfinite(c.loss),
          "%s: half the labels -100: rc, loss %g (%s)", name, c.loss, err);
    if (g_wrank == 0)
        printf("%-32s %d steps fed = data path bit for bit (loss, grad norm, lr, %zu params): %s; losses %.6f %.6f "
               "%.6f %.6f | %.6f; masked step %.6f\n",
               name, STEPS + 1 + !shard, n, equal ? "yes" : "NO", loss[1], loss[2], loss[3], loss[4], loss[5], c.loss);
    hp_trainer_free(ref);
    hp_trainer_free(fed);
    hp_trainer_free(split);
    g_quiet = 1;
}

// An llm.c shard (uint16, version 1: a 1024-byte header of 256 LE int32) of NW windows and a
// tail, written by rank 0: the bytes of a short text, over and over, each pass shifted.
static int write_shard(const char *path) {
    static const char text[] = "It was the best of times, it was the worst of times; a library a program can drive. ";
    const int ntok = (int)(sizeof g_tokens / sizeof g_tokens[0]);
    for (int i = 0; i < ntok; i++) g_tokens[i] = (unsigned char)text[(i + i / 83) % (int)(sizeof text - 1)];
    int ok = 1;
    if (g_wrank == 0) {
        FILE *f = fopen(path, "wb");
        int32_t header[256] = { 20240520, 1, ntok };
        uint16_t *tok = malloc((size_t)ntok * sizeof *tok);
        for (int i = 0; tok && i < ntok; i++) tok[i] = (uint16_t)g_tokens[i];
        ok = f && tok && fwrite(header, sizeof header, 1, f) == 1 && fwrite(tok, sizeof *tok, (size_t)ntok, f) == (size_t)ntok;
        if (f && fclose(f) != 0) ok = 0;
        free(tok);
    }
    MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
    return ok;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int world;
    MPI_Comm_rank(MPI_COMM_WORLD, &g_wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    char path[1024];
    snprintf(path, sizeof path, "%s/feed_np%d.bin", argc > 1 ? argv[1] : ".", world);
    g_shard = path;
    const layout one[] = { { "1 process, 2 microbatches", 1, 1, 1, 1, 2 } };
    const layout two[] = { { "dp_shard 2, 2 microbatches", 2, 1, 1, 1, 2 }, { "cp 2", 1, 1, 2, 1, 1 } };
    const layout four[] = { { "tp 2 x dp_shard 2", 2, 2, 1, 1, 1 }, { "pp 2 x dp_shard 2, 2 mb", 2, 1, 1, 2, 2 },
                            { "cp 2 x dp_shard 2", 2, 1, 2, 1, 1 } };
    const layout *ls = world == 1 ? one : world == 2 ? two : world == 4 ? four : NULL;
    const int nl = world == 1 ? 1 : world == 2 ? 2 : 3;
    if (!ls) {
        if (g_wrank == 0) fprintf(stderr, "test_feed: run on 1, 2 or 4 ranks\n");
        MPI_Finalize();
        return 2;
    }
    CHECK(write_shard(path), "cannot write %s", path);
    for (int i = 0; i < nl; i++) {
        run_case(&ls[i], 0);
        run_case(&ls[i], 1);
    }
    if (g_wrank == 0) remove(path);
    int fail = g_fail, pass = g_pass;
    MPI_Allreduce(MPI_IN_PLACE, &fail, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &pass, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (g_wrank == 0) printf("test_feed: %d ranks, %d passed, %d failed\n", world, pass, fail);
    MPI_Finalize();
    return fail ? 1 : 0;
}
