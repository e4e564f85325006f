// recipes_text.c - the recipe tables rendered for the files generated from them (recipes.h):
// the tab-separated list, README.md's and examples/README.md's Markdown tables, the CTest list.
// defines: hp_recipes_list, hp_recipes_markdown, hp_examples_markdown, hp_recipes_ctest
//          (which also lists the failpoint CTests of the registry, src/util/failpoint.c)
#include <stdlib.h>
#include <string.h>
#include "hyperpar/failpoint.h"
#include "hyperpar/recipes.h"

void hp_recipes_list(FILE *out) {
    char flags[512];
    for (int i = 0; i < hp_n_recipes; i++) {
        const hp_recipe *r = &hp_recipes[i];
        hp_recipe_flags(r, flags, sizeof flags);
        if (r->resume_to)
            fprintf(out, "resume\t%s\t%s\t%d\t%s\t%s\n", r->id, hp_level_name(r->level), hp_recipe_world(r),
                    flags, r->resume_to);
        else
            fprintf(out, "recipe\t%s\t%s\t%d\t%s\n", r->id, hp_level_name(r->level), hp_recipe_world(r), flags);
    }
    for (int i = 0; i < hp_n_negatives; i++) {
        const hp_negative *g = &hp_negatives[i];
        fprintf(out, "negative\t%s\t%d\t%s\t%s\n", g->id, g->code, g->err_regex, g->args);
    }
}

// docs/recipes.md's recipe table (between its "recipes:begin" and "recipes:end" markers; the test
// readme_recipes_table fails when the two differ).
void hp_recipes_markdown(FILE *out) {
    fprintf(out, "| ID | model | precision | P | R | S | U | C | T | SP | EP | ET | world | level | what |\n");
    fprintf(out, "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    char flags[512];
    for (int i = 0; i < hp_n_recipes; i++) {
        const hp_recipe *r = &hp_recipes[i];
        hp_recipe_flags(r, flags, sizeof flags);
        const char *layers = strstr(flags, "--layers ");
        char model[48];
        if (layers) snprintf(model, sizeof model, "%s L%d", r->model, atoi(layers + 9));
        else snprintf(model, sizeof model, "%s", r->model);
        const int sp_on = r->sp == 1 || (r->sp == -1 && r->T > 1);
        char ep[16] = "–", et[16] = "–";
        if (r->EP > 1) { snprintf(ep, sizeof ep, "%d", r->EP); snprintf(et, sizeof et, "%d", r->ET); }
        fprintf(out, "| %s | %s | %s | %d | %d | %d | %d | %d | %d | %s | %s | %s | %d | %s | %s%s%s%s |\n",
                r->id, model, hp_recipe_precision(r), r->P > 1 ? r->P : 1, r->R, r->S, r->U > 1 ? r->U : 1, r->C, r->T,
                r->T > 1 ? (sp_on ? "on" : "off") : "–", ep, et, hp_recipe_world(r),
                hp_level_name(r->level), r->what, r->extra ? " (`" : "", r->extra ? r->extra : "",
                r->extra ? "`)" : "");
    }
}


// examples/README.md's table (between its "examples:begin" and "examples:end" markers; the test
// examples_recipes_table fails when the two differ): per folder the recipes name, in the order
// of the folders' names, the recipes that name it.
void hp_examples_markdown(FILE *out) {
    fprintf(out, "| example | recipes.md rows | recipes it covers (`hp matrix --only ...`, `ctest -R recipe_...`) |\n");
    fprintf(out, "|---|---|---|\n");
    const char *last = "";
    for (;;) {
        const char *next = NULL;   // the smallest folder name after `last`
        for (int i = 0; i < hp_n_recipes; i++) {
            const char *e = hp_recipes[i].example;
            if (e && strcmp(e, last) > 0 && (!next || strcmp(e, next) < 0)) next = e;
        }
        if (!next) break;
        fprintf(out, "| [%s](%s) | ", next, next);
        for (int i = 0, n = 0; i < hp_n_recipes; i++) {   // each row once, in table order
            const hp_recipe *r = &hp_recipes[i];
            if (!r->example || strcmp(r->example, next) || !r->row) continue;
            int seen = 0;
            for (int j = 0; j < i && !seen; j++)
                seen = hp_recipes[j].example && !strcmp(hp_recipes[j].example, next) &&
                       hp_recipes[j].row && !strcmp(hp_recipes[j].row, r->row);
            if (!seen) fprintf(out, "%s%s", n++ ? ", " : "", r->row);
        }
        fprintf(out, " | ");
        for (int i = 0, n = 0; i < hp_n_recipes; i++)
            if (hp_recipes[i].example && !strcmp(hp_recipes[i].example, next))
                fprintf(out, "%s%s", n++ ? ", " : "", hp_recipes[i].id);
        fprintf(out, " |\n");
        last = next;
    }
}

// One argument of a CTest script: as it is, or a bracket argument (taken literally), or, for an
// argument of a negative case naming a generated bad file, "${HP_RECIPES_BAD_FILES}/..." (our
// own paths: no quote, dollar or backslash in them).
static void ctest_arg(FILE *out, const char *a, size_t len) {
    const size_t plain = strspn(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.,/=+:-");
    if (len >= 5 && !strncmp(a, "{DIR}", 5)) fprintf(out, " \"${HP_RECIPES_BAD_FILES}%.*s\"", (int)(len - 5), a + 5);
    else if (plain >= len) fprintf(out, " %.*s", (int)len, a);   // nothing CMake would read
    else fprintf(out, " [==[%.*s]==]", (int)len, a);
}

static void ctest_args(FILE *out, const char *s) {
    while (*s) {
        while (*s == ' ') s++;
        const size_t len = strcspn(s, " ");
        if (len) ctest_arg(out, s, len);
        s += len;
    }
}

void hp_recipes_ctest(FILE *out) {
    fprintf(out, "# generated by `hp matrix --ctest` from the library's recipe table "
                 "(src/verify/recipes.c): do not edit\n");
    char flags[512];
    for (int i = 0; i < hp_n_recipes; i++) {
        const hp_recipe *r = &hp_recipes[i];
        if (r->resume_to) continue;   // tests/checkpoint.cmake's ckpt_K* (they also compare the parameters)
        hp_recipe_flags(r, flags, sizeof flags);
        fprintf(out, "add_test([==[recipe_%s]==] \"${HP_RECIPES_HP}\" run", r->id);
        ctest_args(out, flags);
        fprintf(out, " --verify --quiet)\n");
        // multi-rank jobs take both cores: ctest -j2 runs one of them at a time
        fprintf(out, "set_tests_properties([==[recipe_%s]==] PROPERTIES LABELS %s TIMEOUT 120 PROCESSORS %d)\n",
                r->id, hp_level_name(r->level), hp_recipe_world(r) > 1 ? 2 : 1);
    }
    for (int i = 0; i < hp_n_negatives; i++) {
        const hp_negative *g = &hp_negatives[i];
        fprintf(out, "add_test([==[recipe_%s]==] sh \"${HP_RECIPES_EXPECT}\" %d [==[%s]==] -- \"${HP_RECIPES_HP}\"",
                g->id, g->code, g->err_regex);
        ctest_args(out, g->args);
        fprintf(out, ")\nset_tests_properties([==[recipe_%s]==] PROPERTIES LABELS L0 TIMEOUT 30 "
                     "ENVIRONMENT HP_EXPECT_ONE_LINE=1%s)\n",
                g->id, strstr(g->args, "{DIR}") ? " FIXTURES_REQUIRED recipes_bad_files" : "");
    }
    // each failpoint runs its recipe with HP_FAILPOINT=<name> through tests/run_failpoint.sh:
    // exit 1 and the verifier naming what it touches (docs/verification.md)
    for (int i = 0; i < HP_FP_COUNT; i++) {
        const hp_failpoint_info *f = &hp_failpoints[i];
        fprintf(out, "add_test([==[failpoint_%s]==] sh \"${HP_RECIPES_FP_RUN}\" \"${HP_RECIPES_HP}\" %s [==[%s]==] "
                     "\"${HP_RECIPES_FP_OUT}\" --", f->name, f->name, f->touches);
        ctest_args(out, f->flags);
        fprintf(out, ")\nset_tests_properties([==[failpoint_%s]==] PROPERTIES LABELS L1 TIMEOUT 120 PROCESSORS 2)\n",
                f->name);
    }
    // a failpoint's recipe that is no matrix recipe (but a hang's) must pass without it: a baseline
    for (int i = 0; i < HP_FP_COUNT; i++) {
        const hp_failpoint_info *f = &hp_failpoints[i];
        int seen = hp_recipe_find(f->recipe) != NULL || !strcmp(f->touches, "watchdog");
        for (int k = 0; k < i && !seen; k++) seen = !strcmp(hp_failpoints[k].recipe, f->recipe);
        if (seen) continue;
        fprintf(out, "add_test([==[failpoint_baseline_%s]==] \"${HP_RECIPES_HP}\" run", f->recipe);
        ctest_args(out, f->flags);
        fprintf(out, " --verify --quiet)\nset_tests_properties([==[failpoint_baseline_%s]==] PROPERTIES LABELS L1 "
                     "TIMEOUT 120 PROCESSORS 2)\n", f->recipe);
        fprintf(out, "if(HP_RECIPES_ENV)\n  set_tests_properties([==[failpoint_baseline_%s]==] PROPERTIES "
                     "ENVIRONMENT \"${HP_RECIPES_ENV}\")\nendif()\n", f->recipe);
    }
    // the sanitizer build's environment (LSan suppressions), when the including script sets one
    fprintf(out, "if(HP_RECIPES_ENV)\n");
    for (int i = 0; i < hp_n_recipes; i++)
        if (!hp_recipes[i].resume_to)
            fprintf(out, "  set_tests_properties([==[recipe_%s]==] PROPERTIES ENVIRONMENT \"${HP_RECIPES_ENV}\")\n",
                    hp_recipes[i].id);
    for (int i = 0; i < hp_n_negatives; i++)
        fprintf(out, "  set_tests_properties([==[recipe_%s]==] PROPERTIES ENVIRONMENT "
                     "\"HP_EXPECT_ONE_LINE=1;${HP_RECIPES_ENV}\")\n", hp_negatives[i].id);
    for (int i = 0; i < HP_FP_COUNT; i++)
        fprintf(out, "  set_tests_properties([==[failpoint_%s]==] PROPERTIES ENVIRONMENT \"${HP_RECIPES_ENV}\")\n",
                hp_failpoints[i].name);
    fprintf(out, "endif()\n");
}
