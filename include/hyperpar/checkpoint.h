// checkpoint.h - distributed checkpoints: every rank saves the pieces of the full tensors it
// owns, and a later job under ANY other layout (world, R, S, C, T, EP, ETP, Shard(0)/Shard(1)
// experts) loads them back, each rank reading only the bytes that overlap its own shards.
// defines: hp_ckpt_stats, hp_ckpt_save, hp_ckpt_resolve, hp_ckpt_check, hp_ckpt_schedule_note,
//          hp_ckpt_load, hp_ckpt_check_env, hp_ckpt_export
//
//   // in the train loop, after step tr's step K (collective over the job):
//   hp_ckpt_save(tr, "ck", 2, &st, err, sizeof err);    // ck/step-K, ck/latest, keeps 2
//   // a later job, any layout, before its first step (collective):
//   char dir[4096];
//   hp_ckpt_resolve("ck", dir, sizeof dir, err, sizeof err);   // "ck/step-K" from ck/latest
//   if (hp_ckpt_load(tr, dir, &st, err, sizeof err) != 0) { fprintf(stderr, "%s\n", err); exit(2); }
//   // consolidated full model under TorchTitan names (what `hp run --load` reads):
//   hp_ckpt_export("ck/step-6", "model.safetensors", 0, HP_DTYPE_FLOAT32, err, sizeof err);
//
// On disk, D/step-K/ holds
//   rank-00003.safetensors  one file per rank that owns a piece: the piece of parameter,
//                           AdamW exp_avg and exp_avg_sq (nothing more for SGD), each named by
//                           its box (hyper-rectangle) of the full tensor, half-open per dim:
//                              "layers.0.attention.wq.weight@0:32,0:64"
//                              "exp_avg:layers.0.attention.wq.weight@0:32,0:64"
//                           A box held by several ranks (dp_replicate replicas, tp-replicated
//                           norms) is written once, by the lowest rank holding it, so the
//                           folder is the model state plus headers and the index.
//   index.json              every tensor's full shape; per file its size, its zlib CRC32 and
//                           its pieces (tensor, kind, box, byte offset, size, CRC32); the step,
//                           the lr state, the data position, the seed, the model config and
//                           the degrees it was saved with.
// A save writes into D/.step-K.tmp, fsyncs every file and the folder, renames it to step-K,
// then replaces D/latest ("step-K\n") by write-temp + rename: a job killed in the middle of a
// save leaves the previous checkpoint and the pointer to it intact.
#ifndef HYPERPAR_CHECKPOINT_H
#define HYPERPAR_CHECKPOINT_H
#include <stddef.h>
#include <stdint.h>
#include "config.h"
#include "train.h"

typedef struct hp_ckpt_stats {
    double  seconds;        // wall time of the save or load (this rank, barrier to barrier)
    int64_t bytes;          // bytes this rank wrote (save) or read (load), headers included
    int     pieces;         // pieces this rank wrote or read from
    int     step;           // the checkpoint's step
} hp_ckpt_stats;

// Collective over the job. Saves tr's state after its last step into dir/step-K and points
// dir/latest at it; keep > 0 removes all but the newest keep step folders. Returns 0, or -1
// with one line in err (on every rank).
int hp_ckpt_save(hp_trainer *tr, const char *dir, int keep, hp_ckpt_stats *st, char *err,
                 size_t errlen);

// "D/step-K" (a folder with index.json) as is, or D's latest complete checkpoint. No MPI.
// Returns 0, or HP_EXIT_CONFIG with one line in err.
int hp_ckpt_resolve(const char *path, char *step_dir, size_t n, char *err, size_t errlen);

// No MPI, before any rank starts: the index parses; the model config, the tensors' names
// and shapes, the optimiser, seed, lr and data position match this run; every file has the
// size and (check_crc) the CRC32 the index gives, every piece its CRC32. *step receives the
// checkpoint's step. Returns 0, or HP_EXIT_CONFIG with one line naming the file, the tensor
// and the problem.
int hp_ckpt_check(const char *step_dir, const hp_model_config *m, const hp_run_config *rc,
                  int check_crc, int *step, char *err, size_t errlen);

// No MPI: 1 with one line in note when the checkpoint's lr schedule (total, warmup, decay and
// stable steps, decay type, min_lr_factor) is not the one rc resolves to, else 0. A resume
// continues on rc's schedule from the checkpoint's step, as TorchTitan's (which restores only
// the step and warns); the line says so, with both lrs of the next step.
int hp_ckpt_schedule_note(const char *step_dir, const hp_run_config *rc, char *note, size_t n);

// Collective. Fills tr's parameter (and AdamW) shards from the checkpoint, whatever layout it
// was saved under, and sets its step counter: the next hp_trainer_step trains step K+1.
// Every piece is CRC-checked by one rank (piece j by rank j mod world). Returns 0, or
// HP_EXIT_CONFIG with the line of the lowest failing rank in err on every rank.
int hp_ckpt_load(hp_trainer *tr, const char *step_dir, hp_ckpt_stats *st, char *err,
                 size_t errlen);

// No MPI, before any rank starts: the fault-injection variables of the checkpoint tests
// (HP_CKPT_KILL_RANK, HP_CKPT_KILL_STEP, HP_CKPT_LOAD_STOP_RANK; checkpoint_save.c and
// checkpoint_load.c) are unset or whole numbers >= 0. Returns 0, or HP_EXIT_CONFIG with one
// line in err naming the variable and its value.
int hp_ckpt_check_env(char *err, size_t errlen);

// No MPI. Writes the consolidated full tensors to out (TorchTitan names, table order; with
// with_optimizer also "optimizer.state.<name>.exp_avg" and ".exp_avg_sq", always F32), after
// checking every file's CRC32. The parameters are F32, or under export_dtype HP_DTYPE_BFLOAT16
// BF16: the RNE cast of the fp32 master, the bf16 weights a --mixed-precision-param bfloat16
// forward uses. Returns 0, or HP_EXIT_CONFIG (a bad checkpoint) / HP_EXIT_FAIL (cannot write
// out) with one line in err.
int hp_ckpt_export(const char *step_dir, const char *out, int with_optimizer, hp_mp_dtype export_dtype,
                   char *err, size_t errlen);
// The model the checkpoint in step_dir holds (its index's config). 0, or HP_EXIT_CONFIG.
int hp_ckpt_model(const char *step_dir, hp_model_config *m, char *err, size_t errlen);

#endif
