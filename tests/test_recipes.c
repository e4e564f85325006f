// test_recipes.c - the recipe table of `hp matrix` and its reports, without running a job:
//   1. how exactly doubles survive hp run's JSON (cJSON) and %.17g (the determinism check);
//   2. the table is the matrix of recipes.md: every row present, every variant legal for its
//      world, CP variants at both rotate methods, twins (same_as) differing only in the path;
//   3. every negative case's regex compiles and its arguments start with a subcommand;
//   4. the bad input files are written and damaged as described;
//   5. the Markdown / JSON / SVG reports of a made-up result with failures say so;
//   6. the failpoint registry: unique names on recipes, a matrix recipe's exact flags; the bench list.
// Usage: test_recipes [SVG_OUT]   (SVG_OUT: also write the made-up report's SVG there)
#include <math.h>
#include <regex.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cjson/cJSON.h>
#include "hyperpar/dims.h"
#include "hyperpar/failpoint.h"
#include "hyperpar/safetensors.h"
#include "cli/cli.h"
#include "hyperpar/recipes.h"
#include "matrix/report.h"
#include "test_check.h"


static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t next_u64(void) {   // splitmix64
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

// Distance in units in the last place between two finite doubles of the same sign.
static uint64_t ulps(double a, double b) {
    int64_t ia, ib;
    memcpy(&ia, &a, sizeof a);
    memcpy(&ib, &b, sizeof b);
    return ia > ib ? (uint64_t)(ia - ib) : (uint64_t)(ib - ia);
}

// One double through cJSON_Print and cJSON_Parse: how many ulps it moved (UINT64_MAX: lost).
static uint64_t cjson_roundtrip(double x) {
    cJSON *a = cJSON_CreateArray();
    cJSON_AddItemToArray(a, cJSON_CreateNumber(x));
    char *text = cJSON_PrintUnformatted(a);
    cJSON *b = cJSON_Parse(text);
    uint64_t d = UINT64_MAX;
    if (b && cJSON_IsNumber(cJSON_GetArrayItem(b, 0))) {
        double y = cJSON_GetArrayItem(b, 0)->valuedouble;
        if (isfinite(y)) d = ulps(x, y);
    }
    cJSON_Delete(a);
    cJSON_Delete(b);
    free(text);
    return d;
}

// %.17g (what hp matrix reads from a "losses_exact" string array, when hp run writes one)
static int exact_roundtrip(double x) {
    char buf[64];
    snprintf(buf, sizeof buf, "%.17g", x);
    double y = strtod(buf, NULL);
    return memcmp(&x, &y, sizeof x) == 0;
}

// The claim "cJSON prints 17 significant digits when needed, so the JSON numbers round-trip
// exactly" is FALSE for cJSON <= 1.7.15: print_number keeps the 15-digit form whenever it reads
// back within max(|a|,|b|)*DBL_EPSILON (compare_double), i.e. within 1-2 ulps. So the losses in
// hp run's JSON resolve a difference of 3 ulps and more, not every bit; hp matrix therefore also
// compares the gradients of step 1 byte for byte (--dump grads.safetensors) for determinism.
// This test pins down what holds: %.17g is exact, cJSON is within 2 ulps on loss-like values.
static void test_json_roundtrip(void) {
    int n = 0, inexact = 0, far = 0, not_exact17 = 0;
    for (int i = 0; i < 100000; i++) {
        // loss-like values and their neighbours: what the matrix compares
        double x = 0.5 + 20.0 * (double)(next_u64() >> 11) / 9007199254740992.0;
        for (int k = 0; k < 2; k++, x = nextafter(x, 100.0)) {
            uint64_t d = cjson_roundtrip(x);
            inexact += d != 0;
            far += d > 2;
            not_exact17 += !exact_roundtrip(x);
            n++;
        }
    }
    // random bit patterns of every exponent (skipping inf/nan, which JSON cannot hold)
    for (int i = 0; i < 100000; i++) {
        uint64_t u = next_u64();
        double x;
        memcpy(&x, &u, sizeof x);
        if (!isfinite(x)) continue;
        not_exact17 += !exact_roundtrip(x);
        n++;
    }
    CHECK(not_exact17 == 0, "%d doubles changed bits through %%.17g", not_exact17);
    CHECK(far == 0, "%d loss-like doubles moved more than 2 ulps through cJSON %s", far, cJSON_Version());
    printf("test_recipes: cJSON %s: %d of %d loss-like doubles are NOT bit-exact after print+parse "
           "(all within 2 ulps); %%.17g is exact\n", cJSON_Version(), inexact, 200000);
}

static int is_row(const char *row) {
    static const char *const rows[] = { "M1", "M2", "M3", "M4", "M5", "B1", "B2", "B4", "M6", "M7",
                                        "A-EP", "S1", "S2", "S3", "C2", "C3", "GA", "P1", "P2", "P3",
                                        "P4", "P5", "P6", "P7", "P8", "P9", "P10", "C4", "C5", "U1", "U2",
                                        "U3", "U4", "U5", "U6", "U7", "K", NULL };
    for (int i = 0; rows[i]; i++)
        if (!strcmp(rows[i], row)) return 1;
    return 0;
}

static void test_table(void) {
    // every row of recipes.md has at least one variant
    static const char *const rows[] = { "M1", "M2", "M3", "M4", "M5", "B1", "B2", "B4", "M6", "M7",
                                        "A-EP", "S1", "S2", "S3", "C2", "C3" };
    for (size_t k = 0; k < sizeof rows / sizeof rows[0]; k++) {
        int found = 0;
        for (int i = 0; i < hp_n_recipes; i++) found += !strcmp(hp_recipes[i].row, rows[k]);
        CHECK(found > 0, "row %s of recipes.md has no variant", rows[k]);
    }
    // the "2 and 4" rows expand into both values
    static const char *const must[] = { "M1a", "M1b", "M2-tp2", "M2-tp4", "M3-tp2", "M3-tp4", "M4-s2", "M4-s4",
                                        "M5-s1-ag", "M5-s1-ring", "M5-s2-ag", "M5-s2-ring", "M7-tp1", "M7-tp2",
                                        "S3-S1", "S3-S1b", "C2-ep4-ag", "C2-etp2-ag", "C3-ag", "C3-ring" };
    for (size_t k = 0; k < sizeof must / sizeof must[0]; k++)
        CHECK(hp_recipe_find(must[k]) != NULL, "variant %s missing", must[k]);

    int by_level[HP_LEVEL_COUNT] = { 0 };
    for (int i = 0; i < hp_n_recipes; i++) {
        const hp_recipe *r = &hp_recipes[i];
        CHECK(is_row(r->row), "%s: unknown row %s", r->id, r->row);
        CHECK(hp_recipe_find(r->id) == r, "%s: id not unique", r->id);
        CHECK(r->level >= 0 && r->level < HP_LEVEL_COUNT, "%s: level %d", r->id, r->level);
        if (r->level >= 0 && r->level < HP_LEVEL_COUNT) by_level[r->level]++;
        CHECK(hp_recipe_world(r) >= 1 && hp_recipe_world(r) <= 16, "%s: world %d (at most 16 ranks on this machine)",
              r->id, hp_recipe_world(r));
        // legal for its world, as `hp run` will see it: its flags through the tool's parser
        char run_flags[1024], *argv[64];
        hp_recipe_flags(r, run_flags, sizeof run_flags);
        int argc = 0;
        argv[argc++] = "hp";
        argv[argc++] = "run";
        for (char *tok = strtok(run_flags, " "); tok && argc < 63; tok = strtok(NULL, " ")) argv[argc++] = tok;
        tool_cli cli;
        CHECK(tool_cli_parse(&cli, argc, argv, 2, NULL, NULL) == 0, "%s: its flags do not parse", r->id);
        hp_model_config m = cli.model;
        hp_run_config rc = cli.run;
        hp_dims d = cli.dims;
        d.world = hp_recipe_world(r);
        char err[256] = "";
        CHECK(hp_dims_validate(&d, &m, &rc, err, sizeof err) == 0, "%s is refused: %s", r->id, err);
        if (r->resume_to) {   // layout B of a resume recipe must be legal too, for its own world
            char b_flags[1024], *bv[64];
            snprintf(b_flags, sizeof b_flags, "%s", r->resume_to);
            int bc = 0;
            bv[bc++] = "hp";
            bv[bc++] = "run";
            for (char *tok = strtok(b_flags, " "); tok && bc < 63; tok = strtok(NULL, " ")) bv[bc++] = tok;
            tool_cli cb;
            CHECK(tool_cli_parse(&cb, bc, bv, 2, NULL, NULL) == 0, "%s: layout B does not parse", r->id);
            hp_dims db = cb.dims;
            db.world = 0;
            CHECK(hp_dims_validate(&db, &cb.model, &cb.run, err, sizeof err) == 0, "%s: layout B is refused: %s",
                  r->id, err);
            CHECK(!strcmp(cb.model.name, m.name), "%s: layouts A and B train different models", r->id);
        }
        // MoE recipes (every one uses ep > 1) run the MoE model, dense ones the dense one
        const int moe_row = r->EP > 1;
        CHECK(moe_row == (m.num_experts > 0), "%s: row %s with model %s", r->id, r->row, r->model);
        // CP variants name their rotate method, and the other method's twin exists
        CHECK((r->C > 1) == (r->rotate != NULL), "%s: cp %d with rotate %s", r->id, r->C, r->rotate ? r->rotate : "(none)");
        if (r->rotate && !strcmp(r->rotate, "ring"))
            CHECK(r->same_as && hp_recipe_find(r->same_as) && hp_recipe_find(r->same_as)->rotate &&
                      !strcmp(hp_recipe_find(r->same_as)->rotate, "allgather"),
                  "%s: ring variant without an all-gather twin", r->id);
        if (r->same_as) {
            const hp_recipe *t = hp_recipe_find(r->same_as);
            CHECK(t != NULL, "%s: same_as %s unknown", r->id, r->same_as);
            if (t)
                CHECK(t->R == r->R && t->S == r->S && t->C == r->C && t->T == r->T && t->sp == r->sp && t->EP == r->EP &&
                          t->ET == r->ET && !strcmp(t->model, r->model) && t != r,
                      "%s: twin %s has other degrees", r->id, t->id);
        }
        char flags[512];
        int n = hp_recipe_flags(r, flags, sizeof flags);
        CHECK(n > 0 && n < (int)sizeof flags - 1 && strstr(flags, "--model "), "%s: flags '%s'", r->id, flags);
        CHECK(r->example && r->what && r->what[0], "%s: example/what missing", r->id);
    }
    CHECK(by_level[HP_LEVEL_L0] > 0 && by_level[HP_LEVEL_L1] > 0 && by_level[HP_LEVEL_L2] > 0,
          "levels %d %d %d", by_level[0], by_level[1], by_level[2]);
    // seed §8: L0 = M1, M2, M4 (no MoE), in fp32; their bf16 variants run at L1
    for (int i = 0; i < hp_n_recipes; i++) {
        const hp_recipe *r = &hp_recipes[i];
        if (!strcmp(hp_recipe_precision(r), "bf16")) {
            CHECK(r->level != HP_LEVEL_L0, "%s: a bf16 recipe at L0", r->id);
            continue;
        }
        const int l0_row = !strcmp(r->row, "M1") || !strcmp(r->row, "M2") || !strcmp(r->row, "M4");
        CHECK(l0_row == (r->level == HP_LEVEL_L0), "%s: row %s at level %s", r->id, r->row, hp_level_name(r->level));
    }
    CHECK(hp_level_parse("L1") == HP_LEVEL_L1 && hp_level_parse("L3") == -1 && hp_level_parse("l0") == -1, "level parse");
}

static void test_negatives(void) {
    int n_files = 0;
    for (int i = 0; i < hp_n_negatives; i++) {
        const hp_negative *g = &hp_negatives[i];
        regex_t re;
        int rc = regcomp(&re, g->err_regex, REG_EXTENDED | REG_NOSUB);
        CHECK(rc == 0, "%s: regex does not compile: %s", g->id, g->err_regex);
        if (rc == 0) regfree(&re);
        CHECK(!strncmp(g->args, "run ", 4) || !strncmp(g->args, "plan ", 5), "%s: args '%s'", g->id, g->args);
        CHECK(g->code == HP_EXIT_CONFIG, "%s: code %d", g->id, g->code);
        CHECK(hp_negative_find(g->id) == g, "%s: id not unique", g->id);
        CHECK(strchr(g->err_regex, '\t') == NULL && strchr(g->err_regex, '\\') == NULL && strchr(g->err_regex, ';') == NULL,
              "%s: regex must stay CMake- and shell-safe (no tab, backslash, semicolon)", g->id);
        CHECK((g->file != HP_BADFILE_NONE) <= (strstr(g->args, "{DIR}") != NULL), "%s: file without {DIR}", g->id);
        n_files += g->file != HP_BADFILE_NONE;
        char out[1024];
        hp_negative_args(g, "/x y", out, sizeof out);
        CHECK(strstr(out, "{DIR}") == NULL, "%s: {DIR} left in '%s'", g->id, out);
    }
    CHECK(n_files == 4, "bad-file cases: %d, want 4 (truncated, shape, names, text)", n_files);
    // recipes.md's list of rules: one case at least for each
    static const char *const need[] = { "neg-world", "neg-degree-tp", "neg-dp-shard-0", "neg-dp-shard-m2",
                                        "neg-etp-no-ep", "neg-etp-not-tp", "neg-ep-sct", "neg-ep-sc", "neg-experts",
                                        "neg-ep-dense", "neg-seq-cp", "neg-seq-sp", "neg-heads", "neg-kv-heads",
                                        "neg-batch", "neg-pp-layers", "neg-dispatcher", "neg-load-truncated",
                                        "neg-load-shape", "neg-load-names", "neg-load-text" };
    for (size_t k = 0; k < sizeof need / sizeof need[0]; k++)
        CHECK(hp_negative_find(need[k]) != NULL, "negative case %s missing", need[k]);
}

static void test_bad_files(void) {
    char dir[] = "/tmp/test_recipes_XXXXXX";
    CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    char sub[128], err[256] = "", path[256];
    snprintf(sub, sizeof sub, "%s/bad", dir);
    CHECK(hp_negative_write_files(sub, err, sizeof err) == 0, "write files: %s", err);
    char e[256];
    snprintf(path, sizeof path, "%s/truncated.safetensors", sub);
    hp_st *f = hp_st_open(path, e, sizeof e);
    CHECK(f == NULL, "the truncated file opens");
    if (f) hp_st_close(f);
    snprintf(path, sizeof path, "%s/not_safetensors.txt", sub);
    f = hp_st_open(path, e, sizeof e);
    CHECK(f == NULL, "the text file opens as safetensors");
    if (f) hp_st_close(f);
    snprintf(path, sizeof path, "%s/wrong_shape.safetensors", sub);
    f = hp_st_open(path, e, sizeof e);
    CHECK(f != NULL, "the wrong-shape file must be valid safetensors: %s", e);
    if (f) {
        const hp_st_tensor *t = hp_st_get(f, "tok_embeddings.weight");
        CHECK(t && t->ndim == 2 && t->shape[0] == 64 && t->shape[1] == 256, "tok_embeddings.weight transposed");
        hp_st_close(f);
    }
    snprintf(path, sizeof path, "%s/wrong_names.safetensors", sub);
    f = hp_st_open(path, e, sizeof e);
    CHECK(f != NULL, "the wrong-names file must be valid safetensors: %s", e);
    if (f) {
        CHECK(hp_st_get(f, "output.weight") == NULL && hp_st_get(f, "lm_head.weight") != NULL, "output.weight renamed");
        hp_st_close(f);
    }
    static const char *const names[] = { "truncated.safetensors", "wrong_shape.safetensors",
                                         "wrong_names.safetensors", "not_safetensors.txt" };
    for (int i = 0; i < 4; i++) {
        snprintf(path, sizeof path, "%s/%s", sub, names[i]);
        unlink(path);
    }
    rmdir(sub);
    rmdir(dir);
}

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    if (fread(s, 1, (size_t)n, f) != (size_t)n) n = 0;
    s[n] = '\0';
    fclose(f);
    return s;
}

// A made-up matrix: every recipe, one failing with numbers, one crashed, one non-deterministic;
// every negative case, one of them wrong.
static void test_reports(const char *svg_out) {
    tool_matrix_report m;
    memset(&m, 0, sizeof m);
    snprintf(m.selection, sizeof m.selection, "--level all");
    m.repeat = 2;
    m.n_rec = hp_n_recipes;
    m.rec = calloc((size_t)m.n_rec, sizeof *m.rec);
    for (int i = 0; i < m.n_rec; i++) {
        tool_recipe_result *x = &m.rec[i];
        x->r = &hp_recipes[i];
        x->world = hp_recipe_world(x->r);
        x->have_json = 1;
        x->steps = 5;
        for (int s = 0; s < 5; s++) {
            x->losses_ref[s] = 6.05 - 0.01 * s + 0.004 * (s % 2);
            x->losses[s] = x->losses_ref[s] * (1 + 1e-9);
        }
        x->loss_rel_err = 1e-9;
        x->worst_grad_rel = 4e-7 * (1 + i % 3);
        x->worst_param_rel = 1e-9;
        snprintf(x->worst_grad, sizeof x->worst_grad, "layers.1.ffn_norm.weight");
        snprintf(x->worst_param, sizeof x->worst_param, "output.weight");
        x->bytes_counted = x->bytes_predicted = 1000 * (i + 1);
        x->traffic_ok = 1;
        x->seconds = 1.5;
        x->runs = 2;
        x->deterministic = 1;
        x->same_as_rel = -1;
        x->verdict = TOOL_V_PASS;
    }
    tool_recipe_result *f1 = &m.rec[3], *f2 = &m.rec[5], *f3 = &m.rec[7];
    f1->verdict = TOOL_V_FAIL; f1->exit_code = 1; f1->worst_grad_rel = 3e-3; f1->traffic_ok = 0;
    for (int s = 0; s < 5; s++) f1->losses[s] += 0.003 * s;
    snprintf(f1->failure, sizeof f1->failure, "gradient layers.0.attention.wq.weight: rel 3e-3 > 1e-5 | bad");
    snprintf(f1->log, sizeof f1->log, "/tmp/x/runs/%s.run1.log", f1->r->id);
    f2->verdict = TOOL_V_CRASH; f2->have_json = 0; f2->exit_code = 139; f2->deterministic = -1;
    snprintf(f2->failure, sizeof f2->failure, "killed by signal 11; last line: <segfault & more>");
    f3->verdict = TOOL_V_NONDET; f3->deterministic = 0;
    snprintf(f3->failure, sizeof f3->failure, "run 2 differs from run 1 at step 2");
    m.rec[0].loss_rel_err = m.rec[0].worst_grad_rel = m.rec[0].worst_param_rel = 0;   // a world-1 run: exact
    m.n_neg = hp_n_negatives;
    m.neg = calloc((size_t)m.n_neg, sizeof *m.neg);
    for (int i = 0; i < m.n_neg; i++) {
        m.neg[i].n = &hp_negatives[i];
        m.neg[i].exit_code = 2;
        m.neg[i].ok = i != 2;
        m.neg[i].n_lines = 1;
        snprintf(m.neg[i].line, sizeof m.neg[i].line, "hp: rule of %s", hp_negatives[i].id);
        if (i == 2) snprintf(m.neg[i].why, sizeof m.neg[i].why, "exit 0, want 2");
    }
    for (int i = 0; i < m.n_rec; i++) m.rec[i].verdict == TOOL_V_PASS ? m.n_pass++ : m.n_fail++;
    m.n_neg_ok = m.n_neg - 1;
    m.n_neg_wrong = 1;
    m.seconds = 99;

    char dir[] = "/tmp/test_reports_XXXXXX";
    CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    char md[128], js[128], svg[128];
    snprintf(md, sizeof md, "%s/report.md", dir);
    snprintf(js, sizeof js, "%s/report.json", dir);
    snprintf(svg, sizeof svg, "%s/report.svg", dir);
    CHECK(tool_report_markdown(md, &m) == 0, "markdown");
    CHECK(tool_report_json(js, &m) == 0, "json");
    CHECK(tool_report_svg(svg, &m) == 0, "svg");
    if (svg_out) tool_report_svg(svg_out, &m);

    char *t = slurp(md);
    CHECK(t && strstr(t, "**FAIL**") && strstr(t, "**CRASH**") && strstr(t, "**NONDET**") && strstr(t, "**WRONG**"),
          "report.md names the failures");
    CHECK(t && strstr(t, "rel 3e-3 > 1e-5 \\| bad"), "report.md escapes '|' in cells");
    CHECK(t && strstr(t, "reproduce: `hp run --model tiny --dp-replicate 1"), "report.md says how to reproduce");
    free(t);

    t = slurp(js);
    cJSON *j = t ? cJSON_Parse(t) : NULL;
    CHECK(j != NULL, "report.json parses");
    if (j) {
        CHECK(cJSON_IsFalse(cJSON_GetObjectItem(j, "pass")), "report.json pass false");
        CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(j, "recipes")) == hp_n_recipes, "recipes in report.json");
        CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(j, "negative")) == hp_n_negatives, "negatives in report.json");
        CHECK((int)cJSON_GetObjectItem(j, "failed")->valuedouble == 3, "failed count");
        cJSON *r5 = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "recipes"), 5);
        CHECK(r5 && !cJSON_GetObjectItem(r5, "losses") && cJSON_IsNull(cJSON_GetObjectItem(r5, "deterministic")),
              "a crashed recipe carries no numbers");
        cJSON_Delete(j);
    }
    free(t);

    t = slurp(svg);
    CHECK(t && !strncmp(t, "<svg ", 5) && strstr(t, "</svg>\n"), "report.svg is one svg element");
    CHECK(t && strstr(t, "FAILURES") && strstr(t, "3 failed") && strstr(t, "tolerance 1e-05"), "report.svg title and tolerance");
    CHECK(t && strstr(t, "&lt;segfault &amp;"), "failure text escaped");
    CHECK(t && !strstr(t, "<segfault"), "no raw '<' from data in the svg");
    // as many trajectory panels as recipes with numbers, two lines each
    int n_poly = 0;
    for (const char *p = t; p && (p = strstr(p, "<polyline")); p++) n_poly++;
    CHECK(n_poly == 2 * (hp_n_recipes - 1), "%d polylines, want %d", n_poly, 2 * (hp_n_recipes - 1));
    free(t);
    unlink(md); unlink(js); unlink(svg);
    rmdir(dir);
    free(m.rec);
    free(m.neg);
}

// The failpoint registry (its CTests are generated from it): at least 16, unique names, each
// on a recipe; one whose recipe is a matrix recipe runs exactly that recipe's flags.
static void test_failpoints(void) {
    CHECK(HP_FP_COUNT >= 16, "%d failpoints, want at least 16", (int)HP_FP_COUNT);
    for (int i = 0; i < HP_FP_COUNT; i++) {
        const hp_failpoint_info *f = &hp_failpoints[i];
        CHECK(f->name && f->recipe && f->flags && f->touches, "failpoint %d: a field is missing", i);
        if (!f->name || !f->recipe || !f->flags || !f->touches) continue;
        for (int k = 0; k < i; k++) CHECK(strcmp(hp_failpoints[k].name, f->name), "%s: name not unique", f->name);
        regex_t re;
        CHECK(regcomp(&re, f->touches, REG_EXTENDED | REG_NOSUB) == 0, "%s: regex does not compile", f->name);
        regfree(&re);
        const hp_recipe *r = hp_recipe_find(f->recipe);
        char flags[512];
        if (r) hp_recipe_flags(r, flags, sizeof flags);
        CHECK(!r || !strcmp(flags, f->flags), "%s runs '%s' but recipe %s is '%s'", f->name, f->flags, f->recipe,
              r ? flags : "");
    }
    // and the bench list names recipes of the table
    for (int i = 0; i < hp_n_bench_recipes; i++)
        CHECK(hp_recipe_find(hp_bench_recipes[i]) != NULL, "bench recipe %s is not in the table", hp_bench_recipes[i]);
    CHECK(hp_n_bench_recipes >= 8, "%d bench recipes", hp_n_bench_recipes);
}

int main(int argc, char **argv) {
    test_json_roundtrip();
    test_table();
    test_negatives();
    test_failpoints();
    test_bad_files();
    test_reports(argc > 1 ? argv[1] : NULL);
    return test_summary("test_recipes");
}
