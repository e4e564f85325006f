// cmd_matrix.c - `hp matrix`: runs the completeness matrix of recipes.md and writes a report.
// defines: tool_cmd_matrix
//
//   hp matrix                              # every recipe (L0+L1+L2), negative case and failpoint
//   hp matrix --level L0 --report report   # the L0 recipes; report/report.{md,json,svg}
//   hp matrix --only M4-s2,neg-pp --repeat 3
//   hp matrix --list                       # the table as tab-separated lines (for scripts)
//   hp matrix --ctest FILE                 # the CTest list (a POST_BUILD step of hp writes it)
//   hp matrix --faults-only --report rep   # every failpoint: rep/faults.md, the faults-caught table
//
// Each recipe is `<this hp> run <flags> --verify --verify-steps 5 --json F --quiet` in a child
// process (which starts mpirun itself), run --repeat times (default 2) one after another, and
// the runs must agree bit for bit (with --jobs N, N recipes run at once, each in a forked worker
// of this process: tool_pool_run): every gradient of step 1 (the runs' --dump
// grads.safetensors, compared byte for byte) and the 5 losses, read from each run's JSON record
// (the library's: verify_record.h, exact to the bit). The checks themselves are the library's
// (hp_verify_rerun_check, hp_verify_same_as_check, hp_verify_resume_check). A variant
// with same_as (ring vs all-gather CP, all-gather vs all-to-all dispatch) must also follow its
// twin's loss trajectory within the trajectory tolerance. Negative cases run `hp <args>` and
// must exit with their code and one stderr line matching their rule. With --faults every
// failpoint of include/hyperpar/failpoint.h runs its recipe once with HP_FAILPOINT=<name>: the
// verification must fail (exit 1) and name what the fault touches; the "faults caught" table
// goes into the report and DIR/faults.md.
// Children run in their own process group so a time-out (or Ctrl-C of the matrix) ends the
// child, its mpirun and every rank; nothing is left running.
#include <errno.h>
#include <math.h>
#include <regex.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "cli/cli.h"
#include "hyperpar/recipes.h"
#include "launch/launch.h"
#include "matrix_child.h"
#include "matrix_opts.h"
#include "report.h"

static void on_signal(int sig) { tool_matrix_interrupted = sig; }

// snprintf that may cut: paths and messages here are bounded by their buffers on purpose
static void fmt(char *out, size_t cap, const char *f, ...) __attribute__((format(printf, 3, 4)));
static void fmt(char *out, size_t cap, const char *f, ...) {
    va_list ap;
    va_start(ap, f);
    vsnprintf(out, cap, f, ap);
    va_end(ap);
}

// A run's --json record (the library's reader: src/verify/verify_json.c), and x's numbers from it.
static int load_json(const char *path, tool_recipe_result *x, hp_verify_record *rec) {
    if (hp_verify_record_load(rec, path) != 0) return -1;
    if (x) tool_recipe_result_take(x, rec);
    return 0;
}

// Why a run that did not pass failed, from its exit code and its log.
static void explain(tool_recipe_result *x, int code, const char *log_path, double limit_s, int json_pass) {
    char line[400];
    if (code == -1) {
        x->verdict = TOOL_V_TIMEOUT;
        if (tool_matrix_interrupted) fmt(x->failure, sizeof x->failure, "interrupted; the run was killed");
        else fmt(x->failure, sizeof x->failure, "still running after %.0f s (--timeout); killed with its ranks", limit_s);
    } else if (code == HP_EXIT_CONFIG) {
        x->verdict = TOOL_V_REFUSED;
        tool_file_line(log_path, "hp", 0, line, sizeof line);
        fmt(x->failure, sizeof x->failure, "refused as a bad configuration: %.300s", line);
    } else if (code == HP_EXIT_FAIL && x->have_json && !json_pass) {
        x->verdict = TOOL_V_FAIL;
        if (!x->failure[0]) fmt(x->failure, sizeof x->failure, "verification failed");
    } else {
        x->verdict = TOOL_V_CRASH;
        // the most telling line: hp's own message, a sanitizer's or an MPI error, else the last
        static const char *const needles[] = { "hp:", "ERROR", "Sanitizer", "error", NULL };
        line[0] = '\0';
        for (int k = 0; needles[k] && !line[0]; k++) tool_file_line(log_path, needles[k], 0, line, sizeof line);
        if (!line[0]) tool_file_line(log_path, NULL, 1, line, sizeof line);
        if (code > 128) fmt(x->failure, sizeof x->failure, "killed by signal %d: %.280s", code - 128, line);
        else if (json_pass) fmt(x->failure, sizeof x->failure, "exit %d although its verification passed: %.260s", code, line);
        else fmt(x->failure, sizeof x->failure, "exit %d without a verification result: %.280s", code, line);
    }
}

// One `hp run` of a resume recipe: flags, then the extra arguments (NULL-terminated).
static int run_stage(const char *exe, const char *flags, const char *log, const tool_matrix_opts *o,
                     double *secs, ...) {
    char *argv[64];
    argv[0] = (char *)exe;
    argv[1] = "run";
    int n = tool_child_split_args(flags, NULL, argv, 2, 48);
    const int n_own = n;
    va_list ap;
    va_start(ap, secs);
    for (const char *a; n < 62 && (a = va_arg(ap, const char *));) argv[n++] = (char *)a;
    va_end(ap);
    argv[n] = NULL;
    const int code = tool_child_run(argv, log, log, o->timeout_s, secs);
    tool_child_free_args(argv, 2, n_own);
    return code;
}

// The planner against what run 1 measured on world rank 0 (the run's JSON "plan_check", written
// by hp_plan_check_run): a recipe whose persistent bytes or (group, op) traffic differ from the
// prediction, or whose peak is off by more than 10%, fails.
static void take_plan_check(tool_recipe_result *x, const hp_verify_record *rec) {
    x->plan_checked = rec->plan_checked;
    x->plan_pass = rec->plan_pass;
    x->plan_peak_ratio = rec->plan_peak_ratio;
    if (x->verdict != TOOL_V_PASS || (rec->plan_checked && rec->plan_pass)) return;
    x->verdict = TOOL_V_FAIL;
    if (rec->plan_checked) fmt(x->failure, sizeof x->failure, "planner: %s", rec->plan_why);
    else fmt(x->failure, sizeof x->failure, "planner: the run's JSON has no plan check");
}

// A resume recipe (K1-K6): 6 steps under layout A straight; 3 under A saved at step 3; resumed
// under layout B to step 6. The losses of steps 4-6 must equal the straight run's: bit for bit
// when B is A, else within 1e-5 relative (the final parameters are the CTests' business:
// tests/checkpoint.cmake compares them too).
static void run_resume(const char *exe, const hp_recipe *r, const tool_matrix_opts *o, const char *runs_dir,
                       tool_recipe_result *x) {
    char flags[512], full[1024], res[1024], ckpt[1024], log[1024];
    hp_recipe_flags(r, flags, sizeof flags);
    fmt(full, sizeof full, "%s/%s.full.json", runs_dir, r->id);
    fmt(res, sizeof res, "%s/%s.resumed.json", runs_dir, r->id);
    fmt(ckpt, sizeof ckpt, "%s/%s.ckpt", runs_dir, r->id);
    fmt(log, sizeof log, "%s/%s.log", runs_dir, r->id);
    tool_remove_tree(ckpt, 0);
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
    hp_verify_record a, b;
    const int have = code == 0 && load_json(full, NULL, &a) == 0 && load_json(res, NULL, &b) == 0 &&
                     a.steps == 6 && b.steps == 3;
    fmt(x->log, sizeof x->log, "%s", log);
    if (!have) {
        x->verdict = TOOL_V_FAIL;
        fmt(x->failure, sizeof x->failure, code ? "a run exited %d (see the log)" : "no losses of steps 4-6", code);
        return;
    }
    x->have_json = 1;
    x->steps = 3;
    for (int s = 0; s < 3; s++) {
        x->losses[s] = b.losses[s];
        x->losses_ref[s] = a.losses[3 + s];
    }
    double worst;
    const int bitwise = !strcmp(flags, r->resume_to);
    if (hp_verify_resume_check(&a, &b, bitwise, &worst, x->failure, sizeof x->failure))
        x->verdict = TOOL_V_FAIL;
    x->traj_worst = x->loss_rel_err = worst;
    x->worst_grad_rel = x->worst_param_rel = 0;
    x->traffic_ok = x->init_equal = 1;
    take_plan_check(x, &a);   // the straight run (the resumed one reads a checkpoint on top)
}

// A verify recipe: o->repeat runs that must pass and agree bit for bit; *first: run 1's record.
static void run_recipe(const char *exe, const hp_recipe *r, const tool_matrix_opts *o, const char *runs_dir,
                       tool_recipe_result *x, hp_verify_record *first) {
    memset(x, 0, sizeof *x);
    hp_verify_record_init(first);
    if (r->resume_to) {
        x->r = r;
        x->world = hp_recipe_world(r);
        x->deterministic = -1;
        x->same_as_rel = -1;
        x->verdict = TOOL_V_PASS;
        run_resume(exe, r, o, runs_dir, x);
        return;
    }
    x->r = r;
    x->world = hp_recipe_world(r);
    x->deterministic = -1;
    x->same_as_rel = -1;
    x->verdict = TOOL_V_PASS;
    char flags[512], json[1024], log[1024], dump[1024], dump1[1024] = "";
    hp_recipe_flags(r, flags, sizeof flags);
    int keep_dumps = 0;
    for (int rep = 0; rep < o->repeat && !tool_matrix_interrupted; rep++) {
        char *argv[64];
        argv[0] = (char *)exe;
        argv[1] = "run";
        int n = tool_child_split_args(flags, NULL, argv, 2, 48);
        const int n_own = n;
        fmt(json, sizeof json, "%s/%s.run%d.json", runs_dir, r->id, rep + 1);
        fmt(log, sizeof log, "%s/%s.run%d.log", runs_dir, r->id, rep + 1);
        fmt(dump, sizeof dump, "%s/%s.run%d.dump", runs_dir, r->id, rep + 1);
        unlink(json);
        tool_remove_tree(dump, 0);
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
        int code = tool_child_run(argv, log, log, o->timeout_s, &secs);
        tool_child_free_args(argv, 2, n_own);
        x->runs = rep + 1;
        hp_verify_record again;
        hp_verify_record *rn = rep == 0 ? first : &again;
        int have = load_json(json, rep == 0 ? x : NULL, rn) == 0;
        if (rep == 0) {
            x->seconds = secs;
            x->exit_code = code;
        }
        if (code != 0 || !have || !rn->pass) {
            if (rep > 0) x->exit_code = code;
            if (code == 0) code = 127;     // exit 0 without a passing JSON result
            explain(x, code, log, o->timeout_s, have && rn->pass);
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
            char why[sizeof x->failure - 32];
            if (hp_verify_rerun_check(first, rn, g1, gn, why, sizeof why)) {
                x->deterministic = 0;
                x->verdict = TOOL_V_NONDET;
                fmt(x->failure, sizeof x->failure, "run %d against run 1: %s", rep + 1, why);
            }
            if (x->deterministic == 0) {
                fmt(x->log, sizeof x->log, "%s", log);
                keep_dumps = 1;   // to look at
                break;
            }
            x->deterministic = 1;
        }
    }
    if (x->have_json && first->pass) take_plan_check(x, first);
    if (tool_matrix_interrupted && x->verdict == TOOL_V_PASS && x->runs < o->repeat) {
        x->verdict = TOOL_V_TIMEOUT;
        fmt(x->failure, sizeof x->failure, "interrupted after %d of %d runs", x->runs, o->repeat);
    }
    // the dumps only served the comparison
    for (int rep = 0; rep < x->runs && !keep_dumps; rep++) {
        fmt(dump, sizeof dump, "%s/%s.run%d.dump", runs_dir, r->id, rep + 1);
        tool_remove_tree(dump, 0);
    }
}

static void run_negative(const char *exe, const hp_negative *g, const tool_matrix_opts *o, const char *runs_dir,
                         const char *bad_dir, tool_negative_result *x) {
    memset(x, 0, sizeof *x);
    x->n = g;
    char out[1024], err[1024];
    fmt(out, sizeof out, "%s/%s.out", runs_dir, g->id);
    fmt(err, sizeof err, "%s/%s.err", runs_dir, g->id);
    char *argv[64];
    argv[0] = (char *)exe;
    int n = tool_child_split_args(g->args, bad_dir, argv, 1, 64);
    // a refusal is fast: no launcher, no rank; 30 s is a hang
    double limit = o->timeout_s < 30 ? o->timeout_s : 30;
    x->exit_code = tool_child_run(argv, out, err, limit, &x->seconds);
    tool_child_free_args(argv, 1, n);
    tool_file_line(err, NULL, 0, x->line, sizeof x->line);
    x->n_lines = tool_count_lines(err);
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
static void run_fault(const char *exe, const hp_failpoint_info *fp, const tool_matrix_opts *o,
                      const char *runs_dir, tool_fault_result *x) {
    memset(x, 0, sizeof *x);
    x->fp = fp;
    char json[1024], log[1024];
    fmt(json, sizeof json, "%s/fault-%s.json", runs_dir, fp->name);
    fmt(log, sizeof log, "%s/fault-%s.log", runs_dir, fp->name);
    unlink(json);
    char *argv[64];
    argv[0] = (char *)exe;
    argv[1] = "run";
    int n = tool_child_split_args(fp->flags, NULL, argv, 2, 52);
    const int n_own = n;
    argv[n++] = "--verify";
    argv[n++] = "--verify-steps";
    argv[n++] = "5";
    argv[n++] = "--json";
    argv[n++] = json;
    argv[n++] = "--quiet";
    argv[n] = NULL;
    setenv("HP_FAILPOINT", fp->name, 1);
    x->exit_code = tool_child_run(argv, log, log, o->timeout_s, &x->seconds);
    unsetenv("HP_FAILPOINT");
    tool_child_free_args(argv, 2, n_own);
    fmt(x->log, sizeof x->log, "%s", log);
    hp_verify_record r;
    x->have_json = hp_verify_record_load(&r, json) == 0;
    x->grad_norm_rel = -1;
    if (x->have_json && r.verified && r.grad_norm_ref > 0)
        x->grad_norm_rel = fabs(r.grad_norm - r.grad_norm_ref) / r.grad_norm_ref;
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
    else if (r.pass) fmt(x->why, sizeof x->why, "the verification passed");
    else if (!re_ok) fmt(x->why, sizeof x->why, "the failpoint's regex does not compile: %.100s", fp->touches);
    else if (!named) fmt(x->why, sizeof x->why, "the verifier names '%.120s', not /%.40s/", said, fp->touches);
    else x->caught = 1;
}

// ---------------------------------------------------------------------------------------------
// the items of tool_pool_run (--jobs): a recipe, a negative case, a failpoint. With one job the
// progress line starts before the item runs; with more, it is printed whole as the item ends.

typedef struct {   // what a recipe's worker sends back
    tool_recipe_result x;
    hp_verify_record first;
} recipe_slot;

typedef struct {
    const char *exe;
    const tool_matrix_opts *o;
    const char *runs_dir, *bad_dir;
    const hp_recipe **sel;
    const hp_negative **negs;
    tool_matrix_report *m;
    recipe_slot *slots;
    int n_sel, n_negs;
    enum { ITEM_RECIPE, ITEM_NEGATIVE, ITEM_FAULT } kind;   // what the pool runs now
} matrix_pool;

// The start of item i's progress line ("[ 3/149] M4-s2 w2 L0  ... ").
static void item_head(const matrix_pool *p, int i) {
    if (p->kind == ITEM_RECIPE) {
        const hp_recipe *r = p->sel[i];
        fprintf(stderr, "[%2d/%d] %-13s w%d %-3s ... ", i + 1, p->n_sel, r->id, hp_recipe_world(r),
                hp_level_name(r->level));
    } else if (p->kind == ITEM_NEGATIVE) {
        fprintf(stderr, "[neg %2d/%d] %-19s ... ", i + 1, p->n_negs, p->negs[i]->id);
    } else {
        fprintf(stderr, "[fault %2d/%d] %-24s on %-10s ... ", i + 1, HP_FP_COUNT, hp_failpoints[i].name,
                hp_failpoints[i].recipe);
    }
}

static void item_before(int i, int complete, void *ctx) {   // (one job: the line starts now)
    (void)complete;
    item_head(ctx, i);
    fflush(stderr);
}

static void recipe_item(int i, void *out, void *ctx) {
    matrix_pool *p = ctx;
    recipe_slot *s = out;
    run_recipe(p->exe, p->sel[i], p->o, p->runs_dir, &s->x, &s->first);
}

static void recipe_after(int i, int complete, void *ctx) {
    matrix_pool *p = ctx;
    tool_recipe_result *x = &p->slots[i].x;
    if (!complete) {   // its worker died: the recipe fails, with what is known
        memset(x, 0, sizeof *x);
        hp_verify_record_init(&p->slots[i].first);
        x->r = p->sel[i];
        x->world = hp_recipe_world(x->r);
        x->deterministic = x->same_as_rel = -1;
        x->exit_code = -1;
        x->verdict = TOOL_V_FAIL;
        fmt(x->failure, sizeof x->failure, "the matrix's worker for this recipe died");
    }
    if (p->o->jobs > 1) item_head(p, i);
    fprintf(stderr, "%s %.1fs%s\n", tool_verdict_name(x->verdict), x->seconds,
            x->deterministic == 1 ? " (bit-identical rerun)" : "");
}

static void negative_item(int i, void *out, void *ctx) {
    matrix_pool *p = ctx;
    run_negative(p->exe, p->negs[i], p->o, p->runs_dir, p->bad_dir, out);
}

static void negative_after(int i, int complete, void *ctx) {
    matrix_pool *p = ctx;
    tool_negative_result *g = &p->m->neg[i];
    if (!complete) {
        memset(g, 0, sizeof *g);
        g->n = p->negs[i];
        g->exit_code = -1;
        fmt(g->why, sizeof g->why, "the matrix's worker for this case died");
    }
    if (p->o->jobs > 1) item_head(p, i);
    fprintf(stderr, "%s %.2fs%s%s\n", g->ok ? "refused-ok" : "WRONG", g->seconds, g->ok ? "" : ": ", g->why);
}

static void fault_item(int i, void *out, void *ctx) {
    matrix_pool *p = ctx;
    run_fault(p->exe, &hp_failpoints[i], p->o, p->runs_dir, out);
}

static void fault_after(int i, int complete, void *ctx) {
    matrix_pool *p = ctx;
    tool_fault_result *x = &p->m->faults[i];
    if (!complete) {
        memset(x, 0, sizeof *x);
        x->fp = &hp_failpoints[i];
        x->exit_code = -1;
        x->grad_norm_rel = -1;
        fmt(x->why, sizeof x->why, "the matrix's worker for this fault died");
    }
    if (p->o->jobs > 1) item_head(p, i);
    fprintf(stderr, "%s %.1fs%s%s\n", x->caught ? "caught" : "MISSED", x->seconds, x->caught ? "" : ": ", x->why);
}

// ---------------------------------------------------------------------------------------------

static int make_dir(const char *path) {
    if (mkdir(path, 0777) == 0 || errno == EEXIST) return 0;
    fprintf(stderr, "hp matrix: cannot create '%s': %s\n", path, strerror(errno));
    return -1;
}

int tool_cmd_matrix(int argc, char **argv) {
    tool_matrix_opts o;
    int e = tool_matrix_parse_opts(argc, argv, &o);
    if (e < 0) return HP_EXIT_OK;
    if (e) return e;
    if (o.list) {
        if (o.list == 4) hp_features_markdown(stdout);
        else if (o.list == 3) hp_examples_markdown(stdout);
        else if (o.list == 2) hp_recipes_markdown(stdout);
        else hp_recipes_list(stdout);
        return HP_EXIT_OK;
    }
    if (o.ctest_file) {   // CMake's TEST_INCLUDE_FILES reads it (tests/recipes.cmake)
        FILE *f = fopen(o.ctest_file, "w");
        if (f) hp_recipes_ctest(f);
        if (!f || fclose(f) != 0) {
            fprintf(stderr, "hp matrix: --ctest: cannot write '%s': %s\n", o.ctest_file, strerror(errno));
            return HP_EXIT_FAIL;
        }
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
    if (tool_launch_under_mpi()) {
        fprintf(stderr, "hp: matrix starts its own jobs: run it directly, not under mpirun/srun\n");
        return HP_EXIT_CONFIG;
    }
    // a world-1 recipe runs in its own process, not through the launcher: it gets the launched
    // ranks' BLAS threads (the environment's, else 1), so the report names one condition
    setenv("OPENBLAS_NUM_THREADS", "1", 0);
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
        if (tool_matrix_selected(&o, r->id, r->level)) sel[n_sel++] = r;
    }
    for (int i = 0; i < hp_n_negatives && !o.no_negative && !o.faults_only; i++) {
        const hp_negative *g = &hp_negatives[i];
        if (tool_matrix_selected(&o, g->id, HP_LEVEL_L0)) negs[n_negs++] = g;
    }

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    struct sigaction old_int, old_term;
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);

    tool_matrix_report m;
    memset(&m, 0, sizeof m);
    fmt(m.selection, sizeof m.selection, "%s", o.selection);
    m.repeat = o.repeat;
    m.rec = calloc((size_t)(n_sel ? n_sel : 1), sizeof *m.rec);
    m.neg = calloc((size_t)(n_negs ? n_negs : 1), sizeof *m.neg);
    hp_verify_record *first = calloc((size_t)(n_sel ? n_sel : 1), sizeof *first);   // run 1 of each
    const double t0 = tool_now_s();

    matrix_pool pool = { exe, &o, runs_dir, bad_dir, sel, negs, &m, NULL, n_sel, n_negs, ITEM_RECIPE };
    pool.slots = calloc((size_t)(n_sel ? n_sel : 1), sizeof *pool.slots);
    m.n_rec = tool_pool_run(n_sel, o.jobs, sizeof *pool.slots, pool.slots, recipe_item,
                            o.jobs == 1 ? item_before : NULL, recipe_after, &pool);
    for (int i = 0; i < m.n_rec; i++) {
        m.rec[i] = pool.slots[i].x;
        first[i] = pool.slots[i].first;
    }
    free(pool.slots);
    // alternative paths against their twins
    for (int i = 0; i < m.n_rec; i++) {
        tool_recipe_result *x = &m.rec[i];
        for (int k = 0; x->r->same_as && x->have_json && k < m.n_rec; k++) {
            if (strcmp(m.rec[k].r->id, x->r->same_as) || !m.rec[k].have_json) continue;
            char why[256];
            if (hp_verify_same_as_check(&first[i], &first[k], &x->same_as_rel, why, sizeof why) &&
                x->verdict == TOOL_V_PASS) {
                x->verdict = TOOL_V_MISMATCH;
                fmt(x->failure, sizeof x->failure, "against %s: %s", x->r->same_as, why);
            }
        }
    }
    if (n_negs && !tool_matrix_interrupted) {
        char err[256];
        if (hp_negative_write_files(bad_dir, err, sizeof err) != 0)
            fprintf(stderr, "hp matrix: cannot write the bad input files: %s\n", err);
        pool.kind = ITEM_NEGATIVE;
        m.n_neg = tool_pool_run(n_negs, o.jobs, sizeof *m.neg, m.neg, negative_item,
                                o.jobs == 1 ? item_before : NULL, negative_after, &pool);
    }
    if (o.faults) {
        m.faults = calloc(HP_FP_COUNT, sizeof *m.faults);
        pool.kind = ITEM_FAULT;
        m.n_faults = tool_pool_run(HP_FP_COUNT, o.jobs, sizeof *m.faults, m.faults, fault_item,
                                   o.jobs == 1 ? item_before : NULL, fault_after, &pool);
        for (int i = 0; i < m.n_faults; i++) m.n_faults_caught += m.faults[i].caught;
        for (; m.n_faults < HP_FP_COUNT; m.n_faults++) {   // interrupted: the rest are missed
            m.faults[m.n_faults].fp = &hp_failpoints[m.n_faults];
            m.faults[m.n_faults].exit_code = -1;
            fmt(m.faults[m.n_faults].why, sizeof m.faults[m.n_faults].why, "not run (interrupted)");
        }
    }
    m.seconds = tool_now_s() - t0;
    for (int i = 0; i < m.n_rec; i++) {
        if (m.rec[i].verdict == TOOL_V_PASS) m.n_pass++;
        else m.n_fail++;
    }
    for (int i = 0; i < m.n_neg; i++) {
        if (m.neg[i].ok) m.n_neg_ok++;
        else m.n_neg_wrong++;
    }
    // logs of a temporary folder are gone after the run: do not point at them
    const int all_ok = m.n_fail == 0 && m.n_neg_wrong == 0 && m.n_faults_caught == m.n_faults &&
                       !tool_matrix_interrupted;
    if (temp_work && all_ok)
        for (int i = 0; i < m.n_rec; i++) m.rec[i].log[0] = '\0';
    if (temp_work && all_ok)
        for (int i = 0; i < m.n_faults; i++) m.faults[i].log[0] = '\0';

    printf("\n");
    tool_report_table(stdout, &m);
    int rc = all_ok ? HP_EXIT_OK : HP_EXIT_FAIL;
    if (o.report_dir) {
        char path[1200];
        fmt(path, sizeof path, "%s/report.md", o.report_dir);
        if (tool_report_markdown(path, &m)) rc = HP_EXIT_FAIL;
        fmt(path, sizeof path, "%s/report.json", o.report_dir);
        if (tool_report_json(path, &m)) rc = HP_EXIT_FAIL;
        fmt(path, sizeof path, "%s/report.svg", o.report_dir);
        if (tool_report_svg(path, &m)) rc = HP_EXIT_FAIL;
        fmt(path, sizeof path, "%s/faults.md", o.report_dir);
        if (m.n_faults && tool_report_faults_markdown(path, &m)) rc = HP_EXIT_FAIL;
        printf("report: %s/report.md, report.json, report.svg (runs: %s)\n", o.report_dir, runs_dir);
    } else if (temp_work && all_ok) {
        // everything passed: nothing to look at
        if (tool_remove_tree(work, 0) != 0) fprintf(stderr, "hp matrix: cannot remove '%s'\n", work);
    } else {
        printf("logs of the runs: %s\n", runs_dir);
    }
    if (tool_matrix_interrupted) fprintf(stderr, "hp matrix: interrupted (signal %d)\n", (int)tool_matrix_interrupted);
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    free(sel);
    free(negs);
    free(m.rec);
    free(first);
    free(m.neg);
    free(m.faults);
    return rc;
}
