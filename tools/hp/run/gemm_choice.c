// gemm_choice.c - the GEMM backend of hp run and hp bench: --gemm, HP_GEMM, or the default, and
// the first line that names it with the BLAS (gemm_choice.h).
// defines: tool_gemm_name, tool_gemm_apply, tool_first_line, tool_reexec
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "gemm_choice.h"
#include "hyperpar/blas.h"
#include "hyperpar/cpu.h"
#include "hyperpar/plan.h"
#include "kernels/gemm.h"
#include "kernels/gemm_onednn.h"

static int picked_by_timing;   // --gemm auto decided: the first line says so

// A backend named outright must run the job's products here: oneDNN 2.6 has no bf16 matmul below
// avx512_core (an AVX2 CPU, or HP_CPU_ISA / ONEDNN_MAX_CPU_ISA capping it there).
static int backend_runs_here(const char *name, const char *source, const tool_cli *cli) {
    hp_gemm_backend b;
    if (hp_gemm_backend_parse(name, &b) != 0) return 0;   // auto and default choose what runs
    const int bf16 = cli->run.mp_param == HP_DTYPE_BFLOAT16;
    if (hp_gemm_backend_supports(b, bf16)) return 0;
    fprintf(stderr, "hp: %s%s: oneDNN has no %s matmul on this CPU (isa %s; its bf16 matmul needs "
            "avx512_core or wider): use --gemm openblas, auto or the default\n", source, name,
            bf16 ? "bf16" : "fp32", hp_gemm_onednn_isa());
    return HP_EXIT_CONFIG;
}

int tool_gemm_name(const tool_cli *cli, const char **name) {
    if (cli->gemm) { *name = cli->gemm; return backend_runs_here(cli->gemm, "--gemm ", cli); }
    const char *env = getenv("HP_GEMM");
    if (!env || !*env) { *name = "default"; return 0; }
    hp_gemm_backend b;
    const int k = hp_gemm_backend_parse(env, &b);
    if (k < 0) {
        fprintf(stderr, "hp: HP_GEMM expects openblas, onednn or auto, got '%s'\n", env);
        return HP_EXIT_CONFIG;
    }
    *name = k == 1 ? "auto" : hp_gemm_backend_name(b);
    return backend_runs_here(*name, "HP_GEMM=", cli);
}

// One optimizer step's FLOPs of the whole model (hp_plan_flops_predict: matmuls and attention),
// the same for every layout of the job.
static double step_flops(const tool_cli *cli) {
    hp_dims d = cli->dims;
    if (d.world < 1) d.world = 1;
    hp_plan_flops f;
    hp_plan_flops_predict(&cli->model, &d, &cli->run, &f);
    return f.step_total;
}

void tool_gemm_apply(const char *name, const tool_cli *cli, MPI_Comm comm, char *why, size_t n) {
    why[0] = '\0';
    hp_gemm_backend b = HP_GEMM_OPENBLAS;
    const int is_default = !strcmp(name, "default");
    const int bf16 = cli->run.mp_param == HP_DTYPE_BFLOAT16;
    if (is_default || hp_gemm_backend_parse(name, &b) == 1) {
        int rank = 0, pick = 0;
        MPI_Comm_rank(comm, &rank);
        char text[160] = "";
        if (rank == 0)
            pick = is_default ? (int)hp_gemm_default_backend(bf16, step_flops(cli), text, sizeof text)
                              : (int)hp_gemm_auto_measure(bf16, text, sizeof text);
        MPI_Bcast(&pick, 1, MPI_INT, 0, comm);
        b = pick == HP_GEMM_ONEDNN ? HP_GEMM_ONEDNN : HP_GEMM_OPENBLAS;
        // (auto times only where both backends run the job's products)
        picked_by_timing = !is_default && hp_gemm_backend_supports(HP_GEMM_ONEDNN, bf16);
        if (rank == 0 && picked_by_timing)
            snprintf(why, n, "gemm auto: %s, the faster (%s); a rerun may time the other, and its "
                     "bits differ: name --gemm to fix them", hp_gemm_backend_name(b), text);
        else if (rank == 0 && !is_default)
            snprintf(why, n, "gemm auto: %s (%s)", hp_gemm_backend_name(b), text);
        else if (rank == 0 && b == HP_GEMM_ONEDNN)
            snprintf(why, n, "gemm default: %s", text);
    }
    hp_gemm_set_backend(b);
}

char *tool_first_line(char *buf, size_t n) {
    char blas[256], gemm[160];
    const char *cap = hp_cpu_isa_cap_name();
    char capped[48] = "";
    if (cap) snprintf(capped, sizeof capped, " | cpu capped at %s (HP_CPU_ISA)", cap);
    snprintf(buf, n, "hp: blas %s | %s%s%s", hp_blas_info_line(blas, sizeof blas),
             hp_gemm_info_line(gemm, sizeof gemm), picked_by_timing ? " (picked by timing: --gemm auto)" : "",
             capped);
    return buf;
}

void tool_reexec(char **argv) {
    const int core = hp_blas_core_env(), omp = hp_gemm_omp_env();
    if (!core && !omp) return;
    fflush(stdout);
    fflush(stderr);
    execv("/proc/self/exe", argv);
    // the variables stay set: child processes still get them
    const char *core_v = getenv("OPENBLAS_CORETYPE"), *omp_v = getenv("OMP_WAIT_POLICY");
    fprintf(stderr, "hp: cannot restart with OPENBLAS_CORETYPE=%s, OMP_WAIT_POLICY=%s (continuing)\n",
            core_v ? core_v : "", omp_v ? omp_v : "");
}
