// run_checkpoint.h - `hp run`'s side of checkpoints (include/hyperpar/checkpoint.h): the
// flag rules, the check of --resume before any rank starts, the resume before the first
// step and the save after a step.
//   hp run --steps 6 --checkpoint-dir ck --checkpoint-every 3      # ck/step-3, ck/step-6
//   hp run --steps 6 --resume ck --tp 2 --dp-shard 2               # trains steps 4..6
#ifndef HP_TOOL_RUN_CHECKPOINT_H
#define HP_TOOL_RUN_CHECKPOINT_H
#include "cli/cli.h"
#include "hyperpar/train.h"

// Flag combinations (no files touched): one line and HP_EXIT_CONFIG, or 0.
int tool_run_ckpt_flags(const tool_cli *cli);
// Before any rank starts: --checkpoint-dir can be written; --resume names a complete
// checkpoint that matches this run (config, names, shapes, sizes, CRC32s) and lies before
// --steps. One line and HP_EXIT_CONFIG, or 0.
int tool_run_ckpt_precheck(const tool_cli *cli);
// Collective: loads --resume into tr. Returns the checkpoint's step (the loop starts after
// it), or -1 after rank 0 printed one line.
int tool_run_ckpt_resume(hp_trainer *tr, const tool_cli *cli, int rank);
// Collective: saves when step is a multiple of --checkpoint-every or the last step.
// Returns 0, or HP_EXIT_FAIL after rank 0 printed one line.
int tool_run_ckpt_after_step(hp_trainer *tr, const tool_cli *cli, int step, int rank);

// --load FILE|DIR: the full model (every parameter of cli->model, the one-process table's
// order), or NULL after rank 0 printed one line. Every rank reads --load itself (a small file;
// no broadcast needed), after validation. A folder is a Hugging Face one (hf.h, with a
// config.json) or a checkpoint (its model alone, consolidated as hp export does): converted to
// hp's file first, a file of the rank's.
float *tool_run_load_model(const tool_cli *cli, int rank);
// The model of --load when neither flags nor the job file name one (model.flavor,
// model.hf_config): an HF folder's config.json, or a checkpoint's own. A checkpoint knows its
// model: flags naming another one are refused. 0, or HP_EXIT_CONFIG with one line in err.
int tool_run_model_of_load(tool_cli *cli, char *err, size_t n);

#endif
