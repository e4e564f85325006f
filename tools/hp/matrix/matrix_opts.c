// matrix_opts.c - the command line of `hp matrix` (matrix_opts.h).
// defines: tool_matrix_parse_opts, tool_matrix_selected
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"
#include "matrix_opts.h"

static const char *const matrix_usage =
    "usage: hp matrix [--level all|L0|L1|L2[,..]] [--only ID[,ID..]] [--repeat N] [--report DIR]\n"
    "                 [--jobs N] [--timeout S] [--no-negative] [--faults | --faults-only | --no-faults]\n"
    "                 [--list | --markdown | --examples-markdown | --features-markdown | --ctest FILE]\n"
    "                 [--write-bad-files DIR]\n"
    "\n"
    "Runs every selected recipe of the completeness matrix (docs/recipes.md) as\n"
    "`hp run <flags> --verify --json F --quiet`, N times (default 2: the runs must be\n"
    "bit-identical), then the negative cases (each must exit 2 with one line naming the rule).\n"
    "Prints a table; with --report writes DIR/report.md, DIR/report.json, DIR/report.svg and\n"
    "keeps every run's log and JSON under DIR/runs/. Exit 0 when everything passed, 1 otherwise.\n"
    "  --level L        recipes of these levels (default all); negative cases belong to L0\n"
    "  --only IDS       just these recipe variants / negative cases (see --list)\n"
    "  --repeat N       runs per recipe (1 = no determinism check; default 2)\n"
    "  --jobs N         run N recipes (negative cases, faults) at once, each in its own child\n"
    "                   (default 1; a recipe's reruns stay one after another)\n"
    "  --timeout S      seconds one run may take before it is killed (default 60)\n"
    "  --no-negative    skip the negative cases\n"
    "  --faults         also run every failpoint (HP_FAILPOINT) on its recipe: each must be caught\n"
    "                   (the default for the whole matrix, i.e. --level all without --only)\n"
    "  --faults-only    run the failpoints only (no recipes, no negative cases)\n"
    "  --no-faults      do not run the failpoints\n"
    "  --list           print the recipe table and the negative cases, tab-separated, and exit\n"
    "  --markdown       print README.md's recipe table; --examples-markdown examples/README.md's;\n"
    "                   --features-markdown its lists of what is implemented (with the recipes\n"
    "                   that prove each) and what is not (refused by name)\n"
    "  --ctest FILE     write the CTest list of the recipes and negative cases into FILE and exit\n"
    "  --write-bad-files DIR   write the bad input files of the negative cases into DIR and exit\n";

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
    snprintf(buf, sizeof buf, "%s", list);
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (!hp_recipe_find(t) && !hp_negative_find(t)) {
            fprintf(stderr, "hp: --only: unknown recipe or negative case '%s' (see hp matrix --list)\n", t);
            return HP_EXIT_CONFIG;
        }
    }
    return 0;
}

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
    snprintf(buf, sizeof buf, "%s", s);
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

// v as an integer in [lo, hi] into *out; else one line naming the flag and HP_EXIT_CONFIG
static int int_in(const char *v, const char *flag, long lo, long hi, int *out) {
    char *end;
    const long n = strtol(v, &end, 10);
    if (*v == '\0' || *end != '\0' || n < lo || n > hi) {
        fprintf(stderr, "hp: %s expects an integer in [%ld, %ld], got '%s'\n", flag, lo, hi, v);
        return HP_EXIT_CONFIG;
    }
    *out = (int)n;
    return 0;
}

int tool_matrix_parse_opts(int argc, char **argv, tool_matrix_opts *o) {
    memset(o, 0, sizeof *o);
    for (int l = 0; l < HP_LEVEL_COUNT; l++) o->levels[l] = 1;
    snprintf(o->selection, sizeof o->selection, "--level all");
    o->repeat = 2;
    o->jobs = 1;
    o->timeout_s = 60;
    for (int i = 2; i < argc; i++) {
        const char *v = NULL;
        int k;
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { fputs(matrix_usage, stdout); return -1; }
        if (!strcmp(a, "--list")) { o->list = 1; continue; }
        if (!strcmp(a, "--markdown")) { o->list = 2; continue; }
        if (!strcmp(a, "--examples-markdown")) { o->list = 3; continue; }
        if (!strcmp(a, "--features-markdown")) { o->list = 4; continue; }
        if (!strcmp(a, "--no-negative")) { o->no_negative = 1; continue; }
        if (!strcmp(a, "--faults")) { o->faults = 1; continue; }
        if (!strcmp(a, "--no-faults")) { o->no_faults = 1; continue; }
        if (!strcmp(a, "--faults-only")) {
            o->faults = o->faults_only = 1;
            snprintf(o->selection, sizeof o->selection, "--faults-only");
            continue;
        }
        if ((k = opt_value(argc, argv, &i, "--level", &v))) {
            if (k < 0 || parse_levels(v, o->levels)) return HP_EXIT_CONFIG;
            snprintf(o->selection, sizeof o->selection, "--level %s", v);
            continue;
        }
        if ((k = opt_value(argc, argv, &i, "--only", &v))) {
            if (k < 0) return HP_EXIT_CONFIG;
            o->only = v;
            snprintf(o->selection, sizeof o->selection, "--only %.100s", v);
            continue;
        }
        if ((k = opt_value(argc, argv, &i, "--report", &v))) {
            if (k < 0 || tool_cli_check_dir("--report", v)) return HP_EXIT_CONFIG;
            o->report_dir = v;
            continue;
        }
        if ((k = opt_value(argc, argv, &i, "--ctest", &v))) {
            if (k < 0) return HP_EXIT_CONFIG;
            o->ctest_file = v;
            continue;
        }
        if ((k = opt_value(argc, argv, &i, "--write-bad-files", &v))) {
            if (k < 0) return HP_EXIT_CONFIG;
            o->bad_files_dir = v;
            continue;
        }
        if ((k = opt_value(argc, argv, &i, "--repeat", &v))) {
            if (k < 0 || int_in(v, "--repeat", 1, 100, &o->repeat)) return HP_EXIT_CONFIG;
            continue;
        }
        if ((k = opt_value(argc, argv, &i, "--jobs", &v))) {
            if (k < 0 || int_in(v, "--jobs", 1, 64, &o->jobs)) return HP_EXIT_CONFIG;
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
    return o->only ? check_only(o->only) : 0;
}

int tool_matrix_selected(const tool_matrix_opts *o, const char *id, int level) {
    return o->only ? in_list(o->only, id) : o->levels[level];
}
