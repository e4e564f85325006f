// cli_check.c - the checks of a command line that need every flag at once, run before any
// rank starts: output paths that cannot be written, and runs that cannot fit in memory.
// defines: tool_cli_check_outputs, tool_cli_check_dir, tool_cli_check_memory
//
// Each failure is one line naming the rule and the numbers, and HP_EXIT_CONFIG, so that a
// bad --dump or an absurd --seq-len never costs a training run (or a crash) to find out. The
// memory is the planner's prediction (plan.h: exact against the tracking allocator).
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "cli.h"
#include "hyperpar/plan.h"

// Creates dir and its parents (mkdir -p). Returns 0, or errno of the first failure.
static int make_dirs(const char *dir) {
    char path[4096];
    if (snprintf(path, sizeof path, "%s", dir) >= (int)sizeof path) return ENAMETOOLONG;
    for (char *p = path + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        if (mkdir(path, 0777) != 0 && errno != EEXIST) return errno;
        *p = '/';
    }
    if (mkdir(path, 0777) != 0 && errno != EEXIST) return errno;
    struct stat st;
    if (stat(path, &st) != 0) return errno;
    return S_ISDIR(st.st_mode) ? 0 : ENOTDIR;
}

int tool_cli_check_dir(const char *flag, const char *dir) {
    int e = make_dirs(dir);
    char probe[4200];
    snprintf(probe, sizeof probe, "%s/.hp-write-probe", dir);
    FILE *f = e ? NULL : fopen(probe, "w");
    if (!e && !f) e = errno;
    if (f) { fclose(f); unlink(probe); }
    if (e) {
        fprintf(stderr, "hp: %s: cannot write into folder '%s': %s\n", flag, dir, strerror(e));
        return HP_EXIT_CONFIG;
    }
    return 0;
}

// The file can be created or overwritten; one that did not exist is removed again.
static int check_file(const char *flag, const char *path) {
    struct stat st;
    const int existed = stat(path, &st) == 0;
    if (existed && S_ISDIR(st.st_mode)) {
        fprintf(stderr, "hp: %s: '%s' is a folder, not a file\n", flag, path);
        return HP_EXIT_CONFIG;
    }
    FILE *f = fopen(path, "a");
    if (!f) {
        fprintf(stderr, "hp: %s: cannot write file '%s': %s\n", flag, path, strerror(errno));
        return HP_EXIT_CONFIG;
    }
    fclose(f);
    if (!existed) unlink(path);
    return 0;
}

int tool_cli_check_outputs(const tool_cli *cli) {
    int e = 0;
    if (!e && cli->dump_dir) e = tool_cli_check_dir("--dump", cli->dump_dir);
    if (!e && cli->dump_folder) e = tool_cli_check_dir("job.dump_folder", cli->dump_folder);
    if (!e && cli->json_out) e = check_file("--json", cli->json_out);
    return e;
}

// MemAvailable of /proc/meminfo (what can be allocated without swapping), else free pages.
static double available_bytes(void) {
    FILE *f = fopen("/proc/meminfo", "r");
    char line[256];
    double kib = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %lf kB", &kib) == 1) break;
    if (f) fclose(f);
    if (kib >= 0) return kib * 1024.0;
    long pages = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    return pages > 0 && page > 0 ? (double)pages * (double)page : 0.0;
}

#define GIB (1024.0 * 1024.0 * 1024.0)

int tool_cli_check_memory(const tool_cli *cli, const hp_dims *d, int local_ranks) {
    // the planner's prediction of the busiest rank (the pp ranks differ; the other degrees
    // split evenly, the expert rows sized for the worst rank) and of rank 0, which under
    // --verify also runs the 1-rank reference
    hp_plan_memory est, mem0, ref;
    if (hp_plan_memory_busiest(&cli->model, d, &cli->run, 0, &est, NULL) != 0) {
        fprintf(stderr, "hp: cannot predict this run's memory (out of memory, or a pipeline "
                "schedule that cannot run)\n");
        return HP_EXIT_CONFIG;
    }
    double need = est.peak, largest = est.largest_elems;
    const char *largest_name = est.largest_name;
    if (cli->verify) {
        hp_dims one = hp_dims_default();
        one.dp_shard = 1;
        one.world = 1;
        char err[256];
        hp_run_config rc_one = cli->run;   // the reference: one process, so no async TP
        rc_one.async_tp = 0;
        if (hp_dims_validate(&one, &cli->model, &rc_one, err, sizeof err) == 0 &&
            hp_plan_memory_predict(&cli->model, &one, &rc_one, 0, &ref) == 0 &&
            hp_plan_memory_predict(&cli->model, d, &cli->run, 0, &mem0) == 0) {
            // the runs follow each other; both keep full copies of init, grads and params
            const double rank0 = (ref.peak > mem0.peak ? ref.peak : mem0.peak) +
                                 6 * (double)ref.params_total * sizeof(float);
            if (rank0 > need) need = rank0;
            if (ref.largest_elems > largest) { largest = ref.largest_elems; largest_name = ref.largest_name; }
        }
    }
    if (largest >= 2147483647.0) {
        fprintf(stderr, "hp: this run's largest buffer (%s) would hold %.3g elements; the limit "
                "is 2^31-1 (lower --seq-len or --batch, or raise the degrees)\n", largest_name, largest);
        return HP_EXIT_CONFIG;
    }
    const double avail = available_bytes() / (local_ranks > 0 ? local_ranks : 1);
    if (avail > 0 && need > avail) {
        fprintf(stderr, "hp: this run needs %.1f GiB per rank; %.1f GiB are available "
                "(%.1f GiB over %d rank%s)\n", need / GIB, avail / GIB,
                avail * (local_ranks > 0 ? local_ranks : 1) / GIB, local_ranks,
                local_ranks == 1 ? "" : "s");
        return HP_EXIT_CONFIG;
    }
    return 0;
}
