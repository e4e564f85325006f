// recipes_features.c - examples/README.md's lists of what hp implements and what it does not,
// generated (between its "features:begin" and "features:end" markers; the CTest
// examples_features_table fails when they drift, tests/check_docs_true.py when a document calls
// something "not implemented" that a recipe proves).
// defines: hp_features_markdown
//
// An implemented feature is named with the flag that turns it on and the recipes of the table
// (recipes.c) whose flags turn it on: a feature no recipe proves is not listed as implemented,
// and the line says how many prove it. A feature hp does not implement is named with what a
// user would type and the one line hp refuses it with (exit 2), which the test runs.
#include <string.h>
#include "hyperpar/recipes.h"

#define SHOWN_IDS 6   // recipe ids printed per feature before "+N more"

// 1 when flags holds the words `word` as a whole ("--float8 rowwise" is not "--float8
// rowwise-gw-hp"; "--ac every:" matches every interval).
static int has_words(const char *flags, const char *word) {
    const size_t n = strlen(word);
    for (const char *p = strstr(flags, word); p; p = strstr(p + 1, word)) {
        const int starts = p == flags || p[-1] == ' ';
        const int ends = word[n - 1] == ':' || p[n] == ' ' || p[n] == '\0';
        if (starts && ends) return 1;
    }
    return 0;
}

typedef struct feature {
    const char *name;   // what it is, in the words of TorchTitan's docs where they have one
    const char *flag;   // the `hp run` flag that turns it on
    const char *words;  // the flag words a recipe's flags hold when it runs the feature, or NULL
    int (*has)(const hp_recipe *r);   // or a test of its degrees
} feature;

static int tp(const hp_recipe *r) { return r->T > 1; }
static int sp(const hp_recipe *r) { return r->T > 1 && r->sp != 0; }
static int fsdp(const hp_recipe *r) { return r->S > 1; }
static int ddp(const hp_recipe *r) { return r->R > 1; }
static int cp_ag(const hp_recipe *r) { return r->C > 1 && (!r->rotate || !strcmp(r->rotate, "allgather")); }
static int cp_ring(const hp_recipe *r) { return r->C > 1 && r->rotate && !strcmp(r->rotate, "ring"); }
static int ulysses(const hp_recipe *r) { return r->U > 1; }
static int ep(const hp_recipe *r) { return r->EP > 1; }
static int etp(const hp_recipe *r) { return r->ET > 1; }
static int ep_ag(const hp_recipe *r) { return r->dispatcher && !strcmp(r->dispatcher, "allgather"); }
static int pp(const hp_recipe *r) { return r->P > 1; }
static int resume(const hp_recipe *r) { return r->resume_to != NULL; }

static const feature implemented[] = {
    { "tensor parallel (colwise / rowwise linears)", "--tp N", NULL, tp },
    { "sequence parallel (the norms and residual stream sharded over tp; on with tp)", "--sp", NULL, sp },
    { "FSDP2 (parameters, grads and optimizer state sharded)", "--dp-shard N", NULL, fsdp },
    { "HSDP / DDP (replicas, grads all-reduced)", "--dp-replicate N", NULL, ddp },
    { "context parallel, all-gather K/V", "--cp N --cp-rotate allgather", NULL, cp_ag },
    { "context parallel, ring K/V rotation", "--cp N --cp-rotate ring", NULL, cp_ring },
    { "context parallel without load balancing", "--cp-no-balance", "--cp-no-balance", NULL },
    { "Ulysses sequence parallel (heads <-> tokens all-to-all)", "--ulysses N", NULL, ulysses },
    { "expert parallel (MoE)", "--ep N", NULL, ep },
    { "expert tensor parallel", "--etp N", NULL, etp },
    { "all-gather expert dispatch", "--dispatcher allgather", NULL, ep_ag },
    { "pipeline parallel", "--pp N", NULL, pp },
    { "pipeline schedule GPipe", "--pp-schedule gpipe", "--pp-schedule gpipe", NULL },
    { "pipeline schedule 1F1B", "--pp-schedule 1f1b", "--pp-schedule 1f1b", NULL },
    { "pipeline schedule interleaved 1F1B (virtual stages)", "--pp-schedule interleaved-1f1b", "--pp-schedule interleaved-1f1b", NULL },
    { "pipeline schedule zero bubble V", "--pp-schedule zbv", "--pp-schedule zbv", NULL },
    { "gradient accumulation", "--microbatches M", "--microbatches", NULL },
    { "activation checkpointing, every block", "--ac full", "--ac full", NULL },
    { "activation checkpointing, every N-th block", "--ac every:N", "--ac every:", NULL },
    { "FSDP reshard_after_forward never", "--reshard-after-forward never", "--reshard-after-forward never", NULL },
    { "FSDP reshard_after_forward always", "--reshard-after-forward always", "--reshard-after-forward always", NULL },
    { "AdamW", "--optimizer adamw", "--optimizer adamw", NULL },
    { "gradient clipping", "--max-norm X", "--max-norm", NULL },
    { "bf16 mixed precision (FSDP2's MixedPrecisionPolicy)", "--mixed-precision-param bfloat16", "--mixed-precision-param bfloat16", NULL },
    { "bf16 gradient reduction", "--mixed-precision-reduce bfloat16", "--mixed-precision-reduce bfloat16", NULL },
    { "Float8 linears, tensorwise scaling", "--float8 tensorwise", "--float8 tensorwise", NULL },
    { "Float8 linears, rowwise scaling", "--float8 rowwise", "--float8 rowwise", NULL },
    { "Float8 linears, rowwise with high-precision grad_weight", "--float8 rowwise-gw-hp", "--float8 rowwise-gw-hp", NULL },
    { "Float8 FSDP all-gather", "--float8-fsdp-all-gather", "--float8-fsdp-all-gather", NULL },
    { "async TP (all-gather / reduce-scatter overlapped with the GEMMs)", "--async-tp", "--async-tp", NULL },
    { "training on a data file", "--data FILE", "--data", NULL },
    { "distributed checkpoints, resumed under another layout", "--checkpoint-dir D --resume D", NULL, resume },
};

// What hp refuses by name: the feature, what a user would type, the one line hp answers (a
// fixed part of it; tests/check_docs_true.py runs each and wants exit 2 and that line).
static const struct { const char *name, *args, *answer; } not_implemented[] = {
    { "DeepEP expert dispatch", "--dispatcher deepep", "--dispatcher expects alltoall or allgather, got 'deepep'" },
    { "per-op selective activation checkpointing", "--ac selective --activation_checkpoint.selective_ac_option op",
      "'op' (per-op selective AC) is not implemented" },
    { "MX (microscaling) float8 recipes", "--float8 mxfp8", "--float8 takes tensorwise, rowwise, rowwise-gw-hp or off" },
    { "TorchTitan's Adam (AdamW is)", "--optimizer adam", "(TorchTitan's Adam is not implemented)" },
    { "other pipeline schedules (looped BFS, DualPipe)", "--pp-schedule looped-bfs",
      "--pp-schedule expects gpipe, 1f1b, interleaved-1f1b or zbv" },
    { "torch.compile", "--compile.enable", "a TorchTitan feature hp does not implement" },
};

static int proves(const feature *f, const hp_recipe *r) {
    if (f->has) return f->has(r);
    char flags[1024];
    hp_recipe_flags(r, flags, sizeof flags);
    return has_words(flags, f->words) || (r->resume_to && has_words(r->resume_to, f->words));
}

static void implemented_row(FILE *out, const feature *f) {
    int n = 0;
    for (int i = 0; i < hp_n_recipes; i++) n += proves(f, &hp_recipes[i]);
    if (n == 0) return;   // no recipe proves it: not listed as implemented
    fprintf(out, "| %s | `%s` | %d: ", f->name, f->flag, n);
    for (int i = 0, shown = 0; i < hp_n_recipes && shown < SHOWN_IDS; i++)
        if (proves(f, &hp_recipes[i])) fprintf(out, "%s%s", shown++ ? ", " : "", hp_recipes[i].id);
    fprintf(out, "%s |\n", n > SHOWN_IDS ? ", ..." : "");
}

void hp_features_markdown(FILE *out) {
    fprintf(out, "Implemented, each proven by the recipes named (`hp matrix --only ID`):\n\n");
    fprintf(out, "| feature | flag | recipes |\n|---|---|---|\n");
    for (size_t i = 0; i < sizeof implemented / sizeof implemented[0]; i++) implemented_row(out, &implemented[i]);
    fprintf(out, "\nNot implemented, refused by name with one line and exit 2 (the TorchTitan job keys hp does "
                 "not implement: `hp run --help-config`):\n\n");
    fprintf(out, "| feature | `hp run` ... | hp answers |\n|---|---|---|\n");
    for (size_t i = 0; i < sizeof not_implemented / sizeof not_implemented[0]; i++)
        fprintf(out, "| %s | `%s` | %s |\n", not_implemented[i].name, not_implemented[i].args,
                not_implemented[i].answer);
}
