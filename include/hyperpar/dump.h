// dump.h - the interchange of model.md: full tensors as safetensors files.
// defines: hp_dump_step1, hp_load_full
//
// --dump DIR writes, from world rank 0:
//   DIR/model.safetensors   the initial model (full tensors, TorchTitan names, F32)
//   DIR/batch.safetensors   tokens and labels of step 1, I32 [B, S]
//   DIR/grads.safetensors   the full gradients of step 1 (before clipping), same names
//   DIR/result.json         the loss of step 1 and the model, parallel and run config
// --load FILE reads a model.safetensors back (every parameter, exact names and shapes; F32 or BF16).
#ifndef HYPERPAR_DUMP_H
#define HYPERPAR_DUMP_H
#include <stddef.h>
#include "params.h"
#include "train.h"

// Collective-free; acts on world rank 0 only (returns 0 elsewhere). init and grads are
// full tensors in table order. Returns 0, or -1 with one line in err.
int hp_dump_step1(hp_trainer *tr, const char *dir, const float *init, const float *grads,
                  double loss, char *err, size_t errlen);
// Fills full (t->full_numel floats, table order) from a safetensors model file. Every
// parameter of t must be present as F32 or BF16 (widened exactly) with its full shape. Returns 0, or -1 with one line
// in err naming the file, the tensor and the problem.
int hp_load_full(const char *path, const hp_param_table *t, float *full, char *err, size_t errlen);

#endif
