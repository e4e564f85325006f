// tokenizer.h - a SentencePiece tokenizer (BPE with byte fallback, Llama 1/2's kind): trained on
// texts, encoding a prompt, decoding what a model writes (src/tokenizer/, a small C++ shim over
// Debian's libsentencepiece). hp builds without the library; then hp_tokenizer_available() is
// 0 and every call that needs it fails with one line saying so.
// defines: hp_tokenizer (opaque), hp_tokenizer_load/_free, _encode, _decode, _train, the pieces
//
//   char err[256];
//   hp_tokenizer *tk = hp_tokenizer_load("data/perl", err, sizeof err);   // a folder or the file
//   if (!tk) { fprintf(stderr, "hp: %s\n", err); return 2; }
//   int *ids, n;
//   hp_tokenizer_encode(tk, "Hello world", 11, &ids, &n, err, sizeof err);   // no BOS added
//   char *text = hp_tokenizer_decode(tk, ids, n);                             // "Hello world"
//   free(text); free(ids); hp_tokenizer_free(tk);
#ifndef HYPERPAR_TOKENIZER_H
#define HYPERPAR_TOKENIZER_H
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct hp_tokenizer hp_tokenizer;

// 1 when hp was built with SentencePiece, else 0.
int hp_tokenizer_available(void);

// Loads path: a tokenizer.model file, or a folder holding one (TorchTitan's
// model.hf_assets_path). NULL with one line in err (no such file, not a SentencePiece model,
// built without the library).
hp_tokenizer *hp_tokenizer_load(const char *path, char *err, size_t errlen);
void hp_tokenizer_free(hp_tokenizer *tk);
const char *hp_tokenizer_file(const hp_tokenizer *tk);   // the tokenizer.model it was read from

int hp_tokenizer_vocab_size(const hp_tokenizer *tk);
int hp_tokenizer_bos(const hp_tokenizer *tk);   // <s>, or -1
int hp_tokenizer_eos(const hp_tokenizer *tk);   // </s>, or -1
int hp_tokenizer_unk(const hp_tokenizer *tk);   // <unk>, or -1

// text[0..len) -> *ids (malloc'd, *n of them; no BOS or EOS added). 0, or -1 with one line.
int hp_tokenizer_encode(const hp_tokenizer *tk, const char *text, size_t len, int **ids, int *n,
                        char *err, size_t errlen);
// ids[0..n) -> text (malloc'd, NUL-terminated; an id out of range decodes as nothing). NULL
// only when out of memory.
char *hp_tokenizer_decode(const hp_tokenizer *tk, const int *ids, int n);

// The piece of id (SentencePiece's text, "▁the", "<0x0A>"), its score, and its GGUF token
// type: 1 normal, 2 unknown, 3 control, 6 byte (llama.cpp's llama_token_type).
const char *hp_tokenizer_piece(const hp_tokenizer *tk, int id);
float hp_tokenizer_score(const hp_tokenizer *tk, int id);
int   hp_tokenizer_piece_type(const hp_tokenizer *tk, int id);
// How many bytes of text id stands for (a byte piece 1, "▁the" 4, a control piece 0): what
// bits per byte divides by.
int   hp_tokenizer_token_bytes(const hp_tokenizer *tk, int id);

// Trains a BPE model with byte fallback on the files inputs[0..n_inputs), vocab_size pieces
// (<unk> <s> </s> at 0 1 2), into model_path (a tokenizer.model). 0, or -1 with one line.
int hp_tokenizer_train(const char *const *inputs, int n_inputs, int vocab_size,
                       const char *model_path, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
