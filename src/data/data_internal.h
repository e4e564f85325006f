// data_internal.h - one shard of a dataset and the parsers that check a file's bytes
// (data_formats.c): they work on memory, so the fuzz target data_header feeds them any bytes;
// data.c maps the files and calls them. Internal to src/data (not part of the public API).
// defines: hp_tok_type, hp_data_shard, hp_data_sniff, hp_data_parse_llmc / _megatron / _raw,
//          hp_data_scan_vocab, hp_data_shard_read, hp_data_shard_free
#ifndef HP_DATA_INTERNAL_H
#define HP_DATA_INTERNAL_H
#include <stddef.h>
#include <stdint.h>
#include "hyperpar/config.h"

// The element type of the tokens on disk, all little-endian.
typedef enum { HP_TOK_U8, HP_TOK_I8, HP_TOK_I16, HP_TOK_I32, HP_TOK_I64, HP_TOK_U16, HP_TOK_U32 } hp_tok_type;

int         hp_tok_bytes(hp_tok_type t);
const char *hp_tok_name(hp_tok_type t);   // "uint16", ...

typedef struct {
    char          *name;        // the file of the tokens, as matched or given (Megatron: the .bin)
    hp_data_format format;      // LLMC, MEGATRON, UINT16, UINT32 or BYTES
    hp_tok_type    type;
    int            version;     // llm.c: 1 or 7; Megatron: 1
    const unsigned char *file;  // (file_bytes,) the token file as mapped
    int64_t        file_bytes;
    const unsigned char *idx;   // (idx_bytes,) Megatron's .idx as mapped; NULL otherwise
    int64_t        idx_bytes;
    int64_t        first;       // byte offset of token 0 in file (llm.c: 1024, else 0)
    int64_t        n_tokens;
    // Megatron: the tokens are the n sequences in order; sequence i holds the length[i] tokens
    // at byte pointer[i] of the .bin; seq_start (n+1,) is each one's first token index
    int64_t        n_seq;
    int64_t       *seq_start;
} hp_data_shard;

// What a file's first bytes say: HP_DATA_LLMC (an llm.c magic), HP_DATA_MEGATRON (an .idx
// magic) or HP_DATA_AUTO (no header known).
hp_data_format hp_data_sniff(const unsigned char *head, size_t len);

// Each fills *sh from bytes it only points into (name is copied), or returns -1 with one line
// in err naming `name` and the numbers. llmc: the whole shard. megatron: the .idx and the .bin.
// raw: format UINT16, UINT32 or BYTES, the whole file.
int hp_data_parse_llmc(hp_data_shard *sh, const unsigned char *buf, int64_t len, const char *name,
                       char *err, size_t errlen);
int hp_data_parse_megatron(hp_data_shard *sh, const unsigned char *idx, int64_t idx_len, const char *idx_name,
                           const unsigned char *bin, int64_t bin_len, const char *bin_name, char *err, size_t errlen);
int hp_data_parse_raw(hp_data_shard *sh, hp_data_format format, const unsigned char *buf, int64_t len,
                      const char *name, char *err, size_t errlen);
// Every token in [0, vocab_size); else -1 and "FILE: byte offset O: token id I >= vocab_size V".
int hp_data_scan_vocab(const hp_data_shard *sh, int vocab_size, char *err, size_t errlen);
// ids[0..n) = tokens [t0, t0+n) of the shard (the caller keeps t0 + n <= n_tokens).
void hp_data_shard_read(const hp_data_shard *sh, int *ids, int64_t t0, int64_t n);
// Frees what a parser allocated (name, seq_start); the mappings are the caller's.
void hp_data_shard_free(hp_data_shard *sh);

#endif
