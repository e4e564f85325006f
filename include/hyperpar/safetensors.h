// safetensors.h - reader and writer of the safetensors format (the interchange of model.md):
// 8-byte little-endian header length N, N bytes of JSON {name: {dtype, shape, data_offsets}},
// then the raw little-endian data. Only F32 and I32 tensors are written.
// defines: hp_st (reader, opaque), hp_st_writer (opaque)
//
//   hp_st_writer *w = hp_st_writer_init();
//   hp_st_writer_add(w, "norm.weight", HP_DT_F32, 1, (int64_t[]){64}, data);
//   hp_st_writer_save(w, "model.safetensors", err, sizeof err);  hp_st_writer_free(w);
//
//   hp_st *f = hp_st_open("model.safetensors", err, sizeof err);   // NULL + err on a bad file
//   const hp_st_tensor *t = hp_st_get(f, "norm.weight");
//   hp_st_close(f);
#ifndef HYPERPAR_SAFETENSORS_H
#define HYPERPAR_SAFETENSORS_H
#include <stddef.h>
#include <stdint.h>

// BF16 data are the raw uint16 patterns (include/hyperpar/bf16.h packs and widens them)
typedef enum { HP_DT_F32 = 0, HP_DT_I32 = 1, HP_DT_OTHER = 2, HP_DT_BF16 = 3 } hp_dtype;

typedef struct hp_st_tensor {
    const char *name;
    hp_dtype    dtype;
    int         ndim;
    int64_t     shape[8];
    int64_t     numel;
    const void *data;          // points into the file's buffer (little-endian)
} hp_st_tensor;

typedef struct hp_st hp_st;
// Reads and validates the whole file: header length within the file, JSON that parses,
// every tensor's dtype/shape/data_offsets consistent and inside the data section.
// On a bad file returns NULL and one line in err naming the tensor and the problem.
hp_st *hp_st_open(const char *path, char *err, size_t errlen);
// The same checks on len bytes already in memory (copied: buf may be freed after the call);
// `name` stands for the path in err.   hp_st *f = hp_st_open_mem(buf, len, "upload", err, n);
hp_st *hp_st_open_mem(const void *buf, size_t len, const char *name, char *err, size_t errlen);
void   hp_st_close(hp_st *f);
int    hp_st_count(const hp_st *f);
const hp_st_tensor *hp_st_at(const hp_st *f, int i);
const hp_st_tensor *hp_st_get(const hp_st *f, const char *name);  // NULL if absent
const char *hp_st_metadata(const hp_st *f, const char *key);      // __metadata__ value or NULL

typedef struct hp_st_writer hp_st_writer;
hp_st_writer *hp_st_writer_init(void);
// Copies data. Tensors are written in the order added.
void hp_st_writer_add(hp_st_writer *w, const char *name, hp_dtype dtype, int ndim,
                      const int64_t *shape, const void *data);
void hp_st_writer_metadata(hp_st_writer *w, const char *key, const char *value);
int  hp_st_writer_save(hp_st_writer *w, const char *path, char *err, size_t errlen); // 0 ok
void hp_st_writer_free(hp_st_writer *w);

#endif
