// blas_core.c - which OpenBLAS core this process runs, and the best one this CPU deserves.
// defines: hp_blas_info_get, hp_blas_info_line, hp_blas_core_env, hp_blas_core_reexec,
//          hp_blas_core_isa, hp_blas_conditions_text, hp_blas_core_below_cpu
//
// OpenBLAS (built with DYNAMIC_ARCH, as Debian's is) picks a kernel set from the CPU model
// when it loads; a model it does not know falls back to a generic core even when cpuid shows
// AVX-512. Here a core's rank is the vector ISA its kernels use (0 SSE, 1 AVX, 2 AVX2 + FMA,
// 3 AVX-512); the CPU's rank comes from hp_cpu_has (cpuid, capped by HP_CPU_ISA; it also checks that the OS
// saves the wide registers). Measured on a Xeon family 6 model 207 with OpenBLAS 0.3.21, 1
// thread, sgemm 2048x512x512: Prescott 32, Haswell 81, SkylakeX 152, Cooperlake 154 GFLOP/s.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <cblas.h>
#include "hyperpar/blas.h"
#include "hyperpar/cpu.h"

#define CHOSEN_VAR "HP_BLAS_CORE_CHOSEN"   // "<core>:<cpu features>", set with OPENBLAS_CORETYPE

// The vector ISA rank of every x86 core name OpenBLAS reports (openblas_get_corename).
// A name not listed (a core newer than this table) is never overridden.
static const struct { const char *name; int rank; } core_ranks[] = {
    { "Unknown", 0 }, { "Katmai", 0 }, { "Coppermine", 0 }, { "Northwood", 0 }, { "Banias", 0 },
    { "Prescott", 0 }, { "Core2", 0 }, { "Penryn", 0 }, { "Dunnington", 0 }, { "Nehalem", 0 },
    { "Atom", 0 }, { "Nano", 0 }, { "Opteron", 0 }, { "Opteron_SSE3", 0 }, { "Barcelona", 0 },
    { "Bobcat", 0 },
    { "Sandybridge", 1 }, { "Bulldozer", 1 }, { "Piledriver", 1 }, { "Steamroller", 1 },
    { "Excavator", 1 },
    { "Haswell", 2 }, { "Zen", 2 },
    { "SkylakeX", 3 }, { "Cooperlake", 3 }, { "SapphireRapids", 3 },
};

static int core_rank(const char *name) {
    for (size_t i = 0; i < sizeof core_ranks / sizeof core_ranks[0]; i++)
        if (!strcasecmp(name, core_ranks[i].name)) return core_ranks[i].rank;
    return 99;
}

const char *hp_blas_core_isa(const char *core) {
    static const char *const isa_of_rank[] = { "sse", "avx", "avx2", "avx512" };
    const int r = core_rank(core);
    return r < 4 ? isa_of_rank[r] : NULL;
}

// "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Prescott MAX_THREADS=64" -> 321 (0 if unparsed)
static int openblas_version(const char *config) {
    int a = 0, b = 0, c = 0;
    if (sscanf(config, "OpenBLAS %d.%d.%d", &a, &b, &c) != 3) return 0;
    return a * 10000 + b * 100 + c;
}

// The best core of this OpenBLAS for this CPU, with the cpuid features that justify it in
// `why`; NULL when the CPU has nothing better than SSE (or is not x86).
static const char *cpu_best_core(int ob_version, char *why, size_t n) {
    why[0] = '\0';
#if defined(__x86_64__) || defined(__i386__)
    // SkylakeX's kernels use AVX-512 F, DQ, BW and VL (the Skylake-SP set)
    if (hp_cpu_has(HP_CPU_AVX512F) && hp_cpu_has(HP_CPU_AVX512DQ) &&
        hp_cpu_has(HP_CPU_AVX512BW) && hp_cpu_has(HP_CPU_AVX512VL)) {
        // Cooperlake (0.3.10+) = SkylakeX's fp32 kernels + the bf16 ones
        if (hp_cpu_has(HP_CPU_AVX512BF16) && (ob_version == 0 || ob_version >= 310)) {
            snprintf(why, n, "cpu has avx512f, avx512bf16");
            return "Cooperlake";
        }
        snprintf(why, n, "cpu has avx512f");
        return "SkylakeX";
    }
    if (hp_cpu_has(HP_CPU_AVX2) && hp_cpu_has(HP_CPU_FMA)) {
        snprintf(why, n, "cpu has avx2, fma");
        return __builtin_cpu_is("amd") ? "Zen" : "Haswell";
    }
    if (hp_cpu_has(HP_CPU_AVX)) {
        snprintf(why, n, "cpu has avx");
        return "Sandybridge";
    }
#else
    (void)ob_version;
    (void)n;
#endif
    return NULL;
}

// The core hp would set for this process, or NULL (the user decided, or nothing is better).
static const char *better_core(char *why, size_t n) {
    const char *set = getenv("OPENBLAS_CORETYPE");
    if (set && *set) return NULL;                        // the user's or environment's choice
    const char *config = openblas_get_config();
    if (!config || !strstr(config, "DYNAMIC_ARCH")) return NULL;   // one core built in: no switch
    const char *best = cpu_best_core(openblas_version(config), why, n);
    const char *now = openblas_get_corename();
    if (hp_cpu_isa_cap() >= HP_ISA_AMX) return best && core_rank(now) < core_rank(best) ? best : NULL;
    // Under HP_CPU_ISA the core is the one a CPU of the cap gets, a wider one narrowed too
    // (Cooperlake -> SkylakeX under avx512: its bf16 kernels; Prescott: the generic SSE3 ones)
    if (!best) best = "Prescott";
    const size_t len = strlen(why);
    snprintf(why + len, n - len, "%sHP_CPU_ISA=%s", len ? ", " : "", hp_cpu_isa_cap_name());
    return strcasecmp(now, best) && core_rank(now) != 99 ? best : NULL;
}

int hp_blas_core_env(void) {
    char why[96], chosen[160];
    const char *best = better_core(why, sizeof why);
    if (!best) return 0;
    snprintf(chosen, sizeof chosen, "%s:%s", best, why);
    setenv("OPENBLAS_CORETYPE", best, 1);
    setenv(CHOSEN_VAR, chosen, 1);
    return 1;
}

void hp_blas_core_reexec(char **argv) {
    if (!hp_blas_core_env()) return;
    fflush(stdout);
    fflush(stderr);
    execv("/proc/self/exe", argv);
    // the variable stays set: child processes still get the right core
    fprintf(stderr, "hp: cannot restart with OPENBLAS_CORETYPE=%s (continuing on core %s)\n",
            getenv("OPENBLAS_CORETYPE"), openblas_get_corename());
}

void hp_blas_info_get(hp_blas_info *info) {
    memset(info, 0, sizeof *info);
    const char *config = openblas_get_config();
    const int ver = config ? openblas_version(config) : 0;
    if (ver) snprintf(info->blas, sizeof info->blas, "OpenBLAS %d.%d.%d", ver / 10000, ver / 100 % 100, ver % 100);
    else snprintf(info->blas, sizeof info->blas, "OpenBLAS");
    snprintf(info->core, sizeof info->core, "%s", openblas_get_corename());
    info->threads = openblas_get_num_threads();
    char why[96];
    const char *best = cpu_best_core(ver, why, sizeof why);
    snprintf(info->cpu_best, sizeof info->cpu_best, "%s", best ? best : "");

    const char *set = getenv("OPENBLAS_CORETYPE");
    const char *chosen = getenv(CHOSEN_VAR);
    const size_t sl = set ? strlen(set) : 0;
    if (set && *set && chosen && !strncmp(chosen, set, sl) && chosen[sl] == ':') {
        if (!strcasecmp(info->core, set))
            snprintf(info->origin, sizeof info->origin, "chosen by hp: %.80s", chosen + sl + 1);
        else   // a BLAS that ignores the variable, or does not know the name
            snprintf(info->origin, sizeof info->origin, "hp asked for %.20s (%.60s), the BLAS kept its own",
                     set, chosen + sl + 1);
    } else if (set && *set) {
        // OpenBLAS 0.3.21 answers a name it does not know with the last core of its table
        snprintf(info->origin, sizeof info->origin, "OPENBLAS_CORETYPE=%.40s set by the user%s", set,
                 strcasecmp(info->core, set) ? ", not a core of this BLAS" : "");
    } else if (best && core_rank(info->core) < core_rank(best)) {
        snprintf(info->origin, sizeof info->origin, "OpenBLAS's own choice; %.20s would suit (%.60s)", best, why);
    } else {
        snprintf(info->origin, sizeof info->origin, "OpenBLAS's own choice");
    }
}

int hp_blas_core_below_cpu(void) {
    hp_blas_info b;
    hp_blas_info_get(&b);
    return b.cpu_best[0] && core_rank(b.core) < core_rank(b.cpu_best);
}

char *hp_blas_info_line(char *buf, size_t n) {
    hp_blas_info b;
    hp_blas_info_get(&b);
    snprintf(buf, n, "%s, core %s (%s), %d thread%s", b.blas, b.core, b.origin, b.threads,
             b.threads == 1 ? "" : "s");
    return buf;
}

char *hp_blas_conditions_text(char *buf, size_t n, const char *blas, const char *core,
                              int threads_min, int threads_max) {
    if (threads_min == threads_max)
        snprintf(buf, n, "%s, core %s, %d BLAS thread%s per rank", blas, core, threads_min,
                 threads_min == 1 ? "" : "s");
    else
        snprintf(buf, n, "%s, core %s, %d-%d BLAS threads per rank", blas, core, threads_min, threads_max);
    return buf;
}
