// metrics_log.c - hp run's logger (docs/metrics.md): on the logged steps,
// TorchTitan's line on rank 0 (torchtitan/components/metrics.py) and a "train" record of
// metrics.jsonl; after each validation round its line and "val" record; loss.svg rewritten
// each time.
// defines: hp_metrics_open, hp_metrics_logs, hp_metrics_step, hp_metrics_val, hp_metrics_sample,
//          hp_metrics_close
//
// Every figure is rank 0's but the memory high-water over the ranks (memory_gib_max), reduced on
// the logged steps, which every rank knows alike (the step number, or a stopped run's step).
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "hyperpar/metrics.h"
#include "util/file_io.h"
#include "hyperpar/memtrack.h"
#include "hyperpar/optim.h"

#define GIB (1024.0 * 1024.0 * 1024.0)

struct hp_metrics {
    const hp_job *job;
    MPI_Comm world;
    int rank, nranks;
    int active;                 // a line is printed or a file written (no --quiet, or a dump folder)
    int first_step;             // the run's first step (after --resume: the checkpoint's + 1)
    int curve_first;            // the curve's first step (after --resume: the earlier records')
    int64_t tokens_per_step;    // B x S, global
    hp_flops flops;
    double peak;                // FLOP/s of one rank
    char isa[16];
    char peak_source[32];       // given, kept, measured (metrics_peak.c)
    double mem_total;           // bytes of MemTotal (0: unknown)
    double t_start;
    int64_t tokens;             // since the last log
    double seconds;             // the steps' own wall time since the last log
    // rank 0's files
    char jsonl_path[4096], svg_path[4096], title[192];
    FILE *jsonl;
    int failed;                 // a write failed (said once)
    hp_svg_point *loss, *lr, *val;
    int n_train, cap_train, n_lr, cap_lr, n_val, cap_val;   // (n_lr = n_train)
};

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

// MemTotal of /proc/meminfo in bytes, 0 when unknown.
static double mem_total_bytes(void) {
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f) return 0.0;
    char line[256];
    double kib = 0.0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "MemTotal: %lf kB", &kib) == 1) break;
    fclose(f);
    return kib * 1024.0;
}

static void fail_once(hp_metrics *mt, const char *path) {
    if (!mt->failed) fprintf(stderr, "hp: cannot write '%s'\n", path);
    mt->failed = 1;
}

// "hp run: tiny, world 4 (dp_shard 2, tp 2), batch 8 x seq_len 32"
static void make_title(hp_metrics *mt) {
    const hp_job *job = mt->job;
    const hp_dims *d = &job->dims;
    const struct { const char *name; int v; } deg[] = {
        { "dp_replicate", d->dp_replicate }, { "dp_shard", d->dp_shard }, { "ulysses", d->ulysses },
        { "cp", d->cp }, { "tp", d->tp }, { "pp", d->pp }, { "ep", d->ep }, { "etp", d->etp },
    };
    char layout[128] = "";
    for (size_t i = 0; i < sizeof deg / sizeof deg[0]; i++) {
        if (deg[i].v <= 1) continue;
        const size_t n = strlen(layout);
        snprintf(layout + n, sizeof layout - n, "%s%s %d", n ? ", " : "", deg[i].name, deg[i].v);
    }
    snprintf(mt->title, sizeof mt->title, "hp run: %s, world %d%s%s%s, batch %d x seq_len %d", job->model.name,
             mt->nranks, *layout ? " (" : "", layout, *layout ? ")" : "", job->run.batch, job->run.seq_len);
}

static int push(hp_svg_point **p, int *n, int *cap, hp_svg_point x) {
    if (*n == *cap) {
        const int c = *cap ? 2 * *cap : 64;
        hp_svg_point *q = realloc(*p, (size_t)c * sizeof *q);
        if (!q) return -1;
        *p = q;
        *cap = c;
    }
    (*p)[(*n)++] = x;
    return 0;
}

// An earlier run's record, kept by a resume: a point of the curve, which then starts at its step
static void carry_point(void *ctx, char kind, int step, double loss, double lr) {
    hp_metrics *mt = ctx;
    int bad = 0;
    if (kind == 't')
        bad = push(&mt->loss, &mt->n_train, &mt->cap_train, (hp_svg_point){ step, loss }) != 0 ||
              push(&mt->lr, &mt->n_lr, &mt->cap_lr, (hp_svg_point){ step, lr }) != 0;
    else
        bad = push(&mt->val, &mt->n_val, &mt->cap_val, (hp_svg_point){ step, loss }) != 0;
    if (bad) fail_once(mt, mt->svg_path);
    if (step < mt->curve_first) mt->curve_first = step;
}

static void write_svg(hp_metrics *mt) {
    if (!mt->jsonl || mt->rank != 0) return;
    const int n = mt->n_train < mt->n_lr ? mt->n_train : mt->n_lr;
    if (hp_metrics_svg(mt->svg_path, mt->title, mt->curve_first, mt->job->run.steps, mt->loss, mt->lr, n,
                         mt->val, mt->n_val) != 0)
        fail_once(mt, mt->svg_path);
}

hp_metrics *hp_metrics_open(const hp_job *job, hp_trainer *tr, const hp_validation *val, int first_step,
                                int blas_threads, MPI_Comm world) {
    hp_metrics *mt = calloc(1, sizeof *mt);
    if (!mt) return NULL;
    mt->job = job;
    mt->world = world;
    MPI_Comm_rank(world, &mt->rank);
    MPI_Comm_size(world, &mt->nranks);
    mt->first_step = first_step;
    mt->tokens_per_step = (int64_t)job->run.batch * job->run.seq_len;
    mt->active = !job->quiet || job->dump_folder;
    hp_metrics_flops(&mt->flops, &job->model, hp_trainer_params(tr), job->run.seq_len);
    snprintf(mt->isa, sizeof mt->isa, "none");
    snprintf(mt->peak_source, sizeof mt->peak_source, "none");
    // one figure for the machine, not the share of it this start got: rank 0's, given, kept or
    // measured once while the other ranks sleep in the broadcast (metrics_peak.c)
    if (mt->active) {
        if (mt->rank == 0)
            mt->peak = hp_metrics_peak(job->peak_tflops, blas_threads, mt->isa, sizeof mt->isa,
                                         mt->peak_source, sizeof mt->peak_source);
        hp_mpi_broadcast(world, &mt->peak, 1, MPI_DOUBLE, 0, "metrics-peak");
    }
    mt->mem_total = mem_total_bytes();
    if (mt->rank == 0 && job->dump_folder) {
        make_title(mt);
        snprintf(mt->jsonl_path, sizeof mt->jsonl_path, "%s/metrics.jsonl", job->dump_folder);
        snprintf(mt->svg_path, sizeof mt->svg_path, "%s/loss.svg", job->dump_folder);
        hp_metrics_job j = { job, mt->nranks, first_step, blas_threads, mt->flops, mt->peak, mt->isa,
                               mt->peak_source, mt->mem_total / GIB, val };
        // a resumed run continues the earlier records (those before its first step) and curve
        unsigned char *earlier = NULL;
        size_t earlier_len = 0;
        const char *why = NULL;
        if (first_step > 1 && hp_file_read(mt->jsonl_path, &earlier, &earlier_len, &why) != 0) earlier = NULL;
        mt->curve_first = first_step;
        if (hp_make_parent_dir(mt->jsonl_path) != 0 || !(mt->jsonl = fopen(mt->jsonl_path, "w")) ||
            (earlier && hp_metrics_jsonl_carry(mt->jsonl, (const char *)earlier, earlier_len, first_step,
                                                 carry_point, mt) < 0) ||
            hp_metrics_jsonl_job(mt->jsonl, &j) != 0)
            fail_once(mt, mt->jsonl_path);
        free(earlier);
    }
    hp_mem_reset_interval_peak();   // the first line's high-water counts from here
    mt->t_start = now_s();
    return mt;
}

// "eta: 5m12s (10.0%)": the steps left at the mean wall time a step of this run has taken so
// far, the rounds, samples and saves between them included (nanochat's line has it), and the
// share of the job's steps done. (Wall time since the logger started: mt->seconds counts the
// steps' own time since the last line only.)
static const char *progress(const hp_metrics *mt, int step, char *buf, size_t n) {
    const int done = step - mt->first_step + 1, total = mt->job->run.steps;
    const double left = done > 0 ? (now_s() - mt->t_start) / done * (total - step) : 0.0;
    const long s = (long)(left + 0.5);
    const double pct = total > 0 ? 100.0 * step / total : 100.0;
    if (s >= 3600) snprintf(buf, n, "eta: %ldh%02ldm (%.1f%%)", s / 3600, s / 60 % 60, pct);
    else if (s >= 60) snprintf(buf, n, "eta: %ldm%02lds (%.1f%%)", s / 60, s % 60, pct);
    else snprintf(buf, n, "eta: %lds (%.1f%%)", s, pct);
    return buf;
}

int hp_metrics_logs(const hp_metrics *mt, int step) {
    return step == mt->first_step || step % mt->job->log_freq == 0 || step == mt->job->run.steps;
}

void hp_metrics_step(hp_metrics *mt, const hp_step_stats *st, double seconds, int force) {
    mt->tokens += mt->tokens_per_step;
    mt->seconds += seconds;
    if (!mt->active || !(force || hp_metrics_logs(mt, st->step))) return;
    hp_mem_stats ms;
    hp_mem_get_stats(&ms);
    const double mine = (double)ms.interval_peak;
    double most = mine;
    MPI_Reduce(&mine, &most, 1, MPI_DOUBLE, MPI_MAX, 0, mt->world);
    hp_mem_reset_interval_peak();
    if (mt->rank == 0) {
        hp_metrics_train t = { 0 };
        t.step = st->step;
        t.loss = st->loss;
        t.grad_norm = st->grad_norm;
        t.lr = (double)hp_lr_at(&mt->job->run, st->step);   // lr_k: the one step k used
        t.tokens_seen = (int64_t)st->step * mt->tokens_per_step;
        t.elapsed_s = now_s() - mt->t_start;
        t.memory_gib = mine / GIB;
        t.memory_gib_max = most / GIB;
        t.memory_pct = mt->mem_total > 0 ? 100.0 * mine / mt->mem_total : 0.0;
        t.tps = mt->seconds > 0 ? (double)mt->tokens / (mt->seconds * mt->nranks) : 0.0;   // per rank, as TT
        t.tflops = mt->flops.F * t.tps / 1e12;
        t.mfu_pct = mt->peak > 0 ? 100.0 * mt->flops.F * t.tps / mt->peak : 0.0;
        if (!mt->job->quiet) {
            char tps[32], eta[48];
            printf("step: %3d  loss: %8.5f  grad_norm: %7.4f  lr: %.4e  memory: %5.2fGiB(%.2f%%)  tps: %s  "
                   "tflops: %.2f  mfu: %.2f%%  %s\n", t.step, t.loss, t.grad_norm, t.lr, t.memory_gib, t.memory_pct,
                   hp_fmt_thousands(tps, sizeof tps, t.tps), t.tflops, t.mfu_pct, progress(mt, t.step, eta, sizeof eta));
            fflush(stdout);
        }
        if (mt->jsonl) {
            if (hp_metrics_jsonl_train(mt->jsonl, &t) != 0) fail_once(mt, mt->jsonl_path);
            if (push(&mt->loss, &mt->n_train, &mt->cap_train, (hp_svg_point){ t.step, t.loss }) != 0 ||
                push(&mt->lr, &mt->n_lr, &mt->cap_lr, (hp_svg_point){ t.step, t.lr }) != 0)
                fail_once(mt, mt->svg_path);
            write_svg(mt);
        }
    }
    mt->tokens = 0;
    mt->seconds = 0.0;
}

void hp_metrics_val(hp_metrics *mt, int step, double loss, int64_t tokens, double seconds) {
    if (mt->rank != 0 || !mt->active) return;
    hp_metrics_valrec v = { step, loss, tokens, 0, 0.0, now_s() - mt->t_start };
    v.batches = tokens / mt->tokens_per_step;
    v.tps = seconds > 0 ? (double)tokens / (seconds * mt->nranks) : 0.0;
    if (!mt->job->quiet) {
        char tps[32];
        printf("validate step: %3d  loss: %8.5f  tps: %s\n", step, loss, hp_fmt_thousands(tps, sizeof tps, v.tps));
        fflush(stdout);
    }
    if (mt->jsonl) {
        if (hp_metrics_jsonl_val(mt->jsonl, &v) != 0) fail_once(mt, mt->jsonl_path);
        if (push(&mt->val, &mt->n_val, &mt->cap_val, (hp_svg_point){ step, loss }) != 0) fail_once(mt, mt->svg_path);
        write_svg(mt);
    }
}

void hp_metrics_sample(hp_metrics *mt, const hp_metrics_samplerec *s) {
    if (mt->rank != 0 || !mt->active) return;
    hp_metrics_samplerec r = *s;
    r.elapsed_s = now_s() - mt->t_start;
    if (!mt->job->quiet) {
        printf("sample step: %3d | %s%s\n", s->step, s->prompt ? s->prompt : "", s->text ? s->text : "");
        fflush(stdout);
    }
    if (mt->jsonl && hp_metrics_jsonl_sample(mt->jsonl, &r) != 0) fail_once(mt, mt->jsonl_path);
}

int hp_metrics_close(hp_metrics *mt) {
    if (!mt) return 0;
    write_svg(mt);
    if (mt->jsonl && fclose(mt->jsonl) != 0) fail_once(mt, mt->jsonl_path);
    const int failed = mt->failed;
    free(mt->loss);
    free(mt->lr);
    free(mt->val);
    free(mt);
    return failed ? HP_EXIT_FAIL : 0;
}
