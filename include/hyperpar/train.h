// train.h - a training job on one rank of the mesh: parameters sharded as their placements
// say, forward + backward with every parallel style, gradient reduction, clipping and the
// optimiser on shards. The single-process reference is the same job with every degree 1.
// defines: hp_trainer (opaque), hp_step_stats, hp_batch, init/free, step phases, feeding the
//          program's own batch, gathering to full
//
//   hp_trainer *tr = hp_trainer_init(MPI_COMM_WORLD, &model, &dims, &run, err, sizeof err);
//   for (int i = 0; i < run.steps; i++) {
//       hp_step_stats st;
//       if (hp_trainer_step(tr, &st) != 0) break;   // non-finite loss or grad norm
//   }
//   hp_trainer_free(tr);
//
// The program's own batch each step instead of run.data_path's: the GLOBAL batch, run.batch
// rows of run.seq_len + 1 ids, the same on every rank (each rank takes its shard itself: its
// dp sequences, its cp positions, its microbatches, exactly as from a data source):
//
//   enum { B = 8, S = 32 };                       // = run.batch, run.seq_len
//   int32_t ids[B][S + 1];                        // row g: inputs ids[g][0..S), labels ids[g][1..S]
//   for (int step = 1; step <= run.steps; step++) {
//       fill(ids, step);                          // the same ids on every rank
//       hp_batch b = { .tokens = &ids[0][0], .n_seqs = B, .seq_len = S };
//       hp_step_stats st;
//       int rc = hp_trainer_step_batch(tr, &b, &st, err, sizeof err);
//       if (rc == HP_EXIT_CONFIG) { fprintf(stderr, "%s\n", err); break; }   // bad batch: no step
//       if (rc != 0) break;                                                   // non-finite
//       printf("step %d loss %.4f grad norm %.4f lr %.3g\n", st.step, st.loss, st.grad_norm, st.lr);
//   }
//
// Fed the ids a data source gives (hp_trainer_sequence), the steps are bit for bit the ones
// hp_trainer_step takes from it (tests/test_feed.c). Labels apart from the inputs (masking):
//   hp_batch b = { .tokens = in, .labels = tg, .n_seqs = B, .seq_len = S };  // B x S each, tg -100: ignored
#ifndef HYPERPAR_TRAIN_H
#define HYPERPAR_TRAIN_H
#include <math.h>
#include <mpi.h>
#include <stddef.h>
#include <stdint.h>
#include "comm.h"
#include "config.h"
#include "data.h"
#include "dims.h"
#include "params.h"
#include "plan.h"

typedef struct hp_trainer hp_trainer;

typedef struct hp_step_stats {
    int    step;
    double loss;          // global mean loss of the step (same on every rank)
    double grad_norm;     // global grad norm before clipping
    double ms;            // wall time of the step
    double tokens_per_s;  // global tokens / wall time
    double lr;            // the learning rate the step's update used (hp_lr_at(run, step))
} hp_step_stats;

// A global batch given by the program (hp_trainer_feed, hp_trainer_step_batch): n_seqs
// sequences, row-major, int32 token ids in [0, vocab_size). Two forms:
//   labels == NULL: tokens holds n_seqs rows of seq_len + 1 ids; row g's inputs are its ids
//                   [0, seq_len), its labels (next tokens) ids [1, seq_len] - a data source's
//                   window (hp_data_sequence), the form llm.c and nanoGPT batches have;
//   labels != NULL: tokens and labels each hold n_seqs rows of seq_len; a label is an id or
//                   -100 (ignored: not in the loss, not counted in its mean).
// n_seqs and seq_len must be the trainer's run.batch and run.seq_len (what the shapes were
// built for); they are given so that a wrong size is refused, not read past.
typedef struct hp_batch {
    const int32_t *tokens;
    const int32_t *labels;   // NULL: next-token labels from tokens' rows of seq_len + 1
    int n_seqs;              // global sequences (= run.batch)
    int seq_len;             // positions per sequence (= run.seq_len)
} hp_batch;

// Collective over world. dims must be validated for world's size. Returns NULL with one
// line in err on failure (e.g. a data file that cannot be read).
hp_trainer *hp_trainer_init(MPI_Comm world, const hp_model_config *m, const hp_dims *d,
                            const hp_run_config *rc, char *err, size_t errlen);
void hp_trainer_free(hp_trainer *tr);

// The step in phases (each collective over the job): forward + backward of the next batch
// leaving fully reduced gradient shards; the global grad norm with clipping (if max_norm > 0);
// the optimiser update. hp_trainer_step runs the three and times them.
double hp_trainer_forward_backward(hp_trainer *tr);   // returns the global loss
double hp_trainer_clip(hp_trainer *tr);               // returns the norm before clipping
void   hp_trainer_optimizer_step(hp_trainer *tr);
// Returns 0, or HP_EXIT_FAIL when the loss or the grad norm (both reduced over the whole job,
// so every rank decides alike) is not finite: then the optimiser step is skipped, the
// parameters stay as they were, and the caller stops (TorchTitan's rule).
int    hp_trainer_step(hp_trainer *tr, hp_step_stats *st);
// The program's own batch (hp_batch above): the next hp_trainer_forward_backward (and so the
// next hp_trainer_step) reads it instead of the data source's batch of that step; the steps
// after it read the data source again unless fed anew (a second feed before the step replaces
// the first). Every rank passes the same global batch; each keeps a copy of its own shard, so
// the arrays may be reused as soon as this returns. Collective over the job (one small
// reduction: every rank decides alike). Returns 0, or HP_EXIT_CONFIG with one line in err -
// the same line on every rank, the lowest failing rank's - when the batch is refused: tokens
// NULL, n_seqs or seq_len not the trainer's, an id outside [0, vocab_size), a label neither an
// id nor -100, or ranks that passed different batches. A refused batch changes nothing (no
// step is taken; a batch fed before it stays pending). err may be NULL (errlen 0).
// hp_trainer_eval_loss and validation read their data sources as before.
int    hp_trainer_feed(hp_trainer *tr, const hp_batch *batch, char *err, size_t errlen);
// hp_trainer_feed, then hp_trainer_step on that batch. Returns 0; HP_EXIT_CONFIG (with err)
// for a refused batch, no step taken; or HP_EXIT_FAIL as hp_trainer_step (non-finite loss or
// grad norm: the optimiser step skipped, st filled).
int    hp_trainer_step_batch(hp_trainer *tr, const hp_batch *batch, hp_step_stats *st, char *err,
                             size_t errlen);
// Async TP (--async-tp, docs/async_tp.md): the fused ops (an all-gather with its GEMMs, a
// GEMM with its reduce-scatter) this rank ran overlapped in the last forward_backward; 0
// without --async-tp.
long   hp_trainer_async_tp_ops(const hp_trainer *tr);
// 1 when a step with this loss and grad norm may update the parameters.
static inline int hp_step_finite(double loss, double grad_norm) {
    return isfinite(loss) && isfinite(grad_norm);
}
// The global loss of the current parameters on the batch of `step`, forward only; changes
// no state (finite-difference checks, evaluation).
double hp_trainer_eval_loss(hp_trainer *tr, int step);
// Validation (docs/metrics.md; trainer_eval.c): the global token-mean loss
// of batch `batch` (0-based) of data: global sequence g < B from window batch*B + g, as training
// step batch+1 would read it, forward only under the run's layout (pp: a forward-only schedule),
// no gradient, the optimiser and the step count untouched. data must hold (batch+1)*B windows
// (hp_data_windows). Collective; every rank gets the same double.
double hp_trainer_eval_batch(hp_trainer *tr, hp_data *data, int64_t batch);
// A round: the mean of batches 0 .. n_batches-1's losses, added in batch order (the same set,
// in the same order, every round: two rounds at equal parameters agree bit for bit).
double hp_trainer_validate(hp_trainer *tr, hp_data *data, int64_t n_batches);

// Full tensors on world rank 0, in table order with full shapes (offsets: hp_param.full_offset);
// full has hp_trainer_params(tr)->full_numel floats on rank 0, may be NULL elsewhere.
// Returns (on rank 0) the largest difference between two ranks holding the same element
// (replicas must agree: a non-zero value is a bug), 0 elsewhere.
double hp_trainer_gather_params(hp_trainer *tr, float *full);
double hp_trainer_gather_grads(hp_trainer *tr, float *full);
// Sets every parameter from full tensors given on every rank (table order, full shapes).
void   hp_trainer_set_params(hp_trainer *tr, const float *full);

// The experts each token chose in the last forward, gathered on world rank 0 as
// (n_moe_layers, B, S, K) global ids; returns the number of MoE layers (0 for dense).
int    hp_trainer_gather_routing(hp_trainer *tr, int *routing);

const hp_param_table *hp_trainer_params(const hp_trainer *tr);
hp_comm *hp_trainer_comm(hp_trainer *tr);
int      hp_trainer_rank(const hp_trainer *tr);
// Persistent bytes on this rank: parameter, gradient and optimiser shards; and the largest
// unsharded unit (the working buffers of one gathered FSDP unit).
void     hp_trainer_memory(const hp_trainer *tr, size_t *persistent, size_t *working);
// The tracking allocator's counters (memtrack.h): every buffer of the model, the styles and
// the trainer by category, current and high-water bytes. The tracker is per PROCESS: the marks
// restart when hp_trainer_init begins (hp_mem_reset_peak), and a second trainer alive in the
// same process (the verifier's reference on rank 0 runs after the parallel one is freed) adds
// its buffers to the same counters.
void     hp_trainer_memory_stats(const hp_trainer *tr, hp_mem_stats *out);
// The logical bytes per (group, op) this rank moved in the last step (comm.h's counters over
// forward, backward, clipping and the optimiser step, whether run by hp_trainer_step or as
// its three phases; what a caller moves between steps or phases, like the verifier's or
// --dump's gathers, is not in it); zeros before the first step.
void     hp_trainer_step_bytes(const hp_trainer *tr, uint64_t bytes[HP_G_COUNT][HP_OP_COUNT]);
// Both, with the model's parameter count, as hp_plan_check_run (plan.h) reads them.
void     hp_trainer_measured(const hp_trainer *tr, hp_plan_measured *out);
// Pipeline parallel: this rank's idle fraction in the last step (waiting on the other
// stages), and the microbatch activation slots its schedule keeps in flight (0 / 1 without pp).
double hp_trainer_pp_idle(const hp_trainer *tr);
int    hp_trainer_pp_slots(const hp_trainer *tr);
// The bytes this rank's activations take: its blocks' kept tensors in every slot, the AC
// recompute set and the pipeline's stage-gradient buffers (what hp plan predicts exactly).
size_t hp_trainer_activation_bytes(const hp_trainer *tr);
// The last step's actions on this rank as rows (op 0 F / 1 B / 2 I / 3 W, stage, microbatch,
// start ms, end ms from the step's start), at most cap rows; returns the count (0 without pp).
int    hp_trainer_pp_timeline(const hp_trainer *tr, float *out, int cap);

// The ids of global sequence g of step `step` (tokens = ids[0..S), labels = ids[1..S]).
void     hp_trainer_sequence(const hp_trainer *tr, int *ids, int step, int g);

#endif
