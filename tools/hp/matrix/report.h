// report.h - the results of `hp matrix` and their three renderings: a console table, a
// Markdown report, a JSON report and an SVG picture (loss trajectories + error bars).
// defines: tool_verdict, tool_recipe_result, tool_negative_result, tool_matrix_report,
//          tool_report_*, the shared cells (tool_fmt_err, tool_det_text, tool_fault_worst,
//          tool_plan_text, tool_plan_summary)
#ifndef HP_TOOL_REPORT_H
#define HP_TOOL_REPORT_H
#include <stdio.h>
#include "hyperpar/failpoint.h"
#include "hyperpar/recipes.h"
#include "hyperpar/verify_record.h"

#define TOOL_MATRIX_MAX_STEPS 16

typedef enum {
    TOOL_V_PASS = 0,     // every check of --verify passed, runs bit-identical
    TOOL_V_FAIL,         // --verify found a difference beyond the tolerance (exit 1)
    TOOL_V_NONDET,       // passed, but two runs gave different losses
    TOOL_V_MISMATCH,     // passed, but its trajectory differs from its same_as variant
    TOOL_V_REFUSED,      // a legal recipe was refused as a bad configuration (exit 2)
    TOOL_V_CRASH,        // killed by a signal or an unexpected exit code, or no JSON result
    TOOL_V_TIMEOUT,      // still running after the time limit (killed)
} tool_verdict;

#define TOOL_REPORT_PP_RANKS   8
#define TOOL_REPORT_PP_ACTIONS 96

typedef struct tool_recipe_result {
    const hp_recipe *r;
    tool_verdict verdict;
    int    exit_code;                  // of the first failing run (or the first run); -1 signal
    int    have_json;                  // the numbers below come from the child's --json
    int    world;
    int    steps;
    double losses[TOOL_MATRIX_MAX_STEPS], losses_ref[TOOL_MATRIX_MAX_STEPS];
    double loss_rel_err, traj_worst;
    double worst_grad_rel, worst_param_rel, tol_grad, tol_param;
    char   worst_grad[64], worst_param[64];
    double bytes_counted, bytes_predicted;
    int    traffic_ok, init_equal;
    double replica_diff;
    int    route_flips;                // summed over MoE layers
    double seconds;                    // wall time of the first run, launch included
    int    runs;                       // how many runs were made
    int    deterministic;              // 1 bit-identical over the runs, 0 not, -1 not checked
    double same_as_rel;                // worst relative loss difference to same_as; -1 not checked
    int    plan_checked;               // the planner's prediction was compared (hp_plan_check_run)
    int    plan_pass;                  // persistent bytes and every (group, op) equal, peak within 10%
    double plan_peak_ratio;            // predicted / measured peak bytes (world rank 0)
    // bf16 recipes: the closeness check's worst ratio, its c and what had it (-1: not bf16);
    // every recipe: the structure check's comparisons and mismatches
    double closeness_worst, closeness;
    char   closeness_worst_of[80];
    double structure_checks, structure_mismatches;
    // pipeline: the verified run's last step, per pp rank (at most TOOL_REPORT_PP_RANKS ranks and
    // TOOL_REPORT_PP_ACTIONS actions each): op (0 F, 1 B, 2 I, 3 W), start and end in ms
    int    pp_ranks, pp_n[TOOL_REPORT_PP_RANKS];
    float  pp_t0[TOOL_REPORT_PP_RANKS][TOOL_REPORT_PP_ACTIONS], pp_t1[TOOL_REPORT_PP_RANKS][TOOL_REPORT_PP_ACTIONS];
    unsigned char pp_op[TOOL_REPORT_PP_RANKS][TOOL_REPORT_PP_ACTIONS];
    char   failure[320];               // why it did not pass ("" when it passed)
    char   log[512];                   // the log of the run the failure comes from ("" none)
    // the conditions of its bitwise promises (docs/verification.md): BLAS, core, threads per rank,
    // the GEMM backend when not OpenBLAS ("" otherwise)
    char   blas[48], blas_core[32], gemm[96];
    int    blas_threads_min, blas_threads_max;
} tool_recipe_result;

typedef struct tool_negative_result {
    const hp_negative *n;
    int    exit_code;                  // -1 killed by a signal or timed out
    int    ok;                         // exit code as expected, one stderr line matching the rule
    double seconds;
    int    n_lines;                    // stderr lines
    char   line[512];                  // the first stderr line
    char   why[160];                   // what was wrong when !ok
} tool_negative_result;

// One failpoint's run (`hp matrix --faults`): its recipe with HP_FAILPOINT=<name> must fail.
typedef struct tool_fault_result {
    const hp_failpoint_info *fp;
    int    exit_code;                  // -1 timed out; 128+N killed by signal N
    int    have_json;
    int    caught;                     // exit 1, pass false, and the result matches fp->touches
    char   failure[320];               // the first failed check the verifier names
    char   worst_grad[64], worst_param[64];
    double worst_grad_rel, worst_param_rel, loss_rel_err;
    double grad_norm_rel;              // |grad norm - reference| / reference; -1 unknown
    double seconds;
    char   why[200];                   // why it does not count as caught ("" when caught)
    char   log[512];
} tool_fault_result;

typedef struct tool_matrix_report {
    char   selection[128];             // "--level all", "--only M4-s2"
    int    repeat;
    tool_recipe_result   *rec;
    int    n_rec;
    tool_negative_result *neg;
    int    n_neg;
    double seconds;                    // the whole matrix, wall time
    int    n_pass, n_fail, n_neg_ok, n_neg_wrong;
    tool_fault_result *faults;           // --faults: one per failpoint (NULL / 0 without)
    int    n_faults, n_faults_caught;
} tool_matrix_report;

const char *tool_verdict_name(tool_verdict v);
// One line: the BLAS, core and threads per rank the recipes ran under ("OpenBLAS 0.3.21, core
// Haswell, 1 BLAS thread per rank"), or each distinct set when they differ; "" when unknown.
void   tool_report_conditions(const tool_matrix_report *m, char *out, size_t cap);
// Takes the numbers of a recipe's (first) run from its record; x->world stays when unknown.
void   tool_recipe_result_take(tool_recipe_result *x, const hp_verify_record *v);
// The largest of the step-1 loss, gradient and parameter relative errors; -1 without numbers.
double tool_recipe_worst_rel(const tool_recipe_result *r);
// "R1 S2 C2 T2 sp EP4 ET1 ring" style summary of the degrees.
void   tool_recipe_dims_text(const hp_recipe *r, char *out, int cap);

// The cells every rendering shares (report.c): an error as "%.2e" ("-" when v < 0); a
// determinism cell ("yes", "NO", "-"); a fault's largest relative error and where ("4.11e-03
// (loss)"); the planner cell ("= 0.998", "DIFF 0.85", "-"); and the planner's one summary
// line (nothing when no recipe was checked), bold around its label.
void        tool_fmt_err(char *out, int cap, double v);
const char *tool_det_text(int d);
void        tool_fault_worst(const tool_fault_result *x, char *out, int cap);
void        tool_plan_text(const tool_recipe_result *x, char *out, size_t cap);
void        tool_plan_summary(FILE *out, const tool_matrix_report *m, const char *bold);

// The renderings: the console table (report.c), report.md and faults.md (report_md.c),
// report.json (report_json.c), report.svg (report_svg.c).
void tool_report_table(FILE *out, const tool_matrix_report *m);
// Each returns 0, or -1 after printing one line naming the file.
int  tool_report_markdown(const char *path, const tool_matrix_report *m);
int  tool_report_json(const char *path, const tool_matrix_report *m);
int  tool_report_svg(const char *path, const tool_matrix_report *m);
// The "faults caught" table alone (failpoint, recipe, what failed, worst error), as Markdown:
// DIR/faults.md, the table docs/verification.md shows.
int  tool_report_faults_markdown(const char *path, const tool_matrix_report *m);

#endif
