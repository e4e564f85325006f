// model_tensors.h - the full tensors of a dense model, as the interchange writers see them
// (model_tensors.c): hp's name, Hugging Face's, llama.cpp's, the shape, the q/k permutation's
// heads; and the checks every reader of a full model makes.
#ifndef HP_MODEL_IO_MODEL_TENSORS_H
#define HP_MODEL_IO_MODEL_TENSORS_H
#include <stddef.h>
#include <stdint.h>
#include "hyperpar/config.h"
#include "hyperpar/safetensors.h"

// One tensor of the model: its names, its shape (ndim 1 or 2), and the heads of a q/k
// permutation between hp's interleaved RoPE pairs and HF's halves (0: none).
typedef struct { char hp[96], hf[96], gguf[96]; int64_t shape[2]; int ndim, perm_heads; } hp_tensor_spec;

// The dense model m's tensors in HF's order (embeddings, each layer, norm, head) into a fresh
// array (free it). Returns their count, or -1 (memory).
int     hp_model_tensor_specs(const hp_model_config *m, hp_tensor_spec **out);
int64_t hp_tensor_spec_numel(const hp_tensor_spec *s);
// HF's name (hf != 0) or llama.cpp's of hp's tensor `name` into out; 0, or -1: it has none.
int     hp_tensor_name_map(const char *name, int hf, char *out, size_t n);
// The tensor `name` of f (file names it in err), checked against want: F32 or BF16, want's
// shape. NULL with one line in err.
const hp_st_tensor *hp_tensor_checked(const hp_st *f, const char *file, const char *name,
                                      const hp_tensor_spec *want, char *err, size_t errlen);
// Opens hp's full-model file path and checks every tensor of m in it (hp_tensor_checked):
// 0 with *f and the specs (*n of them; free them, close f), or HP_EXIT_CONFIG / HP_EXIT_FAIL
// with one line in err and nothing to free.
int     hp_model_file_open(const char *path, const hp_model_config *m, hp_st **f, hp_tensor_spec **specs,
                           int *n, char *err, size_t errlen);
// hf_index.c: the distinct weight files model.safetensors.index.json (text, len bytes; path for
// err) names, in order, at most max: 0 and *n >= 1, or -1 with one line in err (not JSON, no
// weight_map, a name that is not a plain file name of the folder, too many).
#define HP_HF_SHARD_NAME 128
int     hp_hf_index_shards(const char *text, size_t len, const char *path, char (*names)[HP_HF_SHARD_NAME],
                           int max, int *n, char *err, size_t errlen);
// Makes dir if missing; 0, or -1 with one line in err.
int     hp_make_dir(const char *dir, char *err, size_t errlen);

#endif
