// gemm_onednn.c - the oneDNN 2.6 backend of hp_gemm / hp_gemm_bf16 (gemm.h): one matmul
// primitive per shape, made once and run again.
// defines: hp_gemm_onednn, hp_gemm_onednn_bf16_packed, hp_gemm_onednn_version, hp_gemm_onednn_isa, hp_gemm_onednn_impl,
//          hp_gemm_onednn_shutdown, hp_gemm_onednn_apply_cap, hp_gemm_onednn_supports
//
// The product is oneDNN's matmul on plain row-major memory with the caller's strides:
// op(A) (M, K) has strides (lda, 1), or (1, lda) when transposed, and so on for B; C has
// (ldc, 1). alpha is the output scale (attribute) and beta the scale of a sum post-op, so
//   C = alpha * (op(A) op(B)) + beta * C       (beta 0: no post-op, C is only written).
// bf16: A and B are packed to 2-byte bf16 (hp_bf16_pack) into grow-only scratch of the calling
// thread, then bf16 x bf16 -> f32 (oneDNN accumulates in f32).
//
// Threads: the kernels call hp_gemm from hp_par_for's workers at once (attention, under
// blas_serial), so everything mutable is per calling thread: its stream, its cache of primitives
// (with their memory objects, re-pointed by dnnl_memory_set_data_handle at each call) and its
// pack buffers. Only the engine is shared. OpenMP's thread count is a per-thread setting too: it
// is set to the caller's count before a primitive is made or run, and the count is part of the
// cache key (oneDNN fixes a primitive's thread split when it is made).
// The cache: CACHE_SLOTS entries a thread, keyed by (bf16, ta, tb, M, N, K, lda, ldb, ldc,
// alpha, beta, threads), the oldest made replaced when full (oneDNN's own primitive cache keeps
// recreating such a shape cheap).
// Every dnnl call is checked: a failure prints one line naming the call and ends the job with
// exit 1 (a product that silently changed backend would break every bitwise promise). Such a
// failure is not reachable from a flag: oneDNN 2.6 has a bf16 matmul only from avx512_core on,
// so the tools ask hp_gemm_onednn_supports before they choose the backend.
// The ISA cap: HP_CPU_ISA (hyperpar/cpu.h) becomes oneDNN's maximal ISA before its first use,
// unless ONEDNN_MAX_CPU_ISA or DNNL_MAX_CPU_ISA already set one.
#include <omp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dnnl.h>
#include <dnnl_debug.h>
#include "hyperpar/bf16.h"
#include "hyperpar/comm.h"
#include "hyperpar/cpu.h"
#include "hyperpar/dims.h"
#include "kernels/gemm_onednn.h"
#include "kernels/parallel.h"

#define CACHE_SLOTS 64

static void dnnl_ok(dnnl_status_t s, const char *call) {
    if (s == dnnl_success) return;
    hp_fail_line_and_abort(HP_EXIT_FAIL, "hp: gemm: oneDNN %s failed: %s (isa %s)", call,
                           dnnl_status2str(s), hp_gemm_onednn_isa());
}

static void out_of_memory(size_t bytes) {
    hp_fail_line_and_abort(HP_EXIT_FAIL, "hp: gemm: out of memory (%zu bytes of oneDNN scratch)", bytes);
}

// HP_CPU_ISA -> oneDNN's maximal ISA, once, before any other oneDNN call (oneDNN fixes it at its
// first use), unless oneDNN's own variables set one
static void isa_cap_once(void) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, (void (*)(void))hp_gemm_onednn_apply_cap);
}
#define DNNL_OK(fn, ...) dnnl_ok(fn(__VA_ARGS__), #fn)

typedef struct {   // all ints: no padding, compared with memcmp
    int bf16, ta, tb, M, N, K, lda, ldb, ldc, threads;
    uint32_t alpha, beta;   // the bits of the scales
} prim_key;

typedef struct {
    prim_key key;
    dnnl_primitive_t prim;
    dnnl_memory_t a, b, c;
} prim_entry;

typedef struct thread_state {
    unsigned gen;                 // the engine generation it belongs to
    dnnl_stream_t stream;
    prim_entry cache[CACHE_SLOTS];
    int n_cached, next_evict, last_hit;
    hp_bf16 *pack_a, *pack_b;     // grow-only bf16 scratch
    size_t cap_a, cap_b;
    struct thread_state *next;    // every thread's state, for shutdown
} thread_state;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;   // guards engine, states, generation
static dnnl_engine_t engine;
static thread_state *states;
static atomic_uint generation = 1;   // bumped by shutdown: a thread's older state is gone
static int atexit_done;
static _Thread_local thread_state *mine;
static _Thread_local unsigned mine_gen;   // the generation of mine (read without touching it:
                                          // a shutdown may have freed it)

static dnnl_engine_t engine_get(void) {
    pthread_mutex_lock(&mu);
    if (!engine) {
        isa_cap_once();
        DNNL_OK(dnnl_engine_create, &engine, dnnl_cpu, 0);
        if (!atexit_done) { atexit(hp_gemm_onednn_shutdown); atexit_done = 1; }
    }
    dnnl_engine_t e = engine;
    pthread_mutex_unlock(&mu);
    return e;
}

static thread_state *state_get(void) {
    if (mine) {
        if (mine_gen == atomic_load(&generation)) return mine;
        mine = NULL;   // freed by a shutdown since
    }
    dnnl_engine_t e = engine_get();
    thread_state *s = calloc(1, sizeof *s);
    if (!s) out_of_memory(sizeof *s);
    DNNL_OK(dnnl_stream_create, &s->stream, e, dnnl_stream_default_flags);
    pthread_mutex_lock(&mu);
    s->gen = atomic_load(&generation);
    s->next = states;
    states = s;
    pthread_mutex_unlock(&mu);
    mine = s;
    mine_gen = s->gen;
    return s;
}

static void entry_free(prim_entry *e) {
    DNNL_OK(dnnl_memory_destroy, e->a);
    DNNL_OK(dnnl_memory_destroy, e->b);
    DNNL_OK(dnnl_memory_destroy, e->c);
    DNNL_OK(dnnl_primitive_destroy, e->prim);
    memset(e, 0, sizeof *e);
}

void hp_gemm_onednn_shutdown(void) {
    pthread_mutex_lock(&mu);
    for (thread_state *s = states, *nx; s; s = nx) {
        nx = s->next;
        for (int i = 0; i < s->n_cached; i++) entry_free(&s->cache[i]);
        DNNL_OK(dnnl_stream_destroy, s->stream);
        free(s->pack_a);
        free(s->pack_b);
        free(s);
    }
    states = NULL;
    if (engine) DNNL_OK(dnnl_engine_destroy, engine);
    engine = NULL;
    atomic_fetch_add(&generation, 1);
    pthread_mutex_unlock(&mu);
}

static void set_threads(int threads) {
    if (omp_get_max_threads() != threads) omp_set_num_threads(threads);
}

// op(X) (rows, cols) stored row-major with leading dimension ld, transposed or not
static void md_of(dnnl_memory_desc_t *md, int rows, int cols, int trans, int ld, dnnl_data_type_t dt) {
    dnnl_dims_t dims = { rows, cols };
    dnnl_dims_t strides = { trans ? 1 : ld, trans ? ld : 1 };
    DNNL_OK(dnnl_memory_desc_init_by_strides, md, 2, dims, dt, strides);
}

// The primitive descriptor of key k, or oneDNN's status when it has no implementation (a bf16
// matmul below avx512_core: dnnl_unimplemented).
static dnnl_status_t pd_try(const prim_key *k, dnnl_engine_t e, dnnl_primitive_desc_t *pd) {
    const dnnl_data_type_t dt = k->bf16 ? dnnl_bf16 : dnnl_f32;
    dnnl_memory_desc_t a, b, c;
    md_of(&a, k->M, k->K, k->ta, k->lda, dt);
    md_of(&b, k->K, k->N, k->tb, k->ldb, dt);
    md_of(&c, k->M, k->N, 0, k->ldc, dnnl_f32);
    dnnl_matmul_desc_t desc;
    DNNL_OK(dnnl_matmul_desc_init, &desc, &a, &b, NULL, &c);
    dnnl_primitive_attr_t attr;
    DNNL_OK(dnnl_primitive_attr_create, &attr);
    float alpha, beta;
    memcpy(&alpha, &k->alpha, sizeof alpha);
    memcpy(&beta, &k->beta, sizeof beta);
    if (alpha != 1.0f) DNNL_OK(dnnl_primitive_attr_set_output_scales, attr, 1, 0, &alpha);
    if (beta != 0.0f) {
        dnnl_post_ops_t po;
        DNNL_OK(dnnl_post_ops_create, &po);
        DNNL_OK(dnnl_post_ops_append_sum, po, beta);
        DNNL_OK(dnnl_primitive_attr_set_post_ops, attr, po);
        DNNL_OK(dnnl_post_ops_destroy, po);
    }
    set_threads(k->threads);
    const dnnl_status_t st = dnnl_primitive_desc_create(pd, &desc, attr, e, NULL);
    DNNL_OK(dnnl_primitive_attr_destroy, attr);
    return st;
}

static dnnl_primitive_desc_t pd_make(const prim_key *k, dnnl_engine_t e) {
    dnnl_primitive_desc_t pd;
    dnnl_ok(pd_try(k, e, &pd), "dnnl_primitive_desc_create");
    return pd;
}

static prim_entry *entry_get(thread_state *s, const prim_key *k) {
    if (s->last_hit < s->n_cached && !memcmp(&s->cache[s->last_hit].key, k, sizeof *k))
        return &s->cache[s->last_hit];
    for (int i = 0; i < s->n_cached; i++)
        if (!memcmp(&s->cache[i].key, k, sizeof *k)) { s->last_hit = i; return &s->cache[i]; }
    int slot;
    if (s->n_cached < CACHE_SLOTS) slot = s->n_cached++;
    else {
        slot = s->next_evict;
        s->next_evict = (s->next_evict + 1) % CACHE_SLOTS;
        entry_free(&s->cache[slot]);
    }
    prim_entry *e = &s->cache[slot];
    dnnl_engine_t eng = engine_get();
    dnnl_primitive_desc_t pd = pd_make(k, eng);
    DNNL_OK(dnnl_primitive_create, &e->prim, pd);
    const dnnl_memory_desc_t *ma = dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0);
    const dnnl_memory_desc_t *mb = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    const dnnl_memory_desc_t *mc = dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0);
    DNNL_OK(dnnl_memory_create, &e->a, ma, eng, DNNL_MEMORY_NONE);
    DNNL_OK(dnnl_memory_create, &e->b, mb, eng, DNNL_MEMORY_NONE);
    DNNL_OK(dnnl_memory_create, &e->c, mc, eng, DNNL_MEMORY_NONE);
    DNNL_OK(dnnl_primitive_desc_destroy, pd);
    e->key = *k;
    s->last_hit = slot;
    return e;
}

// rows x cols of src (leading dimension ld) -> dst as dense bf16 (leading dimension cols)
static hp_bf16 *pack(hp_bf16 **buf, size_t *cap, const float *src, int rows, int cols, int ld) {
    const size_t need = (size_t)rows * cols;
    if (need > *cap) {
        free(*buf);
        *buf = malloc(need * sizeof(hp_bf16));
        if (!*buf) out_of_memory(need * sizeof(hp_bf16));
        *cap = need;
    }
    if (ld == cols) hp_par_bf16_pack(*buf, src, need);   // (contiguous: on the job's threads)
    else
        for (int r = 0; r < rows; r++) hp_bf16_pack(*buf + (size_t)r * cols, src + (size_t)r * ld, (size_t)cols);
    return *buf;
}

// C (M, N) = beta C: the empty sum of K = 0, as BLAS has it
static void scale_only(int M, int N, float beta, float *C, int ldc) {
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            float *c = C + (size_t)i * ldc + j;
            *c = beta == 0.0f ? 0.0f : beta * *c;
        }
}

// the cached primitive of this key, run on a, b (f32 or bf16, as the key says) and C
static void run(thread_state *s, int bf16, hp_gemm_op ta, hp_gemm_op tb, int M, int N, int K, float alpha,
                const void *a, int lda, const void *b, int ldb, float beta, float *C, int ldc, int threads) {
    prim_key k = { bf16 != 0, ta == HP_GEMM_T, tb == HP_GEMM_T, M, N, K, lda, ldb, ldc, threads, 0, 0 };
    memcpy(&k.alpha, &alpha, sizeof alpha);
    memcpy(&k.beta, &beta, sizeof beta);
    prim_entry *e = entry_get(s, &k);
    DNNL_OK(dnnl_memory_set_data_handle, e->a, (void *)a);
    DNNL_OK(dnnl_memory_set_data_handle, e->b, (void *)b);
    DNNL_OK(dnnl_memory_set_data_handle, e->c, C);
    const dnnl_exec_arg_t args[3] = {
        { DNNL_ARG_SRC, e->a }, { DNNL_ARG_WEIGHTS, e->b }, { DNNL_ARG_DST, e->c },
    };
    set_threads(threads);
    DNNL_OK(dnnl_primitive_execute, e->prim, s->stream, 3, args);
    DNNL_OK(dnnl_stream_wait, s->stream);
}

void hp_gemm_onednn(int bf16, hp_gemm_op ta, hp_gemm_op tb, int M, int N, int K, float alpha,
                    const float *A, int lda, const float *B, int ldb, float beta, float *C, int ldc,
                    int threads) {
    if (M <= 0 || N <= 0) return;
    if (K <= 0) { scale_only(M, N, beta, C, ldc); return; }
    thread_state *s = state_get();
    if (!bf16) { run(s, 0, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, threads); return; }
    // stored shapes: A (K, M) when transposed, else (M, K); B likewise
    const int ar = ta ? K : M, ac = ta ? M : K, br = tb ? N : K, bc = tb ? K : N;
    const hp_bf16 *a = pack(&s->pack_a, &s->cap_a, A, ar, ac, lda);
    const hp_bf16 *b = pack(&s->pack_b, &s->cap_b, B, br, bc, ldb);
    run(s, 1, ta, tb, M, N, K, alpha, a, ac, b, bc, beta, C, ldc, threads);
}

void hp_gemm_onednn_bf16_packed(hp_gemm_op ta, hp_gemm_op tb, int M, int N, int K, float alpha,
                                const hp_bf16 *A, int lda, const hp_bf16 *B, int ldb, float beta,
                                float *C, int ldc, int threads) {
    if (M <= 0 || N <= 0) return;
    if (K <= 0) { scale_only(M, N, beta, C, ldc); return; }
    run(state_get(), 1, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, threads);
}

char *hp_gemm_onednn_version(char *buf, size_t n) {
    const dnnl_version_t *v = dnnl_version();
    snprintf(buf, n, "%d.%d.%d", v->major, v->minor, v->patch);
    return buf;
}

void hp_gemm_onednn_apply_cap(void) {
    const char *own = getenv("ONEDNN_MAX_CPU_ISA"), *old = getenv("DNNL_MAX_CPU_ISA");
    if ((own && *own) || (old && *old)) return;
    static const dnnl_cpu_isa_t of_cap[HP_ISA_COUNT] = {
        [HP_ISA_SSE41] = dnnl_cpu_isa_sse41, [HP_ISA_AVX] = dnnl_cpu_isa_avx,
        [HP_ISA_AVX2] = dnnl_cpu_isa_avx2, [HP_ISA_AVX512] = dnnl_cpu_isa_avx512_core,
        [HP_ISA_AVX512_BF16] = dnnl_cpu_isa_avx512_core_bf16, [HP_ISA_AMX] = dnnl_cpu_isa_all,
    };
    const hp_cpu_isa cap = hp_cpu_isa_cap();
    if (cap != HP_ISA_COUNT) dnnl_set_max_cpu_isa(of_cap[cap]);   // (fails only after a first use)
}

int hp_gemm_onednn_supports(int bf16) {
    static atomic_int answer[2] = { -1, -1 };   // per dtype, asked once
    const int i = bf16 != 0;
    int a = atomic_load(&answer[i]);
    if (a < 0) {
        prim_key k = { i, 0, 0, 16, 16, 16, 16, 16, 16, 1, 0, 0 };
        const float one = 1.0f;
        memcpy(&k.alpha, &one, sizeof one);
        dnnl_primitive_desc_t pd;
        a = pd_try(&k, engine_get(), &pd) == dnnl_success;
        if (a) DNNL_OK(dnnl_primitive_desc_destroy, pd);
        atomic_store(&answer[i], a);
    }
    return a;
}

const char *hp_gemm_onednn_isa(void) {
    isa_cap_once();
    switch (dnnl_get_effective_cpu_isa()) {
    case dnnl_cpu_isa_sse41:            return "sse41";
    case dnnl_cpu_isa_avx:              return "avx";
    case dnnl_cpu_isa_avx2:             return "avx2";
    case dnnl_cpu_isa_avx2_vnni:        return "avx2_vnni";
    case dnnl_cpu_isa_avx512_mic:       return "avx512_mic";
    case dnnl_cpu_isa_avx512_mic_4ops:  return "avx512_mic_4ops";
    case dnnl_cpu_isa_avx512_core:      return "avx512_core";
    case dnnl_cpu_isa_avx512_core_vnni: return "avx512_core_vnni";
    case dnnl_cpu_isa_avx512_core_bf16: return "avx512_core_bf16";
    case dnnl_cpu_isa_avx512_core_amx:  return "avx512_core_amx";
    case dnnl_cpu_isa_all:              return "all";
    }
    return "unknown";
}

char *hp_gemm_onednn_impl(int bf16, int M, int N, int K, int threads, char *buf, size_t n) {
    prim_key k = { bf16 != 0, 0, 0, M, N, K, K, N, N, threads, 0, 0 };
    const float one = 1.0f;
    memcpy(&k.alpha, &one, sizeof one);
    dnnl_primitive_desc_t pd;
    if (pd_try(&k, engine_get(), &pd) != dnnl_success) {
        snprintf(buf, n, "none");
        return buf;
    }
    const char *impl = NULL;
    DNNL_OK(dnnl_primitive_desc_query, pd, dnnl_query_impl_info_str, 0, (void *)&impl);
    snprintf(buf, n, "%s", impl ? impl : "?");
    DNNL_OK(dnnl_primitive_desc_destroy, pd);
    return buf;
}
