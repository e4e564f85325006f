// checkpoint_internal.h - what the checkpoint files share: boxes of the full tensor (a rank's
// shard of a parameter is one), the in-memory index, and the box copy that both saving
// (padded shard -> piece) and loading (piece bytes -> padded shard) are made of.
//   checkpoint_box.c    boxes, names, copies          checkpoint_index.c  index JSON <-> struct
//   checkpoint_save.c   hp_ckpt_save                  checkpoint_load.c   resolve, check, load
//   checkpoint_export.c hp_ckpt_export
#ifndef HP_CHECKPOINT_INTERNAL_H
#define HP_CHECKPOINT_INTERNAL_H
#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>
#include <mpi.h>
#include "hyperpar/checkpoint.h"
#include "hyperpar/params.h"

#define HP_CKPT_FORMAT "hyperpar-checkpoint-1"
#define HP_CKPT_MAXDIM 3

// The kinds of state a piece holds; AdamW adds the two moments.
typedef enum { HP_CK_PARAM = 0, HP_CK_EXP_AVG = 1, HP_CK_EXP_AVG_SQ = 2, HP_CK_KINDS = 3 } hp_ck_kind;
extern const char *const hp_ck_kind_name[HP_CK_KINDS];   // "param", "exp_avg", "exp_avg_sq"
// lr_schedule.decay_type as saved, indexed by hp_decay_type
extern const char *const hp_ck_decay_name[3];   // "linear", "sqrt", "cosine"

// A box of a full tensor: [lo[i], hi[i]) on each of ndim dims.
typedef struct hp_box {
    int     ndim;
    int64_t lo[HP_CKPT_MAXDIM], hi[HP_CKPT_MAXDIM];
} hp_box;

int64_t hp_box_numel(const hp_box *b);
// 1 and *out = a ∩ b when they overlap (same ndim), else 0.
int     hp_box_intersect(const hp_box *a, const hp_box *b, hp_box *out);
int     hp_box_equal(const hp_box *a, const hp_box *b);
// "0:32,0:64"
void    hp_box_str(const hp_box *b, char *buf, size_t n);
// The piece's safetensors key: "name@0:32,0:64" (param) or "exp_avg:name@0:32,0:64".
void    hp_ck_piece_key(char *buf, size_t n, hp_ck_kind kind, const char *tensor, const hp_box *b);

// The rank's shard of p as a box of the full tensor (empty: numel 0), and the padded shard
// array it lives in: origin (full-tensor coordinates of element 0) and dims (local shape
// with fsdp_chunk rows on fsdp_dim), so that element k of the shard is row-major in dims.
void hp_ck_shard_box(const hp_param *p, hp_box *box, int64_t origin[HP_CKPT_MAXDIM],
                     int64_t dims[HP_CKPT_MAXDIM]);

// owned[i] = 1 when `rank` writes its piece of parameter i (t: rank's table): its box is not
// empty and no lower rank of the layout holds the same box (replicas over dp_replicate, norms
// replicated over tp). Pure: it builds the lower ranks' tables.
void hp_ck_owned(const hp_model_config *m, const hp_dims *d, int rank, const hp_param_table *t,
                 int *owned);

// Copies the region (inside both arrays) from src to dst. An array is row-major with dims
// dims, its element 0 at full-tensor coordinates origin.
void hp_box_copy(const hp_box *region, const float *src, const int64_t *src_origin,
                 const int64_t *src_dims, float *dst, const int64_t *dst_origin,
                 const int64_t *dst_dims);

// ---- the index --------------------------------------------------------------------------
typedef struct hp_ck_tensor {
    char    name[64];
    int     ndim;
    int64_t shape[HP_CKPT_MAXDIM];
} hp_ck_tensor;

typedef struct hp_ck_piece {
    int        tensor;     // index into tensors
    hp_ck_kind kind;
    hp_box     box;
    int        file;       // index into files
    int64_t    offset;     // absolute byte offset of its data in the file
    int64_t    nbytes;
    uint32_t   crc;
} hp_ck_piece;

typedef struct hp_ck_file {
    char     name[64];     // "rank-00003.safetensors"
    int      rank;
    int64_t  bytes;
    uint32_t crc;
} hp_ck_file;

typedef struct hp_ck_data_file {   // one file of the dataset (docs/checkpoints.md)
    char     name[256];    // its base name (the folder may move between save and resume)
    int64_t  bytes, tokens;
} hp_ck_data_file;

typedef struct hp_ck_index {
    int             step;
    hp_model_config model;
    hp_dims         dims;
    // run state
    int             optimizer;      // hp_optimizer
    double          lr;
    uint64_t        seed;
    int             seq_len, batch;
    // the lr schedule the saving run resolved (absent before schedules: has_schedule 0)
    int             has_schedule;
    int             sched_T, sched_W, sched_D, sched_S;
    char            sched_decay[16];
    double          sched_min_lr_factor, sched_lr_next;
    int             data_text;      // 0 synthetic, 1 text
    int64_t         data_windows;   // text: windows of seq_len+1 bytes in the file
    int64_t         data_next_window;
    char            data_format[16];  // "" in checkpoints older than the formats: not compared
    int             data_n_files;
    hp_ck_data_file *data_files;      // (data_n_files,)
    int             n_tensors, n_files, n_pieces;
    hp_ck_tensor   *tensors;
    hp_ck_file     *files;
    hp_ck_piece    *pieces;
} hp_ck_index;

// Parses dir/index.json. Returns 0, or HP_EXIT_CONFIG with one line in err.
int  hp_ck_index_load(const char *step_dir, hp_ck_index *ix, char *err, size_t errlen);
void hp_ck_index_free(hp_ck_index *ix);

// Reads file f of the checkpoint in step_dir whole into *buf (*len bytes; path gets its
// path). Returns 0, or HP_EXIT_CONFIG with one line in err naming the file and why.
int hp_ck_read_file(const char *step_dir, const hp_ck_index *ix, int f, char *path, size_t pathlen,
                    unsigned char **buf, size_t *len, char *err, size_t errlen);

// Collective: every rank learns whether any failed; err then holds the line of the lowest
// failing rank on every rank. Returns 1 when one failed, 0 when none did.
int hp_ck_agree(MPI_Comm world, int rank, int failed, char *err, size_t errlen);
int  hp_ck_index_find_tensor(const hp_ck_index *ix, const char *name);   // index or -1
// The model config as JSON and back (every field: a mismatch names the field).
cJSON *hp_ck_model_json(const hp_model_config *m);
// Compares model config a (this run) with b (the checkpoint); 0, or -1 with "field: a vs b".
int  hp_ck_model_compare(const hp_model_config *a, const hp_model_config *b, char *why, size_t n);
// The next text window after `step` steps of `batch` sequences over `windows` windows.
int64_t hp_ck_next_window(int step, int batch, int64_t windows);

// Every piece of every kind tiles its tensor exactly (volumes sum to the full numel and no
// two pieces of one tensor and kind overlap). 0, or -1 with one line in err.
int  hp_ck_index_check_coverage(const hp_ck_index *ix, int kinds, char *err, size_t errlen);

// Fault-injection variable name (hp_ckpt_check_env): -1 when unset, its value when a whole
// number >= 0, -2 otherwise.
int hp_ck_env_number(const char *name);

// zlib's CRC32 of n bytes (any n: fed to zlib in chunks of at most 1 GiB).
uint32_t hp_ck_crc32(const void *p, size_t n);
// The CRC32 of A followed by B, from their CRC32s (B has len_b bytes): zlib's crc32_combine.
uint32_t hp_ck_crc32_combine(uint32_t crc_a, uint32_t crc_b, int64_t len_b);

#endif
