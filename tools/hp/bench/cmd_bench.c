// cmd_bench.c - `hp bench`: how fast one rank trains, next to how fast this machine multiplies
// matrices and the most its FMA units can do (fma_peak.c); and (--memory) how much each rank
// keeps under FSDP. Performance is reported as
// ratios measured side by side in one run, never asserted by a test.
// defines: tool_cmd_bench
//
//   hp bench                                  # model bench, B 4 x S 512, 3 measured steps
//   hp bench --threads 1 --json out.json      # OpenBLAS threads; machine-readable result
//   hp bench --memory [--model small]         # FSDP at dp_shard 1,2,4,8: bytes per rank
//   hp bench --recipes                        # bytes each recipe moves in a step (hp run --verify)
//
// FLOPs of one step (forward + backward; the optimiser's elementwise work is not counted):
//   matmul:    6 * P * T, P = weights used by matmuls per token (wq wk wv wo, w1 w2 w3 or the
//              top-k experts + shared + router, output; not the embedding lookup), T = B*S
//              (2 for multiply-add, x3 for forward + the two backward products)
//   attention: 12 * L * B * H * hd * S(S+1)/2: forward QK^T and PV are 2 * hd FLOPs per
//              visible (query, key) pair each (causal: S(S+1)/2 pairs per head), the backward
//              twice the forward; the scores the backward recomputes are not counted.
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cblas.h>
#include <cjson/cJSON.h>
#include "util/file_io.h"
#include "bench_json.h"
#include "cli/cli.h"
#include "gemm_bench.h"
#include "launch/launch.h"
#include "metrics/fma_peak.h"
#include "run/gemm_choice.h"
#include "hyperpar/blas.h"
#include "hyperpar/recipes.h"
#include "hyperpar/train.h"
#include "kernels/gemm.h"
#include "kernels/gemm_onednn.h"

static const char *const bench_usage =
    "usage: hp bench [--model bench] [--seq-len 512] [--batch 4] [--steps 3] [--threads N]\n"
    "                [--warmup 1] [--gemm openblas|onednn|auto] [--json FILE]\n"
    "       hp bench --memory [--model small] [--shards 1,2,4,8] [--json FILE]\n"
    "       hp bench --recipes [--json FILE]\n"
    "\n"
    "Single rank (no mpirun needed): the first line names the BLAS, its core and threads, and the\n"
    "GEMM backend, its ISA and threads; then\n"
    "the fp32 peak of the vectors the BLAS core uses and of the machine's widest (FMA-throughput\n"
    "loops at the same thread count; step/peak is taken against the first), the sgemm\n"
    "GFLOP/s on the model's matmul shapes (the best of a few), and forward + backward + optimiser\n"
    "steps (--optimizer, default adamw): ms/step and its CPU time, tokens/s, achieved GFLOP/s\n"
    "(6 x matmul params x tokens + causal attention) and the ratios step/peak, sgemm/peak, step/sgemm;\n"
    "and one 2048x1024x1024 product through OpenBLAS sgemm, oneDNN f32 and oneDNN bf16 beside the bf16\n"
    "peak (a VDPBF16PS loop; oneDNN's AMX matmul where it has AMX), step of the bf16 peak beside it.\n"
    "  --threads N      OpenBLAS threads, and oneDNN's OpenMP threads (default: OpenBLAS's own count)\n"
    "  --gemm B         the GEMM backend of the step and the sgemm rows: openblas, onednn, auto\n"
    "                   (the faster on a 1024^3 product of the run's precision); without it the\n"
    "                   environment's HP_GEMM, else hp run's default (hp run --help). The oneDNN\n"
    "                   rows it lacks here (bf16 below avx512_core) are skipped and named\n"
    "  --warmup N       unmeasured steps first (default 1)\n"
    "  --memory         launch FSDP runs at each --shards degree under mpirun and print, per rank,\n"
    "                   persistent bytes (params + grads + AdamW m, v shards) against the full\n"
    "                   model / N, the padding, and the working bytes of one gathered unit\n"
    "  --shards LIST    dp_shard degrees for --memory (default 1,2,4,8)\n"
    "  --recipes        run `hp run --verify` for a set of recipes (tiny / tiny-moe, S 32, B 8) and\n"
    "                   print the bytes rank 0 moved in step 1, counted and as docs/traffic.md predicts\n"
    "\n";

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

// CPU seconds of the whole process (every thread): on a shared machine a step's CPU time
// moves much less than its wall time, since waiting for a core is not counted.
static double cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

// The value of an extra flag kept by tool_cli_parse as "--name=value" in rest[], or NULL.
static const char *rest_value(const tool_cli *cli, const char *name) {
    size_t n = strlen(name);
    for (int i = 0; i < cli->n_rest; i++)
        if (!strncmp(cli->rest[i], name, n) && cli->rest[i][n] == '=') return cli->rest[i] + n + 1;
    return NULL;
}

// 1 if argv has flag `name` (as "--name" or "--name=...").
static int has_flag(int argc, char **argv, const char *name) {
    size_t n = strlen(name);
    for (int i = 2; i < argc; i++)
        if (!strncmp(argv[i], name, n) && (argv[i][n] == '\0' || argv[i][n] == '=')) return 1;
    return 0;
}

static int parse_pos_int(const char *flag, const char *s, int *out) {
    char *end;
    long v = strtol(s, &end, 10);
    if (*s == '\0' || *end != '\0' || v < 1 || v > 1 << 20) {
        fprintf(stderr, "hp bench: %s expects a positive integer, got '%s'\n", flag, s);
        return HP_EXIT_CONFIG;
    }
    *out = (int)v;
    return 0;
}

// ---------------------------------------------------------------------------------------
// FLOPs of one step

typedef struct {
    double matmul_params;   // P: weights a token goes through in matmuls
    double matmul, attn;    // FLOPs of the step
} step_flops;

static step_flops count_flops(const hp_model_config *m, int B, int S) {
    const double D = m->dim, hd = hp_model_head_dim(m), H = m->n_heads, Hkv = m->n_kv_heads;
    double p = m->vocab_size * D; // output head
    for (int l = 0; l < m->n_layers; l++) {
        p += D * H * hd * 2 + D * Hkv * hd * 2;   // wq, wo; wk, wv
        if (hp_model_is_moe_layer(m, l))
            p += D * m->num_experts                                      // router gate
               + 3.0 * D * m->moe_hidden * (m->top_k + m->n_shared_experts); // routed + shared
        else
            p += 3.0 * D * m->ffn_hidden;
    }
    step_flops f;
    f.matmul_params = p;
    f.matmul = 6.0 * p * B * S;
    f.attn = 12.0 * m->n_layers * B * H * hd * ((double)S * (S + 1) / 2.0);
    return f;
}

// ---------------------------------------------------------------------------------------
// sgemm rate: the model's own matmul shapes through hp_gemm (the backend the step runs), best
// of `reps`

typedef struct { const char *what; int ta, M, N, K; double gflops; } gemm_shape;

static double time_sgemm(gemm_shape *g, int reps) {
    const size_t na = (size_t)g->M * g->K, nb = (size_t)g->N * g->K, nc = (size_t)g->M * g->N;
    float *a = malloc(na * sizeof(float)), *b = malloc(nb * sizeof(float)), *c = malloc(nc * sizeof(float));
    if (!a || !b || !c) { free(a); free(b); free(c); return 0.0; }
    for (size_t i = 0; i < na; i++) a[i] = (float)((int)(i % 13) - 6) * 0.01f;
    for (size_t i = 0; i < nb; i++) b[i] = (float)((int)(i % 7) - 3) * 0.01f;
    for (size_t i = 0; i < nc; i++) c[i] = 0.0f;
    double best = 0.0;
    for (int r = 0; r < reps + 1; r++) {   // the first call warms caches and threads up
        double t0 = now_s();
        if (g->ta) // C (M,N) += A^T B with A (K,M), B (K,N): the weight-gradient product
            hp_gemm(HP_GEMM_T, HP_GEMM_N, g->M, g->N, g->K, 1.0f, a, g->M, b, g->N, 1.0f, c, g->N);
        else       // C (M,N) = A B^T with A (M,K), B (N,K): y = x w^T
            hp_gemm(HP_GEMM_N, HP_GEMM_T, g->M, g->N, g->K, 1.0f, a, g->K, b, g->K, 0.0f, c, g->N);
        double dt = now_s() - t0;
        double gf = 2.0 * g->M * g->N * g->K / dt * 1e-9;
        if (r > 0 && gf > best) best = gf;
    }
    free(a); free(b); free(c);
    if (best > g->gflops) g->gflops = best;
    return best;
}

// ---------------------------------------------------------------------------------------
// the single-rank step benchmark

typedef struct {
    double ms_best, ms_median, cpu_ms_best, tok_s, gflops, sgemm, ratio;
    double peak;            // the FMA-throughput peak of the BLAS core's vectors, same threads
    double machine_peak;    // the same with the widest vectors this CPU has (fma_peak.c)
    size_t persistent, working;
    tool_gemm_rates gemm;   // one 2048x1024x1024 product per backend and precision, the bf16 peak
} step_result;

static char gemm_why[256];   // the reason of --gemm auto's pick, printed under the first line

// The kernels' peak (the vectors the BLAS core uses) and the machine's (its widest), each kept
// at its best over calls: the machine may be shared. The widest loop is timed only when it is
// another loop than the kernels'.
static void measure_peaks(int threads, const char *kernel_isa, step_result *res, char *isa, char *machine_isa) {
    const double kernels = hp_fma_peak(threads, kernel_isa, isa, 16);
    if (kernels > res->peak) res->peak = kernels;
    snprintf(machine_isa, 16, "%s", hp_fma_isa(NULL));
    if (strcmp(machine_isa, isa)) {
        const double widest = hp_fma_peak(threads, NULL, machine_isa, 16);
        if (widest > res->machine_peak) res->machine_peak = widest;
    }
    if (res->machine_peak < res->peak) res->machine_peak = res->peak;
}

static int bench_step(const tool_cli *cli, int warmup, int threads, step_result *res) {
    const hp_model_config *m = &cli->model;
    const int B = cli->run.batch, S = cli->run.seq_len, steps = cli->run.steps;
    const int D = m->dim, F = m->num_experts ? m->moe_hidden : m->ffn_hidden, T = B * S;
    gemm_shape shapes[] = {
        { "x w^T  (q/o proj)", 0, T, D, D, 0 },
        { "x w^T  (ffn up)  ", 0, T, F, D, 0 },
        { "dy^T x (ffn dw)  ", 1, F, D, T, 0 },
    };
    const int ns = (int)(sizeof shapes / sizeof shapes[0]);
    hp_blas_info blas;
    hp_blas_info_get(&blas);
    char line[512];
    printf("%s\n", tool_first_line(line, sizeof line));   // the first line, always: BLAS | GEMM
    if (*gemm_why) printf("hp: %s\n", gemm_why);
    fflush(stdout);
    // the step is measured against the peak of the vectors its kernels use (a preset Haswell
    // core runs AVX2 on an AVX-512 CPU), the CPU's widest beside it
    // (under oneDNN: the CPU's widest, which oneDNN's JIT kernels use)
    const char *kernel_isa = hp_gemm_get_backend() == HP_GEMM_ONEDNN ? NULL : hp_blas_core_isa(blas.core);
    char isa[16], machine_isa[16];
    res->peak = res->machine_peak = 0.0;
    measure_peaks(threads, kernel_isa, res, isa, machine_isa);
    for (int i = 0; i < ns; i++) time_sgemm(&shapes[i], 3);
    tool_gemm_measure(threads, &res->gemm);

    char err[256];
    hp_trainer *tr = hp_trainer_init(MPI_COMM_WORLD, m, &cli->dims, &cli->run, err, sizeof err);
    if (!tr) { fprintf(stderr, "hp bench: %s\n", err); return HP_EXIT_CONFIG; }
    hp_trainer_memory(tr, &res->persistent, &res->working);
    double *ms = calloc(2 * (size_t)steps, sizeof(double)), *cpu = ms + steps;
    double loss = 0.0;
    for (int s = 0; s < warmup + steps; s++) {
        hp_step_stats st;
        const double c0 = cpu_s();
        hp_trainer_step(tr, &st);
        const double c_ms = (cpu_s() - c0) * 1e3;
        loss = st.loss;
        if (s >= warmup) { ms[s - warmup] = st.ms; cpu[s - warmup] = c_ms; }
        if (!cli->quiet)
            printf("  step %d%s: %.1f ms (cpu %.1f ms), loss %.4f\n", st.step, s < warmup ? " (warm-up)" : "",
                   st.ms, c_ms, st.loss);
    }
    hp_trainer_free(tr);
    // again after the steps: the machine may be shared, so the best of both is the rate
    for (int i = 0; i < ns; i++) time_sgemm(&shapes[i], 3);
    measure_peaks(threads, kernel_isa, res, isa, machine_isa);

    qsort(ms, (size_t)steps, sizeof(double), cmp_double);
    res->ms_best = ms[0];
    res->ms_median = steps % 2 ? ms[steps / 2] : 0.5 * (ms[steps / 2 - 1] + ms[steps / 2]);
    qsort(cpu, (size_t)steps, sizeof(double), cmp_double);
    res->cpu_ms_best = cpu[0];
    free(ms);
    const step_flops f = count_flops(m, B, S);
    res->tok_s = T / (res->ms_best * 1e-3);
    res->gflops = (f.matmul + f.attn) / (res->ms_best * 1e-3) * 1e-9;
    res->sgemm = 0.0;
    for (int i = 0; i < ns; i++) if (shapes[i].gflops > res->sgemm) res->sgemm = shapes[i].gflops;
    res->ratio = res->sgemm > 0 ? res->gflops / res->sgemm : 0.0;

    printf("hp bench: model %s (V %d, D %d, L %d, H %d, Hkv %d, F %d%s), B %d x S %d = %d tokens/step, "
           "%d OpenBLAS thread(s), core %s\n",
           m->name, m->vocab_size, D, m->n_layers, m->n_heads, m->n_kv_heads, m->ffn_hidden,
           m->num_experts ? ", MoE" : "", B, S, T, threads, blas.core);
    printf("  fp32 peak of the kernels (%s %s, %s loop, %d thread%s): %.1f GFLOP/s\n",
           hp_gemm_get_backend() == HP_GEMM_ONEDNN ? "oneDNN" : "core",
           hp_gemm_get_backend() == HP_GEMM_ONEDNN ? "JIT" : blas.core, isa, threads, threads == 1 ? "" : "s",
           res->peak);
    printf("  fp32 peak of the machine (its widest vectors, %s loop): %.1f GFLOP/s\n", machine_isa,
           res->machine_peak);
    for (int i = 0; i < ns; i++)
        printf("  sgemm %s M %5d N %5d K %5d : %7.1f GFLOP/s\n", shapes[i].what, shapes[i].M,
               shapes[i].N, shapes[i].K, shapes[i].gflops);
    printf("  step (forward + backward + %s): %.1f ms best, %.1f ms median of %d; %.0f tokens/s; "
           "cpu %.1f ms best\n", cli->run.optimizer == HP_OPT_ADAMW ? "AdamW" : "SGD", res->ms_best,
           res->ms_median, steps, res->tok_s, res->cpu_ms_best);
    printf("  FLOPs/step %.1f G = matmul %.1f G (6 x %.2f M params x %d tokens) + attention %.1f G\n",
           (f.matmul + f.attn) * 1e-9, f.matmul * 1e-9, f.matmul_params * 1e-6, T, f.attn * 1e-9);
    printf("  achieved %.1f GFLOP/s = %.2f of sgemm (%.1f GFLOP/s)\n", res->gflops, res->ratio,
           res->sgemm);
    const double step_peak = res->peak > 0 ? res->gflops / res->peak : 0.0;
    const double sgemm_peak = res->peak > 0 ? res->sgemm / res->peak : 0.0;
    printf("  of the kernels' peak: step %.2f, sgemm %.2f; step / sgemm %.2f; step of the machine's "
           "peak %.2f\n", step_peak, sgemm_peak, res->ratio,
           res->machine_peak > 0 ? res->gflops / res->machine_peak : 0.0);
    const tool_gemm_rates *g = &res->gemm;
    const double step_bf16_peak = g->bf16_peak > 0 ? res->gflops / g->bf16_peak : 0.0;
    char f32_text[96], bf16_text[160];
    if (g->onednn_has_f32) snprintf(f32_text, sizeof f32_text, "%.1f (%s)", g->onednn_f32, g->onednn_f32_impl);
    else snprintf(f32_text, sizeof f32_text, "skipped (oneDNN has no f32 matmul on isa %s)", hp_gemm_onednn_isa());
    if (g->onednn_has_bf16)
        snprintf(bf16_text, sizeof bf16_text, "%.1f (%s; %.1f with the packing of hp_gemm_bf16)",
                 g->onednn_bf16_packed, g->onednn_bf16_impl, g->onednn_bf16);
    else   // oneDNN 2.6's bf16 matmul starts at avx512_core
        snprintf(bf16_text, sizeof bf16_text, "skipped (oneDNN has no bf16 matmul on isa %s)", hp_gemm_onednn_isa());
    printf("  gemm %dx%dx%d (y = x w^T, %d thread%s, GFLOP/s): openblas sgemm %.1f, onednn f32 %s, "
           "onednn bf16 %s\n", g->M, g->N, g->K, g->threads, g->threads == 1 ? "" : "s", g->openblas_sgemm,
           f32_text, bf16_text);
    if (g->bf16_peak > 0)
        printf("  bf16 peak (%s, %d thread%s): %.1f GFLOP/s; step of the bf16 peak %.3f, of the fp32 "
               "kernels' peak %.3f; onednn bf16 of the bf16 peak %.2f\n", g->bf16_peak_isa, threads,
               threads == 1 ? "" : "s", g->bf16_peak, step_bf16_peak, step_peak, g->onednn_bf16_packed / g->bf16_peak);
    else
        printf("  bf16 peak: none, no bf16 dot product here (AVX512_BF16, AMX)\n");
    printf("  memory per rank: persistent %.1f MiB (params, grads, AdamW m, v), working %.1f MiB\n",
           res->persistent / 1048576.0, res->working / 1048576.0);

    if (cli->json_out) {
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "impl", "hyperpar");
        cJSON_AddStringToObject(j, "blas", blas.blas);
        cJSON_AddStringToObject(j, "blas_core", blas.core);
        cJSON_AddStringToObject(j, "blas_core_origin", blas.origin);
        char gemm_info[160];
        cJSON_AddStringToObject(j, "gemm_backend", hp_gemm_backend_name(hp_gemm_get_backend()));
        cJSON_AddStringToObject(j, "gemm_info", hp_gemm_info_line(gemm_info, sizeof gemm_info));
        cJSON_AddStringToObject(j, "peak_isa", isa);
        cJSON_AddNumberToObject(j, "peak_gflops", res->peak);
        cJSON_AddStringToObject(j, "machine_peak_isa", machine_isa);
        cJSON_AddNumberToObject(j, "machine_peak_gflops", res->machine_peak);
        cJSON_AddNumberToObject(j, "step_gflops", res->gflops);
        cJSON_AddNumberToObject(j, "step_over_peak", step_peak);
        cJSON_AddNumberToObject(j, "sgemm_over_peak", sgemm_peak);
        cJSON_AddStringToObject(j, "bf16_peak_isa", g->bf16_peak_isa);
        cJSON_AddNumberToObject(j, "bf16_peak_gflops", g->bf16_peak);
        cJSON_AddNumberToObject(j, "step_over_bf16_peak", step_bf16_peak);
        cJSON *gb = cJSON_AddObjectToObject(j, "gemm_bench");
        cJSON_AddNumberToObject(gb, "M", g->M);
        cJSON_AddNumberToObject(gb, "N", g->N);
        cJSON_AddNumberToObject(gb, "K", g->K);
        cJSON_AddNumberToObject(gb, "threads", g->threads);
        cJSON_AddNumberToObject(gb, "openblas_sgemm_gflops", g->openblas_sgemm);
        cJSON_AddNumberToObject(gb, "onednn_f32_gflops", g->onednn_f32);
        cJSON_AddNumberToObject(gb, "onednn_bf16_gflops", g->onednn_bf16_packed);
        cJSON_AddNumberToObject(gb, "onednn_bf16_with_packing_gflops", g->onednn_bf16);
        cJSON_AddStringToObject(gb, "onednn_f32_impl", g->onednn_f32_impl);
        cJSON_AddStringToObject(gb, "onednn_bf16_impl", g->onednn_bf16_impl);
        cJSON *skipped = cJSON_AddArrayToObject(gb, "skipped");   // what this machine cannot run
        if (!g->onednn_has_f32) cJSON_AddItemToArray(skipped, cJSON_CreateString("onednn_f32"));
        if (!g->onednn_has_bf16) cJSON_AddItemToArray(skipped, cJSON_CreateString("onednn_bf16"));
        cJSON_AddStringToObject(j, "model", m->name);
        cJSON_AddNumberToObject(j, "batch", B);
        cJSON_AddNumberToObject(j, "seq_len", S);
        cJSON_AddNumberToObject(j, "threads", threads);
        cJSON_AddStringToObject(j, "optimizer", cli->run.optimizer == HP_OPT_ADAMW ? "adamw" : "sgd");
        cJSON_AddNumberToObject(j, "steps", steps);
        cJSON_AddNumberToObject(j, "ms_best", res->ms_best);
        cJSON_AddNumberToObject(j, "ms_median", res->ms_median);
        cJSON_AddNumberToObject(j, "cpu_ms_best", res->cpu_ms_best);
        cJSON_AddNumberToObject(j, "tokens_per_s", res->tok_s);
        cJSON_AddNumberToObject(j, "flops_per_step", f.matmul + f.attn);
        cJSON_AddNumberToObject(j, "flops_matmul", f.matmul);
        cJSON_AddNumberToObject(j, "flops_attention", f.attn);
        cJSON_AddNumberToObject(j, "gflops", res->gflops);
        cJSON_AddNumberToObject(j, "sgemm_gflops", res->sgemm);
        cJSON_AddNumberToObject(j, "ratio_sgemm", res->ratio);
        cJSON_AddNumberToObject(j, "loss_last", loss);
        cJSON_AddNumberToObject(j, "persistent_bytes", (double)res->persistent);
        cJSON_AddNumberToObject(j, "working_bytes", (double)res->working);
        cJSON *sh = cJSON_AddArrayToObject(j, "sgemm");
        for (int i = 0; i < ns; i++) {
            cJSON *o = cJSON_CreateObject();
            cJSON_AddNumberToObject(o, "M", shapes[i].M);
            cJSON_AddNumberToObject(o, "N", shapes[i].N);
            cJSON_AddNumberToObject(o, "K", shapes[i].K);
            cJSON_AddBoolToObject(o, "transA", shapes[i].ta);
            cJSON_AddNumberToObject(o, "gflops", shapes[i].gflops);
            cJSON_AddItemToArray(sh, o);
        }
        if (hp_json_save(j, cli->json_out) != 0)
            fprintf(stderr, "hp bench: cannot write --json file '%s'\n", cli->json_out);
        cJSON_Delete(j);
    }
    return HP_EXIT_OK;
}

// ---------------------------------------------------------------------------------------
// --memory: one child job per degree (under mpirun); each rank reports its bytes

typedef struct { int rank; double persistent, working, padding; } mem_row;

// Child: runs under mpirun with --memory-out FILE. One training step (so every buffer is
// live), then rank 0 writes every rank's figures to FILE as JSON.
static int memory_child(tool_cli *cli, const char *out_path) {
    int rank, world;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    char err[256];
    hp_trainer *tr = hp_trainer_init(MPI_COMM_WORLD, &cli->model, &cli->dims, &cli->run, err, sizeof err);
    if (!tr) { if (rank == 0) fprintf(stderr, "hp bench: %s\n", err); return HP_EXIT_CONFIG; }
    hp_step_stats st;
    hp_trainer_step(tr, &st);
    size_t pers = 0, work = 0;
    hp_trainer_memory(tr, &pers, &work);
    // padding: shard slots past the last real row of a parameter (4 buffers of floats each)
    const hp_param_table *pt = hp_trainer_params(tr);
    int64_t real = 0;
    for (int i = 0; i < pt->n; i++) {
        const hp_param *p = &pt->p[i];
        const int64_t rows = p->local_shape[p->fsdp_dim];
        real += rows ? p->shard_rows * (p->local_numel / rows) : 0;
    }
    double mine[3] = { (double)pers, (double)work,
                       (double)(pt->shard_numel - real) * 4.0 * sizeof(float) };
    const double full_bytes = (double)pt->full_numel * 4.0 * sizeof(float);
    double *all = rank == 0 ? malloc(sizeof(double) * 3 * (size_t)world) : NULL;
    hp_mpi_gather(MPI_COMM_WORLD, all, mine, 3, MPI_DOUBLE, 0, "bench-memory-gather");
    hp_trainer_free(tr);
    if (rank != 0) return HP_EXIT_OK;
    cJSON *j = cJSON_CreateObject();
    cJSON_AddNumberToObject(j, "world", world);
    cJSON_AddNumberToObject(j, "full_bytes", full_bytes);
    cJSON *rows = cJSON_AddArrayToObject(j, "ranks");
    for (int r = 0; r < world; r++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "persistent", all[3 * r]);
        cJSON_AddNumberToObject(o, "working", all[3 * r + 1]);
        cJSON_AddNumberToObject(o, "padding", all[3 * r + 2]);
        cJSON_AddItemToArray(rows, o);
    }
    free(all);
    int rc = HP_EXIT_OK;
    if (hp_json_save(j, out_path) != 0) {
        fprintf(stderr, "hp bench: cannot write '%s'\n", out_path);
        rc = HP_EXIT_FAIL;
    }
    cJSON_Delete(j);
    return rc;
}


// Parent: launches one job per degree and prints the table.
static int memory_parent(const tool_cli *cli, const char *shards_list, int argc, char **argv) {
    int degrees[16], nd = 0;
    char list[128];
    snprintf(list, sizeof list, "%s", shards_list);
    for (char *tok = strtok(list, ","); tok && nd < 16; tok = strtok(NULL, ",")) {
        if (parse_pos_int("--shards", tok, &degrees[nd])) return HP_EXIT_CONFIG;
        nd++;
    }
    for (int i = 0; i < nd; i++) {   // validate every degree before starting any job
        hp_dims d = cli->dims;
        d.dp_shard = degrees[i];
        d.world = degrees[i];
        char err[256];
        if (hp_dims_validate(&d, &cli->model, &cli->run, err, sizeof err) != 0) {
            fprintf(stderr, "hp bench --memory: dp_shard %d: %s\n", degrees[i], err);
            return HP_EXIT_CONFIG;
        }
    }
    char tmpl[] = "/tmp/hp_bench_mem_XXXXXX";
    if (!mkdtemp(tmpl)) { fprintf(stderr, "hp bench: cannot make a temporary folder\n"); return HP_EXIT_FAIL; }

    cJSON *out = cJSON_CreateArray();
    printf("hp bench --memory: model %s, B %d x S %d, AdamW state; bytes per rank "
           "(persistent = params + grads + m + v shards)\n", cli->model.name, cli->run.batch,
           cli->run.seq_len);
    printf("%8s %6s %14s %14s %10s %8s %14s %14s\n", "dp_shard", "rank", "persistent", "full/N",
           "padding", "ratio", "working", "pers+working");
    int rc = HP_EXIT_OK;
    char seq[16], batch[16], deg[16], path[96];
    snprintf(seq, sizeof seq, "%d", cli->run.seq_len);
    snprintf(batch, sizeof batch, "%d", cli->run.batch);
    for (int i = 0; i < nd && rc == HP_EXIT_OK; i++) {
        const int N = degrees[i];
        snprintf(deg, sizeof deg, "%d", N);
        snprintf(path, sizeof path, "%s/dp%d.json", tmpl, N);
        char *cargv[] = { argv[0], "bench", "--memory-out", path, "--dp-shard", deg,
                          "--model", (char *)cli->model.name, "--seq-len", seq, "--batch", batch,
                          "--optimizer", "adamw", "--quiet", NULL };
        const int cargc = (int)(sizeof cargv / sizeof cargv[0]) - 1;
        int e = tool_launch_self(N, cargc, cargv);
        cJSON *j = e == 0 ? hp_json_load(path) : NULL;
        double full = 0.0;
        const int n_ranks = j ? tool_bench_read_memory(j, &full, NULL, 0) : -1;   // bench_json.c
        tool_bench_rank_bytes *rows = n_ranks > 0 ? calloc((size_t)n_ranks, sizeof *rows) : NULL;
        if (n_ranks < 0 || (n_ranks > 0 && !rows)) {
            if (j) fprintf(stderr, "hp bench --memory: the dp_shard %d job wrote no usable '%s'\n", N, path);
            else fprintf(stderr, "hp bench --memory: the dp_shard %d job failed (exit %d)\n", N, e);
            cJSON_Delete(j);
            rc = HP_EXIT_FAIL;
            break;
        }
        tool_bench_read_memory(j, &full, rows, n_ranks);
        for (int r = 0; r < n_ranks; r++) {
            const double pers = rows[r].persistent, work = rows[r].working, pad = rows[r].padding;
            printf("%8d %6d %14.0f %14.0f %10.0f %8.4f %14.0f %14.0f\n", N, r, pers, full / N, pad,
                   pers / (full / N), work, pers + work);
            cJSON *row = cJSON_CreateObject();
            cJSON_AddNumberToObject(row, "dp_shard", N);
            cJSON_AddNumberToObject(row, "rank", r);
            cJSON_AddNumberToObject(row, "persistent_bytes", pers);
            cJSON_AddNumberToObject(row, "full_over_n_bytes", full / N);
            cJSON_AddNumberToObject(row, "padding_bytes", pad);
            cJSON_AddNumberToObject(row, "working_bytes", work);
            cJSON_AddItemToArray(out, row);
        }
        free(rows);
        cJSON_Delete(j);
        remove(path);
    }
    rmdir(tmpl);
    if (rc == HP_EXIT_OK && cli->json_out) {
        if (hp_json_save(out, cli->json_out) != 0)
            fprintf(stderr, "hp bench: cannot write --json file '%s'\n", cli->json_out);
    }
    cJSON_Delete(out);
    return rc;
}

static int open_devnull(void) { return open("/dev/null", O_WRONLY); }

// ---------------------------------------------------------------------------------------
// --recipes: one verified run per recipe, as a child `hp run` (which launches its own ranks)

// the recipes are the library's named subset hp_bench_recipes (recipes.h), run with their flags

// Runs argv (argv[0] = this executable) as a child and returns its exit status.
static int run_child(char **args) {
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        int fd = open_devnull();
        if (fd >= 0) { dup2(fd, 1); close(fd); }   // the table is the output, not the logs
        execv(args[0], args);
        _exit(127);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0) if (errno != EINTR) return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static int bench_recipes(const tool_cli *cli) {
    static char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) { fprintf(stderr, "hp bench --recipes: cannot find this executable\n"); return HP_EXIT_FAIL; }
    exe[n] = '\0';
    char dir[] = "/tmp/hp_bench_rec_XXXXXX";
    if (!mkdtemp(dir)) { fprintf(stderr, "hp bench: cannot make a temporary folder\n"); return HP_EXIT_FAIL; }
    printf("hp bench --recipes: `hp run --verify --verify-steps 1`, S 32, B 8; bytes rank 0 moved in step 1\n");
    printf("%-14s %-9s %5s %7s %14s %14s %8s\n", "recipe", "model", "world", "verify", "bytes counted",
           "predicted", "seconds");
    cJSON *out = cJSON_CreateArray();
    int rc = HP_EXIT_OK;
    for (int i = 0; i < hp_n_bench_recipes; i++) {
        const hp_recipe *r = hp_recipe_find(hp_bench_recipes[i]);   // test_recipes: every id exists
        if (!r) continue;
        char path[96], flags[512];
        snprintf(path, sizeof path, "%s/r%d.json", dir, i);
        hp_recipe_flags(r, flags, sizeof flags);
        char *args[64];
        int k = 0;
        args[k++] = exe; args[k++] = "run";
        for (char *save = NULL, *t = strtok_r(flags, " ", &save); t && k < 56; t = strtok_r(NULL, " ", &save))
            args[k++] = t;
        args[k++] = "--verify"; args[k++] = "--verify-steps"; args[k++] = "1"; args[k++] = "--quiet";
        args[k++] = "--json"; args[k++] = path;
        args[k] = NULL;
        const double t0 = now_s();
        const int e = run_child(args);
        const double dt = now_s() - t0;
        cJSON *j = hp_json_load(path);
        tool_bench_run_result res;
        if (!j || tool_bench_read_run(j, &res) != 0) {   // bench_json.c
            printf("%-14s %-9s %5s %7s %14s %14s %8.1f   (exit %d, no result)\n", r->id, r->model, "-",
                   "FAIL", "-", "-", dt, e);
            rc = HP_EXIT_FAIL;
        } else {
            const int pass = e == 0 && res.pass;
            if (!pass) rc = HP_EXIT_FAIL;
            printf("%-14s %-9s %5d %7s %14.0f %14.0f %8.1f\n", r->id, r->model, res.world,
                   pass ? "PASS" : "FAIL", res.bytes_counted, res.bytes_predicted, dt);
            cJSON *o = cJSON_CreateObject();
            cJSON_AddStringToObject(o, "recipe", r->id);
            cJSON_AddStringToObject(o, "model", r->model);
            cJSON_AddNumberToObject(o, "world", res.world);
            cJSON_AddBoolToObject(o, "pass", pass);
            cJSON_AddNumberToObject(o, "bytes_counted", res.bytes_counted);
            cJSON_AddNumberToObject(o, "bytes_predicted", res.bytes_predicted);
            cJSON_AddItemToArray(out, o);
        }
        cJSON_Delete(j);
        remove(path);
    }
    rmdir(dir);
    if (cli->json_out) {
        if (hp_json_save(out, cli->json_out) != 0)
            fprintf(stderr, "hp bench: cannot write --json file '%s'\n", cli->json_out);
    }
    cJSON_Delete(out);
    return rc;
}

// ---------------------------------------------------------------------------------------

int tool_cmd_bench(int argc, char **argv) {
    tool_reexec(argv);   // the kernels this CPU deserves, OpenMP's wait policy, before MPI_Init
    // --memory and --recipes take no value (tool_cli_parse's extras all do): taken out first
    int memory = 0, recipes_mode = 0;
    char **av = calloc((size_t)argc + 1, sizeof *av);
    if (!av) { fprintf(stderr, "hp bench: out of memory\n"); return HP_EXIT_FAIL; }
    int ac = 0;
    for (int i = 0; i < argc; i++) {
        if (i >= 2 && !strcmp(argv[i], "--memory")) { memory = 1; continue; }
        if (i >= 2 && !strcmp(argv[i], "--recipes")) { recipes_mode = 1; continue; }
        av[ac++] = argv[i];
    }
    static const char *const extra[] = { "--threads", "--warmup", "--shards", "--memory-out", NULL };
    tool_cli cli;
    int e = tool_cli_parse(&cli, ac, av, 2, extra, bench_usage);
    if (e) { free(av); return e < 0 ? HP_EXIT_OK : e; }
    const char *memory_out = rest_value(&cli, "--memory-out");
    for (int i = 0; i < cli.n_rest; i++)
        if (strncmp(cli.rest[i], "--", 2)) {
            fprintf(stderr, "hp bench: unexpected argument '%s'\n", cli.rest[i]);
            free(av);
            return HP_EXIT_CONFIG;
        }
    // the benchmark's own defaults where the command line says nothing
    if (!has_flag(ac, av, "--model") && hp_model_config_by_name(memory ? "small" : "bench", &cli.model)) {
        free(av);
        return HP_EXIT_FAIL;
    }
    if (!memory && !memory_out) {
        if (!has_flag(ac, av, "--seq-len")) cli.run.seq_len = 512;
        if (!has_flag(ac, av, "--batch")) cli.run.batch = 4;
        if (!has_flag(ac, av, "--steps")) cli.run.steps = 3;
    }
    if (!has_flag(ac, av, "--optimizer")) cli.run.optimizer = HP_OPT_ADAMW;
    free(av);
    int threads = 0, warmup = 1;
    const char *v;
    if ((v = rest_value(&cli, "--threads")) && parse_pos_int("--threads", v, &threads)) return HP_EXIT_CONFIG;
    if ((v = rest_value(&cli, "--warmup"))) {
        if (!strcmp(v, "0")) warmup = 0;
        else if (parse_pos_int("--warmup", v, &warmup)) return HP_EXIT_CONFIG;
    }
    if (cli.run.steps < 1) {
        fprintf(stderr, "hp bench: --steps must be >= 1, got %d\n", cli.run.steps);
        return HP_EXIT_CONFIG;
    }
    const char *gemm;   // --gemm, HP_GEMM or openblas (gemm_choice.h)
    if ((e = tool_gemm_name(&cli, &gemm))) return e;

    if (recipes_mode) {
        if (tool_launch_under_mpi()) {
            fprintf(stderr, "hp bench --recipes launches its own jobs: run it without mpirun\n");
            return HP_EXIT_CONFIG;
        }
        return bench_recipes(&cli);
    }
    if (memory) {
        if (tool_launch_under_mpi()) {
            fprintf(stderr, "hp bench --memory launches its own jobs: run it without mpirun\n");
            return HP_EXIT_CONFIG;
        }
        const char *shards = rest_value(&cli, "--shards");
        return memory_parent(&cli, shards ? shards : "1,2,4,8", argc, argv);
    }

    // single rank: a singleton MPI job unless a launcher started us (then it must be 1 rank)
    hp_dims d = hp_dims_default();
    d.dp_shard = memory_out ? cli.dims.dp_shard : 1;
    d.world = memory_out ? d.dp_shard : 1;
    char err[256];
    if (hp_dims_validate(&d, &cli.model, &cli.run, err, sizeof err) != 0) {
        fprintf(stderr, "hp bench: %s\n", err);
        return HP_EXIT_CONFIG;
    }
    cli.dims = d;
    if (threads > 0) openblas_set_num_threads(threads);
    threads = openblas_get_num_threads();

    MPI_Init(&argc, &argv);
    int world;
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    tool_gemm_apply(gemm, &cli, MPI_COMM_WORLD, gemm_why, sizeof gemm_why);
    int rc;
    if (world != d.world) {
        fprintf(stderr, "hp bench: expected %d rank(s), started with %d (the single-rank bench "
                "needs no mpirun)\n", d.world, world);
        rc = HP_EXIT_CONFIG;
    } else if (memory_out) {
        rc = memory_child(&cli, memory_out);
    } else {
        step_result r;
        rc = bench_step(&cli, warmup, threads, &r);
    }
    fflush(stdout);
    MPI_Finalize();
    return rc;
}
