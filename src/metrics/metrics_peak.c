// metrics_peak.c - the peak the step line's mfu divides by, one that does not move with the
// machine's load (docs/metrics.md, "peak").
// defines: hp_metrics_peak, hp_metrics_peak_path
//
// A peak measured at every start on a shared machine is the share of it that start happened
// to get: one job read mfu 46.6 % at 498 tok/s and 29.5 % at 780 tok/s, implied peaks of 41
// and 102 GFLOP/s. mfu then says as much about the neighbours as about the run. The rule:
//   1. --metrics.peak_tflops X: X * 1e12 FLOP/s (source "given");
//   2. else this machine's peak, kept: the line of the peak file for this CPU model, the
//      vectors the GEMM's kernels use and the rank's BLAS threads (source "kept");
//   3. else measured once, with the full loop of fma_peak.c (best of 10 timings, ~0.3 s), by
//      world rank 0 alone while the other ranks sleep in a broadcast, and kept (source
//      "measured"). A file that cannot be written: the figure serves this run only and is
//      measured again next time (source "measured, not kept").
// The file is $HP_CACHE_DIR/fma_peak, else $XDG_CACHE_HOME/hyperpar/fma_peak, else
// $HOME/.cache/hyperpar/fma_peak, one line per (CPU, ISA, threads):
//   <GFLOP/s> <isa> <threads> <CPU model name>
// written whole (a temporary file renamed over it). Delete a line, or the file, to measure again.
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "fma_peak.h"
#include "hyperpar/metrics.h"
#include "util/file_io.h"
#include "hyperpar/blas.h"
#include "kernels/gemm.h"

#define PEAK_FILE_LINE 512
#define PEAK_FILE_MAX_LINES 256   // more lines than CPUs x ISAs x thread counts anyone runs

int hp_metrics_peak_path(char *buf, size_t n) {
    const char *dir = getenv("HP_CACHE_DIR");
    if (dir && *dir) return snprintf(buf, n, "%s/fma_peak", dir) < (int)n ? 0 : -1;
    const char *xdg = getenv("XDG_CACHE_HOME");
    if (xdg && *xdg) return snprintf(buf, n, "%s/hyperpar/fma_peak", xdg) < (int)n ? 0 : -1;
    const char *home = getenv("HOME");
    if (home && *home) return snprintf(buf, n, "%s/.cache/hyperpar/fma_peak", home) < (int)n ? 0 : -1;
    return -1;
}

// /proc/cpuinfo's first "model name", or "unknown": the peak belongs to this CPU, not another
// the same home directory is shared with.
static void cpu_model(char *buf, size_t n) {
    snprintf(buf, n, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[PEAK_FILE_LINE];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) != 0) continue;
        const char *v = strchr(line, ':');
        if (!v) break;
        v += strspn(v + 1, " \t") + 1;
        snprintf(buf, n, "%.*s", (int)strcspn(v, "\r\n"), v);
        break;
    }
    fclose(f);
}

// 1 when a line of the file is the key's: "<gflops> <isa> <threads> <model>", *gflops its figure.
static int line_is_key(const char *line, const char *isa, int threads, const char *model, double *gflops) {
    char l_isa[32];
    int l_threads = 0, off = 0;
    double g = 0.0;
    if (sscanf(line, "%lf %31s %d %n", &g, l_isa, &l_threads, &off) != 3 || off <= 0) return 0;
    const char *l_model = line + off;
    const size_t len = strcspn(l_model, "\r\n");
    if (strcmp(l_isa, isa) || l_threads != threads || len != strlen(model) || strncmp(l_model, model, len))
        return 0;
    *gflops = g;
    return 1;
}

// The kept GFLOP/s of the key, or 0 (no file, no line, or a figure that is not a peak).
static double peak_lookup(const char *path, const char *isa, int threads, const char *model) {
    FILE *f = fopen(path, "r");
    if (!f) return 0.0;
    char line[PEAK_FILE_LINE];
    double found = 0.0, g = 0.0;
    while (fgets(line, sizeof line, f))
        if (line_is_key(line, isa, threads, model, &g) && g > 0.0 && g < 1e9) found = g;
    fclose(f);
    return found;
}


// The file again with the key's line replaced by the new figure: written to a temporary file and
// renamed over the old one, so that a reader (another job starting) sees one or the other.
static int peak_store(const char *path, const char *isa, int threads, const char *model, double gflops) {
    if (hp_make_parent_dir(path) != 0) return -1;
    char tmp[1100];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    FILE *out = fopen(tmp, "w");
    if (!out) return -1;
    FILE *in = fopen(path, "r");
    if (in) {
        char line[PEAK_FILE_LINE];
        double g = 0.0;
        for (int n = 0; n < PEAK_FILE_MAX_LINES && fgets(line, sizeof line, in); n++)
            if (!line_is_key(line, isa, threads, model, &g) && strchr(line, '\n')) fputs(line, out);
        fclose(in);
    }
    fprintf(out, "%.4f %s %d %s\n", gflops, isa, threads, model);
    if (fclose(out) != 0 || rename(tmp, path) != 0) {
        unlink(tmp);
        return -1;
    }
    return 0;
}

// The vectors the products run on, as hp bench measures a step against: the BLAS core's (a
// preset Haswell core runs AVX2 on an AVX-512 CPU), or the CPU's widest under oneDNN.
static const char *gemm_vectors(void) {
    hp_blas_info blas;
    hp_blas_info_get(&blas);
    return hp_gemm_get_backend() == HP_GEMM_ONEDNN ? NULL : hp_blas_core_isa(blas.core);
}

double hp_metrics_peak(float peak_tflops, int threads, char *isa, size_t isa_len, char *source,
                         size_t source_len) {
    if (peak_tflops > 0.0f) {
        snprintf(isa, isa_len, "given");
        snprintf(source, source_len, "given");
        return (double)peak_tflops * 1e12;
    }
    const char *want = gemm_vectors();
    snprintf(isa, isa_len, "%s", hp_fma_isa(want));
    char path[1024], model[256];
    cpu_model(model, sizeof model);
    const int have_path = hp_metrics_peak_path(path, sizeof path) == 0;
    const double kept = have_path ? peak_lookup(path, isa, threads, model) : 0.0;
    if (kept > 0.0) {
        snprintf(source, source_len, "kept");
        return kept * 1e9;
    }
    // as the file will hold it, so that this run and the next divide by the same number
    char text[48];
    snprintf(text, sizeof text, "%.4f", hp_fma_peak(threads, want, isa, isa_len));
    const double gflops = strtod(text, NULL);
    const int stored = have_path && gflops > 0.0 && peak_store(path, isa, threads, model, gflops) == 0;
    snprintf(source, source_len, stored ? "measured" : "measured, not kept");
    return gflops * 1e9;
}
