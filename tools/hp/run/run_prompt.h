// run_prompt.h - a prompt and the text of a model's tokens, for hp generate and for sampling
// during hp run: the tokenizer (model.hf_assets_path / --tokenizer), or the bytes of a 256-token
// model, or the ids themselves.
// defines: tool_prompt, tool_prompt_prepare/_free, tool_prompt_decode, tool_prompt_text
#ifndef HP_TOOL_RUN_PROMPT_H
#define HP_TOOL_RUN_PROMPT_H
#include "hyperpar/tokenizer.h"

typedef struct tool_prompt {
    hp_tokenizer *tk;   // NULL: none (a 256-token model's tokens are bytes)
    int *ids;           // the prompt's ids (<s> first when the tokenizer has one)
    int n;
    int eos;            // the tokenizer's </s>, or -1
    int vocab;          // the model's
} tool_prompt;

// The tokenizer at tokenizer_path (NULL: none) and the prompt: text, or ids_text ("1,2,3");
// exactly one of them. who names the command in the one line printed (when loud) on bad input:
// a tokenizer that cannot be read or is larger than the vocab, an id outside the vocab, text
// for a model whose tokens are not bytes and no tokenizer. 0, HP_EXIT_CONFIG or HP_EXIT_FAIL.
int  tool_prompt_prepare(tool_prompt *p, const char *tokenizer_path, const char *text, const char *ids_text,
                         int vocab, const char *who, int loud);
void tool_prompt_free(tool_prompt *p);
// The text of ids[0..n) as the tokenizer decodes it, or their bytes (a 256-token model), else
// NULL: the ids have no text. *len: its bytes (a byte model's text may hold a NUL). malloc'd.
char *tool_prompt_decode(const tool_prompt *p, const int *ids, int n, size_t *len);
// The same, always valid UTF-8 (a stray byte becomes U+FFFD) and never NULL but out of
// memory: the ids as "12 7 301" when they have no text. For JSON and the log. malloc'd.
char *tool_prompt_text(const tool_prompt *p, const int *ids, int n);
#endif
