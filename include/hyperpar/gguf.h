// gguf.h - hp's model as a GGUF file for llama.cpp (src/model_io/gguf_write.c): version 3, the
// `llama` architecture's keys, llama.cpp's tensor names, F32, F16 or BF16 weights (the norms
// stay F32, as llama.cpp's converter keeps them), and a vocabulary. And back: any GGUF v2/v3
// read with every count, length and offset checked against the file (gguf_read.c), its tensors
// dequantised to float32 (gguf_dequant.c), and a llama GGUF made a Hugging Face folder
// (gguf_import.c, `hp import`).
// defines: hp_gguf_export, hp_gguf_dtype, hp_gguf (reader), hp_gguf_kv, hp_gguf_tensor,
//          hp_gguf_parse, hp_gguf_open, hp_gguf_close, hp_gguf_find_kv, hp_gguf_find_tensor,
//          hp_gguf_kv_int, hp_gguf_kv_float, hp_gguf_kv_str, hp_gguf_type_name,
//          hp_gguf_can_dequantize, hp_gguf_dequantize, hp_gguf_import
//
//   hp_model_config m;  hp_model_config_by_name("tiny", &m);
//   char err[256];
//   hp_gguf_export("model.safetensors", &m, "tiny.gguf", HP_GGUF_F16, NULL, err, sizeof err);
//   // llama_cpp.Llama("tiny.gguf", logits_all=True).eval(ids): hp's logits
//
// Names: tok_embeddings -> token_embd, layers.N.attention.{wq,wk,wv,wo} ->
// blk.N.attn_{q,k,v,output}, feed_forward.{w1,w3,w2} -> blk.N.ffn_{gate,up,down},
// attention_norm / ffn_norm -> blk.N.attn_norm / ffn_norm, norm -> output_norm, output ->
// output. No q/k permutation: llama.cpp's llama rotates interleaved pairs, as hp does (its HF
// converter undoes HF's permutation). A tensor's GGUF dims are its shape reversed (ggml's ne[0]
// is the row). MoE models are refused.
#ifndef HYPERPAR_GGUF_H
#define HYPERPAR_GGUF_H
#include <stddef.h>
#include <stdint.h>
#include "hyperpar/config.h"

typedef enum { HP_GGUF_F32 = 0, HP_GGUF_F16 = 1, HP_GGUF_BF16 = 30 } hp_gguf_dtype;   // ggml_type

// The vocabulary written as tokenizer.ggml.* (llama.cpp's "llama" SentencePiece model): n pieces
// with their scores and types (1 normal, 2 unknown, 3 control, 6 byte), and the special ids.
typedef struct hp_gguf_vocab {
    int n;
    const char *const *pieces;
    const float *scores;
    const int *types;
    int bos, eos, unk;
} hp_gguf_vocab;

// Writes out_path from the full model in hp_file (F32 or BF16 tensors, every parameter of m).
// vocab NULL: a byte vocabulary, piece i = "<0xII>" (type byte) for a model of vocab_size 256,
// refused for any other size. Returns 0, or HP_EXIT_CONFIG (a model it cannot express, a file
// that is not m's, a vocabulary of another size) / HP_EXIT_FAIL (cannot write) with one line.
int hp_gguf_export(const char *hp_file, const hp_model_config *m, const char *out_path,
                   hp_gguf_dtype dtype, const hp_gguf_vocab *vocab, char *err, size_t errlen);


// ---------------------------------------------------------------------------------------
// reading
//
//   hp_gguf *g = hp_gguf_open("SmolLM2.gguf", err, sizeof err);     // NULL: one line in err
//   const hp_gguf_tensor *t = hp_gguf_find_tensor(g, "blk.0.attn_q.weight");
//   float *w = malloc(t->numel * sizeof *w);
//   hp_gguf_dequantize(g, t, w, err, sizeof err);                  // Q4_1 -> float32
//   hp_gguf_close(g);

// The metadata value types of the format.
enum { HP_GGUF_KV_UINT8 = 0, HP_GGUF_KV_INT8, HP_GGUF_KV_UINT16, HP_GGUF_KV_INT16, HP_GGUF_KV_UINT32,
       HP_GGUF_KV_INT32, HP_GGUF_KV_FLOAT32, HP_GGUF_KV_BOOL, HP_GGUF_KV_STRING, HP_GGUF_KV_ARRAY,
       HP_GGUF_KV_UINT64, HP_GGUF_KV_INT64, HP_GGUF_KV_FLOAT64 };
// ggml_type ids the reader knows the block size of (the rest are refused by id).
enum { HP_GGML_F32 = 0, HP_GGML_F16 = 1, HP_GGML_Q4_0 = 2, HP_GGML_Q4_1 = 3, HP_GGML_Q5_0 = 6,
       HP_GGML_Q5_1 = 7, HP_GGML_Q8_0 = 8, HP_GGML_Q8_1 = 9, HP_GGML_Q2_K = 10, HP_GGML_Q3_K = 11,
       HP_GGML_Q4_K = 12, HP_GGML_Q5_K = 13, HP_GGML_Q6_K = 14, HP_GGML_Q8_K = 15, HP_GGML_I8 = 24,
       HP_GGML_I16 = 25, HP_GGML_I32 = 26, HP_GGML_I64 = 27, HP_GGML_F64 = 28, HP_GGML_BF16 = 30 };

// One metadata pair. A scalar's bytes (or a string's: n bytes) start at val; an array holds n
// elements of arr_type starting at val (strings: each a u64 length then the bytes; nested
// arrays are walked and checked, not exposed). Pointers into the file's bytes.
typedef struct {
    const char *key;  size_t key_len;   // not NUL-terminated
    int type, arr_type;
    uint64_t n;
    const unsigned char *val;
} hp_gguf_kv;

// One tensor: its name (NUL-terminated, < 96 bytes), ggml dims (ne[0] is the row, the fastest;
// the unused ones 1), ggml type, its data in the file, numel and bytes.
typedef struct {
    char name[96];
    int n_dims, type;
    int64_t ne[4], numel;
    uint64_t offset, nbytes;            // offset: from the start of the data section
    const unsigned char *data;
} hp_gguf_tensor;

typedef struct hp_gguf {
    uint32_t version;                   // 2 or 3
    int64_t n_kv, n_tensors;
    hp_gguf_kv *kv;
    hp_gguf_tensor *tensors;
    uint64_t alignment, data_offset;    // general.alignment (32 without it); the data section
    const unsigned char *bytes;         // the whole file
    size_t size;
    unsigned char *owned;               // hp_gguf_open's buffer (NULL after hp_gguf_parse)
    char file[256];                     // for the error lines
} hp_gguf;

// Parses size bytes (kept by the caller while g lives; `file` names them in errors). Every
// count, length and offset is checked against size before it is used: a tensor's data must
// lie inside the file, aligned, not overlapping the next; names and keys unique; dims <= 4
// with ne[0] a whole number of blocks. Returns NULL with one line in err ("FILE: RULE: numbers").
hp_gguf *hp_gguf_parse(const unsigned char *data, size_t size, const char *file, char *err, size_t errlen);
// The same for a file read whole into memory.
hp_gguf *hp_gguf_open(const char *path, char *err, size_t errlen);
void hp_gguf_close(hp_gguf *g);
const hp_gguf_kv *hp_gguf_find_kv(const hp_gguf *g, const char *key);
const hp_gguf_tensor *hp_gguf_find_tensor(const hp_gguf *g, const char *name);
// A scalar integer (any of the 8 integer types, or bool) into *out: 0, or -1 (absent: 1, wrong type: -1).
int hp_gguf_kv_int(const hp_gguf *g, const char *key, int64_t *out);
// A FLOAT32 / FLOAT64 (or integer) scalar into *out: 0, 1 (absent), -1 (not a number).
int hp_gguf_kv_float(const hp_gguf *g, const char *key, double *out);
// A STRING scalar into buf (cut to n - 1 bytes): 0, 1 (absent), -1 (not a string).
int hp_gguf_kv_str(const hp_gguf *g, const char *key, char *buf, size_t n);
// "Q4_1", "F32", ... or "type 19" (into a static buffer for an id it does not know).
const char *hp_gguf_type_name(int type);
// 1 when hp_gguf_dequantize reads this type: F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1,
// Q4_K, Q5_K, Q6_K.
int hp_gguf_can_dequantize(int type);
// Tensor t of g into out (t->numel floats), in ggml order (row ne[0] fastest). flags: the
// import's injected bugs, for the outside check (HP_GGUF_BUG_*), else 0. 0, or HP_EXIT_CONFIG
// with one line naming the type and the tensor.
enum { HP_GGUF_BUG_Q4_1_NO_MIN = 1, HP_GGUF_BUG_QK_ORDER = 2 };
int hp_gguf_dequantize(const hp_gguf *g, const hp_gguf_tensor *t, float *out, int flags, char *err, size_t errlen);

// Reads the llama-architecture GGUF gguf_path and writes the Hugging Face folder out_dir
// (config.json from the llama.* keys, generation_config.json, model.safetensors in dtype F32 or
// BF16 (RNE), q and k permuted to HF's order as hp_hf_export does): what `hp run --load DIR`,
// `hp eval` and transformers read. A GGUF without output.weight (tied embeddings) gets lm_head
// as a copy of the embedding, and note (when not NULL, n bytes) says so; else note is "".
// flags: HP_GGUF_BUG_* (0). Returns 0, or HP_EXIT_CONFIG (not a GGUF, another architecture, a
// type hp cannot dequantise, a tensor missing or of the wrong shape) / HP_EXIT_FAIL (cannot
// write) with one line in err.
int hp_gguf_import(const char *gguf_path, const char *out_dir, hp_mp_dtype dtype, int flags,
                   char *note, size_t note_len, char *err, size_t errlen);

#endif
