// gguf.h - hp's model as a GGUF file for llama.cpp (src/model_io/gguf_write.c): version 3, the
// `llama` architecture's keys, llama.cpp's tensor names, F32, F16 or BF16 weights (the norms
// stay F32, as llama.cpp's converter keeps them), and a vocabulary.
// defines: hp_gguf_export, hp_gguf_dtype
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

#endif
