// data.h - the token data of a run (docs/data.md): synthetic ids from a
// counter hash, or a pre-tokenized dataset (llm.c shards, Megatron .bin/.idx, raw uint16 /
// uint32 as nanoGPT writes them, or a file's bytes) cut into windows of S+1 tokens in order.
// defines: hp_data (opaque), hp_data_open/close, hp_data_windows, hp_data_check_batch,
//          hp_data_sequence, hp_data_window, and the description (format, files) a checkpoint keeps
//
//   char err[512];
//   hp_data *train = hp_data_open(rc.data_path, rc.data_format, V, err, sizeof err);   // NULL path: synthetic
//   if (!train || hp_data_check_batch(train, S, B, err, sizeof err) != 0) { fprintf(stderr, "hp: %s\n", err); exit(2); }
//   int ids[S + 1];
//   hp_data_sequence(train, ids, seed, step, g, B, S);   // inputs ids[0..S), labels ids[1..S]
//
//   // a second dataset, e.g. validation.dataset_path with its own format: read from window 0
//   hp_data *val = hp_data_open("val_*.bin", HP_DATA_LLMC, V, err, sizeof err);
//   for (int64_t w = 0; w < n_val_windows; w++) hp_data_window(val, ids, w, S);
//   hp_data_close(val);
//   hp_data_close(train);
#ifndef HYPERPAR_DATA_H
#define HYPERPAR_DATA_H
#include <stddef.h>
#include <stdint.h>
#include "config.h"   // hp_data_format

typedef struct hp_data hp_data;

// path NULL: synthetic ids over vocab V (format ignored). Else path is one file, a Megatron
// PREFIX (or PREFIX.idx / PREFIX.bin), or a glob (* ? [) whose matches, sorted bytewise, are
// the shards in order (one format and token width). format: hp_data_format (config.h); AUTO
// reads the header, AUTO_BYTES also takes a headerless file as bytes (the old --data). Every
// file is memory-mapped and every token checked once here: 0 <= id < V (bytes: V >= 256).
// Returns NULL with one line in err (naming the file and the numbers) on any bad input.
hp_data *hp_data_open(const char *path, hp_data_format format, int vocab_size, char *err, size_t errlen);
void     hp_data_close(hp_data *data);
// Nw, the number of windows of S+1 tokens: each shard gives floor(tokens / (S+1)), a short
// tail dropped, never a window across two shards. Synthetic: INT64_MAX.
int64_t  hp_data_windows(const hp_data *data, int S);
// 0 when the dataset holds at least B windows of S+1 tokens (a whole global batch), else -1
// with one line in err ("PATH: Nw windows of seq_len+1 = S+1 tokens, fewer than the global batch B").
int      hp_data_check_batch(const hp_data *data, int S, int B, char *err, size_t errlen);
// The S+1 ids of global sequence g (0 <= g < B) of training step `step` (1-based).
// Synthetic: ids[i] = hash(seed, step, g, i) mod V.
// A dataset: window ((step-1)*B + g) mod Nw (the seed plays no part).
void     hp_data_sequence(const hp_data *data, int *ids, uint64_t seed, int step, int g, int B, int S);
// The S+1 ids of window w mod Nw, windows numbered shard by shard (a dataset only; synthetic
// or Nw == 0: zeros).
void     hp_data_window(const hp_data *data, int *ids, int64_t w, int S);

// What the dataset is (a checkpoint's `data` description, docs/checkpoints.md): the format
// found (never AUTO for a dataset; AUTO for synthetic data), the bytes of one token, and each
// file: its name (Megatron: the .bin), its size in bytes and its token count.
hp_data_format hp_data_found_format(const hp_data *data);
int            hp_data_token_bytes(const hp_data *data);
int            hp_data_n_files(const hp_data *data);
const char    *hp_data_file(const hp_data *data, int i, int64_t *bytes, int64_t *tokens);

#endif
