// cmd_matrix.c - `hp matrix`: runs the completeness matrix of recipes.md and writes a report.
// defines: hp_cmd_matrix
//
//   hp matrix                              # every recipe (L0+L1+L2), negative case and failpoint
//   hp matrix --level L0 --report report   # the L0 recipes; report/report.{md,json,svg}
//   hp matrix --only M4-s2,neg-pp --repeat 3
//   hp matrix --list                       # the table as tab-separated lines (for CMake/scripts)
//   hp matrix --faults-only --report rep   # every failpoint: rep/faults.md, the faults-caught table
//
// Each recipe is `<this hp> run <flags> --verify --verify-steps 5 --json F --quiet` in a child
// process (which starts mpirun itself), run --repeat times (default 2) one after another - two
// cores - and the runs must agree bit for bit: every gradient of step 1 (the runs' --dump
// grads.safetensors, compared byte for byte) and the 5 losses. The losses come from the JSON,
// whose numbers cJSON 1.7.15 prints with 15 digits whenever they read back within 1-2 ulps
// (tests/test_recipes.c measures it), so they are exact only when hp run also writes a
// "losses_exact" array of "%.17g"/"%a" strings, which is read when present. A variant
// with same_as (ring vs all-gather CP, all-gather vs all-to-all dispatch) must also follow its
// twin's loss trajectory within the trajectory tolerance. Negative cases run `hp <args>` and
// must exit with their code and one stderr line matching their rule. With --faults every
// failpoint of include/hyperpar/failpoint.h runs its recipe once with HP_FAILPOINT=<name>: the
// verification must fail (exit 1) and name what the fault touches; the "faults caught" table
// goes into the report and DIR/faults.md.
// Children run in their own process group so a time-out (or Ctrl-C of the matrix) ends the
// child, its mpirun and every rank; nothing is left running.
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <regex.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cjson/cJSON.h>
#include "util/file_io.h"
#include "cli.h"
#include "recipes.h"
#include "report.h"
#include "run_json.h"

static const char *const matrix_usage =
    "usage: hp matrix [--level all|L0|L1|L2[,..]] [--only ID[,ID..]] [--repeat N] [--report DIR]\n"
    "                 [--timeout S] [--no-negative] [--faults | --faults-only | --no-faults]\n"
    "                 [--list] [--write-bad-files DIR]\n"
    "\n"
    "Runs every selected recipe of the completeness matrix (shared/spec/recipes.md) as\n"
    "`hp run <flags> --verify --json F --quiet`, N times (default 2: the runs must be\n"
    "bit-identical), then the negative cases (each must exit 2 with one line naming the rule).\n"
    "Prints a table; with --report writes DIR/report.md, DIR/report.json, DIR/report.svg and\n"
    "keeps every run's log and JSON under DIR/runs/. Exit 0 when everything passed, 1 otherwise.\n"
    "  --level L        recipes of these levels (default all); negative cases belong to L0\n"
    "  --only IDS       just these recipe variants / negative cases (see --list)\n"
    "  --repeat N       runs per recipe (1 = no determinism check; default 2)\n"
    "  --timeout S      seconds one run may take before it is killed (default 60)\n"
    "  --no-negative    skip the negative cases\n"
    "  --faults         also run every failpoint (HP_FAILPOINT) on its recipe: each must be caught\n"
    "                   (the default for the whole matrix, i.e. --level all without --only)\n"
    "  --faults-only    run the failpoints only (no recipes, no negative cases)\n"
    "  --no-faults      do not run the failpoints\n"
    "  --list           print the recipe table and the negative cases, tab-separated, and exit\n"
    "  --write-bad-files DIR   write the bad input files of the negative cases into DIR and exit\n";

#define TRAJ_TOL 1e-4   // recipes.md: each loss of the 5-step trajectory within 1e-4 relative

typedef struct {
    int  levels[HP_LEVEL_COUNT];
    char selection[128];
    const char *only;        // comma list or NULL
    const char *report_dir;
    int  repeat;
    double timeout_s;
    int  no_negative, list;
    int  faults, faults_only;    // --faults / --faults-only
    int  no_faults;              // --no-faults: not even with the whole matrix
    const char *bad_files_dir;
} matrix_opts;

static volatile sig_atomic_t g_interrupted = 0;
static void on_signal(int sig) { g_interrupted = sig; }

// snprintf that may cut: paths and messages here are bounded by their buffers on purpose
static void fmt(char *out, size_t cap, const char *f, ...) __attribute__((format(printf, 3, 4)));
static void fmt(char *out, size_t cap, const char *f, ...) {
    va_list ap;
    va_start(ap, f);
    vsnprintf(out, cap, f, ap);
    va_end(ap);
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

// ---------------------------------------------------------------------------------------------
// options

static int opt_value(int argc, char **argv, int *i, const char *name, const char **value) {
    const char *a = argv[*i];
    size_t n = strlen(name);
    if (strncmp(a, name, n)) return 0;
    if (a[n] == '=') { *value = a + n + 1; return 1; }
    if (a[n] != '\0') return 0;
    if (*i + 1 >= argc) {
        fprintf(stderr, "hp: %s expects a value\n", name);
        *value = NULL;
        return -1;
    }
    *value = argv[++*i];
    return 1;
}

static int parse_levels(const char *s, int levels[HP_LEVEL_COUNT]) {
    memset(levels, 0, sizeof(int) * HP_LEVEL_COUNT);
    if (!strcmp(s, "all")) {
        for (int l = 0; l < HP_LEVEL_COUNT; l++) levels[l] = 1;
        return 0;
    }
    char buf[64];
    fmt(buf, sizeof buf, "%s", s);
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        int l = hp_level_parse(t);
        if (l < 0) {
            fprintf(stderr, "hp: --level expects all, L0, L1 or L2 (comma-separated), got '%s'\n", s);
            return HP_EXIT_CONFIG;
        }
        levels[l] = 1;
    }
    return 0;
}

static int parse_opts(int argc, char **argv, matrix_opts *o) {
    memset(o, 0, sizeof *o);
    for (int l = 0; l < HP_LEVEL_COUNT; l++) o->levels[l] = 1;
    fmt(o->selection, sizeof o->selection, "--level all");
    o->repeat = 2;
    o->timeout_s = 60;
    for (int i = 2; i < argc; i++) {
        const char *v = NULL;
        int k;
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { fputs(matrix_usage, stdout); return -1; }
        if (!strcmp(a, "--list")) { o->list = 1; continue; }
        if (!strcmp(a, "--markdown")) { o->list = 2; continue; }
        if (!strcmp(a, "--no-negative")) { o->no_negative = 1; continue; }
        if (!strcmp(a, "--faults")) { o->faults = 1; continue; }
        if (!strcmp(a, "--no-faults")) { o->no_faults = 1; continue; }
        if (!strcmp(a, "--faults-only")) {
            o->faults = o->faults_only = 1;
            fmt(o->selection, sizeof o->selection, "--faults-only");
            continue;
        }
        if ((k = opt_value(argc, argv, &i, "--level", &v))) {
            if (k < 0 || parse_levels(v, o->levels)) return HP_EXIT_CONFIG;
            fmt(o->selection, sizeof o->selection, "--level %s", v);
            continue;
        }
        if ((k = opt_value(argc, argv, &i, "--only", &v))) {
            if (k < 0) return HP_EXIT_CONFIG;
            o->only = v;
            fmt(o->selection, sizeof o->selection, "--only %.100s", v);
            continue;
        }
        if ((k = opt_value(argc, argv, &i, "--report", &v))) {
            if (k < 0 || hp_cli_check_dir("--report", v)) return HP_EXIT_CONFIG;
            o->report_dir = v;
            continue;
        }
        if ((k = opt_value(argc, argv, &i, "--write-bad-files", &v))) {
            if (k < 0) return HP_EXIT_CONFIG;
            o->bad_files_dir = v;
            continue;
        }
        if ((k = opt_value(argc, argv, &i, "--repeat", &v))) {
            char *end;
            long n = k < 0 ? 0 : strtol(v, &end, 10);
            if (k < 0 || *v == '\0' || *end != '\0' || n < 1 || n > 100) {
                if (k > 0) fprintf(stderr, "hp: --repeat expects an integer in [1, 100], got '%s'\n", v);
                return HP_EXIT_CONFIG;
            }
            o->repeat = (int)n;
            continue;
        }
        if ((k = opt_value(argc, argv, &i, "--timeout", &v))) {
            char *end;
            double t = k < 0 ? 0 : strtod(v, &end);
            if (k < 0 || *v == '\0' || *end != '\0' || !(t > 0)) {
                if (k > 0) fprintf(stderr, "hp: --timeout expects seconds > 0, got '%s'\n", v);
                return HP_EXIT_CONFIG;
            }
            o->timeout_s = t;
            continue;
        }
        if (a[0] == '-') fprintf(stderr, "hp: unknown flag '%s' (see hp matrix --help)\n", a);
        else fprintf(stderr, "hp: matrix takes no positional arguments, got '%s'\n", a);
        return HP_EXIT_CONFIG;
    }
    // the whole matrix also proves the verifier: every failpoint must be caught
    int all_levels = 1;
    for (int l = 0; l < HP_LEVEL_COUNT; l++) all_levels &= o->levels[l];
    if (!o->only && all_levels && !o->no_faults) o->faults = 1;
    if (o->no_faults && o->faults_only) {
        fprintf(stderr, "hp: --no-faults and --faults-only exclude each other\n");
        return HP_EXIT_CONFIG;
    }
    if (o->no_faults) o->faults = 0;
    return 0;
}

// 1 if id is in the comma list
static int in_list(const char *list, const char *id) {
    size_t n = strlen(id);
    for (const char *s = list; *s;) {
        const char *e = strchr(s, ',');
        size_t len = e ? (size_t)(e - s) : strlen(s);
        if (len == n && !strncmp(s, id, n)) return 1;
        if (!e) break;
        s = e + 1;
    }
    return 0;
}

static int check_only(const char *list) {
    char buf[1024];
    fmt(buf, sizeof buf, "%s", list);
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (!hp_recipe_find(t) && !hp_negative_find(t)) {
            fprintf(stderr, "hp: --only: unknown recipe or negative case '%s' (see hp matrix --list)\n", t);
            return HP_EXIT_CONFIG;
        }
    }
    return 0;
}

// ---------------------------------------------------------------------------------------------
// children

// Removes a folder this command made (plain files and folders, a few levels deep).
static int remove_tree(const char *path, int depth) {
    struct stat st;
    if (lstat(path, &st) != 0) return -1;
    if (S_ISDIR(st.st_mode) && depth < 4) {
        DIR *d = opendir(path);
        if (!d) return -1;
        struct dirent *ent;
        while ((ent = readdir(d))) {
            if (!strcmp(ent->d_name, ".") || !strcmp(ent->d_name, "..")) continue;
            char sub[1400];
            fmt(sub, sizeof sub, "%s/%s", path, ent->d_name);
            remove_tree(sub, depth + 1);
        }
        closedir(d);
        return rmdir(path);
    }
    return unlink(path);
}


// Runs argv[0] with stdout to out_path and stderr to err_path (the same file when equal), in
// its own process group; waits at most timeout_s. Returns the exit code, 128+signal when it was
// killed by a signal, or -1 when it timed out (or the matrix was interrupted) and was killed.
static int run_child(char *const *argv, const char *out_path, const char *err_path, double timeout_s,
                     double *seconds) {
    const double t0 = now_s();
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "hp matrix: cannot fork: %s\n", strerror(errno));
        *seconds = 0;
        return 127;
    }
    if (pid == 0) {
        setpgid(0, 0);
        int fo = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int fe = strcmp(out_path, err_path) ? open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644) : fo;
        if (fo < 0 || fe < 0) _exit(127);
        dup2(fo, 1);
        dup2(fe, 2);
        int devnull = open("/dev/null", O_RDONLY);
        if (devnull >= 0) dup2(devnull, 0);
        execv(argv[0], argv);
        fprintf(stderr, "hp matrix: cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    setpgid(pid, pid);   // also here: no race with the child's own call
    int status = 0, timed_out = 0;
    for (;;) {
        pid_t w = waitpid(pid, &status, WNOHANG);
        if (w == pid) break;
        if (w < 0 && errno != EINTR) { status = 127 << 8; break; }
        if (g_interrupted || now_s() - t0 > timeout_s) {
            // the whole group: hp, its mpirun and the ranks
            timed_out = 1;
            kill(-pid, SIGTERM);
            double t1 = now_s();
            while (waitpid(pid, &status, WNOHANG) == 0 && now_s() - t1 < 5) {
                struct timespec ts = { 0, 20 * 1000 * 1000 };
                nanosleep(&ts, NULL);
            }
            kill(-pid, SIGKILL);
            waitpid(pid, &status, 0);
            break;
        }
        struct timespec ts = { 0, 10 * 1000 * 1000 };
        nanosleep(&ts, NULL);
    }
    // ranks that outlived their hp (they should not): end them with the group
    kill(-pid, SIGKILL);
    *seconds = now_s() - t0;
    if (timed_out) return -1;
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    return 127;
}

// Splits s at spaces into argv[first..]; tokens are strdup'ed with every "{DIR}" replaced by dir.
static int split_args(const char *s, const char *dir, char **argv, int first, int cap) {
    int n = first;
    while (*s && n < cap - 1) {
        while (*s == ' ') s++;
        if (!*s) break;
        const char *e = strchr(s, ' ');
        size_t len = e ? (size_t)(e - s) : strlen(s);
        char tok[1024];
        size_t k = 0;
        for (size_t i = 0; i < len && k < sizeof tok - 1;) {
            if (dir && len - i >= 5 && !strncmp(s + i, "{DIR}", 5)) {
                for (const char *d = dir; *d && k < sizeof tok - 1; d++) tok[k++] = *d;
                i += 5;
            } else {
                tok[k++] = s[i++];
            }
        }
        tok[k] = '\0';
        argv[n++] = strdup(tok);
        s += len;
    }
    argv[n] = NULL;
    return n;
}

static void free_args(char **argv, int first, int n) {
    for (int i = first; i < n; i++) free(argv[i]);
}

// The first line of a file that contains `needle` (NULL: any line), or the last such line when
// `last`; lines without a letter or digit do not count; "" when there is none.
static void file_line(const char *path, const char *needle, int last, char *out, int cap) {
    out[0] = '\0';
    FILE *f = fopen(path, "r");
    if (!f) return;
    char line[1024];
    while (fgets(line, sizeof line, f)) {
        size_t n = strlen(line);
        while (n && (line[n - 1] == '\n' || line[n - 1] == '\r')) line[--n] = '\0';
        int alnum = 0;
        for (size_t i = 0; i < n && !alnum; i++) alnum = isalnum((unsigned char)line[i]);
        if (!alnum) continue;   // empty lines and mpirun's "-----" rulers say nothing
        if (needle && !strstr(line, needle)) continue;
        fmt(out, (size_t)cap, "%s", line);
        if (!last) break;
    }
    fclose(f);
}

static int count_lines(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    int n = 0, c, prev = '\n';
    while ((c = fgetc(f)) != EOF) {
        if (c == '\n') n++;
        prev = c;
    }
    if (prev != '\n') n++;
    fclose(f);
    return n;
}


// 1 when both files exist and hold the same bytes.
static int files_equal(const char *a, const char *b) {
    FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
    int same = fa && fb;
    while (same) {
        char ba[65536], bb[65536];
        size_t na = fread(ba, 1, sizeof ba, fa), nb = fread(bb, 1, sizeof bb, fb);
        if (na != nb || memcmp(ba, bb, na)) same = 0;
        if (na == 0) break;
    }
    if (fa) fclose(fa);
    if (fb) fclose(fb);
    return same;
}

typedef hp_run_numbers run_numbers;

static int load_json(const char *path, hp_recipe_result *x, run_numbers *rn) {
    cJSON *j = hp_json_load(path);
    if (!j) return -1;
    hp_run_json_read(j, x, rn);   // run_json.c: the reader alone, so that it can be fuzzed
    cJSON_Delete(j);
    return 0;
}

// Why a run that did not pass failed, from its exit code and its log.
static void explain(hp_recipe_result *x, int code, const char *log_path, double limit_s, int json_pass) {
    char line[400];
    if (code == -1) {
        x->verdict = HP_V_TIMEOUT;
        if (g_interrupted) fmt(x->failure, sizeof x->failure, "interrupted; the run was killed");
        else fmt(x->failure, sizeof x->failure, "still running after %.0f s (--timeout); killed with its ranks", limit_s);
    } else if (code == HP_EXIT_CONFIG) {
        x->verdict = HP_V_REFUSED;
        file_line(log_path, "hp", 0, line, sizeof line);
        fmt(x->failure, sizeof x->failure, "refused as a bad configuration: %.300s", line);
    } else if (code == HP_EXIT_FAIL && x->have_json && !json_pass) {
        x->verdict = HP_V_FAIL;
        if (!x->failure[0]) fmt(x->failure, sizeof x->failure, "verification failed");
    } else {
        x->verdict = HP_V_CRASH;
        // the most telling line: hp's own message, a sanitizer's or an MPI error, else the last
        static const char *const needles[] = { "hp:", "ERROR", "Sanitizer", "error", NULL };
        line[0] = '\0';
        for (int k = 0; needles[k] && !line[0]; k++) file_line(log_path, needles[k], 0, line, sizeof line);
        if (!line[0]) file_line(log_path, NULL, 1, line, sizeof line);
        if (code > 128) fmt(x->failure, sizeof x->failure, "killed by signal %d: %.280s", code - 128, line);
        else if (json_pass) fmt(x->failure, sizeof x->failure, "exit %d although its verification passed: %.260s", code, line);
        else fmt(x->failure, sizeof x->failure, "exit %d without a verification result: %.280s", code, line);
    }
}

static int same_bits(const double *a, const double *b, int n) {
    return memcmp(a, b, (size_t)n * sizeof(double)) == 0;
}

// One `hp run` of a resume recipe: flags, then the extra arguments (NULL-terminated).
static int run_stage(const char *exe, const char *flags, const char *log, const matrix_opts *o,
                     double *secs, ...) {
    char *argv[64];
    argv[0] = (char *)exe;
    argv[1] = "run";
    int n = split_args(flags, NULL, argv, 2, 48);
    const int n_own = n;
    va_list ap;
    va_start(ap, secs);
    for (const char *a; n < 62 && (a = va_arg(ap, const char *));) argv[n++] = (char *)a;
    va_end(ap);
    argv[n] = NULL;
    const int code = run_child(argv, log, log, o->timeout_s, secs);
    free_args(argv, 2, n_own);
    return code;
}

// A resume recipe (K1-K6): 6 steps under layout A straight; 3 under A saved at step 3; resumed
// under layout B to step 6. The losses of steps 4-6 must equal the straight run's: bit for bit
// when B is A, else within 1e-5 relative (the final parameters are the CTests' business:
// tests/checkpoint.cmake compares them too).
static void run_resume(const char *exe, const hp_recipe *r, const matrix_opts *o, const char *runs_dir,
                       hp_recipe_result *x) {
    char flags[512], full[1024], res[1024], ckpt[1024], log[1024];
    hp_recipe_flags(r, flags, sizeof flags);
    fmt(full, sizeof full, "%s/%s.full.json", runs_dir, r->id);
    fmt(res, sizeof res, "%s/%s.resumed.json", runs_dir, r->id);
    fmt(ckpt, sizeof ckpt, "%s/%s.ckpt", runs_dir, r->id);
    fmt(log, sizeof log, "%s/%s.log", runs_dir, r->id);
    remove_tree(ckpt, 0);
    unlink(full);
    unlink(res);
    double t = 0, secs = 0;
    int code = run_stage(exe, flags, log, o, &t, "--steps", "6", "--json", full, "--quiet", (char *)NULL);
    secs += t;
    if (code == 0)
        code = run_stage(exe, flags, log, o, &t, "--steps", "3", "--checkpoint-dir", ckpt,
                         "--checkpoint-every", "3", "--quiet", (char *)NULL);
    secs += t;
    if (code == 0)
        code = run_stage(exe, r->resume_to, log, o, &t, "--steps", "6", "--resume", ckpt,
                         "--json", res, "--quiet", (char *)NULL);
    x->seconds = secs + t;
    x->runs = 3;
    x->exit_code = code;
    run_numbers a = { 0 }, b = { 0 };
    const int have = code == 0 && load_json(full, NULL, &a) == 0 && load_json(res, NULL, &b) == 0 &&
                     a.steps == 6 && b.steps == 3;
    fmt(x->log, sizeof x->log, "%s", log);
    if (!have) {
        x->verdict = HP_V_FAIL;
        fmt(x->failure, sizeof x->failure, code ? "a run exited %d (see the log)" : "no losses of steps 4-6", code);
        return;
    }
    x->have_json = 1;
    x->steps = 3;
    const int bitwise = !strcmp(flags, r->resume_to);
    double worst = 0;
    int same = 1;
    for (int s = 0; s < 3; s++) {
        x->losses[s] = b.losses[s];
        x->losses_ref[s] = a.losses[3 + s];
        const double e = fabs(b.losses[s] - a.losses[3 + s]) / fabs(a.losses[3 + s]);
        if (!(e <= worst)) worst = e;
        same &= b.losses[s] == a.losses[3 + s];
    }
    x->traj_worst = x->loss_rel_err = worst;
    x->worst_grad_rel = x->worst_param_rel = 0;
    x->traffic_ok = x->init_equal = 1;
    if (bitwise ? !same : !(worst <= 1e-5)) {
        x->verdict = HP_V_FAIL;
        fmt(x->failure, sizeof x->failure, "resumed losses of steps 4-6 %s the uninterrupted run's (worst %.3g)",
            bitwise ? "are not bit-identical to" : "differ by more than 1e-5 from", worst);
    }
}

static void run_recipe(const char *exe, const hp_recipe *r, const matrix_opts *o, const char *runs_dir,
                       hp_recipe_result *x) {
    memset(x, 0, sizeof *x);
    if (r->resume_to) {
        x->r = r;
        x->world = hp_recipe_world(r);
        x->deterministic = -1;
        x->same_as_rel = -1;
        x->verdict = HP_V_PASS;
        run_resume(exe, r, o, runs_dir, x);
        return;
    }
    x->r = r;
    x->world = hp_recipe_world(r);
    x->deterministic = -1;
    x->same_as_rel = -1;
    x->verdict = HP_V_PASS;
    char flags[512], json[1024], log[1024], dump[1024], dump1[1024] = "";
    hp_recipe_flags(r, flags, sizeof flags);
    run_numbers first = { 0 };
    int keep_dumps = 0;
    for (int rep = 0; rep < o->repeat && !g_interrupted; rep++) {
        char *argv[64];
        argv[0] = (char *)exe;
        argv[1] = "run";
        int n = split_args(flags, NULL, argv, 2, 48);
        const int n_own = n;
        fmt(json, sizeof json, "%s/%s.run%d.json", runs_dir, r->id, rep + 1);
        fmt(log, sizeof log, "%s/%s.run%d.log", runs_dir, r->id, rep + 1);
        fmt(dump, sizeof dump, "%s/%s.run%d.dump", runs_dir, r->id, rep + 1);
        unlink(json);
        remove_tree(dump, 0);
        if (rep == 0) fmt(dump1, sizeof dump1, "%s", dump);
        if (o->repeat > 1) {
            // the full gradients of step 1, to compare the runs bit for bit
            argv[n++] = "--dump";
            argv[n++] = dump;
        }
        argv[n++] = "--verify";
        argv[n++] = "--verify-steps";
        argv[n++] = "5";
        argv[n++] = "--json";
        argv[n++] = json;
        argv[n++] = "--quiet";
        argv[n] = NULL;
        double secs;
        int code = run_child(argv, log, log, o->timeout_s, &secs);
        free_args(argv, 2, n_own);
        x->runs = rep + 1;
        run_numbers rn = { 0 };
        int have = load_json(json, rep == 0 ? x : NULL, &rn) == 0;
        if (rep == 0) {
            x->seconds = secs;
            x->exit_code = code;
            first = rn;
        }
        if (code != 0 || !have || !rn.pass) {
            if (rep > 0) x->exit_code = code;
            if (code == 0) code = 127;     // exit 0 without a passing JSON result
            explain(x, code, log, o->timeout_s, have && rn.pass);
            if (rep > 0) {
                char tmp[sizeof x->failure];
                fmt(tmp, sizeof tmp, "run %d of %d: %s", rep + 1, o->repeat, x->failure);
                memcpy(x->failure, tmp, sizeof tmp);
            }
            fmt(x->log, sizeof x->log, "%s", log);
            break;
        }
        if (rep > 0) {
            char g1[1100], gn[1100];
            fmt(g1, sizeof g1, "%s/grads.safetensors", dump1);
            fmt(gn, sizeof gn, "%s/grads.safetensors", dump);
            if (rn.steps != first.steps || !same_bits(rn.losses, first.losses, rn.steps)) {
                int s = 0;
                while (s < rn.steps && s < first.steps && rn.losses[s] == first.losses[s]) s++;
                x->deterministic = 0;
                x->verdict = HP_V_NONDET;
                fmt(x->failure, sizeof x->failure,
                         "run %d differs from run 1 at step %d: loss %.17g != %.17g", rep + 1, s + 1,
                         s < rn.steps ? rn.losses[s] : NAN, s < first.steps ? first.losses[s] : NAN);
            } else if (!files_equal(g1, gn)) {
                x->deterministic = 0;
                x->verdict = HP_V_NONDET;
                fmt(x->failure, sizeof x->failure, "run %d and run 1 have different gradients of step 1 (%s vs %s)",
                    rep + 1, gn, g1);
            }
            if (x->deterministic == 0) {
                fmt(x->log, sizeof x->log, "%s", log);
                keep_dumps = 1;   // to look at
                break;
            }
            x->deterministic = 1;
        }
    }
    if (g_interrupted && x->verdict == HP_V_PASS && x->runs < o->repeat) {
        x->verdict = HP_V_TIMEOUT;
        fmt(x->failure, sizeof x->failure, "interrupted after %d of %d runs", x->runs, o->repeat);
    }
    // the dumps only served the comparison
    for (int rep = 0; rep < x->runs && !keep_dumps; rep++) {
        fmt(dump, sizeof dump, "%s/%s.run%d.dump", runs_dir, r->id, rep + 1);
        remove_tree(dump, 0);
    }
}

// The worst relative difference between the loss trajectories of two results.
static double traj_diff(const hp_recipe_result *a, const hp_recipe_result *b) {
    int n = a->steps < b->steps ? a->steps : b->steps;
    double w = 0;
    for (int s = 0; s < n; s++) {
        double d = fabs(a->losses[s] - b->losses[s]) / fabs(b->losses[s]);
        if (d > w || d != d) w = d;
    }
    return w;
}

static void run_negative(const char *exe, const hp_negative *g, const matrix_opts *o, const char *runs_dir,
                         const char *bad_dir, hp_negative_result *x) {
    memset(x, 0, sizeof *x);
    x->n = g;
    char out[1024], err[1024];
    fmt(out, sizeof out, "%s/%s.out", runs_dir, g->id);
    fmt(err, sizeof err, "%s/%s.err", runs_dir, g->id);
    char *argv[64];
    argv[0] = (char *)exe;
    int n = split_args(g->args, bad_dir, argv, 1, 64);
    // a refusal is fast: no launcher, no rank; 30 s is a hang
    double limit = o->timeout_s < 30 ? o->timeout_s : 30;
    x->exit_code = run_child(argv, out, err, limit, &x->seconds);
    free_args(argv, 1, n);
    file_line(err, NULL, 0, x->line, sizeof x->line);
    x->n_lines = count_lines(err);
    regex_t re;
    int rc = regcomp(&re, g->err_regex, REG_EXTENDED | REG_NOSUB);
    if (rc != 0) {
        fmt(x->why, sizeof x->why, "the case's regex does not compile: %.100s", g->err_regex);
        return;
    }
    int match = regexec(&re, x->line, 0, NULL, 0) == 0;
    regfree(&re);
    if (x->exit_code == -1) fmt(x->why, sizeof x->why, "still running after %.0f s (killed)", limit);
    else if (x->exit_code != g->code) fmt(x->why, sizeof x->why, "exit %d, want %d", x->exit_code, g->code);
    else if (x->n_lines != 1) fmt(x->why, sizeof x->why, "stderr has %d lines, want 1", x->n_lines);
    else if (!match) fmt(x->why, sizeof x->why, "stderr does not match /%.120s/", g->err_regex);
    else x->ok = 1;
}

// One failpoint: its recipe with HP_FAILPOINT=<name> (the child and its ranks inherit it) must
// exit 1 with a failed verification whose report matches the failpoint's `touches` regex.
static void run_fault(const char *exe, const hp_failpoint_info *fp, const matrix_opts *o,
                      const char *runs_dir, hp_fault_result *x) {
    memset(x, 0, sizeof *x);
    x->fp = fp;
    char json[1024], log[1024];
    fmt(json, sizeof json, "%s/fault-%s.json", runs_dir, fp->name);
    fmt(log, sizeof log, "%s/fault-%s.log", runs_dir, fp->name);
    unlink(json);
    char *argv[64];
    argv[0] = (char *)exe;
    argv[1] = "run";
    int n = split_args(fp->flags, NULL, argv, 2, 52);
    const int n_own = n;
    argv[n++] = "--verify";
    argv[n++] = "--verify-steps";
    argv[n++] = "5";
    argv[n++] = "--json";
    argv[n++] = json;
    argv[n++] = "--quiet";
    argv[n] = NULL;
    setenv("HP_FAILPOINT", fp->name, 1);
    x->exit_code = run_child(argv, log, log, o->timeout_s, &x->seconds);
    unsetenv("HP_FAILPOINT");
    free_args(argv, 2, n_own);
    fmt(x->log, sizeof x->log, "%s", log);
    hp_recipe_result r;
    memset(&r, 0, sizeof r);
    run_numbers rn = { 0 };
    cJSON *j = hp_json_load(json);
    x->have_json = j != NULL;
    x->grad_norm_rel = -1;
    if (j) {
        hp_run_json_read(j, &r, &rn);
        const cJSON *gn = cJSON_GetObjectItemCaseSensitive(j, "grad_norm");
        const cJSON *gr = cJSON_GetObjectItemCaseSensitive(j, "grad_norm_ref");
        if (cJSON_IsNumber(gn) && cJSON_IsNumber(gr) && gr->valuedouble > 0)
            x->grad_norm_rel = fabs(gn->valuedouble - gr->valuedouble) / gr->valuedouble;
        cJSON_Delete(j);
    }
    if (x->have_json) {
        fmt(x->failure, sizeof x->failure, "%s", r.failure);
        fmt(x->worst_grad, sizeof x->worst_grad, "%s", r.worst_grad);
        fmt(x->worst_param, sizeof x->worst_param, "%s", r.worst_param);
        x->worst_grad_rel = r.worst_grad_rel;
        x->worst_param_rel = r.worst_param_rel;
        x->loss_rel_err = r.loss_rel_err;
    }
    // what the verifier said, as tests/run_failpoint.sh matches it
    char said[512];
    fmt(said, sizeof said, "%s | %s | %s", x->failure, x->worst_grad, x->worst_param);
    regex_t re;
    const int re_ok = regcomp(&re, fp->touches, REG_EXTENDED | REG_NOSUB) == 0;
    const int named = re_ok && regexec(&re, said, 0, NULL, 0) == 0;
    if (re_ok) regfree(&re);
    if (!strcmp(fp->touches, "watchdog")) {   // a hang: caught when the watchdog ended the job
        FILE *f = fopen(log, "r");
        char line[512];
        int said_watchdog = 0;
        while (f && fgets(line, sizeof line, f)) said_watchdog |= strstr(line, "hp: watchdog: rank") != NULL;
        if (f) fclose(f);
        if (x->exit_code == 0 || !said_watchdog)
            fmt(x->why, sizeof x->why, "exit %d without the watchdog's line", x->exit_code);
        else {
            fmt(x->failure, sizeof x->failure, "watchdog ended the job (exit %d)", x->exit_code);
            x->caught = 1;
        }
        return;
    }
    if (x->exit_code == -1) fmt(x->why, sizeof x->why, "still running after %.0f s (killed)", o->timeout_s);
    else if (x->exit_code != HP_EXIT_FAIL) fmt(x->why, sizeof x->why, "exit %d, want 1 (verification must fail)", x->exit_code);
    else if (!x->have_json) fmt(x->why, sizeof x->why, "no JSON result");
    else if (rn.pass) fmt(x->why, sizeof x->why, "the verification passed");
    else if (!re_ok) fmt(x->why, sizeof x->why, "the failpoint's regex does not compile: %.100s", fp->touches);
    else if (!named) fmt(x->why, sizeof x->why, "the verifier names '%.120s', not /%.40s/", said, fp->touches);
    else x->caught = 1;
}

// ---------------------------------------------------------------------------------------------

static int make_dir(const char *path) {
    if (mkdir(path, 0777) == 0 || errno == EEXIST) return 0;
    fprintf(stderr, "hp matrix: cannot create '%s': %s\n", path, strerror(errno));
    return -1;
}

int hp_cmd_matrix(int argc, char **argv) {
    matrix_opts o;
    int e = parse_opts(argc, argv, &o);
    if (e < 0) return HP_EXIT_OK;
    if (e) return e;
    if (o.only && check_only(o.only)) return HP_EXIT_CONFIG;
    if (o.list) {
        if (o.list == 2) hp_recipes_markdown(stdout);
        else hp_recipes_list(stdout);
        return HP_EXIT_OK;
    }
    if (o.bad_files_dir) {
        char err[256];
        if (hp_negative_write_files(o.bad_files_dir, err, sizeof err) != 0) {
            fprintf(stderr, "hp matrix: --write-bad-files: %s\n", err);
            return HP_EXIT_FAIL;
        }
        return HP_EXIT_OK;
    }
    if (hp_launch_under_mpi()) {
        fprintf(stderr, "hp: matrix starts its own jobs: run it directly, not under mpirun/srun\n");
        return HP_EXIT_CONFIG;
    }
    static char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) exe[n] = '\0';
    else fmt(exe, sizeof exe, "%s", argv[0]);

    // where the runs' logs and JSON go: DIR/runs with --report, else a temporary folder that is
    // removed when everything passed
    char work[1024], runs_dir[1100], bad_dir[1100];
    int temp_work = 0;
    if (o.report_dir) {
        if (make_dir(o.report_dir)) return HP_EXIT_FAIL;
        fmt(work, sizeof work, "%s", o.report_dir);
    } else {
        const char *tmp = getenv("TMPDIR");
        fmt(work, sizeof work, "%s/hp-matrix-XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(work)) {
            fprintf(stderr, "hp matrix: cannot create a temporary folder '%s': %s\n", work, strerror(errno));
            return HP_EXIT_FAIL;
        }
        temp_work = 1;
    }
    fmt(runs_dir, sizeof runs_dir, "%s/runs", work);
    fmt(bad_dir, sizeof bad_dir, "%s/runs/bad_files", work);
    if (make_dir(runs_dir)) return HP_EXIT_FAIL;

    // selection
    const hp_recipe **sel = calloc((size_t)hp_n_recipes, sizeof *sel);
    const hp_negative **negs = calloc((size_t)hp_n_negatives, sizeof *negs);
    int n_sel = 0, n_negs = 0;
    for (int i = 0; i < hp_n_recipes && !o.faults_only; i++) {
        const hp_recipe *r = &hp_recipes[i];
        if (o.only ? in_list(o.only, r->id) : o.levels[r->level]) sel[n_sel++] = r;
    }
    for (int i = 0; i < hp_n_negatives && !o.no_negative && !o.faults_only; i++) {
        const hp_negative *g = &hp_negatives[i];
        if (o.only ? in_list(o.only, g->id) : o.levels[HP_LEVEL_L0]) negs[n_negs++] = g;
    }

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    struct sigaction old_int, old_term;
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);

    hp_matrix_report m;
    memset(&m, 0, sizeof m);
    fmt(m.selection, sizeof m.selection, "%s", o.selection);
    m.repeat = o.repeat;
    m.rec = calloc((size_t)(n_sel ? n_sel : 1), sizeof *m.rec);
    m.neg = calloc((size_t)(n_negs ? n_negs : 1), sizeof *m.neg);
    const double t0 = now_s();

    for (int i = 0; i < n_sel && !g_interrupted; i++) {
        const hp_recipe *r = sel[i];
        fprintf(stderr, "[%2d/%d] %-13s w%d %-3s ... ", i + 1, n_sel, r->id, hp_recipe_world(r), hp_level_name(r->level));
        fflush(stderr);
        hp_recipe_result *x = &m.rec[m.n_rec++];
        run_recipe(exe, r, &o, runs_dir, x);
        fprintf(stderr, "%s %.1fs%s\n", hp_verdict_name(x->verdict), x->seconds,
                x->deterministic == 1 ? " (bit-identical rerun)" : "");
    }
    // alternative paths against their twins
    for (int i = 0; i < m.n_rec; i++) {
        hp_recipe_result *x = &m.rec[i];
        if (!x->r->same_as || !x->have_json) continue;
        for (int k = 0; k < m.n_rec; k++) {
            hp_recipe_result *y = &m.rec[k];
            if (strcmp(y->r->id, x->r->same_as) || !y->have_json) continue;
            x->same_as_rel = traj_diff(x, y);
            if (x->verdict == HP_V_PASS && !(x->same_as_rel <= TRAJ_TOL)) {
                x->verdict = HP_V_MISMATCH;
                fmt(x->failure, sizeof x->failure, "loss trajectory differs from %s by %.3g relative (> %.0e)",
                         y->r->id, x->same_as_rel, TRAJ_TOL);
            }
        }
    }
    if (n_negs && !g_interrupted) {
        char err[256];
        if (hp_negative_write_files(bad_dir, err, sizeof err) != 0)
            fprintf(stderr, "hp matrix: cannot write the bad input files: %s\n", err);
        for (int i = 0; i < n_negs && !g_interrupted; i++) {
            fprintf(stderr, "[neg %2d/%d] %-19s ... ", i + 1, n_negs, negs[i]->id);
            hp_negative_result *g = &m.neg[m.n_neg++];
            run_negative(exe, negs[i], &o, runs_dir, bad_dir, g);
            fprintf(stderr, "%s %.2fs%s%s\n", g->ok ? "refused-ok" : "WRONG", g->seconds, g->ok ? "" : ": ", g->why);
        }
    }
    if (o.faults) {
        m.faults = calloc(HP_FP_COUNT, sizeof *m.faults);
        for (int i = 0; i < HP_FP_COUNT && !g_interrupted; i++) {
            fprintf(stderr, "[fault %2d/%d] %-24s on %-10s ... ", i + 1, HP_FP_COUNT,
                    hp_failpoints[i].name, hp_failpoints[i].recipe);
            hp_fault_result *x = &m.faults[m.n_faults++];
            run_fault(exe, &hp_failpoints[i], &o, runs_dir, x);
            m.n_faults_caught += x->caught;
            fprintf(stderr, "%s %.1fs%s%s\n", x->caught ? "caught" : "MISSED", x->seconds,
                    x->caught ? "" : ": ", x->why);
        }
        for (; m.n_faults < HP_FP_COUNT; m.n_faults++) {   // interrupted: the rest are missed
            m.faults[m.n_faults].fp = &hp_failpoints[m.n_faults];
            m.faults[m.n_faults].exit_code = -1;
            fmt(m.faults[m.n_faults].why, sizeof m.faults[m.n_faults].why, "not run (interrupted)");
        }
    }
    m.seconds = now_s() - t0;
    for (int i = 0; i < m.n_rec; i++) {
        if (m.rec[i].verdict == HP_V_PASS) m.n_pass++;
        else m.n_fail++;
    }
    for (int i = 0; i < m.n_neg; i++) {
        if (m.neg[i].ok) m.n_neg_ok++;
        else m.n_neg_wrong++;
    }
    // logs of a temporary folder are gone after the run: do not point at them
    const int all_ok = m.n_fail == 0 && m.n_neg_wrong == 0 && m.n_faults_caught == m.n_faults &&
                       !g_interrupted;
    if (temp_work && all_ok)
        for (int i = 0; i < m.n_rec; i++) m.rec[i].log[0] = '\0';
    if (temp_work && all_ok)
        for (int i = 0; i < m.n_faults; i++) m.faults[i].log[0] = '\0';

    printf("\n");
    hp_report_table(stdout, &m);
    int rc = all_ok ? HP_EXIT_OK : HP_EXIT_FAIL;
    if (o.report_dir) {
        char path[1200];
        fmt(path, sizeof path, "%s/report.md", o.report_dir);
        if (hp_report_markdown(path, &m)) rc = HP_EXIT_FAIL;
        fmt(path, sizeof path, "%s/report.json", o.report_dir);
        if (hp_report_json(path, &m)) rc = HP_EXIT_FAIL;
        fmt(path, sizeof path, "%s/report.svg", o.report_dir);
        if (hp_report_svg(path, &m)) rc = HP_EXIT_FAIL;
        fmt(path, sizeof path, "%s/faults.md", o.report_dir);
        if (m.n_faults && hp_report_faults_markdown(path, &m)) rc = HP_EXIT_FAIL;
        printf("report: %s/report.md, report.json, report.svg (runs: %s)\n", o.report_dir, runs_dir);
    } else if (temp_work && all_ok) {
        // everything passed: nothing to look at
        if (remove_tree(work, 0) != 0) fprintf(stderr, "hp matrix: cannot remove '%s'\n", work);
    } else {
        printf("logs of the runs: %s\n", runs_dir);
    }
    if (g_interrupted) fprintf(stderr, "hp matrix: interrupted (signal %d)\n", (int)g_interrupted);
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    free(sel);
    free(negs);
    free(m.rec);
    free(m.neg);
    free(m.faults);
    return rc;
}
