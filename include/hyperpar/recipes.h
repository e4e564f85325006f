// recipes.h - the completeness matrix of docs/recipes.md as DATA, defined once: every
// recipe variant (degrees, model, CP rotate method, expert dispatcher, CI level, the example
// that shows it), every negative case (the flags, the exit code and a regex the one stderr
// line must match) and the recipes `hp bench --recipes` measures. Everything else is generated
// from these tables: `hp matrix` runs them, `hp matrix --ctest` writes the CTest list,
// `--markdown` / `--examples-markdown` the tables of README.md and examples/README.md (CTests
// fail on drift). The tolerances they are verified against are hp_verify_tol (verify.h).
// defines: hp_level, hp_recipe, hp_negative, hp_recipes[], hp_negatives[], hp_bench_recipes[],
//          argument builders, lookups, renderings
//
//   const hp_recipe *r = hp_recipe_find("M6-ring");       // NULL if unknown
//   char flags[512];
//   hp_recipe_flags(r, flags, sizeof flags);   // "--model tiny --dp-replicate 1 --dp-shard 2 ..."
//   printf("%s needs %d ranks, level %s\n", r->id, hp_recipe_world(r), hp_level_name(r->level));
//   for (int i = 0; i < hp_n_negatives; i++)             // each must exit 2 with one line
//       printf("hp %s  ->  /%s/\n", hp_negatives[i].args, hp_negatives[i].err_regex);
//
// Adding a recipe: one row of hp_recipes (src/verify/recipes.c), then regenerate the two
// Markdown tables (the CTests readme_recipes_table / examples_recipes_table print the command).
#ifndef HYPERPAR_RECIPES_H
#define HYPERPAR_RECIPES_H
#include <string.h>
#include <stdio.h>

typedef enum { HP_LEVEL_L0 = 0, HP_LEVEL_L1 = 1, HP_LEVEL_L2 = 2, HP_LEVEL_COUNT } hp_level;

typedef struct hp_recipe {
    const char *id;          // variant id, e.g. "M2-tp4", "M5-s2-ring"
    const char *row;         // the recipes.md row it comes from, e.g. "M2"
    const char *model;       // "tiny" | "tiny-moe"
    int R, S, C, T;          // dp_replicate, dp_shard, cp, tp
    int sp;                  // sequence parallel: 1 on, 0 off, -1 default (on iff tp > 1)
    int EP, ET;              // ep, etp (1 = off)
    const char *rotate;      // "allgather" | "ring" | NULL (not a CP recipe)
    const char *dispatcher;  // "alltoall" | "allgather" | NULL (default)
    hp_level level;
    const char *same_as;     // another variant whose loss trajectory this one must also match
                             // (an alternative implementation path: ring vs all-gather CP,
                             // all-gather vs all-to-all dispatch); NULL for none
    const char *example;     // examples/ folder that shows this configuration
    const char *what;        // one line: what the variant proves
    const char *extra;       // further `hp run` flags (optimiser, clipping, CP layout, pipeline
                             // schedule and microbatches, --layers), or NULL
    int P;                   // pp degree (0 or 1: no pipeline)
    int U;                   // ulysses degree (0 or 1: none)
    const char *resume_to;   // a resume recipe (K1-K6): the full `hp run` flags of layout B; the
                             // run trains 6 steps under A, and 3 under A saved and resumed
                             // under B to step 6, whose losses must match (NULL: a verify recipe)
} hp_recipe;

// The recipe's precision policy: "bf16" when its flags ask for --mixed-precision-param
// bfloat16, else "fp32".
static inline const char *hp_recipe_precision(const hp_recipe *r) {
    return r->extra && strstr(r->extra, "--mixed-precision-param bfloat16") ? "bf16" : "fp32";
}

// The world a recipe runs with: P*R*S*U*C*T (EP and ETP re-use those ranks).
static inline int hp_recipe_world(const hp_recipe *r) {
    return (r->P > 1 ? r->P : 1) * r->R * r->S * (r->U > 1 ? r->U : 1) * r->C * r->T;
}

// Bad input files a negative case may need, generated at run time by hp_negative_write_files.
typedef enum {
    HP_BADFILE_NONE = 0,
    HP_BADFILE_TRUNCATED,    // a valid model file cut in half
    HP_BADFILE_SHAPE,        // every tensor present, tok_embeddings.weight transposed
    HP_BADFILE_NAMES,        // every tensor present, output.weight renamed lm_head.weight
    HP_BADFILE_TEXT,         // a text file, not safetensors at all
} hp_badfile;

typedef struct hp_negative {
    const char *id;          // e.g. "neg-etp-not-tp"
    const char *rule;        // the rule of recipes.md it exercises (for the report)
    const char *args;        // hp arguments, space-separated; "{DIR}" = the folder of the
                             // generated bad files (hp_negative_write_files)
    int code;                // expected exit code (2: refused configuration / input)
    const char *err_regex;   // POSIX ERE the single stderr line must match
    hp_badfile file;
} hp_negative;

extern const hp_recipe   hp_recipes[];
extern const int         hp_n_recipes;
extern const hp_negative hp_negatives[];
extern const int         hp_n_negatives;
extern const char *const hp_bench_recipes[];   // ids `hp bench --recipes` measures
extern const int         hp_n_bench_recipes;

const char *hp_level_name(hp_level l);             // "L0", "L1", "L2"
int  hp_level_parse(const char *s);                // "L0".."L2" -> level, -1 otherwise
const hp_recipe   *hp_recipe_find(const char *id); // NULL if unknown
const hp_negative *hp_negative_find(const char *id);

// The `hp run` flags of a recipe (without "run" and without --verify/--json), one string with
// single spaces, e.g. "--model tiny --dp-replicate 1 --dp-shard 1 --cp 1 --tp 2 --no-sp".
// Returns the length written (truncated to cap-1).
int hp_recipe_flags(const hp_recipe *r, char *out, int cap);
// The argument string of a negative case with every "{DIR}" replaced by dir.
int hp_negative_args(const hp_negative *n, const char *dir, char *out, int cap);

// Writes every bad input file into dir (created if missing): a model of `tiny` built from the
// parameter table, then damaged as hp_badfile says. Returns 0, or -1 with one line in err.
int hp_negative_write_files(const char *dir, char *err, int errlen);

// Renderings of the tables (src/verify/recipes_text.c):
//   hp_recipes_list: tab-separated, one per line (for scripts):
//     recipe<TAB>ID<TAB>LEVEL<TAB>WORLD<TAB>FLAGS
//     resume<TAB>ID<TAB>LEVEL<TAB>WORLD<TAB>FLAGS<TAB>FLAGS_B
//     negative<TAB>ID<TAB>CODE<TAB>REGEX<TAB>ARGS      (ARGS keep the {DIR} placeholder)
//   hp_recipes_markdown: docs/recipes.md's table (between "<!-- recipes:begin -->" and "end")
//   hp_examples_markdown: examples/README.md's table of which example covers which recipe, one
//     row per folder the recipes name (between "<!-- examples:begin -->" and "end")
//   hp_recipes_ctest: a CTest script (what CTestTestfile.cmake includes through the directory
//     property TEST_INCLUDE_FILES): recipe_<ID> per verify recipe, `hp run FLAGS --verify
//     --quiet`, label = level, PROCESSORS 2 when it takes more than one rank, TIMEOUT 120;
//     recipe_<ID> per negative case through tests/expect_exit.sh (L0, TIMEOUT 30); and
//     failpoint_<NAME> per failpoint of the registry (failpoint.h) through
//     tests/run_failpoint.sh (L1). It names ${HP_RECIPES_HP}, ${HP_RECIPES_EXPECT},
//     ${HP_RECIPES_BAD_FILES}, ${HP_RECIPES_FP_RUN}, ${HP_RECIPES_FP_OUT} and ${HP_RECIPES_ENV}
//     (extra test environment, may be empty), which the including script sets.
void hp_recipes_list(FILE *out);
void hp_recipes_markdown(FILE *out);
void hp_examples_markdown(FILE *out);
// examples/README.md's lists (between "<!-- features:begin -->" and "end"; recipes_features.c):
// each implemented feature with its flag and the recipes that prove it (a feature no recipe
// proves is left out), then what hp does not implement, with the line it refuses each with.
void hp_features_markdown(FILE *out);
void hp_recipes_ctest(FILE *out);

#endif
