// tokenizer_none.c - the tokenizer when hp is built without SentencePiece (libsentencepiece-dev
// missing at configure time): every call that needs the library fails with one line saying so,
// so `hp generate --prompt`, `hp tokenize` and model.hf_assets_path refuse instead of guessing.
#include <stdio.h>
#include "hyperpar/tokenizer.h"

#define NO_LIBRARY "hp was built without SentencePiece (install libsentencepiece-dev and rebuild)"

int hp_tokenizer_available(void) { return 0; }

hp_tokenizer *hp_tokenizer_load(const char *path, char *err, size_t errlen) {
    snprintf(err, errlen, "%s: %s", path, NO_LIBRARY);
    return NULL;
}
void hp_tokenizer_free(hp_tokenizer *tk) { (void)tk; }
const char *hp_tokenizer_file(const hp_tokenizer *tk) { (void)tk; return ""; }
int hp_tokenizer_vocab_size(const hp_tokenizer *tk) { (void)tk; return 0; }
int hp_tokenizer_bos(const hp_tokenizer *tk) { (void)tk; return -1; }
int hp_tokenizer_eos(const hp_tokenizer *tk) { (void)tk; return -1; }
int hp_tokenizer_unk(const hp_tokenizer *tk) { (void)tk; return -1; }

int hp_tokenizer_encode(const hp_tokenizer *tk, const char *text, size_t len, int **ids, int *n,
                        char *err, size_t errlen) {
    (void)tk; (void)text; (void)len; *ids = NULL; *n = 0;
    snprintf(err, errlen, "%s", NO_LIBRARY);
    return -1;
}
char *hp_tokenizer_decode(const hp_tokenizer *tk, const int *ids, int n) { (void)tk; (void)ids; (void)n; return NULL; }
const char *hp_tokenizer_piece(const hp_tokenizer *tk, int id) { (void)tk; (void)id; return ""; }
float hp_tokenizer_score(const hp_tokenizer *tk, int id) { (void)tk; (void)id; return 0.0f; }
int hp_tokenizer_piece_type(const hp_tokenizer *tk, int id) { (void)tk; (void)id; return 1; }
int hp_tokenizer_token_bytes(const hp_tokenizer *tk, int id) { (void)tk; (void)id; return 0; }

int hp_tokenizer_train(const char *const *inputs, int n_inputs, int vocab_size, const char *model_path,
                       char *err, size_t errlen) {
    (void)inputs; (void)n_inputs; (void)vocab_size; (void)model_path;
    snprintf(err, errlen, "%s", NO_LIBRARY);
    return -1;
}
