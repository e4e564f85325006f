// verify_record.h - a verification's result as a file holds it, and the checks between two of
// them: the JSON `hp run --verify --json F` writes (and any program can), read back into the
// same struct; the rerun determinism check (two runs bit-identical), the same_as comparison
// (an alternative path follows its twin's loss trajectory) and the resume check (a resumed
// run continues the uninterrupted one), all against one tolerance table. Plain C (no MPI):
// hp_verify_record_from_result (verify.h) fills one from a hp_verify_run result.
// defines: hp_verify_tolerances, hp_verify_tol, hp_verify_record, its JSON write / read, checks
//
//   hp_verify_record a, b;
//   hp_verify_record_from_result(&a, &result);          // or hp_verify_record_load(&a, "r1.json")
//   hp_verify_record_write(&a, "run1.json");
//   ... a second run into b ...
//   char why[256];
//   if (hp_verify_rerun_check(&a, &b, "d1/grads.safetensors", "d2/grads.safetensors", why, sizeof why))
//       printf("not deterministic: %s\n", why);
//   double worst;
//   if (hp_verify_same_as_check(&ring, &allgather, &worst, why, sizeof why)) printf("%s\n", why);
//
// Extending the file: a field here, one row in verify_json.c's field table (it is both the
// writer and the reader), and the round trip of tests/test_recipes_verify.c covers it.
#ifndef HYPERPAR_VERIFY_RECORD_H
#define HYPERPAR_VERIFY_RECORD_H
#include <stddef.h>
#include "memtrack.h"

// The tolerances of recipes.md (fp32), used by hp_verify_opts_default, the checks below and the
// reports. Why these numbers: src/verify/verify.c.
typedef struct hp_verify_tolerances {
    double loss;         // |loss - ref| / |ref| of step 1
    double grad;         // relative Frobenius error of each gradient of step 1
    double param;        // ... of each parameter after an SGD step
    double param_adamw;  // ... after an AdamW step (sign flips of near-zero gradients)
    double traj;         // relative error of each loss of the trajectory (and same_as twins)
    double resume;       // a resumed run's losses against the uninterrupted run's, other layout
    // bf16 (precision.md §4.2): the largest closeness ratio ||P - O|| / ||O - F|| of a tensor
    // (P the layout, O one process, both bf16; F one fp32 process), and the bf16 trajectory's
    // relative tolerance (P against O)
    double closeness_bf16;
    double traj_bf16;
} hp_verify_tolerances;
extern const hp_verify_tolerances hp_verify_tol;

#define HP_VERIFY_MAX_STEPS  64   // losses a record keeps
#define HP_VERIFY_MAX_MOE    64   // MoE layers whose route flips it keeps
#define HP_VERIFY_MAX_PP     64   // pp ranks of the measured pipeline statistics
#define HP_VERIFY_PP_RANKS    8   // pp ranks of the timeline
#define HP_VERIFY_PP_ACTIONS 96   // actions per pp rank of the timeline
#define HP_VERIFY_MAX_TRAFFIC 96  // (group, op) rows of the measured traffic

typedef struct hp_verify_record {
    int    pass;
    int    world;
    int    first_step;                       // 1, or > 1 after --resume
    int    steps;
    double losses[HP_VERIFY_MAX_STEPS];      // written twice: numbers and "%.17g" strings
    int    exact;                            // (read) losses came from the exact strings
    // a pipeline run: per pp rank, measured in the last step (0 ranks: none)
    int    pp_stats;
    double pp_idle[HP_VERIFY_MAX_PP], pp_in_flight[HP_VERIFY_MAX_PP], pp_activation_bytes[HP_VERIFY_MAX_PP];
    // the verification (verified = 0: a plain run, the fields below unknown)
    int    verified;
    double loss, loss_ref, loss_rel_err;     // step 1 (-1: unknown)
    double grad_norm, grad_norm_ref;
    int    steps_ref;
    double losses_ref[HP_VERIFY_MAX_STEPS];
    double traj_worst;                       // -1: unknown
    double tol_grad, tol_param;
    char   worst_grad[64], worst_param[64];  // "" none
    double worst_grad_rel, worst_param_rel;  // -1: unknown
    int    init_equal, traffic_ok;
    double replica_diff;
    double bytes_counted, bytes_predicted;   // rank 0, step 1, over every (group, op)
    int    n_moe_layers;
    int    route_flips[HP_VERIFY_MAX_MOE];   // tokens whose expert set differs, per MoE layer
    double seconds;
    char   failure[320];                     // the first failed check ("" none)
    // the precision policy ("float32" | "bfloat16"); under bfloat16 the closeness check: its
    // c, the worst ratio over the loss, the grad norm, every gradient and every parameter, and
    // what had it ("grad <name>", "param <name>", "loss", "grad norm"); -1: unknown
    char   precision[16];
    double closeness, closeness_worst;
    char   closeness_worst_of[80];
    // the structure check (structure.h): comparisons made and mismatches, over every rank
    double structure_checks, structure_mismatches;
    // pipeline: the verified run's last step, per pp rank: [op, stage, microbatch, t0, t1]
    // (op 0 F, 1 B, 2 I, 3 W; times in ms)
    int    pp_ranks, pp_n[HP_VERIFY_PP_RANKS];
    float  pp_timeline[HP_VERIFY_PP_RANKS][HP_VERIFY_PP_ACTIONS][5];
    // what the run measured on world rank 0 (plan.h's hp_plan_measured; measured = 0: unknown):
    // "params_total", "memory" {persistent_bytes, peak_bytes, current {category: B}, peak {..}},
    // "traffic" {group: {op: bytes}} of one step (the last; without the verifier's gathers)
    int    measured;
    double params_total;
    double mem_current[HP_MEM_COUNT], mem_peak[HP_MEM_COUNT];   // memtrack.h's categories
    double mem_persistent, mem_peak_total;
    int    n_traffic;
    char   traffic_group[HP_VERIFY_MAX_TRAFFIC][16], traffic_op[HP_VERIFY_MAX_TRAFFIC][16];
    double traffic_bytes[HP_VERIFY_MAX_TRAFFIC];
    // the planner's prediction against it (hp_plan_check_run; plan_checked = 0: not checked):
    // "plan_check" {pass, peak_predicted_bytes, peak_ratio (predicted / measured), why}
    int    plan_checked, plan_pass;
    double plan_peak_predicted, plan_peak_ratio;
    char   plan_why[256];
    // the conditions of the run's bitwise promises (docs/verification.md): the BLAS, its core and
    // the BLAS threads of its ranks, fewest and most ("" and 0: unknown), and the GEMM backend
    // when the products are not OpenBLAS's ("onednn 2.6.3, isa avx512_core_bf16"; "": OpenBLAS)
    char   blas[48], blas_core[32], gemm[96];
    int    blas_threads_min, blas_threads_max;
} hp_verify_record;

// Every field zero or unknown (-1 where the struct says so).
void hp_verify_record_init(hp_verify_record *rec);
// Writes rec as JSON. Returns 0, or -1 (errno tells why).
int  hp_verify_record_write(const hp_verify_record *rec, const char *path);
// The JSON text of rec (malloc'ed, the caller frees it), NULL when out of memory.
char *hp_verify_record_print(const hp_verify_record *rec);
// Reads what hp_verify_record_write wrote (or any JSON: a missing or mistyped key reads as
// unknown, an array longer than the struct's is cut, never a crash). parse takes text of len
// bytes (a NUL after them is not needed). Returns 0, or -1 when it is not JSON (load: or the
// file cannot be read); rec is initialised either way.
int  hp_verify_record_parse(hp_verify_record *rec, const char *text, size_t len);
int  hp_verify_record_load(hp_verify_record *rec, const char *path);

// The checks. Each returns 0 when it holds, else 1 with one line in why (cap bytes).
// A rerun: the same losses bit for bit, and (when both paths are given) the same bytes of the
// gradient dumps of step 1 (a JSON loss may be rounded, a file of gradients is not).
int hp_verify_rerun_check(const hp_verify_record *first, const hp_verify_record *again,
                          const char *grads_first, const char *grads_again, char *why, int cap);
// An alternative path: every loss of x within hp_verify_tol.traj of its twin's (*worst: the
// largest relative difference over the common steps).
int hp_verify_same_as_check(const hp_verify_record *x, const hp_verify_record *twin, double *worst,
                            char *why, int cap);
// A resume: the resumed run's losses equal the last ones of the straight run, bit for bit when
// same_layout, else within hp_verify_tol.resume (*worst as above).
int hp_verify_resume_check(const hp_verify_record *straight, const hp_verify_record *resumed,
                           int same_layout, double *worst, char *why, int cap);

#endif
