// dump.h - the interchange of model.md: full tensors as safetensors files.
// defines: hp_dump_step1, hp_load_full, hp_dump_comparison, hp_dump_compare (docs/dump.md)
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
#include "verify.h"

// Collective-free; acts on world rank 0 only (returns 0 elsewhere). init and grads are
// full tensors in table order. Returns 0, or -1 with one line in err.
int hp_dump_step1(hp_trainer *tr, const char *dir, const float *init, const float *grads,
                  double loss, char *err, size_t errlen);
// Fills full (t->full_numel floats, table order) from a safetensors model file. Every
// parameter of t must be present as F32 or BF16 (widened exactly) with its full shape. Returns 0, or -1 with one line
// in err naming the file, the tensor and the problem.
int hp_load_full(const char *path, const hp_param_table *t, float *full, char *err, size_t errlen);

// `hp compare A B`: two dumps of step 1 (any framework may write one; docs/dump.md), B measured
// against A with the verifier's rules: loss, global gradient norm and every gradient within
// hp_verify_tol (fp32), or, when both are bfloat16, the closeness of precision.md §4.2 against
// an fp32 dump F of the same model and batch (noise = ||A - F||).
typedef struct hp_dump_comparison {
    int    pass;
    const char *failure;             // the first failed check, or NULL
    int    bf16;                     // closeness rule (ratio <= closeness), else relative error
    double closeness;
    char   about_a[160], about_b[160];   // "DIR (framework, precision, world N)"
    int    batch, seq_len;
    double loss_a, loss_b, loss_fp32, loss_ratio;             // loss_ratio: bf16 only
    double norm_a, norm_b, norm_fp32, norm_ratio;             // global gradient norms
    int    n;                        // tensors, in A's order
    hp_tensor_diff *grads;           // B against A (TorchTitan names)
    int    worst;                    // by relative error (fp32) or ratio (bf16)
    int    reduce_partials;          // B's "reduce" says float32 over this many (>= 2), else 0
    int    reduce_bf16;              // gradients whose every element is a bf16 value (then FAIL)
    // byte for byte: the loss and every gradient identical; else the first differing element
    int    identical;
    int    bitwise;                  // asked for (--bitwise): a difference is a FAIL
    char   diff_name[128];           // "" when identical, "loss" when only the loss differs
    long long diff_index;
    unsigned diff_a, diff_b;         // the element's bits in A and in B (float32)
} hp_dump_comparison;

// Returns 0 when A and B were compared (out->pass: the verdict), or HP_EXIT_CONFIG with one
// line in err when they cannot be: a file missing or corrupt, a tensor's name, dtype or shape
// that differs, batches that differ, initial models that are not bit-identical, precisions
// that differ, bfloat16 dumps without fp32_dir (NULL: none).
int  hp_dump_compare(const char *a, const char *b, const char *fp32_dir, hp_dump_comparison *out,
                     char *err, size_t errlen);
// The same, and with bitwise set, B must equal A byte for byte (the loss and every gradient): a
// difference fails, naming the first tensor, its flat index and both values in hex.
int  hp_dump_compare_bitwise(const char *a, const char *b, const char *fp32_dir, int bitwise,
                             hp_dump_comparison *out, char *err, size_t errlen);
void hp_dump_comparison_print(FILE *out, const hp_dump_comparison *c);
void hp_dump_comparison_free(hp_dump_comparison *c);

#endif
