// data.h - the training data of model.md: synthetic ids from a counter hash, or the bytes of
// a text file cut into windows of S+1 bytes in order.
// defines: hp_data (opaque), hp_data_open/close, hp_data_sequence
//
//   hp_data *data = hp_data_open(NULL, 256, err, sizeof err);      // synthetic
//   int ids[S + 1];
//   hp_data_sequence(data, ids, seed, step, global_seq, B, S);     // inputs ids[0..S), labels ids[1..S]
#ifndef HYPERPAR_DATA_H
#define HYPERPAR_DATA_H
#include <stddef.h>
#include <stdint.h>

typedef struct hp_data hp_data;

// path NULL: synthetic data over vocab V. Else the whole file is read (needs V >= 256 and
// at least S+1 bytes, checked by hp_data_sequence's caller through hp_data_windows).
// Returns NULL with one line in err on failure.
hp_data *hp_data_open(const char *path, int vocab_size, char *err, size_t errlen);
void     hp_data_close(hp_data *data);
// Number of distinct S+1 windows (synthetic: effectively unbounded, returns INT64_MAX).
int64_t  hp_data_windows(const hp_data *data, int S);
// The S+1 ids of global sequence g (0 <= g < B) of training step `step` (1-based).
// Synthetic: ids[i] = hash(seed, step, g, i) mod V.
// Text: window w = ((step-1)*B + g) mod windows, bytes [w*(S+1), (w+1)*(S+1)).
void     hp_data_sequence(const hp_data *data, int *ids, uint64_t seed, int step, int g, int B, int S);

#endif
