// metrics.h - what a training loop prints and writes for its logged steps and its validation
// rounds, as `hp run` does (docs/metrics.md): TorchTitan's step line on rank 0,
// {job.dump_folder}/metrics.jsonl and {job.dump_folder}/loss.svg; the validation set.
// defines: hp_flops, hp_metrics_flops (metrics_flops.c); hp_metrics_peak (metrics_peak.c);
//          hp_metrics (opaque), hp_metrics_open/logs/step/val/close (metrics_log.c);
//          hp_metrics_jsonl_* (metrics_jsonl.c); hp_metrics_svg (metrics_svg.c);
//          hp_validation, hp_validation_open/close/due/round (metrics_val.c); hp_fmt_thousands
//
//   // job read (hp_job_load), MPI started, tr = hp_trainer_init(...): job.h
//   hp_validation val;                                 // every rank; rank 0 says why it refuses
//   if (hp_validation_open(&val, &job, rank == 0) != 0) exit(2);
//   hp_metrics *mt = hp_metrics_open(&job, tr, &val, 1, blas_threads, MPI_COMM_WORLD);
//   for (int k = 1; k <= job.run.steps; k++) {
//       hp_step_stats st;
//       hp_trainer_step(tr, &st);
//       hp_metrics_step(mt, &st, st.ms * 1e-3, 0);     // every rank: the line, metrics.jsonl, loss.svg
//       if (hp_validation_due(&val, k, job.run.steps)) {
//           int64_t tokens; double seconds;
//           const double loss = hp_validation_round(&val, tr, &tokens, &seconds);   // collective
//           hp_metrics_val(mt, k, loss, tokens, seconds);
//       }
//   }
//   int rc = hp_metrics_close(mt);                     // loss.svg once more; 0 or HP_EXIT_FAIL
//   hp_validation_close(&val);
//
// The records alone (hp_metrics_jsonl_*: one JSON object a line) and the picture alone
// (hp_metrics_svg) are callable too; hp_metrics_step is what writes them for a loop like this.
#ifndef HYPERPAR_METRICS_H
#define HYPERPAR_METRICS_H
#include <stdint.h>
#include <stdio.h>
#include <mpi.h>
#include "data.h"
#include "job.h"
#include "train.h"

// ---- metrics_flops.c ---------------------------------------------------------------------
// Training FLOPs per token, TorchTitan's count (PaLM's): F = 6 (N - N_emb) + 12 L H hd S, where
// the routed experts' parameters count K/E of themselves (a token runs K of the E experts).
typedef struct hp_flops {
    double  F;                   // FLOPs per token, forward + backward
    int64_t params;              // N: every parameter
    int64_t embedding;           // N_emb: tok_embeddings.weight
    int64_t routed;              // the routed experts' parameters (counted at K/E in active)
    double  active;              // N - N_emb with the routed experts at K/E
} hp_flops;
void hp_metrics_flops(hp_flops *out, const hp_model_config *m, const hp_param_table *t, int seq_len);
// ---- metrics_peak.c ----------------------------------------------------------------------
// One rank's peak in FLOP/s, one that does not move with the machine's load: peak_tflops * 1e12
// when given (source "given"), else this machine's fp32 FMA-throughput peak of `threads` threads
// with the vectors the GEMM's kernels use, measured once (fma_peak.c, ~0.3 s) and kept in the
// peak file (source "measured" the first time, "kept" after; "measured, not kept" when the file
// cannot be written). The loop's ISA (or "given") in isa. Called by world rank 0 alone.
double hp_metrics_peak(float peak_tflops, int threads, char *isa, size_t isa_len, char *source,
                         size_t source_len);
// The peak file: $HP_CACHE_DIR/fma_peak, else $XDG_CACHE_HOME/hyperpar/fma_peak, else
// $HOME/.cache/hyperpar/fma_peak. 0, or -1 when none can be named.
int hp_metrics_peak_path(char *buf, size_t n);
// n rounded to an integer with thousands separators ("12,345"), as Python's f"{round(n):,}".
char *hp_fmt_thousands(char *buf, size_t cap, double n);

// ---- metrics_val.c: the validation set -----------------------------------------------------
typedef struct hp_validation {
    hp_data    *data;            // NULL: validation is off
    const char *path;            // its file (NULL: synthetic, the training stream)
    int64_t     batches;         // per round: validation.steps, or every full batch (-1)
    int         freq;
    int         batch, seq_len;  // the training shape, B x S
} hp_validation;
// Opens the validation set of job (--validation.dataset_path, else the training data) when
// --validation.enable is given, and checks that `steps` batches of the training shape fit in its
// windows. Returns 0, or HP_EXIT_CONFIG after one line on stderr (when say) naming the rule and
// the numbers. The only caller of hp_data_open for validation.
int  hp_validation_open(hp_validation *v, const hp_job *job, int say);
void hp_validation_close(hp_validation *v);
// 1 when a round follows step `step`: step % freq == 0, or the last step.
int  hp_validation_due(const hp_validation *v, int step, int last_step);
// One round (collective): its loss (the same double on every rank), tokens and wall seconds.
double hp_validation_round(const hp_validation *v, hp_trainer *tr, int64_t *tokens, double *seconds);

// ---- metrics_log.c: the logger -------------------------------------------------------------
typedef struct hp_metrics hp_metrics;
// Collective over world. Takes the peak (world rank 0's: given, kept or measured once; nothing
// when nothing is printed nor written), opens {dump_folder}/metrics.jsonl on rank 0 and writes the job record. NULL
// only when out of memory.
hp_metrics *hp_metrics_open(const hp_job *job, hp_trainer *tr, const hp_validation *val, int first_step,
                                int blas_threads, MPI_Comm world);
// 1 when step logs: the run's first step, every log_freq-th, the last.
int  hp_metrics_logs(const hp_metrics *mt, int step);
// After every step, on every rank: counts its tokens and seconds; on a logged step (or with
// force: a step that stopped the run, which every rank knows alike) reduces the memory
// high-water over the ranks (collective), prints the line and writes the record and the SVG.
void hp_metrics_step(hp_metrics *mt, const hp_step_stats *st, double seconds, int force);
// After a validation round, on every rank (rank 0 prints and writes).
void hp_metrics_val(hp_metrics *mt, int step, double loss, int64_t tokens, double seconds);
// After a sample (sample.every, docs/model_io.md), on every rank (rank 0 prints "sample step: K
// | TEXT" and writes a "sample" record): the prompt, the ids drawn, their text.
typedef struct hp_metrics_samplerec hp_metrics_samplerec;   // (metrics_jsonl.c's records, below)
void hp_metrics_sample(hp_metrics *mt, const hp_metrics_samplerec *s);
// Rewrites the SVG a last time and frees. Returns 0, or HP_EXIT_FAIL (after one line) when a
// file could not be written.
int  hp_metrics_close(hp_metrics *mt);

// ---- metrics_jsonl.c: the records (one JSON object a line, flushed) --------------------------
typedef struct hp_metrics_job {
    const hp_job *job;
    int world, first_step, blas_threads;
    hp_flops flops;
    double peak;                 // FLOP/s of one rank
    const char *isa;             // the peak's loop, or "given"
    const char *peak_source;     // "given", "kept", "measured" or "measured, not kept"
    double mem_total_gib;
    const hp_validation *val;
} hp_metrics_job;
typedef struct hp_metrics_train {
    int step;
    double loss, grad_norm, lr;
    int64_t tokens_seen;
    double elapsed_s, memory_gib, memory_gib_max, memory_pct, tps, tflops, mfu_pct;
} hp_metrics_train;
typedef struct hp_metrics_valrec {
    int step;
    double loss;
    int64_t tokens, batches;
    double tps, elapsed_s;
} hp_metrics_valrec;
struct hp_metrics_samplerec {
    int step;
    const char *prompt;          // as given (sample.prompt)
    const int *ids;              // the tokens drawn after it
    int n;
    const char *text;            // their text (valid UTF-8), or the ids
    double tps, elapsed_s;       // the generation's tokens per second; the run's time so far
};
// Each returns 0, or -1 when the line could not be written.
int hp_metrics_jsonl_job(FILE *f, const hp_metrics_job *j);
int hp_metrics_jsonl_train(FILE *f, const hp_metrics_train *t);
int hp_metrics_jsonl_val(FILE *f, const hp_metrics_valrec *v);
int hp_metrics_jsonl_sample(FILE *f, const hp_metrics_samplerec *s);
// A resumed run keeps its history: of an earlier metrics.jsonl's text, the lines of its job
// records and of its records before first_step (the steps the checkpoint holds; train, val and
// sample records) are written to f as they were, bit for bit, and each kept train and val record is handed to `point`
// (kind 't' with its loss and lr, 'v' with its loss and lr 0) for the curve. A line that is not
// a record (a torn last line) is dropped. Returns the records kept, or -1 when f failed.
typedef void (*hp_metrics_point_fn)(void *ctx, char kind, int step, double loss, double lr);
int hp_metrics_jsonl_carry(FILE *f, const char *text, size_t len, int first_step, hp_metrics_point_fn point,
                             void *ctx);

// ---- metrics_svg.c: loss.svg -----------------------------------------------------------------
typedef struct hp_svg_point { int step; double y; } hp_svg_point;
// Two panels on one step axis [first, last]: the train loss (a line) and the validation losses
// (points) above, lr below. Written to path.tmp and renamed over path. Returns 0 or -1.
int hp_metrics_svg(const char *path, const char *title, int first, int last, const hp_svg_point *loss,
                     const hp_svg_point *lr, int n_train, const hp_svg_point *val, int n_val);

#endif
