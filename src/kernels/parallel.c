// parallel.c - the kernels' deterministic parallel-for: a small pool of worker threads that
// sleep on a condition variable between jobs (no spinning: OpenBLAS's own threads share the
// same cores). A job of n items is cut into PAR_CHUNKS_PER_THREAD x T fixed ranges,
// [n*c/C, n*(c+1)/C); the caller and the workers take the next range until none is left, so
// a thread slowed by another process (a shared machine) does less of the job instead of
// holding up the rest. What each item computes does not depend on its range or its thread,
// so the result cannot depend on the thread count or on scheduling.
// Why not OpenMP: that contract is this file's, and there is no second runtime.
// defines: hp_par_for, hp_par_threads, hp_par_zero, hp_par_bf16_round, hp_par_bf16_pack,
//          hp_par_bf16_pack_exact, hp_par_bf16_unpack
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <cblas.h>
#include "hyperpar/bf16.h"
#include "kernels/parallel.h"

#define PAR_MAX_THREADS 16
#define PAR_CHUNKS_PER_THREAD 4   // enough to even out a slowed thread, few hand-offs

static pthread_mutex_t par_call = PTHREAD_MUTEX_INITIALIZER; // one job at a time
static pthread_mutex_t par_mu = PTHREAD_MUTEX_INITIALIZER;   // guards everything below
static pthread_cond_t par_go = PTHREAD_COND_INITIALIZER;
static pthread_cond_t par_done = PTHREAD_COND_INITIALIZER;
static int par_workers;          // worker threads started (ids 1..par_workers)
static unsigned long par_gen;    // job generation: a worker runs each new one once
static unsigned long par_seen[PAR_MAX_THREADS]; // the last generation each worker saw
static int par_pending;          // worker ranges of the current job still running
static hp_par_fn par_fn;
static void *par_ctx;
static int par_n, par_nt, par_chunks;
static atomic_int par_next;      // the next range of the current job to be taken

static void range(int n, int nt, int i, int *lo, int *hi) {
    *lo = (int)((int64_t)n * i / nt);
    *hi = (int)((int64_t)n * (i + 1) / nt);
}

// Runs ranges of the current job until every one is taken.
static void take_ranges(hp_par_fn fn, void *ctx, int n, int chunks) {
    for (;;) {
        const int c = atomic_fetch_add(&par_next, 1);
        if (c >= chunks) return;
        int lo, hi;
        range(n, chunks, c, &lo, &hi);
        if (lo < hi) fn(ctx, lo, hi);
    }
}

static void *par_worker(void *p) {
    const int id = (int)(intptr_t)p;
    pthread_mutex_lock(&par_mu);
    for (;;) {
        // par_seen[id] was set when the worker was made: a job posted before this thread
        // first takes the lock is still run
        while (par_gen == par_seen[id]) pthread_cond_wait(&par_go, &par_mu);
        par_seen[id] = par_gen;
        if (id >= par_nt) continue;   // this job has fewer ranges than workers
        hp_par_fn fn = par_fn;
        void *ctx = par_ctx;
        const int n = par_n, chunks = par_chunks;
        pthread_mutex_unlock(&par_mu);
        take_ranges(fn, ctx, n, chunks);
        pthread_mutex_lock(&par_mu);
        if (--par_pending == 0) pthread_cond_signal(&par_done);
    }
    return NULL;
}

int hp_par_threads(void) {
    int t = openblas_get_num_threads();
    if (t < 1) t = 1;
    return t > PAR_MAX_THREADS ? PAR_MAX_THREADS : t;
}

void hp_par_for(int n, int min_items, int blas_serial, hp_par_fn fn, void *ctx) {
    if (n <= 0) return;
    int nt = hp_par_threads();
    if (min_items < 1) min_items = 1;
    if (nt > n / min_items) nt = n / min_items;
    if (nt <= 1) { fn(ctx, 0, n); return; }

    pthread_mutex_lock(&par_call);
    pthread_mutex_lock(&par_mu);
    while (par_workers < nt - 1) { // started on first use; a failed start means fewer ranges
        pthread_t th;
        par_seen[par_workers + 1] = par_gen;
        if (pthread_create(&th, NULL, par_worker, (void *)(intptr_t)(par_workers + 1)) != 0) break;
        pthread_detach(th);
        par_workers++;
    }
    if (nt > par_workers + 1) nt = par_workers + 1;
    pthread_mutex_unlock(&par_mu);
    if (nt <= 1) { pthread_mutex_unlock(&par_call); fn(ctx, 0, n); return; }

    const int blas_prev = blas_serial ? openblas_get_num_threads() : 0;
    if (blas_serial) openblas_set_num_threads(1);
    int chunks = nt * PAR_CHUNKS_PER_THREAD;
    if (chunks > n / min_items) chunks = n / min_items;   // >= nt: nt <= n / min_items
    pthread_mutex_lock(&par_mu);
    par_fn = fn; par_ctx = ctx; par_n = n; par_nt = nt; par_chunks = chunks;
    atomic_store(&par_next, 0);
    par_pending = nt - 1;
    par_gen++;
    pthread_cond_broadcast(&par_go);
    pthread_mutex_unlock(&par_mu);

    take_ranges(fn, ctx, n, chunks);

    pthread_mutex_lock(&par_mu);
    while (par_pending > 0) pthread_cond_wait(&par_done, &par_mu);
    pthread_mutex_unlock(&par_mu);
    if (blas_serial) openblas_set_num_threads(blas_prev);
    pthread_mutex_unlock(&par_call);
}

// ---------------------------------------------------------------------------------------
// zero-fill: memory-bound, so one core does not reach the bandwidth two do

enum { ZERO_ITEM = 1 << 16 };   // floats per item (256 KiB)

typedef struct zero_job { float *x; size_t n; } zero_job;

static void zero_items(void *ctx, int lo, int hi) {
    const zero_job *J = ctx;
    const size_t i0 = (size_t)lo * ZERO_ITEM, i1 = (size_t)hi * ZERO_ITEM;
    memset(J->x + i0, 0, ((i1 < J->n ? i1 : J->n) - i0) * sizeof(float));
}

void hp_par_zero(float *x, size_t n) {
    zero_job J = { x, n };
    hp_par_for((int)((n + ZERO_ITEM - 1) / ZERO_ITEM), 4, 0, zero_items, &J);
}

// ---------------------------------------------------------------------------------------
// bf16 conversions: memory-bound too; each item converts its own elements

typedef enum { CONV_ROUND, CONV_PACK, CONV_PACK_EXACT, CONV_UNPACK } conv_op;

typedef struct conv_job {
    conv_op op;
    float *f;              // round: in place; unpack: the destination
    const float *src;      // pack: the source
    hp_bf16 *h;            // pack: the destination
    const hp_bf16 *hsrc;   // unpack: the source
    size_t n;
    atomic_int inexact;    // pack_exact: set by any item that met a value that is not bf16
} conv_job;

static void conv_items(void *ctx, int lo, int hi) {
    conv_job *J = ctx;
    const size_t i0 = (size_t)lo * ZERO_ITEM, i1 = (size_t)hi * ZERO_ITEM < J->n ? (size_t)hi * ZERO_ITEM : J->n;
    const size_t m = i1 - i0;
    switch (J->op) {
    case CONV_ROUND:  hp_bf16_round(J->f + i0, m); break;
    case CONV_PACK:   hp_bf16_pack(J->h + i0, J->src + i0, m); break;
    case CONV_UNPACK: hp_bf16_unpack(J->f + i0, J->hsrc + i0, m); break;
    case CONV_PACK_EXACT:
        if (!hp_bf16_pack_exact(J->h + i0, J->src + i0, m)) atomic_store(&J->inexact, 1);
        break;
    }
}

static int conv_run(conv_job *J) {
    atomic_init(&J->inexact, 0);
    hp_par_for((int)((J->n + ZERO_ITEM - 1) / ZERO_ITEM), 4, 0, conv_items, J);
    return atomic_load(&J->inexact) == 0;
}

void hp_par_bf16_round(float *x, size_t n) {
    conv_job J = { .op = CONV_ROUND, .f = x, .n = n };
    conv_run(&J);
}

void hp_par_bf16_pack(uint16_t *dst, const float *src, size_t n) {
    conv_job J = { .op = CONV_PACK, .src = src, .h = dst, .n = n };
    conv_run(&J);
}

int hp_par_bf16_pack_exact(uint16_t *dst, const float *src, size_t n) {
    conv_job J = { .op = CONV_PACK_EXACT, .src = src, .h = dst, .n = n };
    return conv_run(&J);
}

void hp_par_bf16_unpack(float *dst, const uint16_t *src, size_t n) {
    conv_job J = { .op = CONV_UNPACK, .f = dst, .hsrc = src, .n = n };
    conv_run(&J);
}
